// test_e2e.cpp: the real dtlab under Xvfb, driving a real multi-process run.
//
// Each test starts its own Xvfb on a free display number, launches dtlab
// (DTLAB_PATH) on a small scenario it writes itself, and drives it with the
// app's scripted input (--script) or with xdotool clicking the on-screen Kill
// button at the rectangle the app printed (print_layout). It then checks what
// the app printed ("dtlab: killed rank 1"), the recording the script saved
// (rank 1 ended by signal 9), the screenshots (non-trivial PNGs, kept under
// DTLAB_BINARY_DIR/gui-artifacts/ for people to look at), and that no
// `dtrun worker` process is left. Without Xvfb the display tests are skipped
// with a warning. The command-line checks need no display at all.
//
// dtlab's exit codes: 0 closed or quit by the script, 1 no display / script
// failure at run time, 2 bad flag, scenario, recording or script.
#include "gui/e2e_support.hpp"
#include "gui/synthetic_kill.hpp"
#include "gui/views_fixture.hpp"
#include "integration/process_helpers.hpp"

#include "dtlab/recording.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

using namespace e2e;

namespace {

// The scenario every GUI test runs: 3 ranks of a small TinyGPT, enough steps
// to still be running when the test acts, a short collective timeout so the
// survivors of a kill fail fast.
std::string writeScenario(const it::TempDir& dir, int steps = 400) {
    it::ScenarioSpec spec;
    spec.name = "gui e2e";
    spec.ranks = 3;
    spec.steps = steps;
    spec.batch_per_rank = 4;
    spec.d_model = 64;
    spec.layers = 2;
    spec.heads = 2;
    spec.bucket_mb = 0.25;
    spec.timeout_s = 5.0;
    return dir.write("gui_e2e.toml", it::scenarioToml(spec));
}

// Ranks 0..n-1 of a synthetic recording, each started and exited cleanly.
void addFinishedRanks(dt::RunRecord& record, int n) {
    for (int r = 0; r < n; ++r) {
        dt::RankInfo info;
        info.rank = r;
        info.pid = 1000 + r;
        info.host = "synthetic";
        info.started = info.exited = true;
        info.exit_code = 0;
        record.ranks.push_back(info);
    }
}

} // namespace

TEST_CASE("dtlab refuses bad input before opening a window", "[e2e]") {
    requireDtlab();
    it::TempDir dir("dtlab-gui");

    SECTION("an unknown flag is a usage error (exit 2)") {
        const it::ProcessResult r = it::runProcess({kDtlab, "--bogus"}, {{}, {}, 30.0, ""});
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
        CHECK(r.err.find("--bogus") != std::string::npos);
    }

    SECTION("a bad scenario is reported as file:line:column (exit 2)") {
        const std::string path =
            dir.write("bad.toml", "[scenario]\nname = \"x\"\n[[steps]]\ntext = \"t\"\nuntil = \"soon\"\n");
        const it::ProcessResult r = it::runProcess({kDtlab, path}, {{{"DISPLAY", ":0"}}, {}, 30.0, ""});
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
        CHECK(r.err.find(path + ":5:9: error: [[steps]] until") != std::string::npos);
    }

    SECTION("a bad script line is reported as file:line (exit 2)") {
        const std::string scenario = writeScenario(dir);
        const std::string script = dir.write("bad.script", "wait_step 1\nkil 1\n");
        const it::ProcessResult r =
            it::runProcess({kDtlab, scenario, "--script", script}, {{}, {}, 30.0, ""});
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
        CHECK(r.err.find(script + ":2: unknown command 'kil'") != std::string::npos);
    }

    SECTION("a script naming a rank the run does not have is refused (exit 2)") {
        const std::string scenario = writeScenario(dir);
        const std::string script = dir.write("bad.script", "kill 7\n");
        const it::ProcessResult r =
            it::runProcess({kDtlab, scenario, "--script", script}, {{}, {}, 30.0, ""});
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
        CHECK(r.err.find(":1: rank 7 does not exist") != std::string::npos);
    }

    SECTION("a file that is not a recording is refused (exit 2)") {
        const std::string junk = dir.write("junk.dtrec", "this is not a recording");
        const it::ProcessResult r = it::runProcess({kDtlab, "--replay", junk}, {{}, {}, 30.0, ""});
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
    }

    SECTION("without a display it exits 1 and points to dtrun") {
        const std::string scenario = writeScenario(dir);
        const it::ProcessResult r =
            it::runProcess({kDtlab, scenario}, {{}, {"DISPLAY", "WAYLAND_DISPLAY"}, 30.0, ""});
        INFO(it::describe(r));
        CHECK(r.exit_code == 1);
        CHECK(r.err.find("no display") != std::string::npos);
        CHECK(r.err.find("dtrun run SCENARIO.toml") != std::string::npos);
        CHECK(it::runningWorkerPids().empty());
    }
}

