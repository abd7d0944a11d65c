// test_view_invariants.cpp: one truth across views, at every moment of seeded
// multi-fault runs.
//
// Each run: 3 replicas of fault-tolerant DDP on a tiny model, one fault pattern
// (two kills at once, a kill during another's restart, a hang then a kill, a
// lighthouse stop, a kill soon after a restart) on top of [chaos] with its own
// seed; `dtrun run --record R --summary S`, two runs at a time. Then, every
// 100 ms of each recording, what the views compute from the same model at that
// moment (runStateAt: Topology; quorumViewState: Quorum; latestRecovery: the
// stopwatch) must agree:
//   1. a replica's badge agrees with its rank's state: "healthy" is never said
//      of a rank that is killed, failed, restarting or hung
//   2. a replica row's commits and aborts are its rank's (Topology's details)
//   3. the decision line names no other quorum than the header's
//   4. a decision that calls the members healthy says "since then" when one is not
//   5. the stopwatch: every measured phase is >= 0 and happened by the moment
//      shown; detected <= new quorum <= survivors commit and restarted <= healed
//      <= rejoined where both are measured
// and at the end of each run the rows' commits and aborts are the summary's.
#include "dtlab/recording.hpp"
#include "integration/process_helpers.hpp"
#include "model/run_model.hpp"
#include "model/run_state_at.hpp"
#include "views/view_quorum.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <regex>
#include <string>
#include <vector>

