// app.hpp: AppContext, the state of the dtlab window.
//
// It owns what is being shown (a live Session, or a recording loaded for
// replay), the RunModel the views draw from, the views themselves, the
// selection, the presentation state (theme, font size, full screen), the
// narration position and the scripted input. The main loop calls, per frame:
//
//   update()        pull new events and logs from the Session (non-blocking
//                   getters only: the GUI never waits on a rank), gather the
//                   RunFacts, run the script, rebuild the font if asked
//   draw()          between ImGui::NewFrame and ImGui::Render: menus, views,
//                   popups, overlays, keyboard shortcuts
//   afterRender()   after the draw data is rendered, before the swap:
//                   screenshots read the back buffer here
//
// Every action (kill, hang, pause, ...) also prints one line to stdout
// ("dtlab: killed rank 1"), so tests and demos can read what the app did.
//
// The views (views/view_list.cpp) never see this class: each frame the app
// hands each one a ViewInputs (viewInputs()) and acts for its buttons as
// their ViewActions; the script drives the app as its ScriptHost. The member
// functions are in app.cpp and app_*.cpp, one concern per file (app.cpp's
// header lists them).
#pragma once

#include "app_layout.hpp"
#include "dtlab/closing_check.hpp"
#include "dtlab/recording.hpp"
#include "dtlab/session.hpp"
#include "frame_times.hpp"
#include "gallery_screen.hpp"
#include "layout_file.hpp"
#include "model/breakpoints.hpp"
#include "model/icon_file.hpp"
#include "model/run_model.hpp"
#include "model/run_state_at.hpp"
#include "playback.hpp"
#include "run_facts.hpp"
#include "screen_moment.hpp"
#include "script_runner.hpp"
#include "theme.hpp"
#include "views/view.hpp"
#include "views/view_actions.hpp"
#include "views/view_inputs.hpp"
#include "widgets/time_controls.hpp"

#include <imgui.h>

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct GLFWwindow;

namespace dt::app {

// One keyboard shortcut, for the help overlay and docs/gui.md.
// The Session's slots for holds at events (Session::armEventHold).
inline constexpr const char* kNarrationHoldSlot = "narration";
inline constexpr const char* kBreakpointHoldSlot = "breakpoints";

struct Shortcut {
    const char* keys;
    const char* action;
};
[[nodiscard]] const std::vector<Shortcut>& shortcuts();

struct AppOptions {
    std::string worker_executable; // dtrun, found next to dtlab
    std::string screenshot_dir;    // --screenshot-dir; relative script screenshots go here
    std::string gallery_toml;      // assets/gallery.toml ("" = none: every scenario under "Other")
    std::string scenarios_dir;     // the shipped scenarios, the gallery's cards
    std::string assets_dir;        // assets/: themes/, layouts.toml, icons.toml ("" = built-in fallbacks)
};

class AppContext final : public ScriptHost, public ViewActions {
  public:
    explicit AppContext(AppOptions options);
    ~AppContext() override; // stops the Session: every rank process is killed
    AppContext(const AppContext&) = delete;
    AppContext& operator=(const AppContext&) = delete;

    // ---- what is shown ------------------------------------------------------
    // Stop the current run (if any) and start a Session on `scenario`.
    // Throws UsageError / std::runtime_error when the Session cannot start.
    void openScenario(const Scenario& scenario, const std::string& whatif_label = "");
    // Load a scenario file and start it; on error returns false with the
    // message (file:line:column: ...) and leaves the current run alone.
    bool openScenarioFile(const std::string& path, std::string& error);
    // Show a loaded recording (no training runs). `load.problem` is shown as a
    // banner when the file was truncated or corrupt.
    void openRecording(RecordingLoad load, const std::string& path);
    bool openRecordingFile(const std::string& path, std::string& error);
    // A .toml file as a scenario, anything else as a recording (File > Open, drops, the script).
    bool openPath(const std::string& path, std::string& error) override;
    // Stop the Session (SIGKILL every rank) and forget it; prints a summary line per rank.
    void closeRun(const std::string& reason);
    // Every live run is recorded as it goes (auto_recording.hpp). The last
    // run's recording: this app's (PATH once the run ended, PATH.partial while
    // it goes), else the newest in the folder (a dtlab cut off leaves its
    // .partial); "" = none. replayLastRun opens it (File > Replay the last run).
    [[nodiscard]] std::string lastRecordingPath() const;
    bool replayLastRun(std::string& error);