TEST_CASE("a scripted Kill in dtlab kills rank 1 and the screenshots show it", "[e2e]") {
    const auto display = startDisplay();
    if (!display)
        return; // no Xvfb: skipped with a warning
    Xvfb& x = *display;
    // Catch2 enters the test case once per SECTION: dtlab runs once (statics)
    // and every section reads what it left.
    static it::TempDir dir("dtlab-gui");
    const std::string art = artifactDir();
    const std::string recording = dir.file("killed.dtrec");
    static const std::string script =
        dir.write("kill.script", "# scripted Kill: the same path as pressing the button\n"
                                 "wait_step 2\n"
                                 "screenshot e2e_running.png\n"
                                 "select 1\n"
                                 "kill 1\n"
                                 "wait_dead 1\n"
                                 "wait_seconds 1.5\n"
                                 "screenshot e2e_killed.png\n"
                                 "save_recording " +
                                     recording +
                                     "\n"
                                     "quit\n");
    static const it::ProcessResult r = it::runProcess(
        {kDtlab, writeScenario(dir), "--script", script, "--screenshot-dir", art}, displayOptions(x, 180.0));
    INFO(it::describe(r) << "\nstdout:\n" << r.out);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("dtlab: killed rank 1 (SIGKILL)") != std::string::npos);
    CHECK(r.out.find("dtlab: script done") != std::string::npos);
    CHECK(r.out.find("dtlab: summary: rank 1") != std::string::npos);

    SECTION("the saved recording says rank 1 ended by signal 9") {
        const dt::RecordingLoad load = dt::readRecording(recording);
        CHECK(load.complete);
        REQUIRE(load.record.ranks.size() == 3);
        CHECK(load.record.ranks[1].exited);
        CHECK(load.record.ranks[1].term_signal == SIGKILL);
        CHECK(load.record.ranks[0].term_signal != SIGKILL);
        CHECK_FALSE(load.record.events.empty());
    }
    SECTION("the screenshots were written and are not blank") {
        checkScreenshot(art + "/e2e_running.png");
        checkScreenshot(art + "/e2e_killed.png");
    }
    SECTION("no rank process is left") {
        checkNoWorkerLeft(r.out);
    }
}

TEST_CASE("in a fault-tolerant run, Kill in the quorum view is followed by a restart and a heal",
          "[e2e][ft]") {
    const auto display = startDisplay();
    if (!display)
        return; // no Xvfb: skipped with a warning
    Xvfb& x = *display;
    it::TempDir dir("dtlab-gui");
    const std::string art = artifactDir();
    const std::string recording = dir.file("ft.dtrec");
    it::ScenarioSpec spec;
    spec.name = "gui e2e fault tolerance";
    spec.ranks = 3;
    spec.steps = 2000; // the script quits long before
    spec.d_model = 32;
    spec.layers = 1;
    spec.heads = 2;
    spec.run_toml = "step_delay_ms = 40\n";
    spec.extra_toml = "[fault_tolerance]\nenabled = true\nrestart_delay_ms = 300\n";
    const std::string scenario = dir.write("ft.toml", it::scenarioToml(spec));
    const std::string script = dir.write("ft.script", "wait_step 5\n"
                                                      "select 1\n"
                                                      "click_button Kill##q\n"
                                                      "wait_seconds 4\n"
                                                      "screenshot e2e_quorum_healed.png\n"
                                                      "save_recording " +
                                                          recording +
                                                          "\n"
                                                          "quit\n");
    const it::ProcessResult r = it::runProcess(
        {kDtlab, scenario, "--script", script, "--screenshot-dir", art}, displayOptions(x, 180.0));
    INFO(it::describe(r) << "\nstdout:\n" << r.out);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    const dt::RecordingLoad load = dt::readRecording(recording);
    REQUIRE(load.complete);
    bool restarted = false, healed = false, killed = false;
    for (const dt::Event& e : load.record.events) {
        killed = killed || (e.kind == dt::EventKind::FaultInjected && e.rank == 1 && e.value == SIGKILL);
        restarted = restarted || (e.kind == dt::EventKind::RankRestarted && e.rank == 1);
        healed = healed || (e.kind == dt::EventKind::Heal && e.rank == 1 && e.value == 0 && e.bytes > 0);
    }
    CHECK(killed);
    CHECK(restarted);
    CHECK(healed);
    checkScreenshot(art + "/e2e_quorum_healed.png");
    checkNoWorkerLeft(r.out);
}

