// view_toolbar.cpp: Run / Pause / Step, the pace cap and its badge, the run
// status line and Save recording (see view_toolbar.hpp).
#include "views/view_toolbar.hpp"

#include "theme.hpp"
#include "widgets/elide.hpp"
#include "widgets/help.hpp"
#include "widgets/palette.hpp"

#include <cmath>
#include <cstdio>

namespace dt::app {

void drawBadge(const char* text, ImU32 fill) {
    const ImGuiStyle& style = ImGui::GetStyle();
    const ImVec2 size = ImGui::CalcTextSize(text);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float h = ImGui::GetFrameHeight();
    const ImVec2 box(size.x + style.FramePadding.x * 2.0f, h);
    ImDrawList* draw = ImGui::GetWindowDrawList();
    draw->AddRectFilled(p, ImVec2(p.x + box.x, p.y + box.y), fill, h * 0.5f);
    draw->AddText(ImVec2(p.x + style.FramePadding.x, p.y + (h - size.y) * 0.5f), palette::textOn(fill), text);
    ImGui::Dummy(box);
}

const char* ToolbarView::helpText() const {
    return "Run: every rank runs freely.\n"
           "Pause: every rank stops at its next step boundary (the step in flight finishes).\n"
           "Step: every rank runs exactly one more step, then waits.\n"
           "Pace: at most this many steps per second, so a room can follow; 0 turns it off. While a pace is "
           "active the PACED badge says so: the run is slowed on purpose, not slow.\n"
           "Save recording: the whole event stream so far, to open later with dtlab --replay FILE.";
}

ImGuiWindowFlags ToolbarView::windowFlags() const {
    return ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoMove |
           ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse |
           ImGuiWindowFlags_NoSavedSettings;
}

LayoutPlace ToolbarView::layoutPlace(const LayoutContext&) const {
    LayoutPlace place;
    place.area = LayoutArea::TopBar;
    return place;
}

bool ToolbarView::isEmpty(const ViewInputs& inputs) const {
    return !inputs.model || !inputs.facts;
}

void ToolbarView::drawEmptyState(const ViewInputs& inputs) {
    if (inputs.act().button("Open scenario...##toolbar"))
        inputs.act().openScenarioDialog();
    ImGui::SameLine();
    ImGui::TextDisabled("No run: open a scenario (Ctrl+O) or drop a .toml or recording file on the window.");
}

void ToolbarView::drawContent(const ViewInputs& inputs) {
    ViewActions& act = inputs.act();
    const RunFacts& f = *inputs.facts;
    const bool live = inputs.live;
    const char* why = inputs.replay ? "a replay: nothing is running" : "the run is over";
    const RunMode mode = f.control.mode;
    const Theme& theme = *inputs.theme;

    if (act.button("Run", live && mode != RunMode::Run, why))
        act.runFree();
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Run freely (P toggles pause)");
    ImGui::SameLine();
    if (act.button("Pause", live && mode != RunMode::Paused, why))
        act.pauseRun();
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Stop every rank at its next step boundary (P)");
    ImGui::SameLine();
    if (act.button("Step", live, why))
        act.stepOnce();
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Let every rank through one more step (S)");

    // Pace: the slider shows the Session's pace unless it is being dragged.
    ImGui::SameLine(0.0f, ImGui::GetFontSize());
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("Pace");
    ImGui::SameLine();
    if (!m_pace_editing)
        m_pace = mode == RunMode::Paced ? float(f.control.pace_steps_per_s) : 0.0f;
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9.0f);
    if (!live)
        ImGui::BeginDisabled();
    ImGui::SliderFloat("##pace", &m_pace, 0.0f, 10.0f, m_pace <= 0.0f ? "off" : "%.1f step/s");
    if (!live)
        ImGui::EndDisabled();
    m_pace_editing = ImGui::IsItemActive();
    if (ImGui::IsItemDeactivatedAfterEdit())
        act.setPace(m_pace < 0.05f ? 0.0 : double(m_pace));
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("At most this many steps per second, for presentations (0 = off)");