    // ---- per frame ----------------------------------------------------------
    void attachWindow(GLFWwindow* window) { m_window = window; }
    void update();
    void draw();
    void afterRender(int framebuffer_width, int framebuffer_height);
    // Before the first frame: build the font atlas without uploading it (the
    // OpenGL backend uploads it in its first NewFrame).
    void prepareFirstFrame();
    [[nodiscard]] bool quitRequested() const { return m_quit; }
    [[nodiscard]] int exitCode() const { return m_exit_code; }
    // Files dropped on the window (GLFW drop callback): opened on the next update().
    void onDrop(const std::vector<std::string>& paths);
    // Key presses from the GLFW key callback. Dear ImGui 1.86 only sees the key
    // state at each NewFrame, so a press and release within one frame (a quick
    // tap, xdotool) would be lost; shortcuts read this queue instead.
    void onKey(int key, int action, int mods);
    void setScript(ScriptRunner script);

    // ---- what views read ----------------------------------------------------
    ViewInputs viewInputs();
    [[nodiscard]] const RunModel& model() const { return m_model; }
    [[nodiscard]] const RunFacts& facts() const override { return m_facts; }
    [[nodiscard]] const Scenario& scenario() const { return m_scenario; }
    [[nodiscard]] bool hasRun() const { return m_session != nullptr || m_replay.has_value(); }
    [[nodiscard]] bool live() const { return m_session != nullptr && !m_facts.finished; }
    [[nodiscard]] bool replay() const { return m_replay.has_value(); }
    [[nodiscard]] const std::string& replayProblem() const { return m_replay_problem; }
    [[nodiscard]] int64_t nowNs() const;
    [[nodiscard]] int selectedRank() const { return m_selected_rank; }
    [[nodiscard]] const Theme& theme() const { return m_themes.themes[m_theme_index]; }
    [[nodiscard]] float fontPixels() const { return m_fonts.pixels(); }
    [[nodiscard]] const std::string& failureReason() const { return m_failure_reason; }
    // The closing checks ([[checks]]) once the run has finished; empty before.
    [[nodiscard]] const std::vector<ClosingCheckResult>& closingChecks() const { return m_checks; }

    // ---- actions (buttons, shortcuts and the script) --------------------------
    // button() (ViewActions) is a button that scripts can press (click_button
    // LABEL) and print_layout lists; disabled, it shows `why_disabled` as a tooltip.
    void killRank(int rank) override;
    void hangRank(int rank) override;
    void resumeRank(int rank) override;
    void slowRank(int rank, double delay_ms) override;
    // Fault tolerance (a live fault-tolerant run; no-ops otherwise).
    void restartRank(int rank) override;
    void nanGradients(int rank) override;
    void failNextCollective(int rank) override;
    void partitionRank(int rank, bool on) override;
    void setLighthouseRunning(bool running) override;
    // The modelled link ([network]) of one rank, or of every rank (rank -1); live runs only.
    void setLink(int rank, double bandwidth_mbit_s, double latency_ms) override;
    [[nodiscard]] bool lighthouseDown() const;
    void pauseRun() override;
    void runFree() override;
    void stepOnce() override;
    void setPace(double steps_per_s) override;
    void selectRank(int rank) override;
    void setCursor(double seconds) override;
    // The cursor's playback (app_playback.cpp; ViewActions and ScriptHost both).
    void play(double speed) override;
    void pausePlayback() override;
    void setPlaybackSpeed(double speed) override;
    void replayLast(double seconds, double speed) override;
    void cursorLive() override;
    [[nodiscard]] bool playbackPlaying() const override { return m_playback.playing(); }
    [[nodiscard]] const RunStateAt& stateAtMoment() const { return m_state_at; }
    bool saveRecording(const std::string& path, std::string& error) override;
    void setTheme(size_t index); // into m_themes.themes
    void setFontPixels(float px) override;
    void toggleFullscreen() override;
    // The scenario gallery (gallery_screen.hpp): the start screen, and File > Open (Ctrl+O).
    void openScenarioDialog() override { openGallery(); }
    void openGallery() override;
    [[nodiscard]] bool galleryOpen() const { return m_gallery_open; }
    void openSaveDialog() override { m_save_popup_requested = true; }
    void toggleHelp() override { m_show_help = !m_show_help; }
    void requestQuit() override { m_quit = true; }

