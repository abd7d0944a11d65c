// app.cpp: AppContext, the state and the frame of the dtlab window (see app.hpp).
//
// Index of this file
// [SECTION] Shortcuts and small helpers
// [SECTION] Construction, opening and closing a run
// [SECTION] Per-frame update: events in, facts, script
// [SECTION] Actions (buttons, shortcuts, script)
// [SECTION] Narration
// [SECTION] Drawing: menu bar, layout, views, highlight, overlays, popups
// [SECTION] Script host: screenshots, clicks, layout
// [SECTION] Presentation: theme, font, full screen
#include "app.hpp"

#include "dtlab/summary.hpp"

#include "dtlab/clock.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/sharding_theory.hpp"
#include "screenshot.hpp"
#include "views/view_list.hpp"

#include <GLFW/glfw3.h>
#include <imgui_internal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>

namespace dt::app {

// [SECTION] Shortcuts and small helpers ------------------------------------------

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
        {"Ctrl + O", "open a scenario or a recording"},
        {"Ctrl + S", "save a recording of the run"},
        {"Ctrl + Q", "quit (every rank process is stopped)"},
        {"Esc", "close this help or a dialog"},
        {"Timeline: wheel / drag", "zoom around the cursor / pan"},
        {"Timeline: click", "select a span (and its rank)"},
    };
    return list;
}