TEST_CASE("clicking Kill with xdotool at the printed layout kills rank 1", "[e2e]") {
    requireDtlab();
    if (!onPath("Xvfb") || !onPath("xdotool")) {
        WARN("Xvfb or xdotool is not installed (apt-get install xvfb xdotool): skipping the click test");
        return;
    }
    Xvfb x;
    REQUIRE(x.ok());
    it::TempDir dir("dtlab-gui");
    const std::string art = artifactDir();
    const std::string recording = dir.file("clicked.dtrec");
    const std::string script = dir.write("click.script", "wait_step 2\n"
                                                         "print_layout\n"
                                                         "wait_dead 1\n"
                                                         "wait_seconds 1.5\n"
                                                         "screenshot e2e_clicked.png\n"
                                                         "save_recording " +
                                                             recording +
                                                             "\n"
                                                             "quit\n");
    it::Process dtlab({kDtlab, writeScenario(dir), "--script", script, "--screenshot-dir", art},
                      displayOptions(x, 180.0));

    // The Kill button of rank 1, as the app laid it out: "x y w h" in window pixels.
    const std::regex kill_line(R"re(dtlab: layout button "Kill##rank1" (\d+) (\d+) (\d+) (\d+) enabled)re");
    std::smatch m;
    std::string out;
    const bool laid_out = it::waitFor(
        [&] {
            out = dtlab.stdoutSoFar();
            return std::regex_search(out, m, kill_line) || !dtlab.running();
        },
        120.0);
    INFO("stdout so far:\n" << out << "\nstderr:\n" << dtlab.stderrSoFar());
    REQUIRE(laid_out);
    REQUIRE(std::regex_search(out, m, kill_line));
    const int cx = std::stoi(m[1].str()) + std::stoi(m[3].str()) / 2;
    const int cy = std::stoi(m[2].str()) + std::stoi(m[4].str()) / 2;

    const it::ProcessOptions xo = displayOptions(x, 20.0);
    const std::string xdotool = toolPath("xdotool");
    const it::ProcessResult search = it::runProcess({xdotool, "search", "--sync", "--name", "^dtlab$"}, xo);
    INFO(it::describe(search) << " " << search.out);
    REQUIRE(search.exit_code == 0);
    const std::string window = search.out.substr(0, search.out.find('\n'));
    CHECK(
        it::runProcess({xdotool, "mousemove", "--window", window, std::to_string(cx), std::to_string(cy)}, xo)
            .exit_code == 0);
    it::sleepSeconds(0.3); // let a frame see the pointer over the button first
    CHECK(it::runProcess({xdotool, "click", "1"}, xo).exit_code == 0);

    const it::ProcessResult r = dtlab.wait(120.0);
    INFO(it::describe(r) << "\nstdout:\n" << r.out);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("dtlab: killed rank 1 (SIGKILL)") != std::string::npos);
    const dt::RecordingLoad load = dt::readRecording(recording);
    REQUIRE(load.record.ranks.size() == 3);
    CHECK(load.record.ranks[1].term_signal == SIGKILL);
    checkScreenshot(art + "/e2e_clicked.png");
    checkNoWorkerLeft(r.out);
}

