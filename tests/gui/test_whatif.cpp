// test_whatif.cpp: the what-if knobs and the comparison (model/what_if.hpp)
// headless, and in the real dtlab under Xvfb: ddp_basics with overlap on,
// then a what-if rerun with overlap off, and the compare view's step times.
#include "gui/e2e_support.hpp"
#include "integration/process_helpers.hpp"

#include "model/what_if.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

using namespace dt::app;

namespace {

const std::string kSource = DTLAB_SOURCE_DIR;

dt::Scenario ddpBasics() {
    return dt::loadScenarioFile(kSource + "/scenarios/ddp_basics.toml");
}

bool has(const std::vector<Knob>& knobs, Knob k) {
    return std::find(knobs.begin(), knobs.end(), k) != knobs.end();
}

} // namespace

TEST_CASE(
    "The what-if knobs are those of the scenario's strategy, and each change is validated as dtrun would",
    "[gui][whatif]") {
    dt::Scenario s = ddpBasics();
    SECTION("DDP offers its bucket size and overlap; a pipeline its stages and schedule") {
        const std::vector<Knob> ddp = knobsFor(s);
        CHECK(has(ddp, Knob::BucketMb));
        CHECK(has(ddp, Knob::Overlap));
        CHECK_FALSE(has(ddp, Knob::Schedule));
        const dt::Scenario pipe = dt::loadScenarioFile(kSource + "/scenarios/pipeline_microbatches.toml");
        CHECK(has(knobsFor(pipe), Knob::Schedule));
        CHECK(has(knobsFor(pipe), Knob::Stages));
        CHECK_FALSE(has(knobsFor(pipe), Knob::BucketMb));
    }
    SECTION("an accepted change is kept and described") {
        dt::Scenario edit = s;
        CHECK(setKnob(edit, Knob::Overlap, "off").empty());
        CHECK_FALSE(edit.strategy.overlap);
        CHECK(setKnob(edit, Knob::BucketMb, "4").empty());
        CHECK(describeChanges(s, edit) == "bucket_mb 4, overlap off");
        CHECK(describeChanges(s, s) == "the same settings");
    }
    SECTION("a refused change leaves the copy as it was and says why") {
        dt::Scenario edit = s;
        CHECK(setKnob(edit, Knob::Ranks, "three").find("expected a whole number") != std::string::npos);
        CHECK(setKnob(edit, Knob::Ranks, "0").find("ranks") != std::string::npos);
        CHECK(setKnob(edit, Knob::Overlap, "maybe").find("expected one of on, off, got 'maybe'") !=
              std::string::npos);
        CHECK(setKnob(edit, Knob::Strategy, "zero9").find("zero9") != std::string::npos);
        CHECK(edit.topology.ranks == s.topology.ranks);
        CHECK(edit.strategy.overlap == s.strategy.overlap);
    }
}

TEST_CASE("A fault-tolerant scenario's what-if knobs change how it heals and detects, and the comparison "
          "shows both runs' recoveries",
          "[gui][whatif]") {
    const dt::Scenario s = dt::loadScenarioFile(kSource + "/scenarios/ft_kill_replica.toml");
    REQUIRE(s.fault_tolerance.enabled);
    const std::vector<Knob> knobs = knobsFor(s);
    CHECK(has(knobs, Knob::HealTransport));
    CHECK(has(knobs, Knob::HealChunks));
    CHECK(has(knobs, Knob::Detection));
    CHECK_FALSE(has(knobs, Knob::Strategy)); // the quorum keeps its shape
    CHECK_FALSE(has(knobsFor(ddpBasics()), Knob::HealTransport));

    dt::Scenario edit = s;
    CHECK(setKnob(edit, Knob::HealTransport, "ftp").find("expected one of pg, http, got 'ftp'") !=
          std::string::npos);
    // Chunks split the HTTP heal: refused over the process group, as dtrun refuses them.
    CHECK(setKnob(edit, Knob::HealChunks, "4").find("heal_chunks") != std::string::npos);
    CHECK(setKnob(edit, Knob::HealTransport, "http").empty());
    CHECK(setKnob(edit, Knob::HealChunks, "4").empty());
    CHECK(setKnob(edit, Knob::Detection, "heartbeat").empty());
    CHECK(describeChanges(s, edit) == "heal_transport http, heal_chunks 4, detection heartbeat");

    // Two recoveries each (and, before, a slow-down with no new quorum and no heal: left out of every
    // row): the means, and the rate over all heals (bytes / ms / 1e6 = GB/s).
    RunSide pg{"pg",
               R"({"steps": 20, "fault_tolerance": {"attempted_steps_total": 42, "committed_steps_total": 40,
        "recoveries": [{"new_quorum_ms": 40, "heal_duration_ms": 40, "heal_bytes": 30e6},
                       {"new_quorum_ms": 60, "heal_duration_ms": 20, "heal_bytes": 30e6},
                       {"new_quorum_ms": null, "heal_duration_ms": null, "heal_bytes": 0}]}})",
               true};
    RunSide http{
        "http", R"({"steps": 20, "fault_tolerance": {"attempted_steps_total": 41, "committed_steps_total": 40,
        "recoveries": [{"new_quorum_ms": 1000, "heal_duration_ms": 20, "heal_bytes": 30e6},
                       {"new_quorum_ms": 1010, "heal_duration_ms": 20, "heal_bytes": 30e6}]}})",
        true};
    const std::vector<ComparisonRow> rows = compareRuns(pg, http);
    auto row = [&](const std::string& prefix) {
        for (const ComparisonRow& r : rows)
            if (r.label.rfind(prefix, 0) == 0)
                return r;
        FAIL("no comparison row " << prefix);
        return ComparisonRow{};
    };
    CHECK(row("death to new quorum").before == Approx(50.0));
    CHECK(row("death to new quorum").now == Approx(1005.0));
    CHECK(row("heal transfer").before == Approx(30.0));
    CHECK(row("heal rate").before == Approx(1.0)); // 60 MB in 60 ms
    CHECK(row("heal rate").now == Approx(1.5));    // 60 MB in 40 ms
    CHECK(row("steps aborted").before == Approx(2.0));
    CHECK(row("steps aborted").now == Approx(1.0));
}

