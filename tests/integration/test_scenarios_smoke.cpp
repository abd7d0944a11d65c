// test_scenarios_smoke.cpp: every shipped scenario runs. The scenarios/
// directory is listed when the test runs, so a new file is covered without
// touching this test: `dtrun check` accepts it, and a short headless run does
// what the file promises (finishes with a finite loss, or fails at its fault
// with a reason that names the faulted rank).
#include "process_helpers.hpp"

#include "dtlab/scenario.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

namespace {

std::vector<std::string> scenarioFiles() {
    std::vector<std::string> files;
    for (const auto& name : it::listDirectory(it::sourceDir() + "/scenarios"))
        if (name.size() > 5 && name.substr(name.size() - 5) == ".toml")
            files.push_back(name);
    return files;
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

} // namespace

TEST_CASE("every scenario in scenarios/ passes dtrun check", "[smoke]") {
    const auto files = scenarioFiles();
    REQUIRE(files.size() >= 3);
    for (const auto& name : files) {
        DYNAMIC_SECTION("dtrun check " << name) {
            const auto r = it::runDtrun({"check", it::scenarioPath(name)});
            INFO(name << ": " << it::describe(r));
            CHECK(r.exit_code == 0);
            CHECK(contains(r.out, "ok"));
        }
    }
}

TEST_CASE("every scenario in scenarios/ runs headless for a few steps", "[smoke][slow]") {
    const auto files = scenarioFiles();
    REQUIRE(files.size() >= 3);
    it::TempDir dir;
    for (const auto& name : files) {
        DYNAMIC_SECTION("dtrun run " << name) {
            const std::string path = it::scenarioPath(name);
            const dt::Scenario scenario = dt::loadScenarioFile(path);
            // A few steps; with faults, enough to reach the last fault and one more step.
            int steps = 3;
            for (const auto& f : scenario.faults)
                steps = std::max(steps, f.step + 2);
            steps = std::min(steps, scenario.run.steps);
            const std::string summary_path = dir.file(name + ".summary.json");
            it::ProcessOptions opts;
            // A hang is detected after timeout_s, then the Session's grace of 5 s.
            opts.timeout_s = 120.0 + 2 * scenario.run.timeout_s;
            std::vector<std::string> args{"run",       path,         "--steps", std::to_string(steps),
                                          "--summary", summary_path, "--quiet"};
            // Smaller batches keep the whole smoke run short; the picture is the same.
            // (At least one sample per microbatch.)
            const int small_batch = std::max(4, scenario.strategy.microbatches);
            if (scenario.data.batch_per_rank > small_batch) {
                args.push_back("--batch-per-rank");
                args.push_back(std::to_string(small_batch));
            }
            const auto r = it::runDtrun(args, opts);
            INFO(name << " (" << steps << " steps): " << it::describe(r));
            REQUIRE_FALSE(r.timed_out);
            REQUIRE(it::fileExists(summary_path));
            const auto s = it::readJsonFile(summary_path);
            INFO("summary: " << s.dump());
            if (scenario.strategy.kind == "collectives") {
                // The backend comparison: a bus bandwidth per (backend, op, size) measured.
                CHECK(r.exit_code == 0);
                CHECK(s["ok"] == true);
                const size_t expected = size_t(steps) * scenario.collectives.backends.size() * scenario.collectives.ops.size();
                CHECK(s["bus_bandwidth"]["points"].size() == expected);
                for (const auto& p : s["bus_bandwidth"]["points"]) CHECK(p["bus_bandwidth_gbs"].get<double>() > 0);
            } else if (scenario.fault_tolerance.enabled) {
                // Under the quorum a fault is survived: the run finishes and says how.
                CHECK(r.exit_code == 0);
                CHECK(s["ok"] == true);
                CHECK(s["steps"] == steps);
                REQUIRE(s["fault_tolerance"].is_object());
                CHECK(s["fault_tolerance"]["committed_steps"].is_array());
            } else if (scenario.faults.empty()) {
                CHECK(r.exit_code == 0);
                CHECK(s["ok"] == true);
                CHECK(s["steps"] == steps);
                REQUIRE(s["final_loss"].is_number());
                CHECK(std::isfinite(s["final_loss"].get<double>()));
            } else {
                CHECK(r.exit_code == 1);
                CHECK(s["ok"] == false);
                const std::string reason = s["failure_reason"].get<std::string>();
                bool names_a_faulted_rank = false;
                for (const auto& f : scenario.faults)
                    names_a_faulted_rank =
                        names_a_faulted_rank || contains(reason, "rank " + std::to_string(f.rank));
                CHECK(names_a_faulted_rank);
                for (const auto& f : scenario.faults) {
                    const auto& exit = s["exit"][size_t(f.rank)];
                    CAPTURE(f.rank, f.action);
                    if (f.action == "kill" || f.action == "hang")
                        CHECK(exit["signal"] == 9);
                }
            }
            CHECK(it::waitForNoWorkers(2.0).empty());
        }
    }
}
