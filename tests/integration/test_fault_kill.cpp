// test_fault_kill.cpp: what a dead, hung or interrupted rank does to a run.
//
// Plain DDP has no fault tolerance: one rank down stops the job. What we check
// is that it stops *well*: dtrun exits 1 and says why, every survivor fails
// on its own within timeout_s with an error that names Gloo, the summary
// tells the story, and no `dtrun worker` process is left behind, whether the
// rank was killed, frozen (SIGSTOP), or dtrun itself was interrupted or killed.
#include "process_helpers.hpp"

#include <catch2/catch.hpp>

#include <csignal>

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

// Seconds since the run started of the first trace instant named `name` on rank `rank`
// (trace pid = rank + 1); -1 when there is none.
double instantSeconds(const nlohmann::json& trace, const std::string& name, int rank) {
    for (const auto& e : trace["traceEvents"])
        if (e.value("name", "") == name && e.value("ph", "") == "i" && e.value("pid", -1) == rank + 1)
            return e["ts"].get<double>() / 1e6;
    return -1.0;
}

// A small 3-rank TinyGPT run with one [[faults]] entry.
std::string faultScenario(const std::string& action, int rank, int step, double timeout_s, int steps) {
    it::ScenarioSpec spec;
    spec.name = action + " test";
    spec.ranks = 3;
    spec.steps = steps;
    spec.d_model = 64;
    spec.layers = 2;
    spec.heads = 2;
    spec.timeout_s = timeout_s;
    spec.faults_toml = "[[faults]]\naction = \"" + action + "\"\nrank = " + std::to_string(rank) +
                       "\nstep = " + std::to_string(step) + "\nwhen = \"allreduce\"\n";
    return it::scenarioToml(spec);
}

} // namespace

TEST_CASE("a killed rank ends the run with exit 1, a clear reason, and no orphans", "[fault][slow]") {
    it::TempDir dir;
    const std::string summary_path = dir.file("s.json");
    const std::string trace_path = dir.file("t.json");
    const double timeout_s = 10.0; // [run] timeout_s of ddp_kill_rank.toml
    const auto r = it::runDtrun({"run", it::scenarioPath("ddp_kill_rank.toml"), "--steps", "5",
                                 "--batch-per-rank", "4", "--summary", summary_path, "--trace", trace_path},
                                {{}, {}, 180.0, ""});
    INFO(it::describe(r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, "rank 2"));
    CHECK(contains(r.err, "killed"));

    const auto s = it::readJsonFile(summary_path);
    INFO("summary: " << s.dump());
    CHECK(s["ok"] == false);
    CHECK(contains(s["failure_reason"].get<std::string>(), "rank 2"));
    CHECK(s["steps"] == 3); // steps 0..2 completed everywhere; step 3 died
    const auto& exits = s["exit"];
    REQUIRE(exits.size() == 4);
    CHECK(exits[2]["exited"] == true);
    CHECK(exits[2]["signal"] == 9);
    for (int rank : {0, 1, 3}) {
        CAPTURE(rank);
        CHECK(exits[rank]["exited"] == true);
        CHECK(exits[rank]["signal"] == 0);
        CHECK(exits[rank]["exit_code"] == 3);
        CHECK(contains(exits[rank]["error"].get<std::string>(), "Gloo"));
    }
    CHECK(s["failed_collectives"].get<int>() >= 3);

    // Timing: every survivor exited on its own within timeout_s of the kill.
    const auto trace = it::readJsonFile(trace_path);
    const double kill_s = instantSeconds(trace, "fault injected", 2);
    REQUIRE(kill_s > 0);
    for (int rank : {0, 1, 3}) {
        const double exit_s = instantSeconds(trace, "process exited", rank);
        CAPTURE(rank, kill_s, exit_s, timeout_s);
        REQUIRE(exit_s > 0);
        CHECK(exit_s - kill_s <= timeout_s);
    }
    const double wall = s["wall_time_s"].get<double>();
    CAPTURE(wall, kill_s);
    CHECK(wall - kill_s <= timeout_s);
    CHECK(it::waitForNoWorkers(2.0).empty());
}