namespace {

double wallSeconds() {
    using clock = std::chrono::steady_clock;
    static const clock::time_point t0 = clock::now();
    return std::chrono::duration<double>(clock::now() - t0).count();
}

bool endsWith(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool fileExists(const std::string& path) {
    struct stat st{};
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The visible part of an ImGui label ("Kill##rank1" -> "Kill").
std::string visibleLabel(const std::string& label) {
    const size_t hashes = label.find("##");
    return hashes == std::string::npos ? label : label.substr(0, hashes);
}

} // namespace

void AppContext::say(const std::string& line) const {
    std::printf("dtlab: %s\n", line.c_str());
    std::fflush(stdout);
}

// [SECTION] Construction, opening and closing a run ---------------------------------

AppContext::AppContext(AppOptions options) : m_options(std::move(options)), m_views(makeViews()) {
    for (const auto& view : m_views)
        if (TimelineNavigator* navigator = view->navigator()) m_navigator = navigator;
    std::snprintf(m_save_path, sizeof(m_save_path), "dtlab-run.dtrec");
}

AppContext::~AppContext() { closeRun("dtlab closed"); }

void AppContext::resetRunState() {
    m_events_seen = 0;
    m_logs_seen = 0;
    m_facts = RunFacts{};
    m_failure_reason.clear();
    m_replay_problem.clear();
    m_announced_finish = false;
    m_selected_rank = -1;
    m_cursor_ns.reset();
    m_narration_index = 0;
    m_narration_started_s = wallSeconds();
    m_start_ns = monotonicNowNs();
    m_end_ns = 0;
    m_layout_dirty = true;
    m_checks.clear();
}

void AppContext::openScenario(const Scenario& scenario) {
    validateScenario(scenario, "");
    if (!fileExists(m_options.worker_executable))
        throw UsageError("cannot find the worker executable '" + m_options.worker_executable +
                         "': dtlab starts ranks with the dtrun built next to it (cmake --build build --target dtrun)");
    closeRun("another run was opened");
    m_replay.reset();
    resetRunState();
    m_scenario = scenario;
    m_model.reset(m_scenario, m_scenario.topology.ranks);
    SessionOptions options;
    options.scenario = m_scenario;
    options.worker_executable = m_options.worker_executable;
    m_session = std::make_unique<Session>(options);
    try {
        m_session->start();
    } catch (...) {
        m_session.reset();
        throw;
    }
    m_start_ns = monotonicNowNs();
    applyRelevance();
    gatherFacts();
    say("started \"" + m_scenario.name + "\": " + std::to_string(m_scenario.topology.ranks) + " ranks, " +
        std::to_string(m_scenario.run.steps) + " steps, " + m_scenario.strategy.kind + " (" +
        (m_scenario.path.empty() ? "built in" : m_scenario.path) + ")");
}

// Each view that has a rule opens or closes for the scenario; the others stay as the user left them.
void AppContext::applyRelevance() {
    for (const auto& view : m_views)
        if (const std::optional<bool> relevant = view->relevantTo(m_scenario)) view->open = *relevant;
}

bool AppContext::openScenarioFile(const std::string& path, std::string& error) {
    try {
        openScenario(loadScenarioFile(path));
        return true;
    } catch (const std::exception& e) {
        error = e.what();
        say("cannot open scenario: " + error);
        return false;
    }
}

void AppContext::openRecording(RecordingLoad load, const std::string& path) {
    closeRun("a recording was opened");
    resetRunState();
    m_replay = std::move(load.record);
    m_replay_path = path;
    m_replay_problem = load.complete ? "" : load.problem;
    m_scenario = m_replay->scenario;
    const int world = std::max<int>(int(m_replay->ranks.size()), m_scenario.topology.ranks);
    m_model.reset(m_scenario, world);
    m_model.ingest(m_replay->events.data(), m_replay->events.size());
    m_model.ingestLogs(m_replay->logs.data(), m_replay->logs.size());
    m_failure_reason = m_replay->ok ? "" : m_replay->failure_reason;
    computeReplayProgress();
    evaluateChecks(*m_replay);
    applyRelevance();
    say("opened recording " + path + ": \"" + m_scenario.name + "\", " + std::to_string(m_replay->events.size()) +
        " events, " + std::to_string(world) + " ranks" + (load.complete ? "" : "; INCOMPLETE: " + m_replay_problem));
}

bool AppContext::openRecordingFile(const std::string& path, std::string& error) {
    try {
        openRecording(readRecording(path), path);
        return true;
    } catch (const std::exception& e) {
        error = e.what();
        say("cannot open recording: " + error);
        return false;
    }
}

bool AppContext::openPath(const std::string& path, std::string& error) {
    return endsWith(path, ".toml") ? openScenarioFile(path, error) : openRecordingFile(path, error);
}

void AppContext::printSummary(const RunRecord& record) const {
    for (const RankInfo& info : record.ranks) {
        std::string what;
        if (!info.started) what = "never started";
        else if (!info.exited) what = "still running (stopped now)";
        else if (info.term_signal != 0)
            what = std::string(info.term_signal == SIGKILL ? "killed" : "ended") + " by signal " +
                   std::to_string(info.term_signal) + " (" + strsignal(info.term_signal) + ")";
        else what = "exited with code " + std::to_string(info.exit_code);
        if (!info.error.empty()) what += ": " + info.error;
        say("summary: rank " + std::to_string(info.rank) + " (pid " + std::to_string(info.pid) + "): " + what);
    }
}

void AppContext::closeRun(const std::string& reason) {
    if (!m_session) return;
    const RunRecord record = m_session->snapshot();
    printSummary(record);
    m_session->stop(reason);
    m_session.reset(); // the destructor waits for the monitor and kills whatever is left
    say("stopped the run (" + reason + "): every rank process is gone");
}

// [SECTION] Per-frame update: events in, facts, script --------------------------------

void AppContext::update() {
    if (!m_dropped.empty()) {
        const std::vector<std::string> paths = std::move(m_dropped);
        m_dropped.clear();
        std::string error;
        const std::string& path = paths.front();
        if (!openPath(path, error)) {
            m_toast = error;
            m_toast_until = wallSeconds() + 8.0;
        }
    }
    ingestNew();
    gatherFacts();
    runScript();
    if (m_fonts.pending()) {
        m_fonts.applyPending(true);
        m_theme_dirty = true;
        m_layout_dirty = true;
    }
    if (m_theme_dirty) {
        applyTheme(m_theme, m_fonts.pixels());
        m_theme_dirty = false;
    }
}

void AppContext::prepareFirstFrame() {
    m_fonts.applyPending(false);
    applyTheme(m_theme, m_fonts.pixels());
    m_theme_dirty = false;
}

void AppContext::ingestNew() {
    if (!m_session) return;
    m_event_buffer.clear();
    m_events_seen = m_session->copyEventsSince(m_events_seen, m_event_buffer);
    if (!m_event_buffer.empty()) {
        m_model.ingest(m_event_buffer.data(), m_event_buffer.size());
        for (const Event& e : m_event_buffer) {
            if (e.phase != EventPhase::WorkCompleted) continue;
            if (e.kind == EventKind::AllReduce) m_facts.first_allreduce_ended = true;
            if (e.kind == EventKind::AllGather) m_facts.first_allgather_ended = true;
            if (e.kind == EventKind::ReduceScatter) m_facts.first_reducescatter_ended = true;
        }
    }
    m_log_buffer.clear();
    m_logs_seen = m_session->copyLogsSince(m_logs_seen, m_log_buffer);
    if (!m_log_buffer.empty()) m_model.ingestLogs(m_log_buffer.data(), m_log_buffer.size());
}

// The scenario's closing checks on the finished run (baselines are dtrun run
// --check's: the narration panel lists those as not evaluated).
void AppContext::evaluateChecks(const RunRecord& record) {
    m_checks.clear();
    if (m_scenario.checks.empty()) return;
    m_checks = evaluateClosingChecks(m_scenario.checks, summaryJson(record), {});
}

void AppContext::gatherFacts() {
    if (!m_session) return; // a replay's facts are computed once, at load
    m_facts.ranks = m_session->progress();
    m_facts.control = m_session->runControl();
    m_facts.finished = m_session->finished();
    m_facts.live = !m_facts.finished;
    m_facts.replay = false;
    m_facts.steps_total = m_scenario.run.steps;
    if (m_facts.finished && !m_announced_finish) {
        m_announced_finish = true;
        m_end_ns = monotonicNowNs();
        const RunRecord record = m_session->snapshot(); // once, at the end of the run
        m_failure_reason = record.ok ? "" : record.failure_reason;
        evaluateChecks(record);
        say(record.ok ? "the run finished: every rank completed " + std::to_string(m_scenario.run.steps) + " steps"
                      : "the run failed: " + record.failure_reason);
    }
    m_facts.elapsed_s = double((m_facts.finished ? m_end_ns : monotonicNowNs()) - m_start_ns) / 1e9;
}

void AppContext::computeReplayProgress() {
    const RunRecord& record = *m_replay;
    const int world = m_model.world();
    m_facts = RunFacts{};
    m_facts.replay = true;
    m_facts.finished = true;
    m_facts.steps_total = m_scenario.run.steps;
    m_facts.ranks.resize(size_t(world));
    for (int r = 0; r < world; ++r) m_facts.ranks[size_t(r)].rank = r;
    for (const Event& e : record.events) {
        if (e.rank < 0 || e.rank >= world) continue;
        RankProgress& p = m_facts.ranks[size_t(e.rank)];
        if (e.kind == EventKind::Step && e.phase == EventPhase::Span && e.step >= p.step) {
            p.step = e.step;
            p.last_step_ms = double(e.dur_ns) / 1e6;
        } else if (e.kind == EventKind::LossValue && e.step >= p.step) {
            p.last_loss = e.value;
        } else if (e.phase == EventPhase::WorkCompleted) {
            if (e.kind == EventKind::AllReduce) m_facts.first_allreduce_ended = true;
            if (e.kind == EventKind::AllGather) m_facts.first_allgather_ended = true;
            if (e.kind == EventKind::ReduceScatter) m_facts.first_reducescatter_ended = true;
        }
    }
    for (int r = 0; r < world; ++r) {
        RankProgress& p = m_facts.ranks[size_t(r)];
        if (size_t(r) >= record.ranks.size()) continue;
        const RankInfo& info = record.ranks[size_t(r)];
        p.pid = info.pid;
        p.host = info.host;
        p.link_mbit_s = m_scenario.network.bandwidth_mbit_s; // changes made live are in the event log
        p.link_latency_ms = m_scenario.network.latency_ms;
        // The state as of the end of the recording.
        if (!info.started) p.state = RankState::Pending;
        else if (!info.exited) p.state = RankState::Running;
        else if (info.term_signal == SIGKILL) p.state = RankState::Killed;
        else if (info.term_signal != 0) p.state = RankState::Failed;
        else p.state = info.exit_code == 0 ? RankState::Finished : RankState::Failed;
    }
    const int64_t t0 = record.t_start_ns != 0 ? record.t_start_ns : m_model.tBegin();
    const int64_t t1 = record.t_end_ns != 0 ? record.t_end_ns : m_model.tEnd();
    m_facts.elapsed_s = t1 > t0 ? double(t1 - t0) / 1e9 : 0.0;
}

void AppContext::setScript(ScriptRunner script) {
    script.setScreenshotDir(m_options.screenshot_dir);
    m_script = std::move(script);
}

void AppContext::runScript() {
    if (!m_script) return;
    const ScriptRunner::Status status = m_script->tick(*this, wallSeconds());
    if (status == ScriptRunner::Status::Failed) {
        std::fprintf(stderr, "dtlab: script failed: %s\n", m_script->failure().c_str());
        say("script failed: " + m_script->failure());
        m_exit_code = 1;
        m_quit = true;
        m_script.reset();
    } else if (status == ScriptRunner::Status::Done) {
        say("script done");
        m_script.reset();
    }
}

void AppContext::onKey(int key, int action, int mods) {
    if (action == GLFW_PRESS || action == GLFW_REPEAT) m_key_presses.push_back(KeyPress{key, mods});
}

void AppContext::onDrop(const std::vector<std::string>& paths) {
    if (!paths.empty()) m_dropped = paths;
}

void AppContext::restartRank(int rank) {
    if (m_session) m_session->restartRank(rank);
}
void AppContext::nanGradients(int rank) {
    if (m_session) m_session->nanGradients(rank);
}
void AppContext::failNextCollective(int rank) {
    if (m_session) m_session->failNextCollective(rank);
}
void AppContext::partitionRank(int rank, bool on) {
    if (m_session) m_session->partitionRank(rank, on);
}
void AppContext::setLighthouseRunning(bool running) {
    if (!m_session) return;
    if (running) m_session->startLighthouse();
    else m_session->killLighthouse();
}
void AppContext::setLink(int rank, double bandwidth_mbit_s, double latency_ms) {
    if (!m_session || !live()) return say("cannot set the link: no live run");
    if (rank >= 0 && !rankValid(rank)) return say("cannot set the link of rank " + std::to_string(rank) + ": no such rank");
    m_session->setLink(rank, bandwidth_mbit_s, latency_ms);
    char line[128];
    const std::string who = rank < 0 ? "every rank" : "rank " + std::to_string(rank);
    if (bandwidth_mbit_s > 0)
        std::snprintf(line, sizeof(line), "link of %s: %.0f Mbit/s, %.0f ms latency", who.c_str(), bandwidth_mbit_s, latency_ms);
    else std::snprintf(line, sizeof(line), "link of %s: uncapped, %.0f ms latency", who.c_str(), latency_ms);
    say(line);
}
bool AppContext::lighthouseDown() const {
    ft::LighthouseStatus status;
    return m_session && m_session->lighthouseStatus(status) && !status.running;
}

ViewInputs AppContext::viewInputs() {
    ViewInputs in;
    in.model = hasRun() ? &m_model : nullptr;
    in.now_ns = nowNs();
    in.live = live();
    in.replay = replay();
    in.selected_rank = &m_selected_rank;
    in.navigator = m_navigator;
    in.cursor_ns = &m_cursor_ns;
    in.facts = &m_facts;
    in.ranks = &m_facts.ranks;
    in.theme = m_theme;
    in.failure_reason = m_failure_reason;
    in.closing_checks = &m_checks;
    in.narration = NarrationPosition{m_narration_index, narrationCanNext(), narrationCanBack()};
    in.actions = this;
    if (m_session) {
        ft::LighthouseStatus status;
        if (m_session->lighthouseStatus(status)) in.lighthouse = std::move(status);
    }
    // Model-state theory for the scenario's strategy (sharding_theory.hpp):
    // fp32 parameters and gradients (4 B per element), AdamW's two moments
    // (8 B), each divided by the shard count where the strategy shards it;
    // fsdp/hsdp add the unsharded units alive at peak (root + largest unit,
    // + one prefetched) to the parameters, as the engine's MemParameters
    // counter counts them. Activations and comm buffers are not modelled (0).
    if (hasRun()) {
        const ModelStateTheory theory = modelStateTheory(m_scenario);
        const std::array<int64_t, 5> bytes = {theory.parameters + theory.materialized_peak, theory.gradients,
                                              theory.optimizer_state, 0, 0};
        in.memory_theory = [bytes](int) -> std::optional<std::array<int64_t, 5>> { return bytes; };
        in.memory_theory_label = modelStateFormula(m_scenario.strategy);
        if (m_scenario.strategy.offload_optimizer) in.memory_host_theory = theory.host;
    }
    return in;
}

int64_t AppContext::nowNs() const {
    if (m_replay) return m_model.tEnd();
    if (m_session && m_facts.finished) return std::max(m_model.tEnd(), m_end_ns);
    if (m_session) return monotonicNowNs();
    return 0;
}

// [SECTION] Actions (buttons, shortcuts, script) -----------------------------------------

void AppContext::killRank(int rank) {
    if (!m_session || !rankValid(rank)) return say("cannot kill rank " + std::to_string(rank) + ": no such live rank");
    m_session->killRank(rank);
    say("killed rank " + std::to_string(rank) + " (SIGKILL)");
}

void AppContext::hangRank(int rank) {
    if (!m_session || !rankValid(rank)) return say("cannot hang rank " + std::to_string(rank) + ": no such live rank");
    m_session->hangRank(rank);
    say("hung rank " + std::to_string(rank) + " (SIGSTOP)");
}

void AppContext::resumeRank(int rank) {
    if (!m_session || !rankValid(rank)) return say("cannot resume rank " + std::to_string(rank) + ": no such live rank");
    m_session->resumeRank(rank);
    say("resumed rank " + std::to_string(rank) + " (SIGCONT)");
}

void AppContext::slowRank(int rank, double delay_ms) {
    if (!m_session || !rankValid(rank)) return say("cannot slow rank " + std::to_string(rank) + ": no such live rank");
    m_session->slowRank(rank, delay_ms);
    char line[96];
    if (delay_ms > 0) std::snprintf(line, sizeof(line), "slowed rank %d by %.0f ms per step", rank, delay_ms);
    else std::snprintf(line, sizeof(line), "rank %d back to normal speed", rank);
    say(line);
}

void AppContext::pauseRun() {
    if (!m_session) return say("cannot pause: no live run");
    m_session->pause();
    say("paused: every rank stops at its next step boundary");
}

void AppContext::runFree() {
    if (!m_session) return say("cannot run: no live run");
    m_session->resume();
    say("running freely");
}

void AppContext::stepOnce() {
    if (!m_session) return say("cannot step: no live run");
    m_session->stepOnce();
    say("one more step");
}

void AppContext::setPace(double steps_per_s) {
    if (!m_session) return say("cannot pace: no live run");
    m_session->setPace(steps_per_s);
    char line[64];
    if (steps_per_s > 0) std::snprintf(line, sizeof(line), "paced at %.1f step/s", steps_per_s);
    else std::snprintf(line, sizeof(line), "pace off: running freely");
    say(line);
}

void AppContext::selectRank(int rank) {
    m_selected_rank = rank;
    if (rank >= 0) say("selected rank " + std::to_string(rank));
}

void AppContext::setCursor(double seconds) {
    if (seconds < 0.0) {
        m_cursor_ns.reset();
        return say("cursor off");
    }
    m_cursor_ns = m_model.tBegin() + int64_t(std::llround(seconds * 1e9));
    char line[64];
    std::snprintf(line, sizeof(line), "cursor at +%.3f s", seconds);
    say(line);
}

bool AppContext::saveRecording(const std::string& path, std::string& error) {
    if (!hasRun()) {
        error = "no run to save";
        return false;
    }
    try {
        const RunRecord record = m_session ? m_session->snapshot() : *m_replay;
        writeRecording(record, path);
        say("saved recording " + path + " (" + std::to_string(record.events.size()) + " events)");
        return true;
    } catch (const std::exception& e) {
        error = e.what();
        return false;
    }
}

// [SECTION] Narration -----------------------------------------------------------------------

bool AppContext::narrationCanNext() const {
    const auto& steps = m_scenario.steps;
    if (m_narration_index + 1 >= int(steps.size())) return false;
    NarrationCondition c;
    if (!parseNarrationCondition(steps[size_t(m_narration_index)].until, c)) return true;
    return narrationConditionHolds(c, m_facts);
}

void AppContext::narrationNext() {
    if (!narrationCanNext()) return;
    ++m_narration_index;
    m_narration_started_s = wallSeconds();
    say("narration step " + std::to_string(m_narration_index + 1) + " of " + std::to_string(m_scenario.steps.size()));
}

void AppContext::narrationBack() {
    if (m_narration_index <= 0) return;
    --m_narration_index;
    m_narration_started_s = wallSeconds();
    say("narration step " + std::to_string(m_narration_index + 1) + " of " + std::to_string(m_scenario.steps.size()));
}

const std::string& AppContext::highlightedView() const {
    static const std::string none;
    const auto& steps = m_scenario.steps;
    if (!hasRun() || steps.empty()) return none;
    const View* narration = findView("narration");
    if (narration && !narration->open) return none;
    return steps[size_t(std::clamp(m_narration_index, 0, int(steps.size()) - 1))].highlight;
}

double AppContext::highlightAge() const { return wallSeconds() - m_narration_started_s; }

// [SECTION] Drawing: menu bar, layout, views, highlight, overlays, popups -------------------

void AppContext::draw() {
    m_buttons_drawing.clear();
    m_windows_drawn.clear();
    const ImVec2 display = ImGui::GetIO().DisplaySize;
    if (display.x != m_last_display_size.x || display.y != m_last_display_size.y) {
        m_last_display_size = display;
        m_layout_dirty = true;
    }
    handleShortcuts();
    drawMenuBar();
    drawViews();
    drawHighlight();
    drawBanner();
    drawOpenPopup();
    drawSavePopup();
    drawHelpOverlay();
    m_buttons_drawn.swap(m_buttons_drawing);
    // A click_button whose button was not drawn this frame keeps waiting (the script times out).
}

void AppContext::handleShortcuts() {
    ImGuiIO& io = ImGui::GetIO();
    const std::vector<KeyPress> presses = std::move(m_key_presses);
    m_key_presses.clear();
    const bool typing = io.WantTextInput;
    if (!typing)
        for (int i = 0; i < io.InputQueueCharacters.Size; ++i)
            if (io.InputQueueCharacters[i] == '?') toggleHelp();
    const bool idle = !typing && !ImGui::IsAnyItemActive() && !ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId);
    for (const KeyPress& k : presses) {
        const bool ctrl = (k.mods & GLFW_MOD_CONTROL) != 0;
        if (k.key == GLFW_KEY_F1) toggleHelp();
        else if (k.key == GLFW_KEY_ESCAPE) m_show_help = false;
        else if (k.key == GLFW_KEY_F11) toggleFullscreen();
        else if (ctrl) {
            if (k.key == GLFW_KEY_EQUAL || k.key == GLFW_KEY_KP_ADD) setFontPixels(m_fonts.pixels() + 2.0f);
            else if (k.key == GLFW_KEY_MINUS || k.key == GLFW_KEY_KP_SUBTRACT) setFontPixels(m_fonts.pixels() - 2.0f);
            else if (k.key == GLFW_KEY_0) setFontPixels(FontManager::kDefaultPx);
            else if (k.key == GLFW_KEY_T) setTheme(m_theme == ThemeKind::Dark ? ThemeKind::Light : ThemeKind::Dark);
            else if (k.key == GLFW_KEY_O) openScenarioDialog();
            else if (k.key == GLFW_KEY_S && hasRun()) openSaveDialog();
            else if (k.key == GLFW_KEY_Q) requestQuit();
        } else if (idle) {
            if (k.key == GLFW_KEY_SPACE || k.key == GLFW_KEY_RIGHT) narrationNext();
            else if (k.key == GLFW_KEY_LEFT) narrationBack();
            else if (k.key == GLFW_KEY_P && live()) {
                if (m_facts.control.mode == RunMode::Paused) runFree();
                else pauseRun();
            } else if (k.key == GLFW_KEY_S && live()) {
                stepOnce();
            }
        }
    }
}

void AppContext::drawMenuBar() {
    if (!ImGui::BeginMainMenuBar()) return;
    if (ImGui::BeginMenu("File")) {
        if (ImGui::MenuItem("Open scenario or recording...", "Ctrl+O")) openScenarioDialog();
        if (ImGui::MenuItem("Save recording...", "Ctrl+S", false, hasRun())) openSaveDialog();
        ImGui::Separator();
        if (ImGui::MenuItem("Stop the run", nullptr, false, live())) {
            m_session->stop("stopped from the File menu");
            say("stopping the run (File > Stop the run)");
        }
        ImGui::Separator();
        if (ImGui::MenuItem("Quit", "Ctrl+Q")) requestQuit();
        ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("Run")) {
        if (ImGui::MenuItem("Run", nullptr, false, live())) runFree();
        if (ImGui::MenuItem("Pause at the next step", "P", false, live())) pauseRun();
        if (ImGui::MenuItem("Step once", "S", false, live())) stepOnce();
        ImGui::Separator();
        for (double pace : {0.5, 1.0, 2.0}) {
            char label[32];
            std::snprintf(label, sizeof(label), "Pace %.1f step/s", pace);
            if (ImGui::MenuItem(label, nullptr, false, live())) setPace(pace);
        }
        if (ImGui::MenuItem("Pace off", nullptr, false, live())) setPace(0.0);
        ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("View")) {
        for (const auto& view : m_views) {
            if (!view->closable()) continue;
            if (ImGui::MenuItem(view->name().c_str(), nullptr, &view->open)) m_layout_dirty = true;
        }
        ImGui::Separator();
        if (ImGui::MenuItem("Reset layout")) m_layout_dirty = true;
        ImGui::Separator();
        if (ImGui::MenuItem("Dark theme", nullptr, m_theme == ThemeKind::Dark)) setTheme(ThemeKind::Dark);
        if (ImGui::MenuItem("Light theme (high contrast)", "Ctrl+T", m_theme == ThemeKind::Light))
            setTheme(ThemeKind::Light);
        if (ImGui::MenuItem("Bigger text", "Ctrl+=")) setFontPixels(m_fonts.pixels() + 2.0f);
        if (ImGui::MenuItem("Smaller text", "Ctrl+-")) setFontPixels(m_fonts.pixels() - 2.0f);
        if (ImGui::MenuItem("Full screen", "F11", m_fullscreen)) toggleFullscreen();
        ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("Help")) {
        if (ImGui::MenuItem("Shortcuts", "F1", m_show_help)) toggleHelp();
        ImGui::EndMenu();
    }
    // Right side: what is shown.
    std::string where = m_replay ? "replay: " + m_replay_path : (m_session ? m_scenario.path : std::string("no run"));
    if (m_fonts.usingFallback()) where += "   (DejaVu Sans not found: install fonts-dejavu-core)";
    const float w = ImGui::CalcTextSize(where.c_str()).x;
    ImGui::SameLine(std::max(ImGui::GetCursorPosX() + 20.0f, ImGui::GetWindowWidth() - w - 16.0f));
    ImGui::TextDisabled("%s", where.c_str());
    ImGui::EndMainMenuBar();
}

View* AppContext::findView(const std::string& id_or_name) const {
    for (const auto& view : m_views)
        if (view->id() == id_or_name || view->name() == id_or_name) return view.get();
    return nullptr;
}

// The narration's highlighted view: a thick pulsing border and a "LOOK HERE"
// tag for a few seconds after the step begins, then a steady thinner border.
void AppContext::drawHighlight() {
    const std::string& id = highlightedView();
    if (id.empty()) return;
    const WindowRect* rect = nullptr;
    for (const WindowRect& w : m_windows_drawn)
        if (w.id == id) rect = &w;
    if (!rect) return;
    const double age = highlightAge();
    const bool flashing = age < 4.0;
    const float pulse = flashing ? 0.5f + 0.5f * float(std::cos(age * 2.0 * M_PI * 1.2)) : 1.0f;
    ImU32 color = accentColor(m_theme);
    const float alpha = flashing ? 0.35f + 0.65f * pulse : 0.85f;
    color = (color & 0x00FFFFFF) | (ImU32(alpha * 255.0f) << 24);
    // Drawn into the view's own draw list, so popups and the help overlay stay on top.
    ImDrawList* draw = rect->draw ? rect->draw : ImGui::GetForegroundDrawList();
    draw->PushClipRect(rect->min, rect->max, false);
    const float thick = flashing ? 5.0f : 3.0f;
    draw->AddRect(ImVec2(rect->min.x + 1, rect->min.y + 1), ImVec2(rect->max.x - 1, rect->max.y - 1), color, 4.0f, 0, thick);
    if (flashing) {
        const char* tag = "LOOK HERE";
        const ImVec2 size = ImGui::CalcTextSize(tag);
        // Right after the window's title, so the title stays readable.
        const float title_w = ImGui::CalcTextSize(rect->title.c_str()).x;
        const ImVec2 p(rect->min.x + ImGui::GetStyle().FramePadding.x + title_w + 24.0f, rect->min.y + 3.0f);
        const float pad = 6.0f;
        draw->AddRectFilled(ImVec2(p.x - pad, p.y), ImVec2(p.x + size.x + pad, p.y + size.y + 2.0f), color, 4.0f);
        draw->AddText(ImVec2(p.x, p.y + 1.0f), IM_COL32(0, 0, 0, 255), tag);
    }
    draw->PopClipRect();
}

// A truncated recording's message, and short-lived action toasts, at the bottom.
void AppContext::drawBanner() {
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    const bool toast = !m_toast.empty() && wallSeconds() < m_toast_until;
    if (m_replay_problem.empty() && !toast) return;
    ImGui::SetNextWindowPos(ImVec2(d.x * 0.5f, d.y - 12.0f), ImGuiCond_Always, ImVec2(0.5f, 1.0f));
    ImGui::SetNextWindowBgAlpha(0.95f);
    ImGui::PushStyleColor(ImGuiCol_Border, warningColor(m_theme));
    ImGui::PushStyleVar(ImGuiStyleVar_WindowBorderSize, 2.0f);
    ImGui::Begin("##banner", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings |
                     ImGuiWindowFlags_NoFocusOnAppearing | ImGuiWindowFlags_NoNav);
    ImGui::PushTextWrapPos(d.x * 0.6f);
    if (!m_replay_problem.empty()) {
        ImGui::TextColored(ImColor(warningColor(m_theme)), "Incomplete recording");
        ImGui::TextWrapped("%s", m_replay_problem.c_str());
        ImGui::TextDisabled("Everything up to the last good chunk is shown.");
        if (button("Dismiss##banner")) m_replay_problem.clear();
    }
    if (toast) ImGui::TextWrapped("%s", m_toast.c_str());
    ImGui::PopTextWrapPos();
    ImGui::End();
    ImGui::PopStyleVar();
    ImGui::PopStyleColor();
}

void AppContext::drawHelpOverlay() {
    if (!m_show_help) return;
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    ImGui::SetNextWindowPos(ImVec2(d.x * 0.5f, d.y * 0.5f), ImGuiCond_Always, ImVec2(0.5f, 0.5f));
    ImGui::SetNextWindowBgAlpha(0.97f);
    ImGui::SetNextWindowFocus();
    if (ImGui::Begin("Keyboard shortcuts (F1 or ? to close)###help", &m_show_help,
                     ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoSavedSettings)) {
        if (ImGui::BeginTable("shortcuts", 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
            for (const Shortcut& s : shortcuts()) {
                ImGui::TableNextColumn();
                ImGui::TextColored(ImColor(accentColor(m_theme)), "%s", s.keys);
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(s.action);
            }
            ImGui::EndTable();
        }
        ImGui::Spacing();
        ImGui::TextDisabled("Every view has a (?) in its title bar that explains it.");
        ImGui::TextDisabled("Theme: %s   text: %.0f px", themeLabel(m_theme), m_fonts.pixels());
    }
    ImGui::End();
}

void AppContext::drawOpenPopup() {
    if (m_open_popup_requested) {
        m_open_popup_requested = false;
        m_popup_error.clear();
        ImGui::OpenPopup("Open scenario or recording");
    }
    ImGui::SetNextWindowSize(ImVec2(ImGui::GetFontSize() * 40.0f, 0), ImGuiCond_Appearing);
    if (!ImGui::BeginPopupModal("Open scenario or recording", nullptr, ImGuiWindowFlags_NoSavedSettings)) return;
    ImGui::TextWrapped("A scenario (.toml) starts a new run and stops the current one. Any other file is opened as a "
                       "recording (dtrun run ... --record FILE). You can also drop a file on the window.");
    if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
    ImGui::SetNextItemWidth(-1);
    const bool enter = ImGui::InputTextWithHint("##path", "scenarios/ddp_basics.toml", m_open_path, sizeof(m_open_path),
                                                ImGuiInputTextFlags_EnterReturnsTrue);
    // Shipped scenarios, for a quick pick.
    std::error_code ec;
    for (const char* dir : {"scenarios", "../scenarios", "../../scenarios"}) {
        if (!std::filesystem::is_directory(dir, ec)) continue;
        ImGui::TextDisabled("In %s/:", dir);
        std::vector<std::string> files;
        for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
            if (entry.path().extension() == ".toml") files.push_back(entry.path().string());
        std::sort(files.begin(), files.end());
        for (const std::string& f : files) {
            ImGui::SameLine();
            if (ImGui::SmallButton(std::filesystem::path(f).filename().string().c_str()))
                std::snprintf(m_open_path, sizeof(m_open_path), "%s", f.c_str());
        }
        break;
    }
    if (!m_popup_error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, rankStateColor(RankState::Failed, m_theme));
        ImGui::TextWrapped("%s", m_popup_error.c_str());
        ImGui::PopStyleColor();
    }
    if (button("Open##openpopup") || enter) {
        const std::string path = m_open_path;
        if (openPath(path, m_popup_error)) ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (button("Cancel##openpopup") || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE)) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
}

void AppContext::drawSavePopup() {
    if (m_save_popup_requested) {
        m_save_popup_requested = false;
        m_popup_error.clear();
        ImGui::OpenPopup("Save recording");
    }
    ImGui::SetNextWindowSize(ImVec2(ImGui::GetFontSize() * 36.0f, 0), ImGuiCond_Appearing);
    if (!ImGui::BeginPopupModal("Save recording", nullptr, ImGuiWindowFlags_NoSavedSettings)) return;
    ImGui::TextWrapped("Saves every event and log line of the run so far (versioned .dtrec format). Open it later "
                       "with: dtlab --replay FILE");
    if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
    ImGui::SetNextItemWidth(-1);
    const bool enter = ImGui::InputText("##savepath", m_save_path, sizeof(m_save_path), ImGuiInputTextFlags_EnterReturnsTrue);
    if (!m_popup_error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, rankStateColor(RankState::Failed, m_theme));
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
    if (button("Cancel##savepopup") || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE)) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
}