TEST_CASE("dtlab --replay opens a recording with no training running", "[e2e]") {
    requireDtlab();
    if (!onPath("Xvfb")) {
        WARN("Xvfb is not installed (apt-get install xvfb): skipping the replay test");
        return;
    }
    it::TempDir dir("dtlab-gui");
    const std::string art = artifactDir();
    const std::string recording = dir.file("run.dtrec");
    const it::ProcessResult run =
        it::runDtrun({"run", writeScenario(dir, 6), "--quiet", "--record", recording}, {{}, {}, 300.0, ""});
    INFO(it::describe(run));
    REQUIRE(run.exit_code == 0);
    REQUIRE(it::waitForNoWorkers(5.0).empty());
    Xvfb x;
    REQUIRE(x.ok());

    SECTION("a complete recording: every view draws, nothing is started") {
        const std::string script = dir.write("replay.script", "select 0\nscreenshot e2e_replay.png\nquit\n");
        const it::ProcessResult r =
            it::runProcess({kDtlab, "--replay", recording, "--script", script, "--screenshot-dir", art},
                           displayOptions(x, 60.0));
        INFO(it::describe(r) << "\nstdout:\n" << r.out);
        CHECK(r.exit_code == 0);
        CHECK(r.out.find("dtlab: opened recording " + recording) != std::string::npos);
        CHECK(r.out.find("INCOMPLETE") == std::string::npos);
        CHECK(r.out.find("dtlab: started") == std::string::npos);
        checkScreenshot(art + "/e2e_replay.png");
        CHECK(it::runningWorkerPids().empty());
    }

    SECTION("a truncated recording opens up to the last good chunk and says what was lost") {
        std::string bytes = it::readTextFile(recording);
        REQUIRE(bytes.size() > 200);
        std::ofstream(dir.file("cut.dtrec"), std::ios::binary)
            .write(bytes.data(), std::streamsize(bytes.size() * 2 / 3));
        const std::string script = dir.write("cut.script", "screenshot e2e_replay_truncated.png\nquit\n");
        const it::ProcessResult r = it::runProcess(
            {kDtlab, "--replay", dir.file("cut.dtrec"), "--script", script, "--screenshot-dir", art},
            displayOptions(x, 60.0));
        INFO(it::describe(r) << "\nstdout:\n" << r.out);
        CHECK(r.exit_code == 0);
        CHECK(r.out.find("INCOMPLETE") != std::string::npos);
        checkScreenshot(art + "/e2e_replay_truncated.png");
    }

    SECTION("a replay refuses fault injection: the Kill button is disabled") {
        const std::string script = dir.write("click.script", "click_button Kill##rank1\nquit\n");
        const it::ProcessResult r =
            it::runProcess({kDtlab, "--replay", recording, "--script", script}, displayOptions(x, 60.0));
        INFO(it::describe(r) << "\nstdout:\n" << r.out);
        CHECK(r.exit_code == 1);
        CHECK(r.err.find("click_button: the button 'Kill##rank1' is disabled") != std::string::npos);
    }
}