namespace {

using dt::RankState;
using dt::app::ReplicaHealth;

struct FaultPattern {
    std::string name;
    std::string faults_toml;
    int recoveries = 2;                                         // the recoveries its own faults start
    std::string chaos_actions = "\"kill\", \"hang\", \"slow\""; // what [chaos] may do on top
};

std::string fault(const char* action, int rank, const std::string& when_toml) {
    return std::string("[[faults]]\naction = \"") + action + "\"\nrank = " + std::to_string(rank) + "\n" +
           when_toml + "\n";
}

std::vector<FaultPattern> patterns() {
    const std::string allreduce6 = "step = 6\nwhen = \"allreduce\"";
    return {
        {"two kills at once", fault("kill", 1, allreduce6) + fault("kill", 2, allreduce6)},
        {"a kill during another's restart",
         fault("kill", 1, allreduce6) + fault("kill", 2, "step = 8\nwhen = \"allreduce\"")},
        {"a hang then a kill",
         fault("hang", 1, "step = 5\nwhen = \"step\"") + fault("kill", 1, "when = \"time\"\nat_s = 2.0")},
        // Hangs and slow-downs around the stop. (A replica restarted while the lighthouse is down
        // could get a quorum of itself alone from the lighthouse come back, resume from the job's
        // durable checkpoint and train beside the live ones to the same step with other
        // parameters; the lighthouse's fresh-start guard, rule 5b of lighthouse.hpp, now waits
        // for the live ones. Kills are still left out of this pattern: not yet run with them.)
        {"a lighthouse stop",
         "[[faults]]\naction = \"kill_lighthouse\"\nwhen = \"time\"\nat_s = 1.8\nduration_s = 0.8\n", 1,
         "\"hang\", \"slow\""},
        {"a kill soon after a restart",
         fault("kill", 1, "step = 4\nwhen = \"allreduce\"") + fault("kill", 1, "step = 12\nwhen = \"step\"")},
    };
}

std::string scenarioToml(const FaultPattern& pattern, int chaos_seed) {
    it::ScenarioSpec spec;
    spec.name = pattern.name;
    spec.ranks = 3;
    spec.steps = 40;
    spec.batch_per_rank = 2;
    spec.d_model = 16;
    spec.layers = 1;
    spec.heads = 2;
    spec.timeout_s = 120.0;
    spec.run_toml = "step_delay_ms = 40\n";
    spec.faults_toml = pattern.faults_toml;
    spec.extra_toml =
        "[fault_tolerance]\nenabled = true\nheartbeat_timeout_ms = 400\ncollective_timeout_ms = "
        "800\nquorum_timeout_ms = 4000\nrestart_delay_ms = 200\nmax_restarts_per_minute = 600\n\n"
        "[chaos]\nenabled = true\nseed = " +
        std::to_string(chaos_seed) + "\nmean_interval_s = 1.5\nactions = [" + pattern.chaos_actions +
        "]\nhang_s = 0.6\n"
        "slow_ms = 30.0\nslow_s = 1.0\n";
    return it::scenarioToml(spec);
}

struct Recorded {
    std::string name;
    std::string recording, summary;
    int recoveries = 0; // at least
};

bool unwellRank(RankState s) {
    return s == RankState::Killed || s == RankState::Failed || s == RankState::Restarting ||
           s == RankState::Hung;
}

// Every "quorum N" in a decision line names N.
std::vector<long> quorumsNamed(const std::string& reason) {
    std::vector<long> ids;
    static const std::regex number("quorum ([0-9]+)");
    for (auto it = std::sregex_iterator(reason.begin(), reason.end(), number); it != std::sregex_iterator();
         ++it)
        ids.push_back(std::stol((*it)[1].str()));
    return ids;
}

// The invariants at one moment; returns how many were checked.
int checkMoment(const dt::app::RunModel& model, int64_t t) {
    const dt::app::RunStateAt at = dt::app::runStateAt(model, t);
    const dt::app::QuorumViewState q = dt::app::quorumViewState(model, &at.ranks, std::nullopt, t);
    REQUIRE(q.rows.size() == at.ranks.size());
    int checked = 0;
    for (size_t r = 0; r < q.rows.size(); ++r) {
        const dt::app::ReplicaRow& row = q.rows[r];
        const dt::RankProgress& p = at.ranks[r];
        CAPTURE(r, dt::rankStateLabel(p.state), dt::app::replicaHealthLabel(row.health));
        // 1. The badge and the tile agree.
        if (unwellRank(p.state))
            CHECK(row.health != ReplicaHealth::Healthy);
        // 2. Aborts, counted alike. (Commits are not: the row counts the replica's Commit
        // events, the tile its model's step, which a heal or a rollback moves without one.)
        CHECK(row.aborted == p.aborted);
        checked += 2;
    }
    // 3. One quorum in the header and the decision; the decision's reason may name only
    // that quorum or the one before it ("every member of quorum 4 ..." issued quorum 5).
    CAPTURE(q.quorum_id, q.reason_quorum_id, q.reason);
    if (!q.reason.empty() && q.quorum_id >= 0)
        CHECK(q.reason_quorum_id == q.quorum_id);
    for (long id : quorumsNamed(q.reason))
        CHECK(id <= q.quorum_id);
    // 4. "healthy" is not said of a member that is not, unless as of the decision.
    if (q.reason.find("is healthy") != std::string::npos)
        for (const dt::app::ReplicaRow& row : q.rows)
            if (row.in_quorum &&
                (row.health == ReplicaHealth::Dead || row.health == ReplicaHealth::Restarting ||
                 row.health == ReplicaHealth::Hung))
                CHECK(q.reason.find("since then") != std::string::npos);
    // 5. The stopwatch.
    if (const std::optional<dt::Recovery> rec = dt::app::latestRecovery(model, t)) {
        const double since_ms = double(t - rec->fault_ns) / 1e6;
        CAPTURE(rec->fault, rec->replica, rec->detected_ms, rec->new_quorum_ms, rec->survivors_commit_ms,
                rec->restarted_ms, rec->heal_ms, rec->rejoined_ms, since_ms);
        CHECK(since_ms >= 0.0);
        for (double ms : {rec->detected_ms, rec->new_quorum_ms, rec->survivors_commit_ms, rec->restarted_ms,
                          rec->heal_ms, rec->rejoined_ms}) {
            CHECK(ms >= -1.0); // -1 = pending
            if (ms >= 0.0)
                CHECK(ms <= since_ms + 1.0);
        }
        const auto inOrder = [](double before, double after) {
            return before < 0 || after < 0 || before <= after;
        };
        CHECK(inOrder(rec->detected_ms, rec->new_quorum_ms));
        CHECK(inOrder(rec->new_quorum_ms, rec->survivors_commit_ms));
        CHECK(inOrder(rec->restarted_ms, rec->heal_ms));
        CHECK(inOrder(rec->heal_ms, rec->rejoined_ms));
        checked += 8;
    }
    return checked;
}

} // namespace

