// test_teaching_clock.cpp: the narration holds the run, end to end.
//
// dtlab under Xvfb, driven by --script, on real runs:
//   - every shipped narrated scenario: Next is pressed only when enabled
//     (wait_next); at each step with pause = true the run is held at that
//     moment (expect_held), the step's `expect` claims hold over what the
//     screen shows there (check_claims) and it is not the previous hold's
//     moment again; at the narration's last step the run is still live
//     (its last step waits for the narration), unless the scenario ends the
//     run on purpose (a fatal kill, or a step that waits for the end);
//   - the end-of-run glue: a narration waiting for an event that never comes,
//     a run whose every rank is killed; what the narration says after it;
//   - a fault-tolerant run with a killed replica under Pace 1 and 2, paused
//     longer than the quorum and join timeouts and resumed: every step
//     committed, no false failure, equal checksums.
// Screenshots of held moments go to DTLAB_BINARY_DIR/gui-artifacts.
#include "gui/e2e_support.hpp"
#include "integration/process_helpers.hpp"

#include "dtlab/recording.hpp"
#include "dtlab/scenario.hpp"
#include "model/scenario_catalog.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>

using namespace e2e;

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

// The lines print_state printed for one view ("dtlab: state: quorum: ..." -> "...").
std::vector<std::string> stateLines(const std::string& out, const std::string& view) {
    std::vector<std::string> lines;
    const std::string tag = "dtlab: state: " + view + ": ";
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);)
        if (line.rfind(tag, 0) == 0)
            lines.push_back(line.substr(tag.size()));
    return lines;
}

// The script that walks a scenario's narration as a presenter would: the
// kill a step asks for (when no [[faults]] does it), Next only once enabled,
// a screenshot at each held moment.
struct NarrationWalk {
    std::string script;
    bool run_may_end = false; // a fatal kill, or a step before the last waits for the end
    int holds = 0;
    int holds_after_end = 0; // held steps at or after the run may have ended (the run cannot stay paused)
    bool room_sizes = false; // at its first hold: what the main view shows at 1600x900/28 and 1920x1080/32
    int claims_checked = 0;  // steps whose claims the walk checks (check_claims)
};

// The moments check_claims judged, in order: "step 2" -> "topology: ... | quorum: ... | stopwatch: ...".
std::vector<std::pair<int, std::string>> judgedMoments(const std::string& out) {
    std::vector<std::pair<int, std::string>> moments;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
        int step = 0;
        const size_t at = line.find(": moment: ");
        if (line.rfind("dtlab: claims: step ", 0) == 0 && at != std::string::npos &&
            std::sscanf(line.c_str(), "dtlab: claims: step %d", &step) == 1)
            moments.emplace_back(step, line.substr(at + 10));
    }
    return moments;
}

// At a held moment: the window and text sizes of a room, and what the family's
// main view shows at each (print_state's content line); then the walk goes on
// at the app's default size (software GL draws 1920x1080 at 32 px slower, and
// two walks share the cores with their ranks).
const char* const kRoomSizesScript = "window 1600 900\nfont 28\nwait_frames 8\nprint_state\n"
                                     "window 1920 1080\nfont 32\nwait_frames 8\nprint_state\n"
                                     "window 1600 900\nfont 16\n";

// The main views that count their core content (View::shownContent).
bool countsItsContent(const std::string& main_view) {
    return main_view == "pipeline" || main_view == "quorum" || main_view == "diloco" || main_view == "memory";
}
// The families whose main view is one of those (assets/layouts.toml): only they pay for the
// room-size check (two font rebuilds and 16 frames at large sizes, about a second).
bool familyCountsItsContent(const dt::Scenario& s) {
    using dt::app::ScenarioFamily;
    const ScenarioFamily f = dt::app::familyOf(s);
    return f == ScenarioFamily::Pipeline || f == ScenarioFamily::FaultTolerance ||
           f == ScenarioFamily::Diloco || f == ScenarioFamily::Sharded;
}

