// time_controls.cpp: Play / Pause, speed, instant replay and the cursor badge (see time_controls.hpp).
#include "widgets/time_controls.hpp"

#include "widgets/palette.hpp"

#include <imgui.h>

#include <cstdio>

namespace dt::app {

namespace {

// A small combo of choices; true when the choice changed.
bool choiceCombo(const char* id, double& value, const double* choices, size_t n, const char* (*label)(double),
                 float width) {
    bool changed = false;
    ImGui::SetNextItemWidth(width);
    if (ImGui::BeginCombo(id, label(value))) {
        for (size_t i = 0; i < n; ++i) {
            const bool selected = choices[i] == value;
            if (ImGui::Selectable(label(choices[i]), selected) && !selected) {
                value = choices[i];
                changed = true;
            }
        }
        ImGui::EndCombo();
    }
    return changed;
}

const char* secondsLabel(double s) {
    static thread_local char label[16];
    std::snprintf(label, sizeof(label), "%.0f s", s);
    return label;
}

// A filled, rounded badge in `fill` with text that reads on it.
void badge(const char* text, ImU32 fill) {
    const ImGuiStyle& style = ImGui::GetStyle();
    const ImVec2 size = ImGui::CalcTextSize(text);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float h = ImGui::GetFrameHeight();
    const ImVec2 box(size.x + style.FramePadding.x * 2.0f, h);
    ImDrawList* draw = ImGui::GetWindowDrawList();
    draw->AddRectFilled(p, ImVec2(p.x + box.x, p.y + box.y), fill, h * 0.25f);
    draw->AddText(ImVec2(p.x + style.FramePadding.x, p.y + (h - size.y) * 0.5f), palette::textOn(fill), text);
    ImGui::Dummy(box);
}

} // namespace

std::string cursorBadgeText(const ViewInputs& inputs) {
    const std::optional<int64_t> cursor = inputs.cursor();
    if (!cursor || !inputs.model)
        return "";
    const double origin = double(inputs.model->tBegin());
    const double at_s = (double(*cursor) - origin) / 1e9;
    const double now_s = (double(std::max(inputs.model->tEnd(), inputs.now_ns)) - origin) / 1e9;
    char text[160];
    const PlaybackState& pb = inputs.playback;
    char playing[48] = "";
    if (pb.playing)
        std::snprintf(playing, sizeof(playing), "%s %s  ", pb.instant_replay ? "INSTANT REPLAY" : "PLAYING",
                      Playback::speedLabel(pb.speed));
    if (inputs.live)
        std::snprintf(text, sizeof(text), "%sCURSOR %+.2f s (now %+.1f s)", playing, at_s, now_s);
    else
        std::snprintf(text, sizeof(text), "%sCURSOR %+.2f s of %.1f s", playing, at_s, now_s);
    return text;
}

void drawTimeControls(const ViewInputs& inputs, TimeControlsState& ui) {
    ViewActions& act = inputs.act();
    const bool has_run = inputs.model && !inputs.model->empty();
    const PlaybackState& pb = inputs.playback;
    const float em = ImGui::GetFontSize();

    if (pb.playing) {
        if (act.button("Pause##time", true))
            act.pausePlayback();
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("Stop the playback; the cursor stays where it is.");
    } else {
        if (act.button("Play##time", has_run, "no run: open a scenario or a recording"))
            act.play(ui.speed);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(inputs.live
                                  ? "Play the time cursor from where it is (or the start) towards now."
                                  : "Play the recording from the cursor (or the start) to its end.");
    }
    ImGui::SameLine();
    if (choiceCombo("##speed", ui.speed, Playback::kSpeeds.data(), Playback::kSpeeds.size(),
                    Playback::speedLabel, em * 3.6f))
        act.setPlaybackSpeed(ui.speed);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Playback speed: run seconds per wall second.");

    if (inputs.live) {
        ImGui::SameLine(0.0f, em);
        if (act.button("Instant replay##time", has_run && !pb.instant_replay, "an instant replay is playing"))
            act.replayLast(ui.replay_seconds, ui.replay_speed);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("Play the last %.0f s again at %s while the run goes on, then return to live.",
                              ui.replay_seconds, Playback::speedLabel(ui.replay_speed));
        ImGui::SameLine();
        static constexpr double kLengths[] = {5.0, 10.0, 20.0, 30.0};
        choiceCombo("##replay_s", ui.replay_seconds, kLengths, 4, secondsLabel, em * 3.6f);
        ImGui::SameLine();
        ImGui::TextDisabled("at");
        ImGui::SameLine();
        static constexpr double kReplaySpeeds[] = {0.25, 0.5, 1.0};
        choiceCombo("##replay_speed", ui.replay_speed, kReplaySpeeds, 3, Playback::speedLabel, em * 3.6f);
    }

    const std::string text = cursorBadgeText(inputs);
    if (text.empty())
        return;
    ImGui::SameLine(0.0f, em);
    badge(text.c_str(), palette::kCursor);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Every view shows the run as it was at the time cursor (the %s line in the "
                          "timeline), not now.",
                          "magenta");
    ImGui::SameLine();
    const char* back = inputs.live ? "Live##time" : "End##time";
    if (act.button(back, true))
        act.cursorLive();
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(inputs.live ? "Back to now (Esc)" : "Show the end of the recording (Esc)");
    ImGui::SameLine();
    ImGui::TextDisabled("Esc");
}

} // namespace dt::app
