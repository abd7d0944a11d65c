// app_lifecycle.cpp: what the app shows: starting a scenario, opening a
// recording (replay), the views that belong to it, stopping the run and
// saving it (see app.hpp). Every live run is recorded as it goes into
// dtlab's own folder (auto_recording.hpp): File > Replay the last run.
#include "app.hpp"

#include "auto_recording.hpp"

#include "dtlab/clock.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/summary.hpp"
#include "wall_clock.hpp"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <ctime>
#include <sys/stat.h>
#include <thread>

namespace dt::app {

namespace {

bool endsWith(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool fileExists(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

} // namespace

void AppContext::resetRunState() {
    m_events_seen = 0;
    m_logs_seen = 0;
    m_facts = RunFacts{};
    m_breakpoints.resetRun();
    m_breakpoints_armed = false; // a new Session: arm it
    m_last_breakpoint_hit.clear();
    m_failure_reason.clear();
    m_replay_problem.clear();
    m_announced_finish = false;
    m_selected_rank = -1;
    m_cursor_ns.reset();
    m_narration_index = 0;
    m_exercises.clear();
    m_shelf_selected_for_step = -1;
    m_hold = NarrationHold{};
    m_frozen_since_ns = 0;
    m_narration_started_s = wallSeconds();
    m_start_ns = monotonicNowNs();
    m_end_ns = 0;
    m_layout_dirty = true;
    m_checks.clear();
}

void AppContext::openScenario(const Scenario& scenario, const std::string& whatif_label) {
    validateScenario(scenario, "");
    if (!fileExists(m_options.worker_executable))
        throw UsageError(
            "cannot find the worker executable '" + m_options.worker_executable +
            "': dtlab starts ranks with the dtrun built next to it (cmake --build build --target dtrun)");
    keepRunForComparison(); // the run being replaced: the comparison's "before"
    closeRun("another run was opened");
    m_replay.reset();
    resetRunState();
    m_scenario = scenario;
    m_model.reset(m_scenario, m_scenario.topology.ranks);
    SessionOptions options;
    options.scenario = m_scenario;
    options.worker_executable = m_options.worker_executable;
    // Many ranks on few cores: they run at a lower priority so the window keeps drawing.
    const unsigned cores = std::thread::hardware_concurrency();
    if (ranksCrowdTheCores(m_scenario.topology.ranks, cores))
        options.rank_niceness = kCrowdedRankNiceness;
    if (m_recording_dir.empty() && m_recording_note.empty())
        m_recording_dir = autoRecordingDir(m_recording_note);
    if (!m_recording_dir.empty())
        options.record_path = autoRecordingPath(m_recording_dir, m_scenario.name, std::time(nullptr));
    m_session = std::make_unique<Session>(options);
    try {
        m_session->start();
        // The run's last step waits for the narration's last step.
        if (m_scenario.steps.size() >= 2 && m_scenario.run.steps >= 2)
            m_session->holdBefore(m_scenario.run.steps - 1);
        // The presenter's Pace carries over to the next scenario opened.
        if (m_kept_pace > 0)
            m_session->setPace(m_kept_pace);
    } catch (...) {
        m_session.reset();
        throw;
    }
    startComparisonSide(whatif_label.empty() ? "" : m_scenario.name + " (" + whatif_label + ")");
    m_recording_path = options.record_path;
    if (!m_recording_path.empty()) {
        say("recording this run to " + partialRecordingPath(m_recording_path) + " (renamed to " +
            m_recording_path + " when it ends)");
        const std::vector<std::string> removed = pruneAutoRecordings(m_recording_dir, kAutoRecordingsKept);
        if (!removed.empty())
            say("removed " + std::to_string(removed.size()) + " older recording(s) from " + m_recording_dir +
                ": dtlab keeps its last " + std::to_string(kAutoRecordingsKept));
    } else {
        say("this run is not recorded: " + m_recording_note);
    }
    m_start_ns = monotonicNowNs();
    applyRelevance();
    gatherFacts();
    if (options.rank_niceness > 0)
        say(std::to_string(m_scenario.topology.ranks) + " ranks on " + std::to_string(cores) +
            " cores: the ranks run at nice +" + std::to_string(options.rank_niceness) +
            " so that this window keeps drawing (their step times include the wait for a core)");
    say("started \"" + m_scenario.name + "\": " + std::to_string(m_scenario.topology.ranks) + " ranks, " +
        std::to_string(m_scenario.run.steps) + " steps, " + strategyKindName(m_scenario.strategy.kind) +
        " (" + (m_scenario.path.empty() ? "built in" : m_scenario.path) + ")");
}

// Each view that has a rule opens or closes for the scenario; the others stay as the user left them.
void AppContext::applyRelevance() {
    for (const auto& view : m_views)
        if (const std::optional<bool> relevant = view->relevantTo(m_scenario))
            view->open = *relevant;
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
    keepRunForComparison();
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
    startComparisonSide("recording " + path);
    m_now_side.summary = summaryJson(*m_replay); // a recording's side is complete at once
    m_now_side.finished = true;
    if (!m_before_side.summary.empty())
        m_comparison = compareRuns(m_before_side, m_now_side);
    say("opened recording " + path + ": \"" + m_scenario.name + "\", " +
        std::to_string(m_replay->events.size()) + " events, " + std::to_string(world) + " ranks" +
        (load.complete ? "" : "; INCOMPLETE: " + m_replay_problem));
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
    const bool opened =
        endsWith(path, ".toml") ? openScenarioFile(path, error) : openRecordingFile(path, error);
    if (opened)
        m_gallery_open = false; // the run it opened is what the room should see now
    return opened;
}

void AppContext::printSummary(const RunRecord& record) const {
    for (const RankInfo& info : record.ranks) {
        std::string what;
        if (!info.started)
            what = "never started";
        else if (!info.exited)
            what = "still running (stopped now)";
        else if (info.term_signal != 0)
            what = std::string(info.term_signal == SIGKILL ? "killed" : "ended") + " by signal " +
                   std::to_string(info.term_signal) + " (" + strsignal(info.term_signal) + ")";
        else
            what = "exited with code " + std::to_string(info.exit_code);
        if (!info.error.empty())
            what += ": " + info.error;
        say("summary: rank " + std::to_string(info.rank) + " (pid " + std::to_string(info.pid) +
            "): " + what);
    }
}

void AppContext::closeRun(const std::string& reason) {
    if (!m_session)
        return;
    const RunRecord record = m_session->snapshot();
    printSummary(record);
    m_session->stop(reason);
    m_session.reset(); // the destructor waits for the monitor and kills whatever is left
    say("stopped the run (" + reason + "): every rank process is gone");
}

void AppContext::announceRecording() const {
    if (!m_session || m_recording_path.empty())
        return;
    const RecordingStatus status = m_session->recordingStatus();
    if (status.finished)
        say("the run's recording: " + status.path + " (" + std::to_string(status.events_written) +
            " events; File > Replay the last run)");
    else if (!status.error.empty())
        say("the run's recording failed: " + status.error);
}

std::string AppContext::lastRecordingPath() const {
    if (!m_recording_path.empty()) {
        if (fileExists(m_recording_path))
            return m_recording_path;
        if (fileExists(partialRecordingPath(m_recording_path)))
            return partialRecordingPath(m_recording_path);
    }
    std::string note;
    const std::string dir = m_recording_dir.empty() ? autoRecordingDir(note) : m_recording_dir;
    return dir.empty() ? "" : newestAutoRecording(dir);
}

bool AppContext::replayLastRun(std::string& error) {
    const std::string path = lastRecordingPath();
    if (path.empty()) {
        error = "no recording of a run yet";
        return false;
    }
    if (live()) {
        error = "the run is still going: stop it first (File > Stop the run)";
        return false;
    }
    return openRecordingFile(path, error);
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

} // namespace dt::app