NarrationWalk narrationWalk(const dt::Scenario& s, const std::string& shot_prefix) {
    NarrationWalk walk;
    std::set<int> fault_kills;
    for (const dt::FaultConfig& f : s.faults)
        if (f.action == dt::FaultAction::Kill)
            fault_kills.insert(f.rank);
    const bool ft = s.fault_tolerance.enabled;
    walk.run_may_end = !fault_kills.empty() && !ft;
    std::ostringstream out;
    for (size_t i = 0; i + 1 < s.steps.size(); ++i) {
        const dt::NarrationStep& step = s.steps[i];
        dt::NarrationCondition c;
        REQUIRE(dt::parseNarrationCondition(step.until, c));
        if (c.kind == dt::NarrationCondition::Kind::RankDies && !fault_kills.count(c.value)) {
            out << "kill " << c.value << "\n"; // the presenter presses Kill, as the step asks
            walk.run_may_end = walk.run_may_end || !ft;
        }
        if (c.kind == dt::NarrationCondition::Kind::RunFinished)
            walk.run_may_end = true;
        out << "wait_next\n";
        if (step.pause) {
            out << "expect_held\n";
            // What the screen shows at the hold, once every rank reached its gate: the step's
            // claims are checked against it and its moment printed (consecutive holds differ).
            out << "wait_settled\ncheck_claims\n"; // (wait_settled passes once the run ended)
            ++walk.claims_checked;
            if (!walk.room_sizes && !walk.run_may_end && familyCountsItsContent(s)) {
                out << kRoomSizesScript;
                walk.room_sizes = true;
            }
            out << "screenshot " << shot_prefix << "_step" << (i + 1) << ".png\n";
            ++walk.holds;
            walk.holds_after_end += walk.run_may_end ? 1 : 0;
        }
        out << "print_narration\nnext\n";
    }
    out << "wait_frames 3\n";
    // The last step's claims: at its hold, or on the finished run when it waits for the end.
    const dt::NarrationStep& last = s.steps.back();
    const bool last_holds = last.pause && !last.expect.empty() && !walk.run_may_end;
    if (last_holds) {
        out << "wait_held\nwait_settled\ncheck_claims\n";
        ++walk.claims_checked;
    }
    if (!walk.run_may_end)
        out << "expect_live\n";
    if (!last.expect.empty() && !last.pause) { // until "run finished": dtrun check allows no other
        out << "run\nwait_finished\ncheck_claims\n";
        ++walk.claims_checked;
    }
    out << "print_narration\nquit\n";
    walk.script = out.str();
    return walk;
}

std::vector<std::string> shippedScenarios() {
    std::vector<std::string> paths;
    for (const auto& entry :
         std::filesystem::directory_iterator(std::string(DTLAB_SOURCE_DIR) + "/scenarios"))
        if (entry.path().extension() == ".toml")
            paths.push_back(entry.path().string());
    std::sort(paths.begin(), paths.end());
    return paths;
}

// A small fault-tolerant run: 3 replicas, replica 1 killed at step 6, restarted
// 300 ms later; quorum timeout 2 s and join timeout 1 s (a pause is longer).
std::string ftScenario(const it::TempDir& dir, int steps) {
    it::ScenarioSpec spec;
    spec.name = "paced fault tolerance";
    spec.ranks = 3;
    spec.steps = steps;
    spec.d_model = 32;
    spec.layers = 1;
    spec.heads = 2;
    spec.extra_toml =
        "[fault_tolerance]\nenabled = true\nheartbeat_timeout_ms = 600\ncollective_timeout_ms = "
        "1500\nquorum_timeout_ms = 2000\nrestart_delay_ms = 300\n";
    spec.faults_toml = "[[faults]]\naction = \"kill\"\nrank = 1\nstep = 6\nwhen = \"allreduce\"\n";
    return dir.write("paced_ft.toml", it::scenarioToml(spec));
}

} // namespace

