// app_menus.cpp: the menu bar, the keyboard shortcuts (and their help
// overlay), the banner and toasts at the bottom, and the Save dialog (File >
// Open is the gallery: app_gallery.cpp).
#include "app.hpp"

#include "wall_clock.hpp"
#include "widgets/elide.hpp"

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace dt::app {

const std::vector<Shortcut>& shortcuts() {
    static const std::vector<Shortcut> list = {
        {"F1  or  ?", "show / hide this help"},
        {"Space  or  Right", "narration: next step (when its condition holds)"},
        {"Left", "narration: previous step"},
        {"P", "pause at the next step boundary / run again"},
        {"S", "run exactly one more step"},
        {"F11", "full screen on / off"},
        {"Ctrl + =  /  Ctrl + -", "bigger / smaller text (the font is re-rendered, stays crisp)"},
        {"Ctrl + 0", "default text size"},
        {"Ctrl + T", "dark / high-contrast light theme"},
        {"Ctrl + O", "the scenario gallery: open a scenario or a recording"},
        {"Gallery: arrows, Enter", "move between the cards, start the one in focus"},
        {"Ctrl + S", "save a recording of the run"},
        {"Ctrl + Q", "quit (every rank process is stopped)"},
        {"Esc", "close this help or a dialog; else clear the time cursor (back to live)"},
        {"Timeline: wheel / drag", "zoom around the cursor / pan"},
        {"Timeline: click", "select a span (and its rank)"},
    };
    return list;
}

void AppContext::handleShortcuts() {
    ImGuiIO& io = ImGui::GetIO();
    const std::vector<KeyPress> presses = std::move(m_key_presses);
    m_key_presses.clear();
    const bool typing = io.WantTextInput;
    if (!typing)
        for (int i = 0; i < io.InputQueueCharacters.Size; ++i)
            if (io.InputQueueCharacters[i] == '?')
                toggleHelp();
    const bool idle =
        !typing && !ImGui::IsAnyItemActive() && !ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId);
    for (const KeyPress& k : presses) {
        const bool ctrl = (k.mods & GLFW_MOD_CONTROL) != 0;
        if (m_gallery_open && !ctrl && k.key != GLFW_KEY_F1 && k.key != GLFW_KEY_F11 &&
            !(k.key == GLFW_KEY_ESCAPE && m_show_help)) {
            m_gallery_keys.push_back(k.key); // arrows, Enter, Esc: the gallery's (drawGallery)
            continue;
        }
        if (k.key == GLFW_KEY_F1)
            toggleHelp();
        else if (k.key == GLFW_KEY_ESCAPE) {
            if (m_show_help)
                m_show_help = false;
            else if (!ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId) &&
                     (m_cursor_ns || m_playback.playing()))
                cursorLive();
        } else if (k.key == GLFW_KEY_F11)
            toggleFullscreen();
        else if (ctrl) {
            if (k.key == GLFW_KEY_EQUAL || k.key == GLFW_KEY_KP_ADD)
                setFontPixels(m_fonts.pixels() + 2.0f);
            else if (k.key == GLFW_KEY_MINUS || k.key == GLFW_KEY_KP_SUBTRACT)
                setFontPixels(m_fonts.pixels() - 2.0f);
            else if (k.key == GLFW_KEY_0)
                setFontPixels(FontManager::kDefaultPx);
            else if (k.key == GLFW_KEY_T)
                setTheme((m_theme_index + 1) % m_themes.themes.size()); // the next theme file
            else if (k.key == GLFW_KEY_O)
                openScenarioDialog();
            else if (k.key == GLFW_KEY_S && hasRun())
                openSaveDialog();
            else if (k.key == GLFW_KEY_Q)
                requestQuit();
        } else if (idle) {
            if (k.key == GLFW_KEY_SPACE || k.key == GLFW_KEY_RIGHT)
                narrationNext();
            else if (k.key == GLFW_KEY_LEFT)
                narrationBack();
            else if (k.key == GLFW_KEY_P && live()) {
                if (m_facts.control.mode == RunMode::Paused)
                    runFree();
                else
                    pauseRun();
            } else if (k.key == GLFW_KEY_S && live()) {
                stepOnce();
            }
        }
    }
}