// Every live run is recorded as it goes, into dtlab's folder (here
// DTLAB_RECORDING_DIR): a run that ends leaves a complete NAME.dtrec and says
// where; a dtlab killed mid-run leaves NAME.dtrec.partial, which --replay opens
// as an incomplete recording.
TEST_CASE("dtlab records every live run, and a killed dtlab leaves a .partial that replays", "[e2e]") {
    requireDtlab();
    if (!onPath("Xvfb")) {
        WARN("Xvfb is not installed (apt-get install xvfb): skipping the automatic recording test");
        return;
    }
    it::TempDir dir("dtlab-gui");
    const std::string art = artifactDir();
    const std::string folder = dir.file("recordings");
    Xvfb x;
    REQUIRE(x.ok());
    auto options = [&](double timeout_s) {
        it::ProcessOptions o = displayOptions(x, timeout_s);
        o.env.push_back({"DTLAB_RECORDING_DIR", folder});
        return o;
    };
    auto recordingsIn = [&](const std::string& ending) {
        std::vector<std::string> out;
        for (const std::string& name : it::listDirectory(folder))
            if (name.size() > ending.size() &&
                name.compare(name.size() - ending.size(), ending.size(), ending) == 0)
                out.push_back(folder + "/" + name);
        return out;
    };

    SECTION("a run to its end: a complete recording, and dtlab says where it is") {
        const std::string script = dir.write("finish.script", "wait_finished\nquit\n");
        const it::ProcessResult r =
            it::runProcess({kDtlab, writeScenario(dir, 6), "--script", script}, options(240.0));
        INFO(it::describe(r) << "\nstdout:\n" << r.out);
        CHECK(r.exit_code == 0);
        CHECK(r.out.find("dtlab: recording this run to " + folder + "/dtlab-gui-e2e-") != std::string::npos);
        const std::vector<std::string> done = recordingsIn(".dtrec");
        REQUIRE(done.size() == 1);
        CHECK(recordingsIn(".partial").empty());
        const dt::RecordingLoad load = dt::readRecording(done[0]);
        CHECK(load.complete);
        CHECK(load.record.ok);
        CHECK(r.out.find("dtlab: the run's recording: " + done[0] + " (" +
                         std::to_string(load.record.events.size()) + " events") != std::string::npos);
    }
    SECTION("dtlab killed mid-run: its .partial opens with --replay, as incomplete") {
        it::Process dtlab({kDtlab, writeScenario(dir)}, options(240.0));
        REQUIRE(it::waitFor(
            [&] {
                const std::vector<std::string> partial = recordingsIn(".partial");
                struct stat st {};
                return partial.size() == 1 && stat(partial[0].c_str(), &st) == 0 && st.st_size > 30000;
            },
            120.0));
        dtlab.signal(SIGKILL);
        (void)dtlab.wait(30.0);
        CHECK(it::waitForNoWorkers(10.0).empty());
        const std::vector<std::string> partial = recordingsIn(".partial");
        REQUIRE(partial.size() == 1);
        CHECK(recordingsIn(".dtrec").empty());

        const std::string script = dir.write("partial.script", "screenshot e2e_replay_partial.png\nquit\n");
        const it::ProcessResult r = it::runProcess(
            {kDtlab, "--replay", partial[0], "--script", script, "--screenshot-dir", art}, options(60.0));
        INFO(it::describe(r) << "\nstdout:\n" << r.out);
        CHECK(r.exit_code == 0);
        CHECK(r.out.find("dtlab: opened recording " + partial[0]) != std::string::npos);
        CHECK(r.out.find("INCOMPLETE") != std::string::npos);
        CHECK(r.out.find("the run's end state (exit codes, ok) was never written") != std::string::npos);
        CHECK(r.out.find("dtlab: started") == std::string::npos);
        checkScreenshot(art + "/e2e_replay_partial.png");
    }
}

// A recording of synthetic FSDP steps (views_fixture.hpp: no training needed),
// replayed with the time cursor in the backward pass of step 1: block 3
// computes its backward while block 2's all-gather is prefetched and the root
// stays materialized. The screenshot is docs/images/fsdp_flow.png's source.
TEST_CASE("dtlab --replay of an FSDP run draws the FSDP flow view at the cursor", "[e2e]") {
    requireDtlab();
    if (!onPath("Xvfb")) {
        WARN("Xvfb is not installed (apt-get install xvfb): skipping the FSDP flow test");
        return;
    }
    it::TempDir dir("dtlab-gui");
    const std::string art = artifactDir();
    dt::RunRecord record;
    record.scenario = dt::test::SyntheticFsdp::scenario(4, 4);
    record.scenario.name = "fsdp flow (synthetic events)";
    record.scenario.run.steps = 3;
    for (int r = 0; r < 4; ++r)
        for (int s = 0; s < 3; ++s)
            dt::test::SyntheticFsdp::addStep(record.events, record.scenario, r, s);
    addFinishedRanks(record, 4);
    record.t_start_ns = dt::test::SyntheticFsdp::kT0;
    record.t_end_ns = dt::test::SyntheticFsdp::at(3, 0);
    record.ok = true;
    const std::string recording = dir.file("fsdp.dtrec");
    dt::writeRecording(record, recording);
    Xvfb x;
    REQUIRE(x.ok());
    // Step 1, tick 18.5 of the schedule: 10 ms + 1.85 ms after the first event.
    const std::string script = dir.write(
        "fsdp.script", "select 1\ncursor 0.01185\nwait_frames 3\nscreenshot e2e_fsdp_flow.png\nquit\n");
    const it::ProcessResult r =
        it::runProcess({kDtlab, "--replay", recording, "--script", script, "--screenshot-dir", art},
                       displayOptions(x, 60.0));
    INFO(it::describe(r) << "\nstdout:\n" << r.out);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("dtlab: cursor at +0.012 s") != std::string::npos);
    checkScreenshot(art + "/e2e_fsdp_flow.png");
}