TEST_CASE("Every shipped narrated scenario holds its moments and lasts until its narration's last step",
          "[e2e][narration]") {
    const auto display = startDisplay();
    if (!display)
        return; // no Xvfb: skipped with a warning
    Xvfb& x = *display;
    const std::string art = artifactDir();
    it::TempDir dir("dtlab-narration");
    struct Walked {
        std::string name, path;
        dt::Scenario scenario;
        NarrationWalk walk;
    };
    std::vector<Walked> walks;
    int scenarios_with_holds = 0;
    for (const std::string& path : shippedScenarios()) {
        dt::Scenario s = dt::loadScenarioFile(path);
        if (s.steps.size() < 2)
            continue;
        const std::string name = std::filesystem::path(path).stem().string();
        NarrationWalk walk = narrationWalk(s, "narration_" + name);
        scenarios_with_holds += walk.holds > 0 ? 1 : 0;
        walks.push_back({name, path, std::move(s), std::move(walk)});
    }
    // Two scenarios walked at once (two windows on one display): each waits
    // on its own run's events and holds, so they only share the cores. The
    // next starts as soon as either ends (a queue, not fixed pairs: a long
    // walk does not keep the second window idle).
    constexpr size_t kAtOnce = 2;
    int room_checked = 0; // walks whose main view was checked at room sizes
    const auto check = [&](const Walked& w, const it::ProcessResult& r) {
        INFO(w.name << ": " << it::describe(r) << "\nscript:\n" << w.walk.script << "\nstdout:\n" << r.out);
        REQUIRE_FALSE(r.timed_out);
        CHECK(r.exit_code == 0);
        CHECK(contains(r.out, "dtlab: script done"));
        // Each held step says so in the app's own words (print_narration after expect_held).
        size_t held_lines = 0;
        for (size_t at = r.out.find("held (the run is paused at"); at != std::string::npos;
             at = r.out.find("held (the run is paused at", at + 1))
            ++held_lines;
        CHECK(held_lines >= size_t(w.walk.holds - w.walk.holds_after_end));
        CHECK(held_lines <=
              size_t(w.walk.holds) + (w.scenario.steps.back().pause ? 1 : 0)); // the last step may hold too
        // Every claim held (check_claims fails the script otherwise) and each was judged.
        const std::vector<std::pair<int, std::string>> moments = judgedMoments(r.out);
        CHECK(moments.size() == size_t(w.walk.claims_checked));
        // Consecutive holds are distinct moments, unless the second step says it is the same one.
        for (size_t i = 1; i < moments.size() && !w.walk.run_may_end; ++i) {
            const dt::NarrationStep& second = w.scenario.steps[size_t(moments[i].first - 1)];
            if (moments[i].first != moments[i - 1].first + 1 || contains(second.text, "same moment") ||
                contains(second.text, "Same moment"))
                continue;
            INFO("steps " << moments[i - 1].first << " and " << moments[i].first
                          << " hold the same moment: " << moments[i].second);
            CHECK(moments[i].second != moments[i - 1].second);
        }
        // At room sizes the family's main view shows all of its core content without scrolling:
        // "pipeline shows 2 of 2 measured stage rows at 1600x900, 28 px text".
        if (!w.walk.room_sizes)
            return;
        ++room_checked;
        const std::vector<std::string> content = stateLines(r.out, "content");
        CHECK(content.size() == 2);
        for (const std::string& line : content) {
            INFO(line);
            const std::string main = line.substr(0, line.find(' '));
            if (!countsItsContent(main))
                continue; // the timeline, bandwidth and SWARM views do not count theirs yet
            int shown = -1, total = -1;
            REQUIRE(std::sscanf(line.c_str() + main.size(), " shows %d of %d", &shown, &total) == 2);
            CHECK(total > 0);
            CHECK(shown == total);
        }
    };
    std::vector<std::pair<size_t, std::unique_ptr<it::Process>>> running; // (walk index, its dtlab)
    size_t next = 0;
    while (next < walks.size() || !running.empty()) {
        while (next < walks.size() && running.size() < kAtOnce) {
            const std::string script = dir.write(walks[next].name + ".script", walks[next].walk.script);
            running.emplace_back(next, std::make_unique<it::Process>(
                                           std::vector<std::string>{kDtlab, walks[next].path, "--script",
                                                                    script, "--screenshot-dir", art},
                                           displayOptions(x, 240.0)));
            ++next;
        }
        for (auto it_run = running.begin(); it_run != running.end();) {
            // Past its time limit wait() kills it and says it timed out.
            if (it_run->second->running() && it_run->second->secondsSinceStart() < 240.0) {
                ++it_run;
                continue;
            }
            check(walks[it_run->first], it_run->second->wait());
            it_run = running.erase(it_run);
        }
        it::sleepSeconds(0.05);
    }
    CHECK(it::waitForNoWorkers(10.0).empty());
    CHECK(scenarios_with_holds >= 20);
    CHECK(room_checked >= 15); // the pipeline, fault-tolerance, DiLoCo and sharding scenarios
}