void AppContext::drawMenuBar() {
    if (!ImGui::BeginMainMenuBar())
        return;
    if (ImGui::BeginMenu("File")) {
        if (ImGui::MenuItem("Scenario gallery, or open a file...", "Ctrl+O"))
            openScenarioDialog();
        if (ImGui::MenuItem("Save recording...", "Ctrl+S", false, hasRun()))
            openSaveDialog();
        // Every live run is recorded as it goes (auto_recording.hpp).
        const std::string last = lastRecordingPath();
        if (ImGui::MenuItem("Replay the last run", nullptr, false, !last.empty() && !live())) {
            std::string error;
            if (!replayLastRun(error))
                say("cannot replay the last run: " + error);
        }
        if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
            ImGui::SetTooltip("%s", last.empty() ? "No run recorded yet: every run dtlab starts is recorded."
                                    : live()     ? "The run is still going (and being recorded)."
                                                 : ("Opens " + last).c_str());
        if (m_session && !m_recording_path.empty())
            ImGui::TextDisabled("This run's recording: %s%s", m_recording_path.c_str(),
                                live() ? ".partial (renamed when it ends)" : "");
        ImGui::Separator();
        if (ImGui::MenuItem("Stop the run", nullptr, false, live())) {
            m_session->stop("stopped from the File menu");
            say("stopping the run (File > Stop the run)");
        }
        ImGui::Separator();
        if (ImGui::MenuItem("Quit", "Ctrl+Q"))
            requestQuit();
        ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("Run")) {
        if (ImGui::MenuItem("Run", nullptr, false, live()))
            runFree();
        if (ImGui::MenuItem("Pause at the next step", "P", false, live()))
            pauseRun();
        if (ImGui::MenuItem("Step once", "S", false, live()))
            stepOnce();
        ImGui::Separator();
        for (double pace : {0.5, 1.0, 2.0}) {
            char label[32];
            std::snprintf(label, sizeof(label), "Pace %.1f step/s", pace);
            if (ImGui::MenuItem(label, nullptr, false, live()))
                setPace(pace);
        }
        if (ImGui::MenuItem("Pace off", nullptr, false, live()))
            setPace(0.0);
        ImGui::Separator();
        if (m_playback.playing() ? ImGui::MenuItem("Pause the playback")
                                 : ImGui::MenuItem("Play the time cursor", nullptr, false, hasRun())) {
            if (m_playback.playing())
                pausePlayback();
            else
                play(m_time_controls.speed);
        }
        if (ImGui::MenuItem("Instant replay: the last 10 s at 1/2x", nullptr, false, live()))
            replayLast(10.0, 0.5);
        if (ImGui::MenuItem(live() ? "Back to live" : "Back to the end", "Esc", false,
                            m_cursor_ns.has_value()))
            cursorLive();
        ImGui::Separator();
        drawBreakpointsMenu();
        ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("View")) {
        for (const auto& view : m_views) {
            if (!view->closable())
                continue;
            if (ImGui::MenuItem(view->name().c_str(), nullptr, &view->open))
                m_layout_dirty = true;
        }
        ImGui::Separator();
        if (ImGui::MenuItem("Reset layout"))
            m_layout_dirty = true;
        ImGui::Separator();
        for (size_t i = 0; i < m_themes.themes.size(); ++i) {
            const std::string label = "Theme: " + m_themes.themes[i].label;
            if (ImGui::MenuItem(label.c_str(),
                                i == (m_theme_index + 1) % m_themes.themes.size() ? "Ctrl+T" : nullptr,
                                i == m_theme_index))
                setTheme(i);
        }
        if (ImGui::MenuItem("Bigger text", "Ctrl+="))
            setFontPixels(m_fonts.pixels() + 2.0f);
        if (ImGui::MenuItem("Smaller text", "Ctrl+-"))
            setFontPixels(m_fonts.pixels() - 2.0f);
        if (ImGui::MenuItem("Full screen", "F11", m_fullscreen))
            toggleFullscreen();
        ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("Help")) {
        if (ImGui::MenuItem("Shortcuts", "F1", m_show_help))
            toggleHelp();
        ImGui::EndMenu();
    }
    drawTimeBar();
    // Right side: what is shown.
    std::string where =
        m_replay ? "replay: " + m_replay_path : (m_session ? m_scenario.path : std::string("no run"));
    if (m_fonts.usingFallback())
        where += "   (DejaVu Sans not found: install fonts-dejavu-core)";
    // Right-aligned; elided with "..." (whole on hover) when the menus leave too little room.
    const float right =
        ImGui::GetWindowWidth() - ImGui::GetStyle().WindowPadding.x - ImGui::GetStyle().ItemSpacing.x;
    const float x = std::max(ImGui::GetCursorPosX() + 20.0f, right - ImGui::CalcTextSize(where.c_str()).x);
    ImGui::SameLine(x);
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    textElided(where, std::max(0.0f, right - x));
    ImGui::PopStyleColor();
    ImGui::EndMainMenuBar();
}

