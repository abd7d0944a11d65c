// test_scenarios_smoke.cpp: every shipped scenario runs and still teaches its
// point. The scenarios/ directory is listed when the test runs, so a new file
// is covered without touching this test: `dtrun check` accepts it, and a
// headless run as written (its steps, batch and pacing) through `dtrun run
// --check`, which also runs the baselines its [[checks]] name, shows every
// closing check, and does what the file promises (finishes with a finite
// loss, or fails at its fault with a reason that names the faulted rank).
// A scenario without [[checks]] fails: each must say what it shows.
#include "process_helpers.hpp"

#include "dtlab/exercise.hpp"
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
    // One dtrun for all of them (each process pays LibTorch's start-up): one line per file.
    std::vector<std::string> args = {"check"};
    for (const auto& name : files)
        args.push_back(it::scenarioPath(name));
    const auto r = it::runDtrun(args);
    INFO(it::describe(r));
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    for (const auto& name : files) {
        CAPTURE(name);
        CHECK(contains(r.out, it::scenarioPath(name) + ": ok: "));
        // Every shipped question carries its answer key (the run checks it: checkExercises),
        // unless the machine decides it (a choice the run measures).
        for (const dt::NarrationStep& step : dt::loadScenarioFile(it::scenarioPath(name)).steps) {
            if (!step.question)
                continue;
            CAPTURE(step.question->ask);
            CHECK((step.question->formula_answer.has_value() || !step.question->choices.empty()));
            CHECK(step.question->formula_answer.has_value() == step.question->typical_mistake.has_value());
        }
    }
}

TEST_CASE("dtrun check takes several files, checks every one and fails if any is refused", "[smoke][cli]") {
    it::TempDir dir;
    const std::string bad = dir.write("bad.toml", "[scenario]\nname = \"bad\"\n[topology]\nranks = 0\n");
    const auto r = it::runDtrun({"check", bad, it::scenarioPath("ddp_basics.toml")});
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "bad.toml"));
    CHECK(contains(r.out, it::scenarioPath("ddp_basics.toml") + ": ok: ")); // checked after the bad one
}