TEST_CASE("After a run ends, the narration says what did not happen and why", "[e2e][narration]") {
    const auto display = startDisplay();
    if (!display)
        return; // no Xvfb: skipped with a warning
    Xvfb& x = *display;
    it::TempDir dir("dtlab-narration-end");

    SECTION(
        "a 3-step run waiting for a death that never comes: held at its last step, then 'did not happen'") {
        it::ScenarioSpec spec;
        spec.name = "narration end";
        spec.ranks = 2;
        spec.steps = 3;
        spec.d_model = 32;
        spec.layers = 1;
        spec.heads = 2;
        spec.extra_toml = "[[steps]]\ntext = \"Kill rank 1 now.\"\nuntil = \"rank 1 dies\"\npause = true\n\n"
                          "[[steps]]\ntext = \"The end.\"\n";
        const std::string scenario = dir.write("never.toml", it::scenarioToml(spec));
        const std::string script =
            dir.write("never.script", "wait_step 2\nwait_seconds 1\nprint_narration\n"
                                      "expect_live\nrun\nwait_finished\nprint_narration\n"
                                      "next\nprint_narration\nquit\n");
        const it::ProcessResult r =
            it::runProcess({kDtlab, scenario, "--script", script}, displayOptions(x, 120.0));
        INFO(it::describe(r) << "\nstdout:\n" << r.out);
        REQUIRE_FALSE(r.timed_out);
        CHECK(r.exit_code == 0);
        // While the narration waits, the run waits before its last step ...
        CHECK(contains(
            r.out, "dtlab: narration: step 1 of 2, until \"rank 1 dies\": the run waits before its last step "
                   "for the narration; run live"));
        // ... Run lets it finish; the condition never held: not "done".
        CHECK(contains(r.out, "step 1 of 2, until \"rank 1 dies\": did not happen (the run ended before it); "
                              "run ended"));
        CHECK_FALSE(contains(r.out, "\"rank 1 dies\": done"));
        CHECK(contains(r.out, "dtlab: narration: step 2 of 2: nothing to wait for; run ended"));
    }
    SECTION("every rank killed: a step count that was never reached did not happen") {
        it::ScenarioSpec spec;
        spec.name = "all killed";
        spec.ranks = 2;
        spec.steps = 50;
        spec.d_model = 32;
        spec.layers = 1;
        spec.heads = 2;
        spec.run_toml = "step_delay_ms = 50\n";
        spec.extra_toml = "[[steps]]\ntext = \"Wait for step 40.\"\nuntil = \"step >= 40\"\npause = true\n\n"
                          "[[steps]]\ntext = \"The end.\"\n";
        const std::string scenario = dir.write("killed.toml", it::scenarioToml(spec));
        const std::string script =
            dir.write("killed.script", "wait_step 2\nkill 0\nkill 1\nwait_finished\nprint_narration\nquit\n");
        const it::ProcessResult r =
            it::runProcess({kDtlab, scenario, "--script", script}, displayOptions(x, 120.0));
        INFO(it::describe(r) << "\nstdout:\n" << r.out);
        REQUIRE_FALSE(r.timed_out);
        CHECK(r.exit_code == 0);
        CHECK(contains(r.out, "until \"step >= 40\": did not happen (the run ended before it); run ended"));
        CHECK_FALSE(contains(r.out, "narration: paused at the moment"));
    }
    CHECK(it::waitForNoWorkers(10.0).empty());
}