// A recording of synthetic pipeline steps generated from the 1F1B schedule
// itself (views_fixture.hpp): 4 stages, 8 microbatches, messages 0.3 ms on the
// wire. The pipeline view opens by itself and shows the latest step.
TEST_CASE("dtlab --replay of a pipeline run opens the pipeline view", "[e2e]") {
    requireDtlab();
    if (!onPath("Xvfb")) {
        WARN("Xvfb is not installed (apt-get install xvfb): skipping the pipeline test");
        return;
    }
    it::TempDir dir("dtlab-gui");
    const std::string art = artifactDir();
    dt::RunRecord record;
    record.scenario = dt::test::SyntheticPipeline::scenario(4, 4, 8, "1f1b");
    record.scenario.name = "pipeline 1f1b (synthetic events)";
    record.scenario.run.steps = 3;
    record.events = dt::test::SyntheticPipeline::make(record.scenario, 3, 300'000);
    addFinishedRanks(record, 4);
    record.t_start_ns = dt::test::SyntheticPipeline::kT0;
    record.t_end_ns = dt::test::SyntheticPipeline::stepStart(3);
    record.ok = true;
    const std::string recording = dir.file("pipeline.dtrec");
    dt::writeRecording(record, recording);
    Xvfb x;
    REQUIRE(x.ok());
    const std::string script =
        dir.write("pipeline.script", "wait_frames 3\nprint_layout\nscreenshot e2e_pipeline.png\nquit\n");
    const it::ProcessResult r =
        it::runProcess({kDtlab, "--replay", recording, "--script", script, "--screenshot-dir", art},
                       displayOptions(x, 60.0));
    INFO(it::describe(r) << "\nstdout:\n" << r.out);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("dtlab: layout window pipeline \"Pipeline\"") != std::string::npos); // opened by itself
    checkScreenshot(art + "/e2e_pipeline.png");
}

// A 3 s recording (synthetic_kill.hpp's kill run, stretched 3x: rank 1 is
// killed at +1.365 s) played back at 1x takes the run's own duration within
// 10 % of wall time, at 2x half of it; the cursor at the kill is screenshotted.
TEST_CASE("dtlab --replay plays a recording back over time at its own pace", "[e2e][playback]") {
    requireDtlab();
    if (!onPath("Xvfb")) {
        WARN("Xvfb is not installed (apt-get install xvfb): skipping the playback test");
        return;
    }
    using F = dt::test::SyntheticFaults;
    it::TempDir dir("dtlab-gui");
    const std::string art = artifactDir();
    dt::RunRecord record;
    record.scenario = F::ddpScenario();
    record.scenario.name = "kill (synthetic events, 3 s)";
    for (dt::Event e : F::killRun()) {
        e.t_ns = F::kT0 + (e.t_ns - F::kT0) * 3;
        e.dur_ns *= 3;
        record.events.push_back(e);
    }
    addFinishedRanks(record, 3);
    record.ranks[1].exit_code = 0;
    record.ranks[1].term_signal = SIGKILL;
    record.t_start_ns = F::kT0;
    record.t_end_ns = F::at(3003);
    record.ok = false;
    const std::string recording = dir.file("kill.dtrec");
    dt::writeRecording(record, recording);
    Xvfb x;
    REQUIRE(x.ok());
    const std::string script =
        dir.write("play.script", "wait_frames 3\ncursor 1.38\nwait_frames 3\n"
                                 "screenshot e2e_cursor_at_kill.png\ncursor off\n"
                                 "play 1\nwait_playback\nplay 2\nwait_playback\nquit\n");
    const it::ProcessResult r =
        it::runProcess({kDtlab, "--replay", recording, "--script", script, "--screenshot-dir", art},
                       displayOptions(x, 60.0));
    INFO(it::describe(r) << "\nstdout:\n" << r.out);
    CHECK(r.exit_code == 0);
    checkScreenshot(art + "/e2e_cursor_at_kill.png");
    // "dtlab: playback ended: 3.00 s of run time in 3.02 s of wall time at 1x"
    const std::regex ended(R"(playback ended: ([0-9.]+) s of run time in ([0-9.]+) s of wall time at (\S+))");
    std::vector<std::tuple<double, double, std::string>> runs;
    for (auto m = std::sregex_iterator(r.out.begin(), r.out.end(), ended); m != std::sregex_iterator(); ++m)
        runs.emplace_back(std::stod((*m)[1].str()), std::stod((*m)[2].str()), (*m)[3].str());
    REQUIRE(runs.size() == 2);
    const auto& [run_1x, wall_1x, speed_1x] = runs[0];
    CHECK(speed_1x == "1x");
    CHECK(run_1x == Approx(3.0).epsilon(0.01));
    CHECK(std::fabs(wall_1x - run_1x) <= 0.10 * run_1x);
    const auto& [run_2x, wall_2x, speed_2x] = runs[1];
    CHECK(speed_2x == "2x");
    CHECK(std::fabs(wall_2x - run_2x / 2.0) <= 0.10 * run_2x / 2.0);
}