    // Badges: say on screen whenever the run is held back on purpose (in short when the
    // bar is too narrow for the badge, the run's status and the buttons after it).
    const float bar_room =
        ImGui::GetWindowContentRegionMax().x - (ImGui::GetItemRectMax().x - ImGui::GetWindowPos().x);
    const bool short_badge = bar_room < ImGui::GetFontSize() * 48.0f;
    if (mode == RunMode::Paced && live) {
        char badge[64];
        std::snprintf(badge, sizeof(badge), short_badge ? "PACED %.1f/s" : "PACED %.1f step/s",
                      f.control.pace_steps_per_s);
        ImGui::SameLine();
        drawBadge(badge, accentColor(theme));
    } else if (mode == RunMode::Paused && live) {
        ImGui::SameLine();
        drawBadge(short_badge ? "PAUSED" : "PAUSED at a step boundary", accentColor(theme));
        if (short_badge && ImGui::IsItemHovered())
            ImGui::SetTooltip("Paused at a step boundary: every rank waits before its next step");
    }

    // Status: scenario, step n/N, mean loss, elapsed, state.
    double loss_sum = 0.0;
    int loss_n = 0;
    for (const RankProgress& p : f.ranks)
        if (p.step >= 0 && !RunFacts::gone(p) && !std::isnan(p.last_loss)) {
            loss_sum += p.last_loss;
            ++loss_n;
        }
    if (loss_n == 0) // every rank is gone: their last losses still say where training got to
        for (const RankProgress& p : f.ranks)
            if (p.step >= 0 && !std::isnan(p.last_loss)) {
                loss_sum += p.last_loss;
                ++loss_n;
            }
    char status[160];
    char loss[32] = "-";
    if (loss_n > 0)
        std::snprintf(loss, sizeof(loss), "%.3f", loss_sum / loss_n);
    std::snprintf(status, sizeof(status), "step %d/%d   loss %s   %.1f s", f.stepsCompletedMax(),
                  f.steps_total, loss, f.elapsed_s);
    // What follows the status keeps its room (the state badge, Save, the help marker); the
    // scenario's name gives way first, elided with its full text on hover, then the status.
    // A name cut to its first few letters ("SWA...") says nothing to a room: below about
    // ten characters' room it is left out (the menu bar still shows the scenario's file).
    const ImGuiStyle& style = ImGui::GetStyle();
    const float font = ImGui::GetFontSize();
    const float after = ImGui::CalcTextSize("FINISHED").x + ImGui::CalcTextSize("Save recording...").x +
                        ImGui::CalcTextSize("(?)").x + style.FramePadding.x * 4.0f +
                        style.ItemSpacing.x * 3.0f + font * 1.5f;
    ImGui::SameLine(0.0f, font * 1.5f);
    ImGui::AlignTextToFramePadding();
    const float room = ImGui::GetContentRegionAvail().x - after;
    const float status_w = ImGui::CalcTextSize(status).x;
    const float name_room = room - status_w - font * 1.5f;
    if (name_room > font * 6.0f) {
        textElided(inputs.model->scenario().name, name_room);
        ImGui::SameLine(0.0f, font * 1.5f);
    }
    textElided(status, std::max(room, ImGui::CalcTextSize("...").x));

    ImGui::SameLine();
    if (inputs.replay) {
        drawBadge("REPLAY", palette::kTheory);
    } else if (f.finished) {
        const bool ok = inputs.failure_reason.empty();
        drawBadge(ok ? "FINISHED" : "FAILED",
                  rankStateColor(ok ? RankState::Finished : RankState::Failed, theme));
        if (!ok && ImGui::IsItemHovered())
            ImGui::SetTooltip("%s", inputs.failure_reason.c_str());
    } else {
        drawBadge("LIVE", rankStateColor(RankState::Running, theme));
    }

    ImGui::SameLine(0.0f, ImGui::GetFontSize());
    if (act.button("Save recording...", inputs.model != nullptr))
        act.openSaveDialog();
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Save the whole event stream (Ctrl+S); open it with dtlab --replay FILE");
    ImGui::SameLine();
    ImGui::AlignTextToFramePadding();
    helpMarker(helpText());
}

} // namespace dt::app