TEST_CASE("a hung rank makes the others time out, and is killed itself", "[fault][slow]") {
    it::TempDir dir;
    const double timeout_s = 3.0;
    const double grace_s =
        5.0; // the Session waits min(timeout_s, 5) + 5 s after the first failure, then kills
    const std::string scenario = dir.write("hang.toml", faultScenario("hang", 1, 2, timeout_s, 6));
    const std::string summary_path = dir.file("s.json");
    const std::string trace_path = dir.file("t.json");
    const auto r = it::runDtrun({"run", scenario, "--summary", summary_path, "--trace", trace_path},
                                {{}, {}, 120.0, ""});
    INFO(it::describe(r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, "rank 1"));
    CHECK(contains(r.err, "hung"));

    const auto s = it::readJsonFile(summary_path);
    INFO("summary: " << s.dump());
    CHECK(s["ok"] == false);
    CHECK(contains(s["failure_reason"].get<std::string>(), "rank 1"));
    const auto& exits = s["exit"];
    REQUIRE(exits.size() == 3);
    // The frozen rank never noticed anything: the Session had to SIGKILL it.
    CHECK(exits[1]["exited"] == true);
    CHECK(exits[1]["signal"] == 9);
    // The survivors wait in the all-reduce until Gloo's timeout. The first one to
    // give up exits, so the other may see that peer's connection close just
    // before its own timeout fires: at least one timed out, each names Gloo.
    int timed_out = 0;
    for (int rank : {0, 2}) {
        CAPTURE(rank);
        CHECK(exits[rank]["exit_code"] == 3);
        const std::string error = exits[rank]["error"].get<std::string>();
        CHECK(contains(error, "Gloo"));
        const bool timeout = contains(error, "timed out") || contains(error, "Timed out");
        CHECK((timeout || contains(error, "lost a peer")));
        timed_out += timeout ? 1 : 0;
    }
    CHECK(timed_out >= 1);

    const auto trace = it::readJsonFile(trace_path);
    const double hang_s = instantSeconds(trace, "fault injected", 1);
    REQUIRE(hang_s > 0);
    for (int rank : {0, 2}) {
        const double exit_s = instantSeconds(trace, "process exited", rank);
        CAPTURE(rank, hang_s, exit_s);
        REQUIRE(exit_s > 0);
        // Gloo's timeout runs from when the survivor entered the collective, at or
        // after the hang; allow 2 s for the step in flight and the report.
        CHECK(exit_s - hang_s >= timeout_s - 1.0);
        CHECK(exit_s - hang_s <= timeout_s + 2.0);
    }
    const double wall = s["wall_time_s"].get<double>();
    CAPTURE(wall, hang_s, r.seconds);
    CHECK(wall - hang_s <= timeout_s + grace_s + 1.0);
    CHECK(it::waitForNoWorkers(2.0).empty());
}