    // ---- narration ------------------------------------------------------------
    [[nodiscard]] int narrationIndex() const { return m_narration_index; }
    [[nodiscard]] bool narrationCanNext() const;
    [[nodiscard]] bool narrationConditionMetNow() const; // the current step's wait really happened
    [[nodiscard]] bool narrationCanBack() const { return m_narration_index > 0; }
    void narrationNext() override;
    void narrationBack() override;
    // Predict, then run (app_exercises.cpp): the current step's question.
    // What if (app_whatif.cpp): the copy the knobs change, the rerun, the comparison.
    std::string setWhatIfKnob(const std::string& name, const std::string& value) override;
    void rerunWhatIf() override;
    // The view's button: the rerun happens at the next update(), not while the views are drawn.
    void requestWhatIfRerun() override { m_rerun_pending = true; }
    void printComparison() override;
    void lockPrediction(double value) override;
    void revealAnswer() override;
    [[nodiscard]] std::string exerciseStatus() const override;
    // A step with pause = true whose event happened pauses the live run, once.
    [[nodiscard]] bool narrationHolding() const { return m_hold.active; }
    [[nodiscard]] bool narrationNextEnabled() const override { return narrationCanNext(); }
    [[nodiscard]] bool narrationOnLastStep() const override {
        return m_narration_index + 1 >= int(m_scenario.steps.size());
    }
    // Held at this step's moment (the Session was told to pause).
    [[nodiscard]] bool narrationHeld() const override { return m_hold.active && live(); }
    [[nodiscard]] std::string narrationStatus() const override;
    void printState() override; // app_print_state.cpp
    // What the views show at their moment (app_print_state.cpp): print_state's lines and the
    // narration's screen document are read from it.
    [[nodiscard]] ScreenMoment screenMoment();
    bool checkNarrationClaims(std::string& report) override;
    void printScreen() override;
    [[nodiscard]] std::string boundNarrationText();
    // The main loop's timing of each frame (frame_times.hpp), for print_frame_times.
    void noteFrameTimes(double build_ms, double render_ms, bool drawn) {
        m_frame_times.add(build_ms, render_ms, drawn);
    }
    [[nodiscard]] std::string takeFrameTimes() override {
        std::string s = m_frame_times.summary();
        m_frame_times.clear();
        return s;
    }
    bool setBreakpoint(const std::string& kind, double arg, bool on, std::string& error) override;
    // The view id the current narration step highlights ("" = none) and the
    // seconds since the step began (the flash fades after a few seconds).
    [[nodiscard]] const std::string& highlightedView() const;
    [[nodiscard]] double highlightAge() const;

    // ---- ScriptHost (the rest) --------------------------------------------------
    void requestScreenshot(const std::string& path) override { m_screenshot_path = path; }
    [[nodiscard]] bool screenshotPending() const override { return !m_screenshot_path.empty(); }
    void requestClick(const std::string& label) override;
    [[nodiscard]] ClickState clickState() const override { return m_click_state; }
    void cancelClick() override { m_click_label.clear(); }
    void printLayout() override;
    bool setThemeByName(const std::string& name) override;
    [[nodiscard]] std::string themeNames() const override;
    bool showView(const std::string& name, bool show) override;
    void setWindowSize(int width, int height) override;
    [[nodiscard]] WindowSize displaySize() const override;
    [[nodiscard]] std::string viewsFitProblem(float min_px) const override;

  protected:
    bool drawButton(const char* label, bool enabled, const char* why_disabled, const ImVec2& size) override;
    bool noteScriptableItem(const char* label, bool pressed, bool enabled) override;