TEST_CASE("A paced fault-tolerant run with a killed replica, paused past every timeout, commits every step",
          "[e2e][ft][pace]") {
    const auto display = startDisplay();
    if (!display)
        return; // no Xvfb: skipped with a warning
    Xvfb& x = *display;
    it::TempDir dir("dtlab-paced-ft");
    const int steps = 12;    // killed at 6, back by 9, 2 steps after the pause
    const double pace = 2.0; // (pace 1 added 15 s to the suite and nothing the test can see)
    const std::string recording = dir.file("paced.dtrec");
    // Paused 5 s after the restarted replica came back: longer than the
    // quorum timeout (2 s) and the join timeout (1 s).
    std::ostringstream script;
    script << "pace " << pace << "\nwait_dead 1\nwait_step 9\npause\nwait_seconds 5\nprint_narration\npace "
           << pace << "\nwait_finished\nsave_recording " << recording << "\nquit\n";
    const std::string script_path = dir.write("paced.script", script.str());
    const it::ProcessResult r =
        it::runProcess({kDtlab, ftScenario(dir, steps), "--script", script_path}, displayOptions(x, 240.0));
    INFO("pace " << pace << ": " << it::describe(r) << "\nstdout:\n" << r.out);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "dtlab: the run finished"));

    const dt::RecordingLoad load = dt::readRecording(recording);
    REQUIRE(load.complete);
    CHECK(load.record.ok);
    std::map<int, std::set<int>> committed; // rank -> steps
    std::map<int, uint64_t> last_checksum;  // rank -> checksum after its last commit
    std::map<int, int> deaths;
    for (const dt::Event& e : load.record.events) {
        if (e.rank < 0)
            continue;
        if (e.kind == dt::EventKind::Commit)
            committed[e.rank].insert(int(e.step));
        if (e.kind == dt::EventKind::ParamsChecksum)
            last_checksum[e.rank] = e.seq;
        if (e.kind == dt::EventKind::ProcessExited && e.value != 0)
            ++deaths[e.rank];
    }
    // The survivors committed every step; the only death is the scenario's kill.
    CHECK(committed[0].size() == size_t(steps));
    CHECK(committed[2].size() == size_t(steps));
    CHECK(committed[1].count(steps - 1) == 1);
    CHECK(deaths[0] == 0);
    CHECK(deaths[1] == 1);
    CHECK(deaths[2] == 0);
    REQUIRE(last_checksum.size() == 3);
    CHECK(last_checksum[0] == last_checksum[1]);
    CHECK(last_checksum[1] == last_checksum[2]);
    CHECK(it::waitForNoWorkers(10.0).empty());
}

TEST_CASE("A breakpoint set from the script pauses the live run where it was hit", "[e2e][breakpoints]") {
    const auto display = startDisplay();
    if (!display)
        return; // no Xvfb: skipped with a warning
    Xvfb& x = *display;
    it::TempDir dir("dtlab-breakpoint");
    it::ScenarioSpec spec;
    spec.name = "breakpoint";
    spec.ranks = 2;
    spec.steps = 60;
    spec.d_model = 32;
    spec.layers = 1;
    spec.heads = 2;
    spec.run_toml = "step_delay_ms = 20\n";
    const std::string scenario = dir.write("break.toml", it::scenarioToml(spec));
    const std::string recording = dir.file("break.dtrec");
    const std::string script =
        dir.write("break.script", "break step 3\nwait_step 3\nwait_seconds 1.5\nscreenshot "
                                  "breakpoint_step3.png\nsave_recording " +
                                      recording + "\nquit\n");
    const it::ProcessResult r = it::runProcess(
        {kDtlab, scenario, "--script", script, "--screenshot-dir", artifactDir()}, displayOptions(x, 120.0));
    INFO(it::describe(r) << "\nstdout:\n" << r.out);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "dtlab: breakpoint set: pause when step 3 is completed"));
    CHECK(contains(r.out, "completed step 3; paused at that event"));
    // The Session closed the gate before step 4 when the breakpoint was set
    // (a step count is known ahead), so no rank ends a step past step 3 (index
    // 2), however late its telemetry came; 1.5 s later they are still there.
    const dt::RecordingLoad load = dt::readRecording(recording);
    int64_t last_step = -1;
    for (const dt::Event& e : load.record.events)
        if (e.kind == dt::EventKind::Step && e.phase == dt::EventPhase::Span)
            last_step = std::max<int64_t>(last_step, e.step);
    CHECK(last_step == 2);
    CHECK(it::waitForNoWorkers(10.0).empty());
}