TEST_CASE("interrupting or killing dtrun leaves no worker running", "[fault][slow]") {
    it::TempDir dir;
    // Long enough that it is surely still training when the signal comes.
    it::ScenarioSpec spec;
    spec.name = "long run";
    spec.ranks = 2;
    spec.steps = 500;
    spec.batch_per_rank = 2;
    const std::vector<std::string> argv{it::dtrunPath(), "run",
                                        dir.write("long.toml", it::scenarioToml(spec)), "--summary",
                                        dir.file("s.json")};

    auto startAndWaitForTraining = [&](it::Process& p) {
        // Two workers exist, and they have had a moment to reach the training loop.
        REQUIRE(it::waitFor([&] { return it::runningWorkerPids().size() == 2 || !p.running(); }, 60.0));
        REQUIRE(p.running());
        it::sleepSeconds(2.0);
        REQUIRE(p.running());
    };

    SECTION("SIGINT to dtrun run ends it with a non-zero code and stops the workers") {
        it::Process p(argv, {{}, {}, 120.0, ""});
        startAndWaitForTraining(p);
        const double t0 = it::monotonicSeconds();
        p.signal(SIGINT); // dtrun only, as `kill -INT`; not the whole group as a terminal's Ctrl-C
        const auto r = p.wait(30.0);
        INFO(it::describe(r));
        CHECK_FALSE(r.timed_out);
        CHECK(r.signal == 0);
        CHECK(r.exit_code != 0);
        CHECK(it::monotonicSeconds() - t0 < 10.0);
        CHECK(contains(r.err, "interrupted"));
        CHECK(it::waitForNoWorkers(2.0).empty());
        const auto s = it::readJsonFile(dir.file("s.json"));
        CHECK(s["ok"] == false);
        CHECK(contains(s["failure_reason"].get<std::string>(), "interrupted"));
    }
    SECTION("SIGKILL to dtrun run takes its workers down too (parent-death signal)") {
        it::Process p(argv, {{}, {}, 120.0, ""});
        startAndWaitForTraining(p);
        const auto workers = it::runningWorkerPids();
        p.signal(SIGKILL); // dtrun only: its workers are not signalled by us
        const auto r = p.wait(10.0);
        CHECK(r.signal == SIGKILL);
        const auto left = it::waitForNoWorkers(3.0);
        INFO("workers before: " << nlohmann::json(workers).dump()
                                << ", still running: " << nlohmann::json(left).dump());
        CHECK(left.empty());
    }
}

TEST_CASE("a hung rank is named as the one that never joined the collective the others wait in",
          "[fault][slow][hang]") {
    // Rank 1 is frozen as step 2 starts. With overlap off, a rank's all-reduces start after its
    // whole backward, so rank 1 is stopped well before its first one: ranks 0, 2 and 3 start
    // bucket 0's all-reduce of step 2 and wait in it until Gloo's timeout.
    it::TempDir dir;
    it::ScenarioSpec spec;
    spec.name = "hang diagnosis test";
    spec.ranks = 4;
    spec.steps = 6;
    spec.timeout_s = 3.0;
    spec.strategy_toml = "overlap = false\n";
    spec.faults_toml = "[[faults]]\naction = \"hang\"\nrank = 1\nstep = 2\nwhen = \"step\"\n";
    spec.extra_toml = "[[checks]]\nclaim = \"the loss falls\"\nexpect = \"final_loss < initial_loss\"\n";
    const std::string scenario = dir.write("hang.toml", it::scenarioToml(spec));
    const std::string summary_path = dir.file("s.json");
    const auto r = it::runDtrun({"run", scenario, "--summary", summary_path, "--check"}, {{}, {}, 120.0, ""});
    INFO(it::describe(r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 1);

    const auto s = it::readJsonFile(summary_path);
    INFO("summary: " << s.dump());
    CHECK(s["ok"] == false);
    const nlohmann::json* found = nullptr;
    for (const auto& h : s["hung_collectives"])
        if (h["step"] == 2 && h["kind"] == "all-reduce" && h["missing_ranks"] == nlohmann::json::array({1}))
            found = &h;
    REQUIRE(found != nullptr);
    CHECK((*found)["started_ranks"] == nlohmann::json::array({0, 2, 3}));
    CHECK((*found)["group_ranks"] == nlohmann::json::array({0, 1, 2, 3}));
    const std::string diagnosis = (*found)["diagnosis"].get<std::string>();
    CHECK(contains(diagnosis, "rank 1 never joined"));
    // Nothing lists rank 1 as having started a collective the others never joined.
    for (const auto& h : s["hung_collectives"])
        CHECK(h["missing_ranks"] != nlohmann::json::array({0, 2, 3}));

    SECTION("dtrun prints the diagnosis, and the failed run's check is not judged") {
        CHECK(contains(r.err, "hung collective: all-reduce bucket "));
        CHECK(contains(r.err, " of step 2: "));
        CHECK(contains(r.err, "rank 1 never joined"));
        CHECK(contains(r.err, "check not judged: the loss falls"));
        REQUIRE(s["checks"].size() == 1);
        CHECK(s["checks"][0]["run_failed"] == true);
        CHECK(s["checks"][0]["detail"] == "not judged: the run failed");
    }
}
