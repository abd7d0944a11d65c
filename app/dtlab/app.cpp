// app.cpp: AppContext's frame (see app.hpp): construction, the per-frame
// update (events in, facts, the script), what the views read, and draw().
//
// The rest of AppContext, one concern per file:
//   app_lifecycle.cpp    opening a scenario or a recording, stopping a run, saving it,
//                        the live run's automatic recording (auto_recording.hpp)
//   app_actions.cpp      the actions of buttons, shortcuts and the script
//   app_narration.cpp    the narration's position and its highlight
//   app_exercises.cpp    predict, then run: the narration's questions and their verdicts
//   app_whatif.cpp       what if: the knobs' copy of the scenario, the rerun, the comparison
//   app_autograd.cpp     the Autograd view's graph, built off the GUI thread
//   app_layout.cpp       the default tiling (asks the views) and the views' windows
//   app_menus.cpp        menus, keyboard shortcuts, overlays and dialogs
//   app_gallery.cpp      the scenario gallery: the start screen and File > Open
//   app_playback.cpp     the time cursor's playback, instant replay, the state at the cursor
//   app_script_host.cpp  the ScriptHost: buttons, clicks, layout, screenshots, theme, font
// The views themselves are listed in views/view_list.cpp.
#include "app.hpp"

#include "dtlab/clock.hpp"
#include "dtlab/sharding_theory.hpp"
#include "dtlab/summary.hpp"
#include "views/view_list.hpp"
#include "wall_clock.hpp"

#include <GLFW/glfw3.h>

#include <algorithm>
#include <csignal>
#include <cstdio>