namespace {

// The `dtlab: state: VIEW: ...` lines of a script's output, in order.

// "id 3 members ..." -> 3
long quorumId(const std::string& quorum_line) {
    return std::stol(quorum_line.substr(quorum_line.find("id ") + 3));
}

} // namespace

TEST_CASE("ft_kill_replica holds at the kill before any new quorum, then at the new quorum, then at the heal",
          "[e2e][narration][holds]") {
    const auto display = startDisplay();
    if (!display)
        return; // no Xvfb: skipped with a warning
    Xvfb& x = *display;
    it::TempDir dir("dtlab-ft-holds");
    // Each held step: wait until the picture settled (no rank still running), then print what every view
    // shows.
    std::string script;
    for (int step = 1; step <= 4; ++step)
        script += "wait_next\nexpect_held\nwait_settled\nprint_state\nscreenshot ft_kill_replica_hold" +
                  std::to_string(step) + ".png\nnext\n";
    script += "quit\n";
    const it::ProcessResult r =
        it::runProcess({kDtlab, std::string(DTLAB_SOURCE_DIR) + "/scenarios/ft_kill_replica.toml", "--script",
                        dir.write("holds.script", script), "--screenshot-dir", artifactDir()},
                       displayOptions(x, 180.0));
    INFO(it::describe(r) << "\nstdout:\n" << r.out);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    const std::vector<std::string> topology = stateLines(r.out, "topology");
    const std::vector<std::string> quorum = stateLines(r.out, "quorum");
    REQUIRE(topology.size() == 4);
    REQUIRE(quorum.size() == 4);
    // 1. "step >= 10": every replica committed step 9 (the tenth) and waits before the next; none went
    // further.
    CHECK(topology[0] == "rank 0 paused step 9, rank 1 paused step 9, rank 2 paused step 9");
    // 2. "rank 1 dies", killed as its all-reduce of step 15 started: the survivors aborted step 15
    //    and wait before trying it again (last committed: 14); no new quorum yet.
    CHECK(contains(topology[1], "rank 0 paused step 14"));
    CHECK(contains(topology[1], "rank 2 paused step 14"));
    CHECK_FALSE(contains(topology[1], "rank 1 paused"));
    CHECK(quorumId(quorum[1]) == quorumId(quorum[0]));
    // 3. "new quorum forms": a new id, of the survivors alone; they committed step 15 in it.
    CHECK(quorumId(quorum[2]) != quorumId(quorum[1]));
    CHECK(contains(quorum[2], "members [0 2]"));
    CHECK(contains(topology[2], "rank 0 paused step 15"));
    // 4. "rank 1 heals": a later moment again, with replica 1 back.
    CHECK(topology[3] != topology[2]);
    CHECK_FALSE(contains(topology[3], "rank 1 restarting"));
    // Consecutive holds are distinct moments.
    for (size_t i = 1; i < topology.size(); ++i)
        CHECK((topology[i] != topology[i - 1] || quorum[i] != quorum[i - 1]));
    CHECK(it::waitForNoWorkers(10.0).empty());
}

TEST_CASE(
    "A rank_dies breakpoint holds a fault-tolerant run at the kill, before the survivors retry the step",
    "[e2e][breakpoints][holds]") {
    const auto display = startDisplay();
    if (!display)
        return; // no Xvfb: skipped with a warning
    Xvfb& x = *display;
    it::TempDir dir("dtlab-break-kill");
    const std::string script =
        dir.write("break.script", "break rank_dies\nwait_dead 1\nwait_settled\nprint_state\nquit\n");
    const it::ProcessResult r =
        it::runProcess({kDtlab, ftScenario(dir, 30), "--script", script}, displayOptions(x, 120.0));
    INFO(it::describe(r) << "\nstdout:\n" << r.out);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    const std::vector<std::string> topology = stateLines(r.out, "topology");
    REQUIRE(topology.size() == 1);
    // Replica 1 was killed as its all-reduce of step 6 started: the survivors aborted step 6
    // (last committed: 5) and wait before trying it again.
    CHECK(contains(topology[0], "rank 0 paused step 5"));
    CHECK(contains(topology[0], "rank 2 paused step 5"));
    CHECK(it::waitForNoWorkers(10.0).empty());
}