  private:
    FrameTimes m_frame_times; // noteFrameTimes / takeFrameTimes
    struct ButtonRect {
        std::string label;
        std::string window;
        ImVec2 min, max;
        bool enabled = true;
    };
    struct WindowRect {
        std::string id;
        std::string title;
        ImVec2 min, max;
        ImDrawList* draw = nullptr;  // the window's draw list (this frame)
        float content_height = 0.0f; // under the title bar, inside the padding
        // px by which its widest item (text, button, field) runs past the right edge of the
        // window or of one of its child regions that does not scroll sideways (0 = none)
        float overflow_x = 0.0f;
        std::string overflow_where; // the window or child region that overflows most
        bool tab = false;           // a tab of the shelf: its title is one of several in the tab bar
    };
    // app.cpp
    void ingestNew();
    void gatherFacts();
    void evaluateChecks(const RunRecord& record);
    void computeReplayProgress();
    void runScript();
    [[nodiscard]] View* findView(const std::string& id_or_name) const;
    void say(const std::string& line) const;
    // app_lifecycle.cpp
    void resetRunState();
    void applyRelevance();
    void printSummary(const RunRecord& record) const;
    void announceRecording() const; // at the end of a run: where its recording is
    // app_actions.cpp
    [[nodiscard]] bool rankValid(int rank) const { return rank >= 0 && rank < int(m_facts.ranks.size()); }
    // app_narration.cpp
    void drawHighlight();
    void holdNarrationMoment(); // per frame, after gatherFacts()
    // Per frame, before the events are read: the Session's holds at events
    // that fired (app_narration.cpp), and the holds to arm for the narration
    // and the breakpoints.
    void takeEventHoldHits();
    void armNarrationHold();
    void armBreakpointHold();
    void restoreRunControl(const RunControl& before);
    // app_whatif.cpp
    void keepRunForComparison();
    void startComparisonSide(const std::string& label);
    void refreshComparison(); // per frame: the live run's side every 2 s
    [[nodiscard]] WhatIfInputs whatIfInputs() const;
    // app_autograd.cpp
    void updateAutogradGraph(); // per frame: start the graph's build when its view opens, collect it
    // app_exercises.cpp
    [[nodiscard]] ExerciseState* currentExercise();
    [[nodiscard]] const ExerciseState* currentExercise() const;
    [[nodiscard]] bool exerciseMomentReached(int step, ExerciseState& state) const;
    void judgeExercises(); // per frame, after holdNarrationMoment(): every locked question whose moment came
    // app_breakpoints.cpp
    void checkBreakpoint(const Event& e); // a live run's new event: pause on a hit
    void checkHungBreakpoint(const std::vector<HungCollective>& hung); // each live frame: collective_hangs
    void onBreakpointHit(const BreakpointHit& hit);                    // pause and say which
    void drawBreakpointsMenu();
    void releaseNarrationHold();
    [[nodiscard]] bool endHoldWanted() const;
    [[nodiscard]] bool waitingAtEndHold() const;
    // app_playback.cpp
    void updatePlayback();
    void updateStateAt();
    void drawTimeBar();
    void drawCursorFrame();
    // app_layout.cpp
    void drawViews();
    void noteDrawnHeight(const View& view, const ViewTiling& tiling);
    void drawShelf(const ViewTiling& tiling, ImGuiCond cond,
                   const std::function<void(const View&, float)>& record);
    void drawTitleHelp(const View& view);
    // app_menus.cpp
    void handleShortcuts();
    void drawMenuBar();
    void drawBanner();
    void drawHelpOverlay();
    void drawGallery();
    void drawSavePopup();

    AppOptions m_options;
    GLFWwindow* m_window = nullptr;

    // What is shown.
    Scenario m_scenario;
    std::unique_ptr<Session> m_session;
    std::optional<RunRecord> m_replay;
    std::vector<ClosingCheckResult> m_checks;
    std::string m_replay_path;
    std::string m_recording_dir;  // where live runs are recorded ("" = nowhere: m_recording_note says why)
    std::string m_recording_note; // why runs are not recorded
    std::string m_recording_path; // the current (or last) live run's recording
    std::string m_replay_problem;
    std::string m_failure_reason;
    RunModel m_model;
    size_t m_events_seen = 0;
    size_t m_logs_seen = 0;
    std::vector<Event> m_event_buffer;
    std::vector<LogRecord> m_log_buffer;
    int64_t m_start_ns = 0;
    int64_t m_end_ns = 0;
    RunFacts m_facts;
    bool m_announced_finish = false;
    int64_t m_frozen_since_ns = 0; // paused and every rank waiting: the views' "now" (0 = not frozen)

    // The gallery (app_gallery.cpp): drawn instead of the views while open.
    GalleryScreen m_gallery;
    bool m_gallery_open = false;
    std::vector<int> m_gallery_keys; // keys pressed for it since the last draw()

    // What if (app_whatif.cpp).
    Scenario m_whatif_edit;
    int m_whatif_serial = 0;
    RunSide m_before_side, m_now_side;
    std::vector<ComparisonRow> m_comparison;
    double m_comparison_refreshed_s = 0.0;
    WhatIfInputs m_whatif_inputs; // this frame's, for the views
    bool m_rerun_pending = false;

    // The Autograd view's graph (app_autograd.cpp): built off the GUI thread once per run.
    std::future<AutogradGraph> m_autograd_future;
    std::optional<AutogradGraph> m_autograd_graph;
    std::string m_autograd_status;
    int m_autograd_serial = -1;
    std::optional<ModelStateReference> m_model_state; // the Memory view's, computed once per run
    int m_model_state_serial = -1;