// [SECTION] Script host: screenshots, clicks, layout -----------------------------------------

bool AppContext::drawButton(const char* label, bool enabled, const char* why_disabled, const ImVec2& size) {
    bool pressed = plainButton(label, enabled, why_disabled, size);
    const ImGuiWindow* window = ImGui::GetCurrentWindow();
    m_buttons_drawing.push_back(
        ButtonRect{label, window ? window->Name : "", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), enabled});
    if (!m_click_label.empty() && (m_click_label == label || m_click_label == visibleLabel(label))) {
        m_click_state = enabled ? ClickState::Pressed : ClickState::Disabled;
        if (enabled) {
            pressed = true;
            say(std::string("clicked '") + label + "'");
        }
        m_click_label.clear();
    }
    return pressed && enabled;
}

void AppContext::requestClick(const std::string& label) {
    m_click_label = label;
    m_click_state = ClickState::Waiting;
}

void AppContext::printLayout() {
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    std::printf("dtlab: layout display %.0f %.0f\n", d.x, d.y);
    for (const WindowRect& w : m_windows_drawn)
        std::printf("dtlab: layout window %s \"%s\" %.0f %.0f %.0f %.0f\n", w.id.c_str(), w.title.c_str(), w.min.x,
                    w.min.y, w.max.x - w.min.x, w.max.y - w.min.y);
    for (const ButtonRect& b : m_buttons_drawn)
        std::printf("dtlab: layout button \"%s\" %.0f %.0f %.0f %.0f %s\n", b.label.c_str(), b.min.x, b.min.y,
                    b.max.x - b.min.x, b.max.y - b.min.y, b.enabled ? "enabled" : "disabled");
    std::fflush(stdout);
}

