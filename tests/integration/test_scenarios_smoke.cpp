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

// A learner's right and wrong prediction for each question of a scenario, in
// narration order: the right one is what the question's formula gives (its
// `explain`), the wrong one a typical mistake. NaN: the run's own measurement
// is the right answer (a machine-dependent choice) and any other choice is wrong.
std::vector<std::pair<double, double>> predictionsFor(const std::string& file) {
    const std::string name = file.substr(0, file.rfind(".toml"));
    constexpr double kPsi = 834304.0; // TinyGPT's parameters in these scenarios
    const double nan = std::nan("");
    if (name == "ranks_and_rendezvous")
        return {{1, 0}}; // 4 processes, one per rank; not threads
    if (name == "ddp_basics")
        return {{8 * kPsi / 1e6, 8 * kPsi / 4 / 1e6}}; // DDP replicates AdamW; not ZeRO-1's 1/N
    if (name == "zero_offload")
        return {{16 * kPsi / 2 / 1e6, 8 * kPsi / 2 / 1e6}}; // 16 Psi / N on the host; not the moments alone
    if (name == "zero_stages")
        return {{8 * kPsi / 4 / 1e6, 8 * kPsi / 1e6}}; // 8 Psi / N; not DDP's 8 Psi
    if (name == "tensor_parallel")
        return {{16, 8}}; // 4 all-reduces per block x 4 blocks; not forward only
    if (name == "pipeline_microbatches")
        return {{75, 25}}; // (p - 1) / (m + p - 1) = 3/4; not 1/p
    if (name == "diloco_slow_link")
        return {{3, 60}}; // 60 / H; not one per step
    if (name == "backends_compare")
        return {{nan, nan}};
    if (name == "ft_heartbeat_detection")
        return {{2000, 5}}; // about heartbeat_timeout_ms; not the connection's few ms
    if (name == "ft_fsdp_groups")
        return {{(12 * 60288.0 + 8) / 1e6, (12 * 120576.0 + 8) / 1e6}}; // its shard; not the whole model
    if (name == "ft_diloco_streaming") // local model + AdamW (3P) and both fragments' global + momentum (2P)
        return {{(20 * 120576.0 + 20) / 1e6, 12 * 120576.0 / 1e6}};
    if (name == "ft_pipeline_groups")
        return {{(12 * 58304.0 + 8) / 1e6, (12 * 120576.0 + 8) / 1e6}}; // its stage; not the whole model
    if (name == "ft_kill_replica")
        return {{(12 * 120576.0 + 8) / 1e6, 4 * 120576.0 / 1e6}, {0, 1}}; // weights + 2 moments; nothing lost
    return {};
}

void checkExercises(const std::string& name, const dt::Scenario& scenario, const nlohmann::json& summary) {
    std::vector<const dt::NarrationQuestion*> questions;
    for (const dt::NarrationStep& step : scenario.steps)
        if (step.question)
            questions.push_back(&*step.question);
    const std::vector<std::pair<double, double>> predictions = predictionsFor(name);
    REQUIRE(predictions.size() == questions.size()); // a new question needs its predictions here
    if (questions.empty())
        return;
    REQUIRE(summary["exercises"].size() == questions.size());
    for (size_t k = 0; k < questions.size(); ++k) {
        const dt::NarrationQuestion& q = *questions[k];
        const auto& e = summary["exercises"][k];
        CAPTURE(q.ask, e["detail"].get<std::string>());
        REQUIRE(e["decided"] == true);
        const double measured = e["measured"].get<double>();
        double right = predictions[k].first, wrong = predictions[k].second;
        if (std::isnan(right)) {
            right = std::round(measured);
            wrong = double((long(right) + 1) % long(q.choices.size()));
        }
        CHECK(dt::predictionIsRight(q, right, measured));
        CHECK_FALSE(dt::predictionIsRight(q, wrong, measured));
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

            // Predict, then run: each narration question is decided by this run, and the
            // prediction the formula in its explanation gives is judged right, a typical
            // mistake wrong (predictionsFor).
            checkExercises(name, scenario, s);

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
TEST_CASE("the pipeline scenarios run as written and their closing checks hold", "[smoke][checks][slow]") {
    runScenariosWithChecks({"pipeline_"});
}
TEST_CASE("the swarm scenarios run as written and their closing checks hold", "[smoke][checks][slow]") {
    runScenariosWithChecks({"swarm_"});
}
TEST_CASE("the other scenarios run as written and their closing checks hold", "[smoke][checks][slow]") {
    runScenariosWithChecks({});
}