    // Views and selection.
    std::vector<std::unique_ptr<View>> m_views; // views/view_list.cpp
    std::vector<WindowRect> m_windows_drawn;
    int m_selected_rank = -1;
    std::optional<int64_t> m_cursor_ns;     // the shared time cursor (ViewInputs::cursor_ns)
    Playback m_playback;                    // moves the cursor over wall time (app_playback.cpp)
    std::optional<int64_t> m_played_cursor; // where the playback last put the cursor (a change = a seek)
    RunStateAt m_state_at;                  // the run at the views' moment (ViewInputs::state)
    TimeControlsState m_time_controls;      // the speed and length the time controls offer
    TimelineNavigator* m_navigator = nullptr;

    // Presentation.
    ThemeSet m_themes;        // assets/themes/*.toml, "dark" first
    FamilyLayouts m_layouts;  // assets/layouts.toml: each family's main view
    FamilyIcons m_icons;      // assets/icons.toml: the gallery's family icons
    size_t m_theme_index = 0; // the theme shown
    bool m_theme_dirty = true;
    FontManager m_fonts;
    bool m_fullscreen = false;
    int m_windowed_x = 0, m_windowed_y = 0, m_windowed_w = 1600, m_windowed_h = 900;
    bool m_layout_dirty = true;
    std::vector<bool> m_open_views; // which views were open at the last tiling
    // Each view's content height as last drawn (layoutViews sizes rows from it), the main
    // view's at the last tiling, and how often its growth retiled since the last other cause.
    DrawnContentHeights m_drawn_heights;
    float m_main_height_tiled = 0.0f;
    int m_content_retiles = 0;
    int m_retile_moment = -1;           // the moment m_content_retiles counts for (noteDrawnHeight)
    bool m_retile_for_content = false;  // set while drawing: tile again next frame
    bool m_tiling_for_content = false;  // this frame tiles because the main view's content changed
    int m_shelf_selected_for_step = -1; // the narration step whose view's shelf tab was selected
    ImVec2 m_last_display_size{0, 0};
    bool m_show_help = false;
    struct KeyPress {
        int key = 0;
        int mods = 0;
    };
    std::vector<KeyPress> m_key_presses; // since the last draw()

    // Popups.
    bool m_save_popup_requested = false;
    char m_save_path[1024] = {};
    std::string m_popup_error;
    std::vector<std::string> m_dropped;
    std::string m_toast;
    double m_toast_until = 0.0;

    // Narration.
    double m_kept_pace = 0.0; // the presenter's Pace, kept across File > Open (0 = none)
    // Breakpoints (app_breakpoints.cpp): kept across runs, like a debugger's.
    BreakpointList m_breakpoints;
    bool m_breakpoints_armed = false;  // the Session holds at them (re-armed when they change or hit)
    std::string m_last_breakpoint_hit; // "" = none in this run
    double m_breakpoint_step_arg = 10.0, m_breakpoint_ms_arg = 500.0; // the menu's inputs

    int m_narration_index = 0;
    // The step text's bound {values} (boundNarrationText) and what they were read at.
    struct BoundTextKey {
        uint64_t generation = ~uint64_t(0);
        int step = -1;
        int64_t cursor_ns = -1;
        bool held = false;
        bool operator==(const BoundTextKey& o) const {
            return generation == o.generation && step == o.step && cursor_ns == o.cursor_ns && held == o.held;
        }
    };
    BoundTextKey m_bound_text_key;
    std::string m_bound_text;
    bool m_binding_text = false;
    std::vector<ExerciseState> m_exercises; // per narration step (app_exercises.cpp)
    double m_narration_started_s = 0.0;
    struct NarrationHold {
        bool active = false;    // the narration paused the run and Next has not resumed it
        int held_index = -1;    // the step whose moment paused the run (each step holds once)
        int armed_index = -1;   // the step whose moment the Session holds at (armEventHold), -1 = none
        bool cancelled = false; // Run was pressed: the holds still to come are let go
        RunControl before;      // the run control to restore on Next (free run or a pace)
        // The run's last step waits for the narration's last step (Session::
        // holdBefore), so a run never ends while the story goes on; Run lifts it.
        bool end_released = false;
    } m_hold;

    // Script.
    std::optional<ScriptRunner> m_script;
    std::string m_screenshot_path;
    std::string m_click_label;
    ClickState m_click_state = ClickState::Waiting;
    std::vector<ButtonRect> m_buttons_drawing; // this frame
    std::vector<ButtonRect> m_buttons_drawn;   // the last complete frame
    bool m_quit = false;
    int m_exit_code = 0;
};

} // namespace dt::app