TEST_CASE("Every view tells the same story at every 100 ms of 20 seeded multi-fault runs",
          "[gui][recorded][invariants]") {
    it::TempDir dir("dtlab-invariants");
    std::vector<Recorded> runs;
    std::vector<std::pair<std::string, std::vector<std::string>>> commands;
    for (const FaultPattern& pattern : patterns())
        for (int seed = 1; seed <= 4; ++seed) {
            const std::string tag = "run" + std::to_string(runs.size());
            const std::string toml = dir.write(tag + ".toml", scenarioToml(pattern, seed));
            runs.push_back({pattern.name + ", chaos seed " + std::to_string(seed), dir.file(tag + ".dtrec"),
                            dir.file(tag + ".json"), pattern.recoveries});
            commands.push_back({runs.back().name,
                                {it::dtrunPath(), "run", toml, "--record", runs.back().recording, "--summary",
                                 runs.back().summary, "--quiet"}});
        }
    REQUIRE(runs.size() >= 20);
    // Two runs at a time (each waits on its own ranks' events; they only share the cores).
    std::vector<std::pair<size_t, std::unique_ptr<it::Process>>> running;
    size_t next = 0;
    while (next < commands.size() || !running.empty()) {
        while (next < commands.size() && running.size() < 2) {
            running.emplace_back(next, std::make_unique<it::Process>(commands[next].second,
                                                                     it::ProcessOptions{{}, {}, 180.0, ""}));
            ++next;
        }
        for (auto run = running.begin(); run != running.end();) {
            if (run->second->running()) {
                ++run;
                continue;
            }
            const it::ProcessResult r = run->second->wait();
            INFO(commands[run->first].first << ": " << it::describe(r));
            CHECK(r.exit_code == 0);
            run = running.erase(run);
        }
        it::sleepSeconds(0.05);
    }

    int moments = 0, checks = 0, faults = 0;
    for (const Recorded& run : runs) {
        INFO(run.name);
        const dt::RecordingLoad load = dt::readRecording(run.recording);
        REQUIRE(load.complete);
        dt::app::RunModel model;
        model.reset(load.record.scenario, int(load.record.ranks.size()));
        model.ingest(load.record.events.data(), load.record.events.size());
        model.ingestLogs(load.record.logs.data(), load.record.logs.size());
        for (int64_t t = model.tBegin(); t <= model.tEnd(); t += 100'000'000) {
            CAPTURE(double(t - model.tBegin()) / 1e9);
            checks += checkMoment(model, t);
            ++moments;
        }
        checks += checkMoment(model, model.tEnd());
        // At the end: the rows' counts are the summary's.
        const nlohmann::json summary = it::readJsonFile(run.summary);
        const nlohmann::json& ft = summary["fault_tolerance"];
        faults += int(ft["recoveries"].size());
        CHECK(int(ft["recoveries"].size()) >= run.recoveries); // its own faults did happen
        const dt::app::RunStateAt end = dt::app::runStateAt(model, model.tEnd());
        const dt::app::QuorumViewState q =
            dt::app::quorumViewState(model, &end.ranks, std::nullopt, model.tEnd());
        for (size_t r = 0; r < q.rows.size(); ++r) {
            CHECK(q.rows[r].committed == ft["committed_steps"][r].get<int64_t>());
            CHECK(q.rows[r].aborted == ft["aborted_steps"][r].get<int64_t>());
        }
    }
    std::printf("view invariants: %zu runs, %d moments, %d faults, %d checks\n", runs.size(), moments, faults,
                checks);
    // Enough happened to mean something: many moments, and more faults than runs.
    CHECK(moments >= 20 * 25); // runs of 2.5 s and more
    CHECK(faults >= 2 * int(runs.size()));
    CHECK(checks > moments * 9);
}