namespace dt::app {

// [SECTION] Construction --------------------------------------------------------------

AppContext::AppContext(AppOptions options) : m_options(std::move(options)), m_views(makeViews()) {
    m_themes = loadThemes(m_options.assets_dir.empty() ? "" : m_options.assets_dir + "/themes");
    std::vector<std::string> view_ids;
    for (const auto& view : m_views)
        view_ids.push_back(view->id());
    m_layouts = loadFamilyLayouts(m_options.assets_dir.empty() ? "" : m_options.assets_dir + "/layouts.toml",
                                  view_ids);
    m_icons = loadFamilyIcons(m_options.assets_dir.empty() ? "" : m_options.assets_dir + "/icons.toml");
    for (const std::vector<std::string>* problems :
         {&m_themes.problems, &m_layouts.problems, &m_icons.problems})
        for (const std::string& problem : *problems)
            say("asset problem: " + problem);
    for (const auto& view : m_views)
        if (TimelineNavigator* navigator = view->navigator())
            m_navigator = navigator;
    std::snprintf(m_save_path, sizeof(m_save_path), "dtlab-run.dtrec");
}

AppContext::~AppContext() {
    closeRun("dtlab closed");
}

void AppContext::say(const std::string& line) const {
    std::printf("dtlab: %s\n", line.c_str());
    std::fflush(stdout);
}

View* AppContext::findView(const std::string& id_or_name) const {
    for (const auto& view : m_views)
        if (view->id() == id_or_name || view->name() == id_or_name)
            return view.get();
    return nullptr;
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
    takeEventHoldHits(); // first: a hit's event is then among those read next
    // The ranks' states before their events: every event a state reflects (a rank paused at its
    // gate after its step's memory report) is then in the model the views draw this frame.
    gatherFacts();
    ingestNew();
    holdNarrationMoment();
    armBreakpointHold();
    judgeExercises();
    refreshComparison();
    updateAutogradGraph();
    runScript();
    if (m_rerun_pending) { // the What if view's Rerun, between frames (not inside drawViews)
        m_rerun_pending = false;
        rerunWhatIf();
    }
    updatePlayback();
    updateStateAt();
    if (m_fonts.pending()) {
        m_fonts.applyPending(true);
        m_theme_dirty = true;
        m_layout_dirty = true;
    }
    if (m_theme_dirty) {
        applyTheme(theme(), m_fonts.pixels());
        m_theme_dirty = false;
    }
}

void AppContext::prepareFirstFrame() {
    m_fonts.applyPending(false);
    applyTheme(theme(), m_fonts.pixels());
    m_theme_dirty = false;
}

void AppContext::ingestNew() {
    if (!m_session)
        return;
    m_event_buffer.clear();
    m_events_seen = m_session->copyEventsSince(m_events_seen, m_event_buffer);
    if (!m_event_buffer.empty()) {
        m_model.ingest(m_event_buffer.data(), m_event_buffer.size());
        for (const Event& e : m_event_buffer) {
            m_facts.noteEvent(e);
            checkBreakpoint(e);
        }
    }
    m_log_buffer.clear();
    m_logs_seen = m_session->copyLogsSince(m_logs_seen, m_log_buffer);
    if (!m_log_buffer.empty())
        m_model.ingestLogs(m_log_buffer.data(), m_log_buffer.size());
}

// The scenario's closing checks on the finished run (baselines are dtrun run
// --check's: the narration panel lists those as not evaluated).
void AppContext::evaluateChecks(const RunRecord& record) {
    m_checks.clear();
    if (m_scenario.checks.empty())
        return;
    m_checks = evaluateClosingChecks(m_scenario.checks, summaryJson(record), {});
}

void AppContext::gatherFacts() {
    if (!m_session)
        return; // a replay's facts are computed once, at load
    m_facts.ranks = m_session->progress();
    m_facts.rank_died.resize(m_facts.ranks.size(), false);
    for (size_t r = 0; r < m_facts.ranks.size(); ++r) // a joined rank has no ProcessExited: its state says it
        if (RunFacts::gone(m_facts.ranks[r]))
            m_facts.rank_died[r] = true;
    m_facts.control = m_session->runControl();
    m_facts.finished = m_session->finished();
    m_facts.live = !m_facts.finished;
    m_facts.replay = false;
    m_facts.steps_total = m_scenario.run.steps;
    m_facts.stepping_ranks = m_scenario.strategy.kind == StrategyKind::Swarm ? m_scenario.swarm.trainers : -1;
    if (m_facts.finished && !m_announced_finish) {
        m_announced_finish = true;
        m_end_ns = monotonicNowNs();
        const RunRecord record = m_session->snapshot(); // once, at the end of the run
        m_failure_reason = record.ok ? "" : record.failure_reason;
        evaluateChecks(record);
        say(record.ok
                ? "the run finished: every " +
                      std::string(m_scenario.strategy.kind == StrategyKind::Swarm ? "trainer" : "rank") +
                      " completed " + std::to_string(m_scenario.run.steps) + " steps"
                : "the run failed: " + record.failure_reason);
        announceRecording();
    }
    m_facts.elapsed_s = double((m_facts.finished ? m_end_ns : monotonicNowNs()) - m_start_ns) / 1e9;
    // Hangs are time passing, not events: the diagnosis is taken each frame while the run is live
    // (and once at its end, when everything still open counts).
    if (!m_facts.finished || !m_facts.collective_hung) {
        const int64_t now = m_facts.finished ? m_end_ns : monotonicNowNs();
        const std::vector<HungCollective> hung = m_model.hungCollectives(now, m_facts.finished);
        m_facts.collective_hung = m_facts.collective_hung || !hung.empty();
        if (!m_facts.finished)
            checkHungBreakpoint(hung);
    }
    // Frozen: paused, and no rank is still finishing its step. The views'
    // "now" stays at the moment the last rank stopped, so follow-live and the
    // strips keep the picture being discussed instead of scrolling into
    // empty paused time.
    bool frozen = !m_facts.finished && m_facts.control.mode == RunMode::Paused;
    for (size_t r = 0; r < m_facts.steppingCount(); ++r) {
        const RankProgress& p = m_facts.ranks[r];
        frozen = frozen && p.state != RankState::Running && // a restarted replica starting does not step
                 !(p.state == RankState::Starting && p.incarnation == 0);
    }
    if (!frozen)
        m_frozen_since_ns = 0;
    else if (m_frozen_since_ns == 0)
        m_frozen_since_ns = monotonicNowNs();
}

void AppContext::computeReplayProgress() {
    const RunRecord& record = *m_replay;
    const int world = m_model.world();
    m_facts = RunFacts{};
    m_facts.replay = true;
    m_facts.finished = true;
    m_facts.steps_total = m_scenario.run.steps;
    m_facts.stepping_ranks = m_scenario.strategy.kind == StrategyKind::Swarm ? m_scenario.swarm.trainers : -1;
    m_facts.ranks.resize(size_t(world));
    for (int r = 0; r < world; ++r)
        m_facts.ranks[size_t(r)].rank = r;
    m_facts.collective_hung = !m_model.hungCollectives(m_model.tEnd(), true).empty();
    for (const Event& e : record.events) {
        if (e.rank < 0 || e.rank >= world)
            continue;
        m_facts.noteEvent(e);
        RankProgress& p = m_facts.ranks[size_t(e.rank)];
        if (e.kind == EventKind::Step && e.phase == EventPhase::Span && e.step >= p.step) {
            p.step = e.step;
            p.last_step_ms = double(e.dur_ns) / 1e6;
        } else if (e.kind == EventKind::LossValue && e.step >= p.step) {
            p.last_loss = e.value;
        }
    }
    for (int r = 0; r < world; ++r) {
        RankProgress& p = m_facts.ranks[size_t(r)];
        if (size_t(r) >= record.ranks.size())
            continue;
        const RankInfo& info = record.ranks[size_t(r)];
        p.pid = info.pid;
        p.host = info.host;
        p.link_mbit_s = m_scenario.network.bandwidth_mbit_s; // changes made live are in the event log
        p.link_latency_ms = m_scenario.network.latency_ms;
        // The state as of the end of the recording.
        if (!info.started)
            p.state = RankState::Pending;
        else if (!info.exited)
            p.state = RankState::Running;
        else if (info.term_signal == SIGKILL)
            p.state = RankState::Killed;
        else if (info.term_signal != 0)
            p.state = RankState::Failed;
        else
            p.state = info.exit_code == 0 ? RankState::Finished : RankState::Failed;
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
    if (!m_script)
        return;
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
    if (action == GLFW_PRESS || action == GLFW_REPEAT)
        m_key_presses.push_back(KeyPress{key, mods});
}

void AppContext::onDrop(const std::vector<std::string>& paths) {
    if (!paths.empty())
        m_dropped = paths;
}

// [SECTION] What the views read ---------------------------------------------------------

// The Memory view's model-state reference (view_inputs.hpp) for the strategies
// the ZeRO ladder covers; nullopt for pipelines, tensor parallel, DiLoCo.
static std::optional<ModelStateReference> modelStateReference(const Scenario& scenario) {
    const StrategyKind kind = scenario.strategy.kind;
    const StrategyTraits& traits = strategyTraits(kind);
    if (traits.uses_stages || !traits.trains_model || kind == StrategyKind::TensorParallel ||
        kind == StrategyKind::Diloco)
        return std::nullopt;
    auto theoryAs = [&](StrategyKind as) {
        Scenario s = scenario;
        s.strategy.kind = as;
        s.strategy.offload_optimizer = false;
        const ModelStateTheory t = modelStateTheory(s);
        return std::array<int64_t, 3>{t.parameters + t.materialized_peak, t.gradients, t.optimizer_state};
    };
    ModelStateReference ref;
    ref.replica = theoryAs(StrategyKind::Ddp);
    const ModelStateTheory own = modelStateTheory(scenario);
    ref.theory = {own.parameters + own.materialized_peak, own.gradients, own.optimizer_state};
    ref.formula = modelStateFormula(scenario.strategy);
    ref.shards = shardCount(scenario);
    const std::pair<const char*, StrategyKind> ladder[] = {{"DDP", StrategyKind::Ddp},
                                                           {"ZeRO-1", StrategyKind::Zero1},
                                                           {"ZeRO-2", StrategyKind::Zero2},
                                                           {"ZeRO-3 / FSDP", StrategyKind::Fsdp}};
    for (const auto& [label, as] : ladder) {
        if (as == kind)
            ref.current_rung = int(ref.ladder.size());
        ref.ladder.emplace_back(label, theoryAs(as));
    }
    return ref;
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
    // The state at the views' moment; at a cursor every view takes its per-rank state from it.
    in.state = hasRun() ? &m_state_at : nullptr;
    if (m_cursor_ns && hasRun())
        in.ranks = &m_state_at.ranks;
    in.playback = m_playback.state();
    in.theme = &theme();
    in.failure_reason = m_failure_reason;
    in.closing_checks = &m_checks;
    in.narration.index = m_narration_index;
    in.narration.can_next = narrationCanNext();
    in.narration.can_back = narrationCanBack();
    in.narration.condition_met = narrationConditionMetNow();
    in.narration.held = narrationHeld();
    in.narration.held_at_end = waitingAtEndHold();
    in.narration.exercise = currentExercise();
    if (m_narration_index >= 0 && size_t(m_narration_index) < m_scenario.steps.size())
        if (const View* v = findView(m_scenario.steps[size_t(m_narration_index)].highlight))
            in.narration.look_at_title = v->name();
    in.narration.text = boundNarrationText();
    in.run_serial = m_whatif_serial;
    in.autograd_graph = m_autograd_graph ? &*m_autograd_graph : nullptr;
    in.autograd_status = m_autograd_status;
    if (hasRun()) {
        m_whatif_inputs = whatIfInputs();
        in.whatif = &m_whatif_inputs;
    }
    in.actions = this;
    if (m_session) {
        ft::LighthouseStatus status;
        if (m_session->lighthouseStatus(status))
            in.lighthouse = std::move(status);
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
        if (m_scenario.strategy.offload_optimizer)
            in.memory_host_theory = theory.host;
        if (m_model_state_serial != m_whatif_serial) { // once per run: it copies the scenario per strategy
            m_model_state = modelStateReference(m_scenario);
            m_model_state_serial = m_whatif_serial;
        }
        in.model_state = m_model_state;
    }
    return in;
}

int64_t AppContext::nowNs() const {
    if (m_replay)
        return m_model.tEnd();
    if (m_session && m_facts.finished)
        return std::max(m_model.tEnd(), m_end_ns);
    // Held: the moment the last rank stopped, and never before the last work that reached the
    // screen (a rank's report of the step it finished can arrive after the app saw it stop, and a
    // hold the Session sets itself can begin before the app saw the run released).
    if (m_session && m_frozen_since_ns != 0)
        return std::max(m_frozen_since_ns, m_model.tEndOfWork());
    if (m_session)
        return monotonicNowNs();
    return 0;
}

// [SECTION] Drawing: one frame --------------------------------------------------------

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
    if (m_gallery_open) {
        drawGallery();
    } else {
        drawViews();
        drawHighlight();
        drawCursorFrame();
    }
    drawBanner();
    drawSavePopup();
    drawHelpOverlay();
    m_buttons_drawn.swap(m_buttons_drawing);
    // A click_button whose button was not drawn this frame keeps waiting (the script times out).
}

} // namespace dt::app