// A truncated recording's message, and short-lived action toasts, at the bottom.
void AppContext::drawBanner() {
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    const bool toast = !m_toast.empty() && wallSeconds() < m_toast_until;
    if (m_replay_problem.empty() && !toast)
        return;
    ImGui::SetNextWindowPos(ImVec2(d.x * 0.5f, d.y - 12.0f), ImGuiCond_Always, ImVec2(0.5f, 1.0f));
    ImGui::SetNextWindowBgAlpha(0.95f);
    ImGui::PushStyleColor(ImGuiCol_Border, warningColor(theme()));
    ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 2.0f);
    ImGui::Begin("##banner", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize |
                     ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
                     ImGuiWindowFlags_NoNav);
    ImGui::PushTextWrapPos(d.x * 0.6f);
    if (!m_replay_problem.empty()) {
        ImGui::TextColored(ImColor(warningColor(theme())), "Incomplete recording");
        ImGui::TextWrapped("%s", m_replay_problem.c_str());
        ImGui::TextDisabled("Everything up to the last good chunk is shown.");
        if (button("Dismiss##banner"))
            m_replay_problem.clear();
    }
    if (toast)
        ImGui::TextWrapped("%s", m_toast.c_str());
    ImGui::PopTextWrapPos();
    ImGui::End();
    ImGui::PopStyleVar();
    ImGui::PopStyleColor();
}

void AppContext::drawHelpOverlay() {
    if (!m_show_help)
        return;
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    ImGui::SetNextWindowPos(ImVec2(d.x * 0.5f, d.y * 0.5f), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
    ImGui::SetNextWindowBgAlpha(0.97f);
    ImGui::SetNextWindowFocus();
    if (ImGui::Begin("Keyboard shortcuts (F1 or ? to close)###help", &m_show_help,
                     ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoCollapse |
                         ImGuiWindowFlags_NoSavedSettings)) {
        if (ImGui::BeginTable("shortcuts", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
            for (const Shortcut& s : shortcuts()) {
                ImGui::TableNextColumn();
                ImGui::TextColored(ImColor(accentColor(theme())), "%s", s.keys);
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(s.action);
            }
            ImGui::EndTable();
        }
        ImGui::Spacing();
        ImGui::TextDisabled("Every view has a (?) in its title bar that explains it.");
        ImGui::TextDisabled("Theme: %s   text: %.0f px", theme().label.c_str(), m_fonts.pixels());
    }
    ImGui::End();
}

void AppContext::drawSavePopup() {
    if (m_save_popup_requested) {
        m_save_popup_requested = false;
        m_popup_error.clear();
        ImGui::OpenPopup("Save recording");
    }
    ImGui::SetNextWindowSize(ImVec2(ImGui::GetFontSize() * 36.0f, 0), ImGuiCond_Appearing);
    if (!ImGui::BeginPopupModal("Save recording", nullptr, ImGuiWindowFlags_NoSavedSettings))
        return;
    ImGui::TextWrapped(
        "Saves every event and log line of the run so far (versioned .dtrec format). Open it later "
        "with: dtlab --replay FILE");
    if (ImGui::IsWindowAppearing())
        ImGui::SetKeyboardFocusHere();
    ImGui::SetNextItemWidth(-1);
    const bool enter = ImGui::InputText("##savepath", m_save_path, sizeof(m_save_path),
                                        ImGuiInputTextFlags_EnterReturnsTrue);
    if (!m_popup_error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, rankStateColor(RankState::Failed, theme()));
        ImGui::TextWrapped("%s", m_popup_error.c_str());
        ImGui::PopStyleColor();
    }
    if (button("Save##savepopup") || enter) {
        if (saveRecording(m_save_path, m_popup_error)) {
            m_toast = std::string("saved ") + m_save_path;
            m_toast_until = wallSeconds() + 4.0;
            ImGui::CloseCurrentPopup();
        }
    }
    ImGui::SameLine();
    if (button("Cancel##savepopup") || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE))
        ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
}

} // namespace dt::app