namespace {

// Predict, then run: each narration question is decided by this run, and its
// answer key from the scenario file is judged as it says: `formula_answer`
// (what the formula in its explanation gives) right, `typical_mistake` wrong.
// A question without a formula_answer is decided by the machine (a choice the
// run measures): the measured choice is right, the next one wrong.
void checkExercises(const dt::Scenario& scenario, const nlohmann::json& summary) {
    std::vector<const dt::NarrationQuestion*> questions;
    for (const dt::NarrationStep& step : scenario.steps)
        if (step.question)
            questions.push_back(&*step.question);
    if (questions.empty())
        return;
    REQUIRE(summary["exercises"].size() == questions.size());
    for (size_t k = 0; k < questions.size(); ++k) {
        const dt::NarrationQuestion& q = *questions[k];
        const auto& e = summary["exercises"][k];
        CAPTURE(q.ask, e["detail"].get<std::string>());
        REQUIRE(e["decided"] == true);
        const double measured = e["measured"].get<double>();
        if (!q.formula_answer) { // the machine decides: only a choice question may leave it to the run
            REQUIRE_FALSE(q.choices.empty());
            REQUIRE_FALSE(q.typical_mistake.has_value());
            const double right = std::round(measured);
            CHECK(dt::predictionIsRight(q, right, measured));
            CHECK_FALSE(
                dt::predictionIsRight(q, double((long(right) + 1) % long(q.choices.size())), measured));
            continue;
        }
        REQUIRE(q.typical_mistake.has_value()); // a shipped answer key has both sides
        CHECK(dt::predictionIsRight(q, *q.formula_answer, measured));
        CHECK_FALSE(dt::predictionIsRight(q, *q.typical_mistake, measured));
    }
}

// Runs every scenario whose file name starts with one of `prefixes` (all
// others when `prefixes` is empty) as written, with its closing checks.
void runScenariosWithChecks(const std::vector<std::string>& prefixes) {
    static const std::vector<std::string> kGroups = {"ddp_", "diloco_",   "fsdp_",
                                                     "ft_",  "pipeline_", "swarm_"};
    std::vector<std::string> files;
    for (const auto& name : scenarioFiles()) {
        auto starts = [&](const std::string& p) { return name.rfind(p, 0) == 0; };
        const bool in_group = std::any_of(kGroups.begin(), kGroups.end(), starts);
        if (prefixes.empty() ? !in_group : std::any_of(prefixes.begin(), prefixes.end(), starts))
            files.push_back(name);
    }
    REQUIRE_FALSE(files.empty());
    it::TempDir dir;
    for (const auto& name : files) {
        DYNAMIC_SECTION("dtrun run --check " << name) {
            const std::string path = it::scenarioPath(name);
            const dt::Scenario scenario = dt::loadScenarioFile(path);
            if (scenario.checks.empty())
                FAIL(name << " has no [[checks]]: add at least one claim the run must show");
            if (dt::scenarioUsesMpi(scenario) && !it::mpiSkipReason().empty()) {
                WARN(name << " skipped: " << it::mpiSkipReason());
                continue;
            }
            const std::string summary_path = dir.file(name + ".summary.json");
            it::ProcessOptions opts;
            // Each baseline is a whole run more; a hang is detected after timeout_s plus the Session's 5 s
            // grace.
            opts.timeout_s = 300.0 + 2 * scenario.run.timeout_s;
            const auto r = it::runDtrun({"run", path, "--check", "--summary", summary_path}, opts);
            INFO(name << ": " << it::describe(r) << "\n" << r.err);
            REQUIRE_FALSE(r.timed_out);
            REQUIRE(it::fileExists(summary_path));
            const auto s = it::readJsonFile(summary_path);

            // The closing checks: the run showed what the scenario claims.
            REQUIRE(s["checks"].size() == scenario.checks.size());
            for (const auto& c : s["checks"]) {
                CAPTURE(c["claim"].get<std::string>(), c["expect"].get<std::string>(),
                        c["detail"].get<std::string>());
                CHECK(c["evaluated"] == true);
                CHECK(c["passed"] == true);
            }

            // Predict, then run: the scenario's answer key holds (checkExercises).
            checkExercises(scenario, s);

            // What every run promises besides its checks.
            if (s["ok"] == true) {
                CHECK(r.exit_code == 0);
                CHECK(s["steps"] == scenario.run.steps);
                if (scenario.strategy.kind != dt::StrategyKind::Collectives) {
                    REQUIRE(s["final_loss"].is_number());
                    CHECK(std::isfinite(s["final_loss"].get<double>()));
                }
            } else { // a scenario whose point is a failure (a killed DDP rank) fails with a reason naming the
                     // rank
                CHECK(r.exit_code == 1);
                CHECK_FALSE(scenario.faults.empty());
                const std::string reason = s["failure_reason"].get<std::string>();
                bool names_a_faulted_rank = false;
                for (const auto& f : scenario.faults)
                    names_a_faulted_rank =
                        names_a_faulted_rank || contains(reason, "rank " + std::to_string(f.rank));
                CHECK(names_a_faulted_rank);
                for (const auto& f : scenario.faults) {
                    CAPTURE(f.rank, f.action);
                    if (f.action == dt::FaultAction::Kill || f.action == dt::FaultAction::Hang)
                        CHECK(s["exit"][size_t(f.rank)]["signal"] == 9);
                }
            }
            CHECK(it::waitForNoWorkers(2.0).empty());
        }
    }
}

} // namespace

// One test case per group keeps each under ctest's time limit and says which group broke.
// [solo]: the pipeline checks compare a measured bubble with the formula, SWARM's compare
// routed calls under a slowed server, and "the other" group holds the MPI comparison: a
// neighbour's load would move what they measure, so they run alone (tests/CMakeLists.txt).
TEST_CASE("the ddp scenarios run as written and their closing checks hold", "[smoke][checks][slow]") {
    runScenariosWithChecks({"ddp_"});
}
TEST_CASE("the diloco scenarios run as written and their closing checks hold", "[smoke][checks][slow]") {
    runScenariosWithChecks({"diloco_"});
}
TEST_CASE("the fsdp scenarios run as written and their closing checks hold", "[smoke][checks][slow]") {
    runScenariosWithChecks({"fsdp_"});
}
TEST_CASE("the fault tolerance scenarios run as written and their closing checks hold",
          "[smoke][checks][slow]") {
    runScenariosWithChecks({"ft_"});
}
TEST_CASE("the pipeline scenarios run as written and their closing checks hold",
          "[smoke][checks][slow][solo]") {
    runScenariosWithChecks({"pipeline_"});
}
TEST_CASE("the swarm scenarios run as written and their closing checks hold", "[smoke][checks][slow][solo]") {
    runScenariosWithChecks({"swarm_"});
}
TEST_CASE("the other scenarios run as written and their closing checks hold", "[smoke][checks][slow][solo]") {
    runScenariosWithChecks({});
}