TEST_CASE("The comparison reads both runs' summaries", "[gui][whatif]") {
    RunSide before{"on", R"({"step_ms_median": [100, 110], "bytes_sent": [2e6, 2e6], "steps": 10,
                             "peak_memory": [{"step_peak": 5e6}, {"step_peak": 6e6}], "final_loss": 4.0})",
                   true};
    RunSide now{"off", R"({"step_ms_median": [130, 130], "bytes_sent": [2e6, 2e6], "steps": 10,
                          "peak_memory": [{"step_peak": 5e6}, {"step_peak": 6e6}], "final_loss": 4.0})",
                false};
    const std::vector<ComparisonRow> rows = compareRuns(before, now);
    REQUIRE(rows.size() == 5); // no pipeline bubble in either
    CHECK(rows[0].before == Approx(105.0));
    CHECK(rows[0].now == Approx(130.0));
    CHECK(*rows[0].change() == Approx(130.0 / 105.0 - 1.0));
    CHECK(rows[1].now == Approx(0.2));                 // MB per step and rank
    CHECK(rows[2].before == Approx(6.0));              // MB, the larger rank
    CHECK(compareRuns(before, RunSide{}).size() == 5); // only the before side: rows without a change
    CHECK_FALSE(compareRuns(before, RunSide{})[0].change());
}

// Issue 25's what-if test: ddp_basics (its narration left out, so nothing
// holds the run) with overlap on, then rerun from the What if view with
// overlap off; the comparison shows both step times and the change.
TEST_CASE("A what-if rerun of ddp_basics with overlap off shows the step-time difference in the comparison",
          "[e2e][whatif]") {
    const auto display = e2e::startDisplay();
    if (!display)
        return;
    it::TempDir dir("dtlab-whatif");
    std::ifstream in(kSource + "/scenarios/ddp_basics.toml");
    std::stringstream text;
    text << in.rdbuf();
    std::string toml = text.str();
    toml = toml.substr(0, toml.find("\n[[steps]]") + 1) + toml.substr(toml.find("\n[[checks]]") + 1);
    const std::string scenario = dir.write("ddp_basics.toml", toml);
    const std::string art = e2e::artifactDir();
    const std::string script = dir.write("whatif.script", "show whatif\n"
                                                          "wait_step 8\n"
                                                          "whatif overlap off\n"
                                                          "whatif_rerun\n"
                                                          "wait_step 8\n"
                                                          "print_compare\n"
                                                          "screenshot whatif_compare.png\n"
                                                          "quit\n");
    const it::ProcessResult r =
        it::runProcess({e2e::kDtlab, scenario, "--script", script, "--screenshot-dir", art},
                       e2e::displayOptions(*display, 240.0));
    INFO(it::describe(r) << "\nstdout:\n" << r.out);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("dtlab: what-if overlap off") != std::string::npos);
    CHECK(r.out.find("dtlab: what-if: rerun with overlap off") != std::string::npos);
    CHECK(r.out.find("(overlap off)") != std::string::npos);
    const std::regex step_time("compare: step time [^:]*: ([0-9.]+) ms -> ([0-9.]+) ms \\((-?[0-9]+) %\\)");
    std::smatch m;
    REQUIRE(std::regex_search(r.out, m, step_time));
    const double before = std::stod(m[1]), now = std::stod(m[2]);
    CHECK(before > 0.0);
    CHECK(now > 0.0);
    CHECK(std::abs(std::stoi(m[3]) - (now / before - 1.0) * 100.0) <= 1.0); // the printed values are rounded
    CHECK(r.out.find("compare: steps done: ") != std::string::npos);
    e2e::checkNoWorkerLeft(r.out, 4 + 4);
    e2e::checkScreenshot(art + "/whatif_compare.png");
}