void AppContext::afterRender(int framebuffer_width, int framebuffer_height) {
    if (m_screenshot_path.empty()) return;
    std::string error;
    if (writeFramebufferPng(framebuffer_width, framebuffer_height, m_screenshot_path, error))
        say("screenshot " + m_screenshot_path + " (" + std::to_string(framebuffer_width) + "x" +
            std::to_string(framebuffer_height) + ")");
    else
        say("screenshot failed: " + error);
    m_screenshot_path.clear();
}

bool AppContext::setThemeByName(const std::string& name) {
    if (name == "dark") setTheme(ThemeKind::Dark);
    else if (name == "light") setTheme(ThemeKind::Light);
    else return false;
    return true;
}

bool AppContext::showView(const std::string& name, bool show) {
    View* view = findView(name);
    if (!view) return false;
    view->open = show;
    m_layout_dirty = true;
    return true;
}

// [SECTION] Presentation: theme, font, full screen --------------------------------------------

void AppContext::setTheme(ThemeKind kind) {
    m_theme = kind;
    m_theme_dirty = true;
    say(std::string("theme ") + themeLabel(kind));
}

void AppContext::setFontPixels(float px) {
    m_fonts.request(px);
    char line[48];
    std::snprintf(line, sizeof(line), "text size %.0f px", m_fonts.pixels());
    say(line);
}

void AppContext::toggleFullscreen() {
    if (!m_window) return say("full screen: no window");
    if (!m_fullscreen) {
        GLFWmonitor* monitor = glfwGetPrimaryMonitor();
        const GLFWvidmode* mode = monitor ? glfwGetVideoMode(monitor) : nullptr;
        if (!mode) return say("full screen: no monitor found");
        glfwGetWindowPos(m_window, &m_windowed_x, &m_windowed_y);
        glfwGetWindowSize(m_window, &m_windowed_w, &m_windowed_h);
        glfwSetWindowMonitor(m_window, monitor, 0, 0, mode->width, mode->height, mode->refreshRate);
        m_fullscreen = true;
    } else {
        glfwSetWindowMonitor(m_window, nullptr, m_windowed_x, m_windowed_y, m_windowed_w, m_windowed_h, 0);
        m_fullscreen = false;
    }
    m_layout_dirty = true;
    say(m_fullscreen ? "full screen on" : "full screen off");
}

} // namespace dt::app