TEST_CASE("SIGTERM or Ctrl+Q closes dtlab and stops every rank process", "[e2e]") {
    requireDtlab();
    if (!onPath("Xvfb")) {
        WARN("Xvfb is not installed (apt-get install xvfb): skipping the shutdown test");
        return;
    }
    Xvfb x;
    REQUIRE(x.ok());
    it::TempDir dir("dtlab-gui");
    // The script only waits: the run is left going when the signal or key arrives.
    const std::string script = dir.write("wait.script", "wait_step 1\n");
    it::Process dtlab({kDtlab, writeScenario(dir), "--script", script}, displayOptions(x, 120.0));
    const bool stepped = it::waitFor(
        [&] {
            return dtlab.stdoutSoFar().find("dtlab: script done") != std::string::npos || !dtlab.running();
        },
        90.0);
    INFO("stdout:\n" << dtlab.stdoutSoFar() << "\nstderr:\n" << dtlab.stderrSoFar());
    REQUIRE(stepped);
    REQUIRE(dtlab.running());

    SECTION("SIGTERM: exit 128 + 15, the ranks are killed") {
        dtlab.signal(SIGTERM);
        const it::ProcessResult r = dtlab.wait(60.0);
        INFO(it::describe(r) << "\nstdout:\n" << r.out);
        CHECK(r.exit_code == 128 + SIGTERM);
        CHECK(r.out.find("dtlab: interrupted by") != std::string::npos);
        CHECK(r.out.find("every rank process is gone") != std::string::npos);
        checkNoWorkerLeft(r.out);
    }
    SECTION("Ctrl+Q typed on the window: exit 0, the ranks are killed") {
        if (!onPath("xdotool")) {
            WARN("xdotool is not installed: skipping the Ctrl+Q part");
            dtlab.signal(SIGTERM);
            (void)dtlab.wait(60.0);
            return;
        }
        const it::ProcessOptions xo = displayOptions(x, 20.0);
        const std::string xdotool = toolPath("xdotool");
        const it::ProcessResult search =
            it::runProcess({xdotool, "search", "--sync", "--name", "^dtlab$"}, xo);
        const std::string window = search.out.substr(0, search.out.find('\n'));
        // Without a window manager, keys go to the window under the pointer.
        CHECK(it::runProcess({xdotool, "mousemove", "--window", window, "800", "450"}, xo).exit_code == 0);
        CHECK(it::runProcess({xdotool, "key", "ctrl+q"}, xo).exit_code == 0);
        const it::ProcessResult r = dtlab.wait(60.0);
        INFO(it::describe(r) << "\nstdout:\n" << r.out);
        CHECK(r.exit_code == 0);
        CHECK(r.out.find("every rank process is gone") != std::string::npos);
        checkNoWorkerLeft(r.out);
    }
}
