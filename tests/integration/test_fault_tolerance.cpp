// test_fault_tolerance.cpp: quorum fault tolerance with real processes.
//
// Each test runs `dtrun run` on a fault-tolerant scenario (one rank per
// replica group, the Session's lighthouse, the supervisor's restarts) and
// checks what the run did from its summary and its recording:
//   - a killed replica: the survivors commit again, the restarted replica
//     heals from a live peer and every replica ends bit-identical;
//   - NaN gradients: every replica aborts the step, then it is retried;
//   - the lighthouse down for a while: training waits, then goes on;
//   - an external `dtrun lighthouse` serves a run;
//   - a seeded chaos run: the invariants of the issue (training finishes, no
//     committed step lost or applied twice, equal checksums after every
//     recovery, no process left running).
#include "checkpoint/params_io.hpp"
#include "param_compare.hpp"
#include "process_helpers.hpp"

#include "dtlab/pseudo_gradient_format.hpp"
#include "dtlab/recording.hpp"
#include "dtlab/scenario.hpp"
#include "dtlab/sharding_theory.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

// A small fault-tolerant TinyGPT run (3 replicas) with the given faults.
// Steps are slowed to ~60 ms so that a restarted replica (~1 s to start
// LibTorch) rejoins well before the others finish.
std::string ftScenario(int replicas, int steps, const std::string& faults_toml,
                       const std::string& ft_extra = "") {
    it::ScenarioSpec spec;
    spec.run_toml = "step_delay_ms = 50\n";
    spec.name = "fault tolerance test";
    spec.ranks = replicas;
    spec.steps = steps;
    spec.d_model = 32;
    spec.layers = 1;
    spec.heads = 2;
    spec.extra_toml =
        "[fault_tolerance]\nenabled = true\nheartbeat_timeout_ms = 600\ncollective_timeout_ms = 1500\n"
        "restart_delay_ms = 300\n" +
        ft_extra;
    spec.faults_toml = faults_toml;
    return it::scenarioToml(spec);
}

// One recorded run named NAME in DIR: NAME.toml, --summary NAME.json,
// --record NAME.dtrec, --params-out NAME/. It must exit 0.
it::ProcessResult runRecorded(const it::TempDir& dir, const std::string& name, const std::string& toml) {
    std::filesystem::create_directories(dir.file(name));
    const auto r =
        it::runDtrun({"run", dir.write(name + ".toml", toml), "--summary", dir.file(name + ".json"),
                      "--record", dir.file(name + ".dtrec"), "--params-out", dir.file(name)},
                     {{}, {}, 240.0, ""});
    INFO(name << ": " << it::describe(r));
    REQUIRE_FALSE(r.timed_out);
    REQUIRE(r.exit_code == 0);
    return r;
}

// The bytes of rank RANK's --params-out file in PARAMS_DIR.
std::string paramsFileBytes(const std::string& params_dir, int rank) {
    std::ifstream in(params_dir + "/rank" + std::to_string(rank) + ".params", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

struct CommitRecord {
    int64_t t_ns;
    int step;
};

// Checks the invariants every fault-tolerant run must keep, from its events.
// group_size: ranks per replica group; a rank's checksum is of its shard, so
// rank r is compared with the ranks holding shard r % group_size.
void checkInvariants(const dt::RunRecord& record, int steps, int group_size = 1) {
    // 1. Within one process (between restarts) a replica's commits go up by
    //    one, or jump forward after it healed; never back, never twice. A
    //    restarted process commits step 0, the step it healed to, or the step
    //    after the durable checkpoint it loaded.
    std::map<int, int> last_commit;   // rank -> last committed step in this incarnation
    std::map<int, bool> healed_since; // rank -> a receiving heal since its last commit
    std::map<int, bool> fresh;        // rank -> started or healed since its last commit
    std::map<int, int> live_latest;   // rank -> its live process's last commit (-1: none, or dead)
    std::set<int> committed_somewhere;
    // (epoch, step, shard) -> rank -> checksum. The epoch moves when the job
    // went back (every replica was down, the restarted ones redo steps from
    // a checkpoint or from 0): a fresh or healed process commits a step below
    // the highest while no live process holds that step or a later one, or a
    // quorum of members holding no step forms (a fresh start beside a fenced
    // holder). A
    // step redone then may differ from its first commit (other
    // participants), but within an epoch every replica must agree.
    std::map<std::pair<int, int>, std::map<int, uint64_t>> checksum_by_step;
    int epoch = 0, highest = -1;
    std::vector<dt::Event> events = record.events;
    std::stable_sort(events.begin(), events.end(),
                     [](const dt::Event& a, const dt::Event& b) { return a.t_ns < b.t_ns; });
    for (const dt::Event& e : events) {
        // A quorum whose members all hold no step (e.bytes: its highest member step), after commits, is a
        // fresh start: the job went back, though a fenced holder may not have died yet (lighthouse.hpp,
        // rule 5b). The summary counts it as a rollback (core/recovery_measure.cpp).
        if (e.kind == dt::EventKind::QuorumFormed && e.rank < 0 && e.bytes == 0 && highest >= 0)
            epoch += 1;
        if (e.rank < 0)
            continue;
        if (e.kind == dt::EventKind::RankStarted) {
            last_commit.erase(e.rank); // a new incarnation starts from scratch
            healed_since[e.rank] = false;
            fresh[e.rank] = true;
        }
        if (e.kind == dt::EventKind::RankStarted || e.kind == dt::EventKind::ProcessExited)
            live_latest[e.rank] = -1;
        if ((e.kind == dt::EventKind::Heal && e.value == 0) || e.kind == dt::EventKind::CheckpointLoaded) {
            healed_since[e.rank] = true;
            fresh[e.rank] = true;
        }
        if (e.kind == dt::EventKind::Commit) {
            CAPTURE(e.rank, e.step);
            auto it = last_commit.find(e.rank);
            bool live_ahead = false;
            for (const auto& [rank, latest] : live_latest)
                live_ahead = live_ahead || (rank != e.rank && latest >= 0 && latest >= int(e.step) - 1);
            if (fresh[e.rank] && int(e.step) < highest && !live_ahead)
                epoch += 1;
            highest = std::max(highest, int(e.step));
            if (it == last_commit.end()) {
                // a fresh process commits step 0, or the step it healed to
                CHECK((e.step == 0 || healed_since[e.rank]));
            } else if (healed_since[e.rank]) {
                CHECK(e.step > it->second);
            } else {
                CHECK(e.step == it->second + 1);
            }
            last_commit[e.rank] = e.step;
            live_latest[e.rank] = e.step;
            healed_since[e.rank] = false;
            fresh[e.rank] = false;
            committed_somewhere.insert(e.step);
        }
        if (e.kind == dt::EventKind::ParamsChecksum && e.step >= 0)
            checksum_by_step[{epoch, int(e.step) * group_size + e.rank % group_size}][e.rank] = e.seq;
    }
    // 2. No committed step is lost: every step was committed by some replica.
    for (int s = 0; s < steps; ++s) {
        CAPTURE(s);
        CHECK(committed_somewhere.count(s) == 1);
    }
    // 3. Every replica that committed a step holds the same parameters after it.
    int compared = 0;
    for (const auto& [epoch_step, by_rank] : checksum_by_step) {
        CAPTURE(epoch_step.first, epoch_step.second);
        for (const auto& [rank, sum] : by_rank) {
            CAPTURE(rank);
            CHECK(sum == by_rank.begin()->second);
        }
        compared += by_rank.size() > 1 ? 1 : 0;
    }
    CHECK(compared > 0);
}

} // namespace

TEST_CASE("a killed replica is restarted, heals from a live peer, and every replica ends equal",
          "[ft][slow]") {
    it::TempDir dir;
    const std::string scenario = dir.write("kill.toml", ftScenario(3, 60,
                                                                   "[[faults]]\naction = \"kill\"\nrank = 1\n"
                                                                   "step = 10\nwhen = \"allreduce\"\n"));
    const auto r =
        it::runDtrun({"run", scenario, "--summary", dir.file("s.json"), "--record", dir.file("r.dtrec")},
                     {{}, {}, 240.0, ""});
    INFO(it::describe(r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    const auto s = it::readJsonFile(dir.file("s.json"));
    INFO("summary: " << s.dump());
    CHECK(s["ok"] == true);
    CHECK(s["steps"] == 60);
    const auto& ft = s["fault_tolerance"];
    REQUIRE(ft["recoveries"].size() == 1);
    const auto& rec = ft["recoveries"][0];
    CHECK(rec["fault"] == "kill");
    CHECK(rec["replica"] == 1);
    // The phases happened, in order.
    REQUIRE(rec["detected_ms"].is_number());
    REQUIRE(rec["new_quorum_ms"].is_number());
    REQUIRE(rec["survivors_commit_ms"].is_number());
    REQUIRE(rec["restarted_ms"].is_number());
    REQUIRE(rec["heal_end_ms"].is_number());
    REQUIRE(rec["rejoined_ms"].is_number());
    CHECK(rec["detected_ms"].get<double>() <= rec["survivors_commit_ms"].get<double>());
    CHECK(rec["restarted_ms"].get<double>() < rec["heal_end_ms"].get<double>());
    CHECK(rec["heal_end_ms"].get<double>() <= rec["rejoined_ms"].get<double>());
    CHECK((rec["heal_source"] == 0 || rec["heal_source"] == 2));
    // The heal moved parameters + exp_avg + exp_avg_sq + a 2-float header, in fp32: 4 (3P + 2) bytes.
    const int64_t P = dt::unitLayout(dt::loadScenarioFile(scenario).model).total();
    CHECK(rec["heal_bytes"].get<int64_t>() == 4 * (3 * P + 2));
    // Every replica finished with the same parameters.
    const auto& sums = s["params_checksum"];
    REQUIRE(sums.size() == 3);
    CHECK(sums[0] == sums[1]);
    CHECK(sums[1] == sums[2]);
    // The survivors committed every step; the restarted replica fewer.
    CHECK(ft["committed_steps"][0] == 60);
    CHECK(ft["committed_steps"][2] == 60);
    CHECK(ft["committed_steps"][1].get<int>() < 60);
    CHECK(ft["heals"][1] == 1);

    const dt::RecordingLoad load = dt::readRecording(dir.file("r.dtrec"));
    REQUIRE(load.complete);
    checkInvariants(load.record, 60);
    CHECK(it::waitForNoWorkers(10.0).empty());
}

TEST_CASE(
    "a killed rank of a 2 x 2 FSDP replica group takes its group down, and the group restarts and "
    "heals shard by shard, over the process group or HTTP, ending bit-identical to an uninterrupted run",
    "[ft][slow]") {
    // Two replica groups of two ranks, fsdp inside each, the quorum across
    // (TorchFT over FSDP). Rank 3 (shard 1 of group 1) is killed at step 6:
    // the Session kills rank 2 with it, both restart, and rank 2 heals shard
    // 0 from rank 0 while rank 3 heals shard 1 from rank 1. min_replicas = 2:
    // no step commits on one group's gradient, so the participants of every
    // committed step are those of the run without the kill, and the result
    // must be the same bits. That run in turn must equal hsdp (2 replicas of
    // 2 shards) without the quorum: the same sums in the same order.
    it::TempDir dir;
    const auto groupsScenario = [](const std::string& strategy, const std::string& faults,
                                   const std::string& ft) {
        it::ScenarioSpec spec;
        spec.name = "fsdp replica groups";
        spec.ranks = 4;
        spec.replicas = 2;
        spec.strategy = strategy;
        spec.steps = 20;
        spec.d_model = 32;
        spec.layers = 2;
        spec.heads = 2;
        spec.run_toml = "step_delay_ms = 40\n";
        spec.extra_toml = ft;
        spec.faults_toml = faults;
        return it::scenarioToml(spec);
    };
    const std::string ft = "[fault_tolerance]\nenabled = true\nmin_replicas = 2\nheartbeat_timeout_ms = 600\n"
                           "collective_timeout_ms = 1500\nrestart_delay_ms = 300\n";
    const std::string kill = "[[faults]]\naction = \"kill\"\nrank = 3\nstep = 6\nwhen = \"step\"\n";
    struct Run {
        std::string name, toml;
    };
    // The same kill with TorchFT's HTTP transport, 3 chunks per shard.
    const std::string ft_http = ft + "heal_transport = \"http\"\nheal_chunks = 3\n";
    const std::vector<Run> runs = {{"killed", groupsScenario("fsdp", kill, ft)},
                                   {"killed_http", groupsScenario("fsdp", kill, ft_http)},
                                   {"uninterrupted", groupsScenario("fsdp", "", ft)},
                                   {"hsdp", groupsScenario("hsdp", "", "")}};
    for (const Run& run : runs)
        runRecorded(dir, run.name, run.toml);
    const auto s = it::readJsonFile(dir.file("killed.json"));
    INFO("summary: " << s.dump());
    CHECK(s["ok"] == true);
    const auto& ftj = s["fault_tolerance"];
    // Group 0 committed every step; the restarted group's two ranks healed once each.
    CHECK(ftj["committed_steps"][0] == 20);
    CHECK(ftj["committed_steps"][1] == 20);
    CHECK(ftj["heals"] == nlohmann::json::array({0, 0, 1, 1}));
    REQUIRE(ftj["recoveries"].size() == 1);
    const auto& rec = ftj["recoveries"][0];
    CHECK(rec["replica"] == 3);
    CHECK(rec["heal_source"] == 1); // shard 1 from shard 1
    // One shard's state: its parameters, exp_avg and exp_avg_sq + 2 header floats, fp32.
    const dt::UnitLayout layout = dt::unitLayout(dt::loadScenarioFile(dir.file("killed.toml")).model);
    int64_t shard = dt::paddedNumel(layout.root_numel, 2) / 2;
    for (int64_t n : layout.unit_numel)
        shard += dt::paddedNumel(n, 2) / 2;
    CHECK(rec["heal_bytes"].get<int64_t>() == 4 * (3 * shard + 2));

    const dt::RecordingLoad load = dt::readRecording(dir.file("killed.dtrec"));
    REQUIRE(load.complete);
    checkInvariants(load.record, 20, /*group_size=*/2);
    std::set<int> healed_from;
    for (const dt::Event& e : load.record.events) {
        if (e.kind == dt::EventKind::Heal && e.value == 0) // receiving: rank <- peer
            healed_from.insert(e.rank * 10 + e.peer);
    }
    CHECK(healed_from == std::set<int>{20, 31}); // rank 2 from rank 0, rank 3 from rank 1
    // Over HTTP: the same pairs, each receive and each serve labelled http
    // with its chunks, and the served bytes are the received ones.
    {
        const auto sh = it::readJsonFile(dir.file("killed_http.json"));
        INFO("http summary: " << sh.dump());
        CHECK(sh["ok"] == true);
        CHECK(sh["fault_tolerance"]["heals"] == nlohmann::json::array({0, 0, 1, 1}));
        const dt::RecordingLoad http = dt::readRecording(dir.file("killed_http.dtrec"));
        REQUIRE(http.complete);
        checkInvariants(http.record, 20, /*group_size=*/2);
        std::set<int> received_from, served_to;
        int64_t received = 0, served = 0;
        for (const dt::Event& e : http.record.events) {
            if (e.kind != dt::EventKind::Heal)
                continue;
            CHECK(e.seq == uint64_t(dt::HealTransport::Http));
            CHECK(e.group_size == 3);
            (e.value == 0 ? received_from : served_to).insert(e.rank * 10 + e.peer);
            (e.value == 0 ? received : served) += e.bytes;
        }
        CHECK(received_from == std::set<int>{20, 31});
        CHECK(served_to == std::set<int>{2, 13}); // rank 0 served rank 2, rank 1 served rank 3
        CHECK(received == served);
        CHECK(received == 2 * rec["heal_bytes"].get<int64_t>());
    }
    // TorchFT's vote, per group: the async heal round has one participant
    // (the healing group contributes zeros), fewer than min_replicas = 2, so
    // every rank of both groups aborts it (reason 3), and no step is ever
    // committed on one group's gradient.
    int too_few = 0, commits_with_one = 0;
    for (const dt::Event& e : load.record.events) {
        if (e.kind == dt::EventKind::Abort && int(e.value) == 3)
            too_few += 1;
        if (e.kind == dt::EventKind::Commit && e.group_size < 2)
            commits_with_one += 1;
    }
    CHECK(too_few == 4);
    CHECK(commits_with_one == 0);
    bool group_killed = false;
    for (const auto& log : load.record.logs)
        group_killed =
            group_killed || contains(log.text, "replica group 1 goes down with rank 3: killing rank 2");
    CHECK(group_killed);

    // Every rank of every run ends with the same bits.
    const auto bytesOf = [&](const std::string& run, int rank) {
        return paramsFileBytes(dir.file(run), rank);
    };
    const std::string reference = bytesOf("hsdp", 0);
    REQUIRE_FALSE(reference.empty());
    for (const std::string run : {"killed", "killed_http", "uninterrupted", "hsdp"})
        for (int rank = 0; rank < 4; ++rank) {
            CAPTURE(run, rank);
            CHECK(bytesOf(run, rank) == reference);
        }
    CHECK(it::waitForNoWorkers(10.0).empty());
}

TEST_CASE("a killed rank of a 2 x 2 DDP replica group takes its group down, each restarted rank heals the "
          "whole model from its twin, and every rank ends bit-identical to an uninterrupted run",
          "[ft][slow]") {
    // DDP inside each group of 2 ranks (its buckets average over the group),
    // the quorum across groups: rank i of a group averages with rank i of the
    // other. Rank 3 is killed at step 6, group 1 restarts, and each of its
    // ranks heals the full state (every rank of a group holds the same bits).
    // min_replicas = 2: every committed step has both groups, as without the
    // kill. Against plain ddp over 4 ranks (no quorum) the sums are taken in
    // another order, so that comparison is within a tolerance.
    it::TempDir dir;
    const auto ddpScenario = [](int replicas, const std::string& faults, const std::string& ft) {
        it::ScenarioSpec spec;
        spec.name = "ddp replica groups";
        spec.ranks = 4;
        spec.replicas = replicas;
        spec.strategy = "ddp";
        spec.steps = 16;
        spec.d_model = 32;
        spec.layers = 2;
        spec.heads = 2;
        spec.run_toml = "step_delay_ms = 40\n";
        spec.extra_toml = ft;
        spec.faults_toml = faults;
        return it::scenarioToml(spec);
    };
    const std::string ft = "[fault_tolerance]\nenabled = true\nmin_replicas = 2\nheartbeat_timeout_ms = 600\n"
                           "collective_timeout_ms = 1500\nrestart_delay_ms = 300\n";
    const std::string kill = "[[faults]]\naction = \"kill\"\nrank = 3\nstep = 6\nwhen = \"step\"\n";
    // Both groups at once (ranks 1 and 3 at step 12): nobody is left to heal
    // from, so the restarted groups read the replica checkpoint of step 9
    // (written by group 0's rank 0, in the default temporary directory).
    std::string both;
    for (int rank : {1, 3})
        both += "[[faults]]\naction = \"kill\"\nrank = " + std::to_string(rank) +
                "\nstep = 12\nwhen = \"step\"\n";
    runRecorded(dir, "killed", ddpScenario(2, kill, ft));
    runRecorded(dir, "all_killed", ddpScenario(2, both, ft));
    runRecorded(dir, "uninterrupted", ddpScenario(2, "", ft));
    runRecorded(dir, "plain", ddpScenario(1, "", ""));
    const auto s = it::readJsonFile(dir.file("killed.json"));
    INFO("summary: " << s.dump());
    CHECK(s["ok"] == true);
    const auto& ftj = s["fault_tolerance"];
    CHECK(ftj["committed_steps"][0] == 16);
    CHECK(ftj["heals"] == nlohmann::json::array({0, 0, 1, 1}));
    REQUIRE(ftj["recoveries"].size() == 1);
    // The whole state, on each healing rank: 4 (3P + 2) bytes.
    const int64_t P = dt::unitLayout(dt::loadScenarioFile(dir.file("killed.toml")).model).total();
    CHECK(ftj["recoveries"][0]["heal_bytes"].get<int64_t>() == 4 * (3 * P + 2));
    const dt::RecordingLoad load = dt::readRecording(dir.file("killed.dtrec"));
    REQUIRE(load.complete);
    checkInvariants(load.record, 16, /*group_size=*/2);
    std::set<int> healed_from;
    for (const dt::Event& e : load.record.events)
        if (e.kind == dt::EventKind::Heal && e.value == 0)
            healed_from.insert(e.rank * 10 + e.peer);
    CHECK(healed_from == std::set<int>{20, 31}); // rank 2 from rank 0, rank 3 from rank 1

    // All killed: one rollback to step 9's checkpoint, read by all 4 ranks.
    const auto all = it::readJsonFile(dir.file("all_killed.json"));
    INFO("all killed: " << all["fault_tolerance"].dump());
    CHECK(all["ok"] == true);
    CHECK(all["fault_tolerance"]["rollbacks"] == 1);
    CHECK(all["fault_tolerance"]["steps_rolled_back"].get<int>() >= 1);
    CHECK(all["fault_tolerance"]["steps_rolled_back"].get<int>() <= 3); // not 12: step-9 was used
    const dt::RecordingLoad all_load = dt::readRecording(dir.file("all_killed.dtrec"));
    REQUIRE(all_load.complete);
    checkInvariants(all_load.record, 16, /*group_size=*/2);
    int loaded = 0, saved_by_rank0 = 0, saved_by_others = 0;
    for (const dt::Event& e : all_load.record.events) {
        loaded += e.kind == dt::EventKind::CheckpointLoaded && e.step == 9;
        if (e.kind == dt::EventKind::CheckpointSaved)
            (e.rank == 0 ? saved_by_rank0 : saved_by_others) += 1;
    }
    CHECK(loaded == 4);
    CHECK(saved_by_rank0 == 2); // steps 9 and 15, once each (9 was not redone)
    CHECK(saved_by_others == 0);

    const std::string reference = paramsFileBytes(dir.file("uninterrupted"), 0);
    REQUIRE_FALSE(reference.empty());
    for (const std::string run : {"killed", "all_killed", "uninterrupted"})
        for (int rank = 0; rank < 4; ++rank) {
            CAPTURE(run, rank);
            CHECK(paramsFileBytes(dir.file(run), rank) == reference);
        }
    const auto params = [&](const std::string& run) {
        return dt::loadParameters(dir.file(run + "/rank0.params"));
    };
    const double diff = it::maxAbsDifference(params("killed"), params("plain"));
    CAPTURE(diff);
    CHECK(diff < 1e-4); // the same mean gradient every step, summed in another order
    CHECK(it::waitForNoWorkers(10.0).empty());
}

TEST_CASE("a killed stage of one of 2 pipelines of 2 stages takes its pipeline down, and the pipeline "
          "restarts and heals stage by stage, ending bit-identical to an uninterrupted run, as do both "
          "pipelines killed at once, resumed from their stage checkpoint",
          "[ft][pipeline][slow]") {
    // TorchFT over pipelines: each pipeline (2 stages, 1F1B, 4 microbatches)
    // is one replica group, and stage i averages its gradients with stage i
    // of the other pipeline through the quorum. Rank 3 (stage 1 of pipeline
    // 1) is killed at step 6: the Session kills rank 2 with it, both restart,
    // and rank 2 heals stage 0 from rank 0 while rank 3 heals stage 1 from
    // rank 1. min_replicas = 2: no step commits on one pipeline's gradient,
    // so the result must be the bits of the run without the kill, which in
    // turn must be those of 2 pipelines side by side without the quorum
    // (pipeline_data_parallel = "ddp": the same average in the same order).
    it::TempDir dir;
    const auto pipelinesScenario = [](const std::string& faults, const std::string& ft) {
        it::ScenarioSpec spec;
        spec.name = "pipeline replica groups";
        spec.ranks = 4;
        spec.stages = 2;
        spec.strategy = "pipeline";
        spec.strategy_toml = "schedule = \"1f1b\"\nmicrobatches = 4\n";
        spec.steps = 20;
        spec.d_model = 32;
        spec.layers = 2;
        spec.heads = 2;
        spec.run_toml = "step_delay_ms = 40\n";
        spec.extra_toml = ft;
        spec.faults_toml = faults;
        return it::scenarioToml(spec);
    };
    const std::string ft = "[fault_tolerance]\nenabled = true\nmin_replicas = 2\nheartbeat_timeout_ms = 600\n"
                           "collective_timeout_ms = 1500\nrestart_delay_ms = 300\n";
    const std::string kill = "[[faults]]\naction = \"kill\"\nrank = 3\nstep = 6\nwhen = \"step\"\n";
    struct Run {
        std::string name, toml;
    };
    // Both pipelines killed at once (ranks 1 and 3 at step 15): nobody to
    // heal from, so the restarted pipelines load the stage checkpoint of
    // step 9 (every 10 steps by default, written by pipeline 0, a file per
    // stage) and redo 10..14.
    const std::string kill_all = "[[faults]]\naction = \"kill\"\nrank = 1\nstep = 15\nwhen = \"step\"\n"
                                 "[[faults]]\naction = \"kill\"\nrank = 3\nstep = 15\nwhen = \"step\"\n";
    const std::vector<Run> runs = {{"killed", pipelinesScenario(kill, ft)},
                                   {"all_killed", pipelinesScenario(kill_all, ft)},
                                   {"uninterrupted", pipelinesScenario("", ft)},
                                   {"no_quorum", pipelinesScenario("", "")}};
    for (const Run& run : runs)
        runRecorded(dir, run.name, run.toml);
    {
        const auto sa = it::readJsonFile(dir.file("all_killed.json"));
        INFO("all killed: " << sa["fault_tolerance"].dump());
        CHECK(sa["ok"] == true);
        CHECK(sa["fault_tolerance"]["rollbacks"] == 1);
        CHECK(sa["fault_tolerance"]["steps_rolled_back"].get<int>() >= 3);
        CHECK(sa["fault_tolerance"]["steps_rolled_back"].get<int>() <= 6); // not 15: step-9 was used
        const dt::RecordingLoad all = dt::readRecording(dir.file("all_killed.dtrec"));
        REQUIRE(all.complete);
        checkInvariants(all.record, 20, /*group_size=*/2);
        int loaded = 0;
        for (const dt::Event& e : all.record.events)
            loaded += e.kind == dt::EventKind::CheckpointLoaded && e.step == 9;
        CHECK(loaded == 4); // every stage of both pipelines read its file of step-9
    }
    const auto s = it::readJsonFile(dir.file("killed.json"));
    INFO("summary: " << s.dump());
    CHECK(s["ok"] == true);
    const auto& ftj = s["fault_tolerance"];
    CHECK(ftj["committed_steps"][0] == 20);
    CHECK(ftj["committed_steps"][1] == 20);
    CHECK(ftj["heals"] == nlohmann::json::array({0, 0, 1, 1}));
    REQUIRE(ftj["recoveries"].size() == 1);
    const auto& rec = ftj["recoveries"][0];
    CHECK(rec["replica"] == 3);
    CHECK(rec["heal_source"] == 1); // stage 1 from stage 1
    // Stage 1's state: its parameters (block 1, the final norm and the head),
    // exp_avg and exp_avg_sq, + 2 header floats, fp32.
    const dt::UnitLayout layout = dt::unitLayout(dt::loadScenarioFile(dir.file("killed.toml")).model);
    CHECK(rec["heal_bytes"].get<int64_t>() > 4 * (3 * layout.unit_numel[1] + 2));
    CHECK(rec["heal_bytes"].get<int64_t>() < 4 * (3 * layout.total() + 2));

    const dt::RecordingLoad load = dt::readRecording(dir.file("killed.dtrec"));
    REQUIRE(load.complete);
    checkInvariants(load.record, 20, /*group_size=*/2);
    std::set<int> healed_from;
    int commits_with_one = 0, stage_messages = 0;
    for (const dt::Event& e : load.record.events) {
        if (e.kind == dt::EventKind::Heal && e.value == 0) // receiving: rank <- peer
            healed_from.insert(e.rank * 10 + e.peer);
        if (e.kind == dt::EventKind::Commit && e.group_size < 2)
            commits_with_one += 1;
        if (e.kind == dt::EventKind::Forward && e.microbatch >= 0)
            stage_messages += 1;
    }
    CHECK(healed_from == std::set<int>{20, 31}); // rank 2 from rank 0, rank 3 from rank 1
    CHECK(commits_with_one == 0);
    CHECK(stage_messages >= 4 * 20 * 4); // the schedule ran: every rank, step and microbatch
    bool group_killed = false;
    for (const auto& log : load.record.logs)
        group_killed =
            group_killed || contains(log.text, "replica group 1 goes down with rank 3: killing rank 2");
    CHECK(group_killed);

    // Each stage's bits, the same in every run and in both pipelines.
    const auto bytesOf = [&](const std::string& run, int rank) {
        return paramsFileBytes(dir.file(run), rank);
    };
    for (int stage = 0; stage < 2; ++stage) {
        const std::string reference = bytesOf("no_quorum", stage);
        REQUIRE_FALSE(reference.empty());
        for (const std::string run : {"killed", "all_killed", "uninterrupted", "no_quorum"})
            for (int pipeline = 0; pipeline < 2; ++pipeline) {
                CAPTURE(run, stage, pipeline);
                CHECK(bytesOf(run, pipeline * 2 + stage) == reference);
            }
    }
    CHECK(it::waitForNoWorkers(10.0).empty());
}

TEST_CASE("2 replica groups of 2 pipelines x 2 stages with FSDP stages: a killed rank takes its group down, "
          "each restarted rank heals its shard from the same rank of the live group, and the run ends "
          "bit-identical to an uninterrupted one",
          "[ft][pipeline][slow]") {
    // [topology] replicas = 2 with 8 ranks: each group is 2 pipelines of 2
    // stages side by side (G = 4); inside a group the 2 ranks of a stage
    // shard it (pipeline_data_parallel = "fsdp") and reduce-scatter its
    // gradients before the quorum averages each shard with the same rank of
    // the other group. Rank 6 (group 1, pipeline 1, stage 0) is killed at
    // step 5: ranks 4..7 restart and rank 4 + k heals from rank k. Against 4
    // pipelines side by side without the quorum (the shard layout differs:
    // 4 shards of a stage, not 2), the result is within a tolerance.
    it::TempDir dir;
    const auto groupsScenario = [](int replicas, const std::string& faults, const std::string& ft) {
        it::ScenarioSpec spec;
        spec.name = "pipelines x shards in replica groups";
        spec.ranks = 8;
        spec.replicas = replicas;
        spec.stages = 2;
        spec.strategy = "pipeline";
        spec.strategy_toml = "schedule = \"1f1b\"\nmicrobatches = 2\npipeline_data_parallel = \"fsdp\"\n";
        spec.steps = 12;
        spec.d_model = 32;
        spec.layers = 2;
        spec.heads = 2;
        spec.run_toml = "step_delay_ms = 40\n";
        spec.extra_toml = ft;
        spec.faults_toml = faults;
        return it::scenarioToml(spec);
    };
    const std::string ft = "[fault_tolerance]\nenabled = true\nmin_replicas = 2\nheartbeat_timeout_ms = 600\n"
                           "collective_timeout_ms = 1500\nrestart_delay_ms = 300\n";
    const std::string kill = "[[faults]]\naction = \"kill\"\nrank = 6\nstep = 5\nwhen = \"step\"\n";
    runRecorded(dir, "killed", groupsScenario(2, kill, ft));
    runRecorded(dir, "uninterrupted", groupsScenario(2, "", ft));
    runRecorded(dir, "no_quorum", groupsScenario(1, "", ""));
    const auto s = it::readJsonFile(dir.file("killed.json"));
    INFO("summary: " << s["fault_tolerance"].dump());
    CHECK(s["ok"] == true);
    const auto& ftj = s["fault_tolerance"];
    CHECK(ftj["committed_steps"][0] == 12);
    CHECK(ftj["heals"] == nlohmann::json::array({0, 0, 0, 0, 1, 1, 1, 1}));
    const dt::RecordingLoad load = dt::readRecording(dir.file("killed.dtrec"));
    REQUIRE(load.complete);
    checkInvariants(load.record, 12, /*group_size=*/4);
    std::set<int> healed_from;
    int stage_group_reduce_scatters = 0;
    for (const dt::Event& e : load.record.events) {
        if (e.kind == dt::EventKind::Heal && e.value == 0) // receiving: rank <- peer
            healed_from.insert(e.rank * 10 + e.peer);
        if (e.kind == dt::EventKind::ReduceScatter && e.phase == dt::EventPhase::WorkCompleted &&
            e.group >= dt::groupIdStage(0) && e.group < dt::groupIdReplicate(0))
            stage_group_reduce_scatters += 1;
    }
    CHECK(healed_from == std::set<int>{40, 51, 62, 73}); // rank 4 + k from rank k
    CHECK(stage_group_reduce_scatters >= 8 * 12);        // every rank, every step, in its stage group

    // Every rank of both runs ends with the same stage (fsdp gathers it for params_out).
    for (int rank = 0; rank < 8; ++rank) {
        CAPTURE(rank);
        const std::string reference = paramsFileBytes(dir.file("uninterrupted"), rank);
        REQUIRE_FALSE(reference.empty());
        CHECK(paramsFileBytes(dir.file("killed"), rank) == reference);
        const double diff = it::maxAbsDifference(
            dt::loadParameters(dir.file("killed/rank" + std::to_string(rank) + ".params")),
            dt::loadParameters(dir.file("no_quorum/rank" + std::to_string(rank) + ".params")));
        CAPTURE(diff);
        CHECK(diff < 1e-4); // the same mean gradient, summed in another order
    }
    CHECK(it::waitForNoWorkers(10.0).empty());
}

TEST_CASE("init_sync: at the job's first step every replica but the primary heals from it, and the job "
          "goes on equal",
          "[ft][slow]") {
    // TorchFT's init_sync (force_recover at max_step 0): replicas 1 and 2 heal
    // from replica 0 at step 0; in async mode they contribute zeros that round
    // but count (they are at max_step), so the round commits with 3 participants.
    it::TempDir dir;
    const auto r = it::runDtrun({"run", dir.write("init.toml", ftScenario(3, 6, "", "init_sync = true\n")),
                                 "--summary", dir.file("s.json"), "--record", dir.file("r.dtrec"), "--quiet"},
                                {{}, {}, 120.0, ""});
    INFO(it::describe(r));
    REQUIRE(r.exit_code == 0);
    const auto s = it::readJsonFile(dir.file("s.json"));
    INFO("summary: " << s["fault_tolerance"].dump());
    CHECK(s["ok"] == true);
    CHECK(s["fault_tolerance"]["heals"] == nlohmann::json::array({0, 1, 1}));
    CHECK(s["fault_tolerance"]["committed_steps"] == nlohmann::json::array({6, 6, 6}));
    CHECK(s["params_checksum"][0] == s["params_checksum"][1]);
    CHECK(s["params_checksum"][1] == s["params_checksum"][2]);
    const dt::RecordingLoad load = dt::readRecording(dir.file("r.dtrec"));
    REQUIRE(load.complete);
    int heals_at_0 = 0, first_commit_group = -1;
    for (const dt::Event& e : load.record.events) {
        if (e.kind == dt::EventKind::Heal && e.value == 0 && e.step == 0 && e.peer == 0)
            heals_at_0 += 1;
        if (e.kind == dt::EventKind::Commit && e.step == 0 && e.rank == 0)
            first_commit_group = e.group_size;
    }
    CHECK(heals_at_0 == 2);
    CHECK(first_commit_group == 3);
    CHECK(it::waitForNoWorkers(10.0).empty());
}

// 8 ranks, [topology] replicas = 2: each group is 2 pipelines of 2 stages.
// No checkpoint_dir: stage checkpoints every 10 steps in a temporary
// directory by default, written by the quorum's lowest group. Ranks 1 and 5
// (stage 1 of each group's first pipeline) die at step 13, each taking its
// group down: nobody is left to heal from, so all 8 restarted ranks load
// step-9 and redo 10..12. min_replicas = 2 keeps every commit's participants
// those of the run without the kills, so the bits must be the same.
//  - pipeline_data_parallel = "ddp": the stage copies are equal; the lowest
//    group's first pipeline (ranks 0 and 1) writes a file per stage, and
//    every pipeline's stage i reads it.
//  - "zero1" / "fsdp": each stage is sharded over the group's 2 pipelines;
//    every rank of the lowest group (0..3) writes its shard's file, and
//    rank r of each group reads shard r / 2 of stage r % 2 (zero1 then
//    all-gathers the whole stage; fsdp gathers it at its next step).
namespace {
void checkPipelineGroupsResumeFromStageCheckpoint(const std::string& data_parallel) {
    it::TempDir dir;
    const auto groupsScenario = [&](const std::string& faults, const std::string& pipeline_dp,
                                    const std::string& run_extra) {
        it::ScenarioSpec spec;
        spec.name = "pipelines in replica groups, all killed";
        spec.ranks = 8;
        spec.replicas = 2;
        spec.stages = 2;
        spec.strategy = "pipeline";
        spec.strategy_toml =
            "schedule = \"1f1b\"\nmicrobatches = 2\npipeline_data_parallel = \"" + pipeline_dp + "\"\n";
        spec.steps = 16;
        spec.d_model = 32;
        spec.layers = 2;
        spec.heads = 2;
        spec.run_toml = "step_delay_ms = 30\n" + run_extra;
        spec.extra_toml = "[fault_tolerance]\nenabled = true\nmin_replicas = 2\nheartbeat_timeout_ms = 600\n"
                          "collective_timeout_ms = 1500\nrestart_delay_ms = 300\n";
        spec.faults_toml = faults;
        return it::scenarioToml(spec);
    };
    const bool sharded = data_parallel != "ddp";
    std::string kills;
    for (int rank : {1, 5})
        kills += "[[faults]]\naction = \"kill\"\nrank = " + std::to_string(rank) +
                 "\nstep = 13\nwhen = \"step\"\n";
    // The killed run keeps its checkpoints in DIR/ck, every 10 steps (the default's cadence).
    runRecorded(dir, "killed",
                groupsScenario(kills, data_parallel,
                               "checkpoint_dir = \"" + dir.file("ck") + "\"\ncheckpoint_every = 10\n"));
    runRecorded(dir, "uninterrupted", groupsScenario("", data_parallel, ""));
    const auto s = it::readJsonFile(dir.file("killed.json"));
    INFO("summary: " << s["fault_tolerance"].dump());
    CHECK(s["ok"] == true);
    CHECK(s["fault_tolerance"]["rollbacks"] == 1);
    CHECK(s["fault_tolerance"]["steps_rolled_back"].get<int>() >= 2);
    CHECK(s["fault_tolerance"]["steps_rolled_back"].get<int>() <= 4); // not 13: step-9 was used
    const dt::RecordingLoad load = dt::readRecording(dir.file("killed.dtrec"));
    REQUIRE(load.complete);
    // The same bits in every copy of a stage (ddp) or of a shard (the same rank of each group).
    checkInvariants(load.record, 16, /*group_size=*/sharded ? 4 : 2);
    std::set<int> loaded_by, saved_by;
    for (const dt::Event& e : load.record.events) {
        if (e.kind == dt::EventKind::CheckpointLoaded && e.step == 9)
            loaded_by.insert(e.rank);
        if (e.kind == dt::EventKind::CheckpointSaved && e.step == 9)
            saved_by.insert(e.rank);
    }
    CHECK(loaded_by ==
          std::set<int>{0, 1, 2, 3, 4, 5, 6, 7}); // every stage (shard) of every pipeline read step-9
    // The lowest group wrote it: its first pipeline (whole stages) or every shard.
    CHECK(saved_by == (sharded ? std::set<int>{0, 1, 2, 3} : std::set<int>{0, 1}));

    // Each rank's stage, as in the run without the kills; whole stages also
    // the same in every pipeline of both groups.
    for (int rank = 0; rank < 8; ++rank) {
        CAPTURE(rank);
        const std::string reference = paramsFileBytes(dir.file("uninterrupted"), sharded ? rank : rank % 2);
        REQUIRE_FALSE(reference.empty());
        CHECK(paramsFileBytes(dir.file("uninterrupted"), rank) == reference);
        CHECK(paramsFileBytes(dir.file("killed"), rank) == reference);
    }
    const auto meta = it::readJsonFile(dir.file("ck/step-9/checkpoint.json"));
    CHECK(meta["shards"] == (sharded ? 2 : 1));
    CHECK(meta["version"] == (sharded ? 2 : 1)); // an older dtlab refuses sharded stages by their version
    // A shard's bounds depend on the layout: resuming with the other one is
    // refused before any rank starts, naming both.
    const std::string other =
        groupsScenario("", sharded ? "ddp" : "fsdp", "resume_from = \"" + dir.file("ck/step-9") + "\"\n");
    const auto refused = it::runDtrun({"run", dir.write("other.toml", other), "--quiet"}, {{}, {}, 60.0, ""});
    INFO(it::describe(refused));
    CHECK(refused.exit_code == 2);
    CHECK(refused.err.find(sharded ? "holds stages sharded over 2 pipelines; this run needs whole stages"
                                   : "holds whole stages; this run needs stages sharded over 2 pipelines") !=
          std::string::npos);
    CHECK(it::waitForNoWorkers(10.0).empty());
}
} // namespace

TEST_CASE("every group of 2 replica groups of 2 pipelines x 2 stages killed at once: the restarted groups "
          "resume from the stage checkpoint the first pipeline wrote and end bit-identical",
          "[ft][pipeline][checkpoint][slow]") {
    checkPipelineGroupsResumeFromStageCheckpoint("ddp");
}

TEST_CASE("every group of 2 replica groups of 2 pipelines x 2 stages sharded across the pipelines killed at "
          "once: each rank resumes from its own shard's file and the run ends bit-identical",
          "[ft][pipeline][checkpoint][slow]") {
    SECTION("zero1: each rank reads its shard and all-gathers the whole stage") {
        checkPipelineGroupsResumeFromStageCheckpoint("zero1");
    }
    SECTION("fsdp: each rank reads its shard and gathers the stage at its next step") {
        checkPipelineGroupsResumeFromStageCheckpoint("fsdp");
    }
}

TEST_CASE("every group of 2 x 2 FSDP replica groups killed at once: the restarted groups resume from the "
          "newest sharded checkpoint and end bit-identical to an uninterrupted run",
          "[ft][checkpoint][slow]") {
    // No [run] checkpoint_dir: replica groups keep sharded checkpoints every
    // 10 steps in a temporary directory by default, written by the quorum's
    // lowest group (one file per shard). Ranks 1 and 3 die at step 25, each
    // taking its group down: nobody is left to heal from, so the restarted
    // groups (a quorum all at step 0) load step-19 and redo steps 20..24, not
    // 0..24. min_replicas = 2 keeps the participants of every commit those of
    // the run without the kills, so the result must be the same bits.
    it::TempDir dir;
    const auto groupsScenario = [](const std::string& faults) {
        it::ScenarioSpec spec;
        spec.name = "fsdp replica groups, all killed";
        spec.ranks = 4;
        spec.replicas = 2;
        spec.strategy = "fsdp";
        spec.steps = 36;
        spec.d_model = 32;
        spec.layers = 2;
        spec.heads = 2;
        spec.run_toml = "step_delay_ms = 30\n";
        spec.extra_toml = "[fault_tolerance]\nenabled = true\nmin_replicas = 2\nheartbeat_timeout_ms = 600\n"
                          "collective_timeout_ms = 1500\nrestart_delay_ms = 300\n";
        spec.faults_toml = faults;
        return it::scenarioToml(spec);
    };
    std::string kills;
    for (int rank : {1, 3})
        kills += "[[faults]]\naction = \"kill\"\nrank = " + std::to_string(rank) +
                 "\nstep = 25\nwhen = \"step\"\n";
    for (const std::string run : {"killed", "uninterrupted"}) {
        const auto r = runRecorded(dir, run, groupsScenario(run == "killed" ? kills : ""));
        if (run == "killed")
            CHECK(contains(
                r.err, "dtrun: every replica was down at once (1 time(s)): the job went back and redid "));
    }
    const auto s = it::readJsonFile(dir.file("killed.json"));
    INFO("summary: " << s["fault_tolerance"].dump());
    CHECK(s["ok"] == true);
    const auto& ftj = s["fault_tolerance"];
    CHECK(ftj["rollbacks"] == 1);
    // Steps 20..24 (or 25) redone; a SIGKILLed rank's last commits may never reach the Session.
    CHECK(ftj["steps_rolled_back"].get<int>() >= 3);
    CHECK(ftj["steps_rolled_back"].get<int>() <= 6); // not 25: the checkpoint of step 19 was used
    const dt::RecordingLoad load = dt::readRecording(dir.file("killed.dtrec"));
    REQUIRE(load.complete);
    checkInvariants(load.record, 36, /*group_size=*/2);
    int resumed_from_19 = 0, loaded = 0, saved = 0;
    for (const auto& log : load.record.logs)
        resumed_from_19 += contains(log.text, "resumed from the job's durable checkpoint") &&
                           contains(log.text, "(step 19)");
    for (const dt::Event& e : load.record.events) {
        loaded += e.kind == dt::EventKind::CheckpointLoaded && e.step == 19;
        saved += e.kind == dt::EventKind::CheckpointSaved;
    }
    CHECK(resumed_from_19 == 2); // each group's rank 0 says so
    CHECK(loaded == 4);          // every rank of both groups read its shard of step-19
    CHECK(saved == 2 * 4);       // steps 9, 19, 29 and 35, two shards each, once (19 was not redone)

    // Every rank ends with the same bits as the run without the kills.
    const auto bytesOf = [&](const std::string& run, int rank) {
        return paramsFileBytes(dir.file(run), rank);
    };
    const std::string reference = bytesOf("uninterrupted", 0);
    REQUIRE_FALSE(reference.empty());
    for (int rank = 0; rank < 4; ++rank) {
        CAPTURE(rank);
        CHECK(bytesOf("killed", rank) == reference);
    }
    CHECK(it::waitForNoWorkers(10.0).empty());
}

TEST_CASE(
    "detection by heartbeat waits heartbeat_timeout_ms for a new quorum, by connection it does not, and "
    "the stopwatch says who noticed",
    "[ft][slow][solo]") {
    it::TempDir dir;
    std::map<std::string, double> new_quorum_ms;
    for (const std::string detection : {"connection", "heartbeat"}) {
        CAPTURE(detection);
        const std::string scenario = dir.write(
            detection + ".toml",
            ftScenario(3, 24, "[[faults]]\naction = \"kill\"\nrank = 1\nstep = 8\nwhen = \"allreduce\"\n",
                       "detection = \"" + detection + "\"\nrestart = \"never\"\njoin_timeout_ms = 5000\n"));
        const auto r =
            it::runDtrun({"run", scenario, "--summary", dir.file(detection + ".json")}, {{}, {}, 240.0, ""});
        INFO(it::describe(r));
        REQUIRE_FALSE(r.timed_out);
        CHECK(r.exit_code == 0);
        const auto s = it::readJsonFile(dir.file(detection + ".json"));
        INFO("summary: " << s.dump());
        const auto& rec = s["fault_tolerance"]["recoveries"][0];
        REQUIRE(rec["new_quorum_ms"].is_number());
        new_quorum_ms[detection] = rec["new_quorum_ms"].get<double>();
        // Who noticed first: a survivor whose collective with it failed, or the lighthouse by the mode's
        // own rule (never by the other mode's).
        const std::string by = rec["detected_by"].get<std::string>();
        CAPTURE(by);
        CHECK((by.rfind("a survivor", 0) == 0 ||
               by == (detection == "heartbeat" ? "lighthouse: heartbeat timeout"
                                               : "lighthouse: connection closed")));
    }
    CAPTURE(new_quorum_ms);
    CHECK(new_quorum_ms["connection"] < 400.0);
    CHECK(new_quorum_ms["heartbeat"] >= 450.0); // heartbeat_timeout_ms = 600 after the last heartbeat
    CHECK(new_quorum_ms["heartbeat"] < 4000.0); // not the 5 s join timeout
}

TEST_CASE("TorchFT's vote counts only real contributions: with 2 replicas and min_replicas 2 the async heal "
          "round aborts, the sync one commits",
          "[ft][slow]") {
    // Replica 1 is killed and restarted. Async (TorchFT's default): it heals
    // while the survivor computes and contributes zeros, so that round has one
    // participant, fewer than min_replicas = 2: every replica votes abort (the
    // healer keeps the state it received), and the next round commits with 2.
    // Sync: it heals before computing and contributes, so the heal round
    // commits with 2 participants.
    for (const std::string mode : {"async", "sync"}) {
        DYNAMIC_SECTION("quorum_mode = " << mode) {
            it::TempDir dir;
            const std::string scenario = dir.write(
                "vote.toml", ftScenario(2, 30, "[[faults]]\naction = \"kill\"\nrank = 1\nstep = 8\n",
                                        "min_replicas = 2\nquorum_mode = \"" + mode + "\"\n"));
            const auto r = it::runDtrun({"run", scenario, "--summary", dir.file("s.json"), "--record",
                                         dir.file("r.dtrec"), "--quiet"},
                                        {{}, {}, 240.0, ""});
            INFO(it::describe(r));
            REQUIRE(r.exit_code == 0);
            const auto s = it::readJsonFile(dir.file("s.json"));
            INFO("summary: " << s.dump());
            CHECK(s["ok"] == true);
            CHECK(s["fault_tolerance"]["heals"][1] == 1);
            CHECK(s["params_checksum"][0] == s["params_checksum"][1]);
            const dt::RecordingLoad load = dt::readRecording(dir.file("r.dtrec"));
            REQUIRE(load.complete);
            checkInvariants(load.record, 30);
            int too_few = 0, other_aborts = 0, commits_with_one = 0;
            for (const dt::Event& e : load.record.events) {
                // 3: too few participants; 1 (a collective failed) is the kill landing in an all-reduce
                if (e.kind == dt::EventKind::Abort && int(e.value) != 1)
                    (int(e.value) == 3 ? too_few : other_aborts) += 1;
                if (e.kind == dt::EventKind::Commit && e.group_size < 2)
                    commits_with_one += 1;
            }
            CHECK(other_aborts == 0);
            CHECK(commits_with_one == 0); // no step is ever committed on one real gradient
            if (mode == "async")
                CHECK(too_few == 2); // the heal round, on both replicas
            else
                CHECK(too_few == 0);
        }
    }
}

TEST_CASE("every replica killed at once: the restarted job resumes from its newest durable checkpoint and "
          "reports the steps it redid",
          "[ft][slow]") {
    // No [run] checkpoint_dir: a fault-tolerant ddp run keeps durable
    // checkpoints every 10 steps in a temporary directory by default. All
    // three replicas die at step 25; there is no live peer to heal from, so
    // the restarted ones' first quorum has nobody ahead of step-19, so they
    // load it and redo steps 20..24 (or 25), not 0..24.
    it::TempDir dir;
    std::string faults;
    for (int rank = 0; rank < 3; ++rank)
        faults += "[[faults]]\naction = \"kill\"\nrank = " + std::to_string(rank) + "\nstep = 25\n";
    const std::string scenario = dir.write("all.toml", ftScenario(3, 40, faults));
    const auto r =
        it::runDtrun({"run", scenario, "--summary", dir.file("s.json"), "--record", dir.file("r.dtrec")},
                     {{}, {}, 240.0, ""});
    INFO(it::describe(r));
    REQUIRE(r.exit_code == 0);
    const auto s = it::readJsonFile(dir.file("s.json"));
    INFO("summary: " << s["fault_tolerance"].dump());
    CHECK(s["ok"] == true);
    CHECK(s["params_checksum"][0] == s["params_checksum"][1]);
    CHECK(s["params_checksum"][1] == s["params_checksum"][2]);
    const auto& ft = s["fault_tolerance"];
    CHECK(ft["rollbacks"] == 1);
    CHECK(contains(r.err, "dtrun: every replica was down at once (1 time(s)): the job went back and redid "));
    // Steps 20..24 (or 25) were redone; a SIGKILLed process's last commits may never reach the
    // Session (its telemetry goes out in 20 ms batches), so the events can show a step or two fewer.
    CHECK(ft["steps_rolled_back"].get<int>() >= 3);
    CHECK(ft["steps_rolled_back"].get<int>() <= 6); // not 25: the checkpoint of step 19 was used
    const dt::RecordingLoad load = dt::readRecording(dir.file("r.dtrec"));
    REQUIRE(load.complete);
    checkInvariants(load.record, 40);
    bool resumed_from_19 = false;
    for (const auto& log : load.record.logs)
        resumed_from_19 =
            resumed_from_19 || (contains(log.text, "resumed from the job's durable checkpoint") &&
                                contains(log.text, "(step 19)"));
    CHECK(resumed_from_19);
    CHECK(it::waitForNoWorkers(10.0).empty());
}

TEST_CASE("fault-tolerant Streaming DiLoCo: a replica killed while a fragment is in flight heals at the next "
          "fragment's round, and every replica ends with the same global model",
          "[ft][diloco][slow]") {
    // scenarios/ft_diloco_streaming.toml: 3 replicas, H = 10, 2 fragments
    // (a round every 5 steps: started after the period's third step, applied
    // 2 steps later), alpha = 0.5; replica 1 killed as step 13 starts, between
    // fragment 0's send (after step 12) and its outer step (after step 14).
    it::TempDir dir;
    std::filesystem::create_directories(dir.file("params"));
    const auto r =
        it::runDtrun({"run", it::scenarioPath("ft_diloco_streaming.toml"), "--summary", dir.file("s.json"),
                      "--record", dir.file("r.dtrec"), "--params-out", dir.file("params"), "--quiet"},
                     {{}, {}, 240.0, ""});
    INFO(it::describe(r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    const auto s = it::readJsonFile(dir.file("s.json"));
    INFO("summary: " << s.dump());
    CHECK(s["ok"] == true);
    const auto& ft = s["fault_tolerance"];
    REQUIRE(ft["recoveries"].size() == 1);
    const auto& rec = ft["recoveries"][0];
    CHECK(rec["replica"] == 1);
    // The local model and AdamW (3P + 2 header floats), then every fragment's
    // global parameters and momentum (2P) and the round position (3 floats).
    const int64_t P =
        dt::unitLayout(dt::loadScenarioFile(it::scenarioPath("ft_diloco_streaming.toml")).model).total();
    CHECK(rec["heal_bytes"].get<int64_t>() == 4 * (5 * P + 5));
    CHECK(ft["heals"] == nlohmann::json::array({0, 1, 0}));
    // The fragment in flight at the kill held all three pseudo-gradients: the
    // survivors committed every inner step.
    CHECK(ft["committed_steps"][0] == 60);
    CHECK(ft["committed_steps"][2] == 60);
    const auto& sums = s["params_checksum"];
    REQUIRE(sums.size() == 3);
    CHECK(sums[0] == sums[1]);
    CHECK(sums[1] == sums[2]);

    const dt::RecordingLoad load = dt::readRecording(dir.file("r.dtrec"));
    REQUIRE(load.complete);
    checkInvariants(load.record, 60);
    // Rounds alternate the fragments, each sent tau = 2 steps before its outer step.
    std::map<int, int> sent_at; // rank 0: step -> fragment
    std::vector<std::pair<int, int>> applied;
    int survivors_round = -1;
    for (const dt::Event& e : load.record.events) {
        if (e.rank != 0)
            continue;
        if (e.kind == dt::EventKind::PseudoGradient)
            sent_at[e.step] = e.unit;
        if (e.kind == dt::EventKind::OuterStep)
            applied.push_back({e.step, e.unit});
        if (e.kind == dt::EventKind::Commit && e.step == 19) // fragment 1's round after the kill
            survivors_round = e.group_size;
    }
    REQUIRE(applied.size() >= 10);
    for (size_t k = 0; k < applied.size(); ++k) {
        CAPTURE(k, applied[k].first);
        CHECK(applied[k].first == int(5 * k + 4));
        CHECK(applied[k].second == int(k % 2));
        CHECK(sent_at.count(applied[k].first - 2) == 1);
        CHECK(sent_at[applied[k].first - 2] == applied[k].second);
    }
    CHECK(survivors_round == 2);
    // Every replica's global model, the same bits.
    const auto bytesOf = [&](int rank) { return paramsFileBytes(dir.file("params"), rank); };
    REQUIRE_FALSE(bytesOf(0).empty());
    CHECK(bytesOf(0) == bytesOf(1));
    CHECK(bytesOf(1) == bytesOf(2));
    CHECK(it::waitForNoWorkers(10.0).empty());
}

TEST_CASE("fault-tolerant Streaming DiLoCo with int8 pseudo-gradients all-gathers each fragment's encoded "
          "bytes, and the replicas end with the same global model, close to fp32's",
          "[ft][diloco][slow]") {
    // 3 replicas, H = 10, 2 fragments, tau = 1, no fault: the same run in fp32
    // (all-reduce) and int8 (all-gather of 1 byte per value + a scale per 256).
    it::TempDir dir;
    std::map<std::string, nlohmann::json> summaries;
    for (const std::string format : {"fp32", "int8"}) {
        it::ScenarioSpec spec;
        spec.name = "streaming diloco " + format;
        spec.ranks = 3;
        spec.steps = 30;
        spec.d_model = 32;
        spec.layers = 2;
        spec.heads = 2;
        spec.strategy = "diloco";
        spec.extra_toml = "[diloco]\ninner_steps = 10\nfragments = 2\nsync_delay = 1\npseudo_gradient = \"" +
                          format + "\"\n[fault_tolerance]\nenabled = true\n";
        const auto r =
            it::runDtrun({"run", dir.write(format + ".toml", it::scenarioToml(spec)), "--summary",
                          dir.file(format + ".json"), "--record", dir.file(format + ".dtrec"), "--quiet"},
                         {{}, {}, 120.0, ""});
        INFO(format << ": " << it::describe(r));
        REQUIRE(r.exit_code == 0);
        summaries[format] = it::readJsonFile(dir.file(format + ".json"));
        const auto& sums = summaries[format]["params_checksum"];
        CHECK(sums[0] == sums[1]);
        CHECK(sums[1] == sums[2]);
    }
    // Each round's wire bytes are the fragment's encoded size: fragment 0 holds
    // block 0 and the root unit, fragment 1 block 1.
    const dt::UnitLayout layout = dt::unitLayout(dt::loadScenarioFile(dir.file("int8.toml")).model);
    const int64_t fragment_numel[2] = {layout.unit_numel[0] + layout.root_numel, layout.unit_numel[1]};
    const dt::RecordingLoad load = dt::readRecording(dir.file("int8.dtrec"));
    REQUIRE(load.complete);
    int rounds = 0;
    for (const dt::Event& e : load.record.events)
        if (e.kind == dt::EventKind::PseudoGradient && e.rank == 0) {
            CAPTURE(e.step, e.unit);
            REQUIRE((e.unit == 0 || e.unit == 1));
            CHECK(e.bytes == dt::encodedBytes(fragment_numel[e.unit], dt::PseudoGradientFormat::Int8));
            rounds += 1;
        }
    CHECK(rounds == 6); // one round every 5 steps
    // All-gather of ~1 byte per value against a ring all-reduce of 4: well under half the bytes.
    const double int8_sent = summaries["int8"]["bytes_sent"][0].get<double>();
    const double fp32_sent = summaries["fp32"]["bytes_sent"][0].get<double>();
    CHECK(int8_sent < 0.5 * fp32_sent);
    CHECK(summaries["int8"]["final_loss"].get<double>() ==
          Approx(summaries["fp32"]["final_loss"].get<double>()).epsilon(0.05));
    CHECK(it::waitForNoWorkers(10.0).empty());
}

TEST_CASE("fault-tolerant DiLoCo: a replica killed mid inner loop heals at the next outer sync",
          "[ft][diloco][slow]") {
    // scenarios/ft_diloco_kill_replica.toml: 3 replicas, H = 10, replica 1 killed as step 14 starts.
    it::TempDir dir;
    const auto r = it::runDtrun({"run", it::scenarioPath("ft_diloco_kill_replica.toml"), "--summary",
                                 dir.file("s.json"), "--record", dir.file("r.dtrec"), "--quiet"},
                                {{}, {}, 240.0, ""});
    INFO(it::describe(r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    const auto s = it::readJsonFile(dir.file("s.json"));
    INFO("summary: " << s.dump());
    CHECK(s["ok"] == true);
    CHECK(s["steps"] == 60);
    const auto& ft = s["fault_tolerance"];
    REQUIRE(ft["recoveries"].size() == 1);
    const auto& rec = ft["recoveries"][0];
    CHECK(rec["replica"] == 1);
    REQUIRE(rec["heal_end_ms"].is_number());
    REQUIRE(rec["rejoined_ms"].is_number());
    // The heal carried the inner state (local model, AdamW moments, 2 header
    // floats: 3P + 2) and the outer state (global model, momentum: 2P).
    const int64_t P =
        dt::unitLayout(dt::loadScenarioFile(it::scenarioPath("ft_diloco_kill_replica.toml")).model).total();
    CHECK(rec["heal_bytes"].get<int64_t>() == 4 * (5 * P + 2));
    // The survivors committed every inner step; replica 1 lost the ones it missed.
    CHECK(ft["committed_steps"][0] == 60);
    CHECK(ft["committed_steps"][2] == 60);
    CHECK(ft["committed_steps"][1].get<int>() < 60);
    CHECK(ft["heals"][1] == 1);
    const auto& sums = s["params_checksum"];
    REQUIRE(sums.size() == 3);
    CHECK(sums[0] == sums[1]);
    CHECK(sums[1] == sums[2]);

    const dt::RecordingLoad load = dt::readRecording(dir.file("r.dtrec"));
    REQUIRE(load.complete);
    checkInvariants(load.record, 60);
    // The outer sync after step 19 averaged over the two survivors: its Commit
    // says how many replicas were up to date.
    int survivors_sync = -1;
    for (const dt::Event& e : load.record.events)
        if (e.kind == dt::EventKind::Commit && e.rank == 0 && e.step == 19)
            survivors_sync = e.group_size;
    CHECK(survivors_sync == 2);
    CHECK(it::waitForNoWorkers(10.0).empty());
}

TEST_CASE("fault-tolerant DiLoCo with every replica killed at once resumes from its newest durable "
          "checkpoint, global model and outer momentum included, classic and streaming",
          "[ft][diloco][checkpoint][slow]") {
    // 2 replicas, H = 4, a checkpoint every 8 steps (after the outer syncs of
    // steps 7, 15, 23, 31). Both die as step 22 starts: the job had committed
    // through the sync of step 19 (streaming: the round of step 21), its
    // newest checkpoint is of step 15, so the restarted replicas load it and
    // redo 16..19 (16..21), not 0..19.
    // Streaming: 2 fragments (a round every 2 steps), sync_delay 1, alpha 0.5;
    // the checkpoint is written when a round ends, with nothing in flight.
    for (const bool streaming : {false, true}) {
        CAPTURE(streaming);
        it::TempDir dir;
        it::ScenarioSpec spec;
        spec.name = "ft diloco checkpoints";
        spec.ranks = 2;
        spec.strategy = "diloco";
        spec.steps = 32;
        spec.d_model = 32;
        spec.layers = 2;
        spec.heads = 2;
        spec.run_toml = "step_delay_ms = 40\ncheckpoint_every = 8\n";
        spec.extra_toml = std::string("[diloco]\ninner_steps = 4\n") +
                          (streaming ? "fragments = 2\nsync_delay = 1\nalpha = 0.5\n" : "") +
                          "[fault_tolerance]\nenabled = true\nheartbeat_timeout_ms = 600\n"
                          "collective_timeout_ms = 1500\nrestart_delay_ms = 300\n";
        for (int rank = 0; rank < 2; ++rank)
            spec.faults_toml += "[[faults]]\naction = \"kill\"\nrank = " + std::to_string(rank) +
                                "\nstep = 22\nwhen = \"step\"\n";
        runRecorded(dir, "all", it::scenarioToml(spec));
        const auto s = it::readJsonFile(dir.file("all.json"));
        INFO("summary: " << s["fault_tolerance"].dump());
        CHECK(s["ok"] == true);
        CHECK(s["params_checksum"][0] == s["params_checksum"][1]);
        const auto& ft = s["fault_tolerance"];
        const dt::RecordingLoad load = dt::readRecording(dir.file("all.dtrec"));
        REQUIRE(load.complete);
        std::string logs;
        for (const auto& log : load.record.logs)
            logs += std::to_string(log.rank) + ": " + log.text + "\n";
        INFO("logs:\n" << logs);
        CHECK(ft["rollbacks"] == 1);
        CHECK(ft["steps_rolled_back"].get<int>() >= 2);
        CHECK(ft["steps_rolled_back"].get<int>() <= (streaming ? 6 : 4)); // not 20: step 15's was used
        checkInvariants(load.record, 32);
        bool resumed_from_15 = false;
        for (const auto& log : load.record.logs)
            resumed_from_15 =
                resumed_from_15 || (contains(log.text, "resumed from the job's durable checkpoint") &&
                                    contains(log.text, "(step 15)"));
        CHECK(resumed_from_15);
        // Saved by the quorum's lowest replica after the syncs of steps 7 and 15
        // (and again after the restart), loaded by both restarted replicas.
        std::set<int> saved_steps;
        int loads = 0;
        for (const dt::Event& e : load.record.events) {
            if (e.kind == dt::EventKind::CheckpointSaved) {
                CHECK(e.rank == 0);
                saved_steps.insert(int(e.step));
            }
            if (e.kind == dt::EventKind::CheckpointLoaded) {
                CHECK(e.step == 15);
                loads += 1;
            }
        }
        CHECK(saved_steps.count(7) == 1);
        CHECK(saved_steps.count(15) == 1);
        CHECK(saved_steps.count(31) == 1);
        // Both restarted replicas load it, or (the other still starting when the
        // first one's quorum formed) one loads it and the other heals from it.
        CHECK(loads >= 1);
        CHECK(loads + ft["heals"][0].get<int>() + ft["heals"][1].get<int>() == 2);
        CHECK(it::waitForNoWorkers(10.0).empty());
    }
}

TEST_CASE("past max_retries failed commits in a row a replica raises, and is restarted", "[ft][slow]") {
    // TorchFT's max_retries: with max_retries = 0 the NaN round's abort is one
    // failure too many, so both replicas raise; the supervisor restarts them
    // and the job still finishes.
    it::TempDir dir;
    const std::string scenario = dir.write(
        "retries.toml", ftScenario(2, 20, "[[faults]]\naction = \"nan_gradients\"\nrank = 0\nstep = 8\n",
                                   "max_retries = 0\n"));
    const auto r = it::runDtrun(
        {"run", scenario, "--summary", dir.file("s.json"), "--record", dir.file("r.dtrec"), "--quiet"},
        {{}, {}, 240.0, ""});
    INFO(it::describe(r));
    REQUIRE(r.exit_code == 0);
    const dt::RecordingLoad load = dt::readRecording(dir.file("r.dtrec"));
    REQUIRE(load.complete);
    int raised = 0, restarted = 0;
    for (const auto& log : load.record.logs)
        raised += log.rank >= 0 &&
                          contains(log.text,
                                   "1 commits failed in a row, more than [fault_tolerance] max_retries = 0 "
                                   "(last: the averaged gradients are not finite)")
                      ? 1
                      : 0;
    for (const dt::Event& e : load.record.events)
        restarted += e.kind == dt::EventKind::RankRestarted ? 1 : 0;
    CHECK(raised == 2);
    CHECK(restarted == 2);
    checkInvariants(load.record, 20);
}

TEST_CASE("NaN gradients abort the step on every replica, and the step is retried", "[ft][slow]") {
    it::TempDir dir;
    const std::string scenario = dir.write("nan.toml", ftScenario(3, 20,
                                                                  "[[faults]]\naction = \"nan_gradients\"\n"
                                                                  "rank = 0\nstep = 8\nwhen = \"step\"\n"));
    const auto r =
        it::runDtrun({"run", scenario, "--summary", dir.file("s.json"), "--record", dir.file("r.dtrec")},
                     {{}, {}, 240.0, ""});
    INFO(it::describe(r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    const auto s = it::readJsonFile(dir.file("s.json"));
    INFO("summary: " << s.dump());
    const auto& ft = s["fault_tolerance"];
    for (int rank = 0; rank < 3; ++rank) {
        CAPTURE(rank);
        CHECK(ft["aborted_steps"][rank] == 1); // the NaN step, on every replica
        CHECK(ft["committed_steps"][rank] == 20);
    }
    CHECK(s["params_checksum"][0] == s["params_checksum"][1]);
    CHECK(s["params_checksum"][1] == s["params_checksum"][2]);
    // The loss stayed finite: nothing NaN was applied.
    for (const auto& loss : s["loss_by_step"])
        CHECK(loss.is_number());
    const dt::RecordingLoad load = dt::readRecording(dir.file("r.dtrec"));
    REQUIRE(load.complete);
    checkInvariants(load.record, 20);
    // A failed commit gives a new quorum id: more than one quorum was issued.
    CHECK(ft["quorums"].get<int>() >= 2);
}

TEST_CASE("with the lighthouse down, training waits, then goes on when it is back", "[ft][slow]") {
    it::TempDir dir;
    // ~60 ms steps: the run is still going when the lighthouse stops.
    std::string toml = ftScenario(2, 80,
                                  "[[faults]]\naction = \"kill_lighthouse\"\nwhen = \"time\"\nat_s = 3\n"
                                  "duration_s = 2\n");
    const std::string scenario = dir.write("lh.toml", toml);
    const auto r =
        it::runDtrun({"run", scenario, "--summary", dir.file("s.json"), "--record", dir.file("r.dtrec")},
                     {{}, {}, 240.0, ""});
    INFO(it::describe(r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    const dt::RecordingLoad load = dt::readRecording(dir.file("r.dtrec"));
    REQUIRE(load.complete);
    int64_t down = 0, up = 0;
    for (const dt::Event& e : load.record.events) {
        if (e.kind == dt::EventKind::LighthouseDown)
            down = e.t_ns;
        if (e.kind == dt::EventKind::LighthouseUp)
            up = e.t_ns;
    }
    REQUIRE(down > 0);
    REQUIRE(up > down);
    // While it was down, no step was committed after the one in flight; after, commits resumed.
    int during = 0, after = 0;
    for (const dt::Event& e : load.record.events)
        if (e.kind == dt::EventKind::Commit) {
            if (e.t_ns > down + 500000000LL && e.t_ns < up)
                ++during; // 0.5 s: a step in flight may end
            if (e.t_ns > up)
                ++after;
        }
    CHECK(during == 0);
    CHECK(after > 0);
    checkInvariants(load.record, 80);
}

TEST_CASE("a kill storm ends: past its restart budget a replica stays down and the job goes on",
          "[ft][slow]") {
    // Replica 1 is killed every second; it may be restarted twice a minute.
    it::TempDir dir;
    std::string faults;
    for (int at = 2; at <= 5; ++at)
        faults +=
            "[[faults]]\naction = \"kill\"\nrank = 1\nwhen = \"time\"\nat_s = " + std::to_string(at) + "\n";
    const std::string scenario =
        dir.write("storm.toml", ftScenario(2, 120, faults, "max_restarts_per_minute = 2\n"));
    const auto r =
        it::runDtrun({"run", scenario, "--summary", dir.file("s.json"), "--record", dir.file("r.dtrec")},
                     {{}, {}, 240.0, ""});
    INFO(it::describe(r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0); // replica 0 commits every step
    const auto load = dt::readRecording(dir.file("r.dtrec"));
    bool said_why = false;
    for (const auto& log : load.record.logs)
        said_why =
            said_why || contains(log.text, "replica 1 was killed (SIGKILL) after 2 restarts in the last "
                                           "minute: its restart budget ([fault_tolerance] "
                                           "max_restarts_per_minute = 2) is spent, so it stays down");
    CHECK(said_why);
    int restarts = 0;
    for (const dt::Event& e : load.record.events)
        if (e.kind == dt::EventKind::RankRestarted && e.rank == 1)
            ++restarts;
    CHECK(restarts == 2);
    const auto s = it::readJsonFile(dir.file("s.json"));
    CHECK(s["fault_tolerance"]["committed_steps"][0] == 120);
    CHECK(it::waitForNoWorkers(5.0).empty());
}

TEST_CASE("an external dtrun lighthouse serves a run, and says what it decided", "[ft][slow]") {
    it::TempDir dir;
    // The lighthouse and the run share a token: every replica's HELLO proves it.
    const std::vector<std::pair<std::string, std::string>> token = {{"DTLAB_TOKEN", "shared-secret-7"}};
    it::Process lighthouse({it::dtrunPath(), "lighthouse", "--port", "0", "--min-replicas", "2"},
                           {token, {}, 120.0, ""});
    REQUIRE(it::waitFor([&] { return lighthouse.stdoutSoFar().find('\n') != std::string::npos; }, 20.0));
    std::string address = lighthouse.stdoutSoFar();
    address = address.substr(0, address.find('\n'));
    CAPTURE(address);
    const std::string scenario =
        dir.write("ext.toml", ftScenario(2, 10, "", "lighthouse = \"" + address + "\"\nmin_replicas = 2\n"));
    const auto r = it::runDtrun({"run", scenario, "--summary", dir.file("s.json")}, {token, {}, 240.0, ""});
    INFO(it::describe(r));
    CHECK(r.exit_code == 0);
    const auto s = it::readJsonFile(dir.file("s.json"));
    CHECK(s["fault_tolerance"]["committed_steps"][0] == 10);
    CHECK_FALSE(contains(lighthouse.stderrSoFar(), "refused"));
    lighthouse.signal(SIGINT);
    const auto lr = lighthouse.wait(10.0);
    INFO(it::describe(lr));
    CHECK(lr.exit_code == 0);
    CHECK(contains(lr.err, "quorum 1 = {0.0@0, 1.0@0}"));
}

TEST_CASE("a fault-tolerance flag or table that cannot work is refused before anything starts", "[ft]") {
    it::TempDir dir;
    it::ScenarioSpec spec;
    spec.strategy = "tensor_parallel";
    spec.extra_toml = "[fault_tolerance]\nenabled = true\n";
    const auto r = it::runDtrun({"run", dir.write("bad.toml", it::scenarioToml(spec))});
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "[fault_tolerance] works with [strategy] kind = \"ddp\""));
    const auto r2 = it::runDtrun({"run", it::scenarioPath("ddp_basics.toml"), "--chaos-seed", "3"});
    CHECK(r2.exit_code == 2);
    CHECK(contains(r2.err, "--chaos-seed: [chaos] needs [fault_tolerance] enabled = true"));
}

TEST_CASE("a seeded chaos run keeps every invariant", "[ft][chaos][slow][solo]") {
    // Random kills, hangs and slow-downs; the seed is printed so that a
    // failure can be replayed: dtrun run scenarios/ft_chaos.toml --chaos-seed SEED
    const uint64_t seed = 7;
    it::TempDir dir;
    const auto r =
        it::runDtrun({"run", it::scenarioPath("ft_chaos.toml"), "--chaos-seed", std::to_string(seed),
                      "--summary", dir.file("s.json"), "--record", dir.file("r.dtrec")},
                     {{}, {}, 400.0, ""});
    INFO("chaos seed " << seed << " (replay: dtrun run scenarios/ft_chaos.toml --chaos-seed " << seed << ")");
    INFO(it::describe(r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0); // training finishes
    CHECK(contains(r.err, "chaos seed 7"));
    const auto s = it::readJsonFile(dir.file("s.json"));
    INFO("summary: " << s["fault_tolerance"].dump());
    const int steps = s["steps_requested"].get<int>();
    CHECK(s["ok"] == true);
    CHECK(s["fault_tolerance"]["recoveries"].size() >= 3); // it was chaotic
    const dt::RecordingLoad load = dt::readRecording(dir.file("r.dtrec"));
    REQUIRE(load.complete);
    checkInvariants(load.record, steps);
    CHECK(it::waitForNoWorkers(10.0).empty()); // no process left running
}

namespace {

// Seeded chaos over two replica groups of two fsdp ranks: kills, hangs,
// partitions, NaN gradients and failed collectives every ~0.5 s. Checks the
// invariants per shard, that the summary reports what was rolled back, and
// that no process is left. `steps` scales the run (and so the fault count).
// min_replicas = 2: with 1, a partition lets each group in turn get a quorum
// of itself alone (the lighthouse's "more than half of the healthy" rule
// holds for each), so both commit the same steps with different gradients;
// the branch behind is overwritten by the next heal, as in TorchFT, but the
// two commits of a step then differ.
// `actions`: the TOML list; an action listed twice is drawn twice as often.
void runGroupChaos(int steps, uint64_t seed, int min_recoveries, const std::string& actions) {
    it::TempDir dir;
    it::ScenarioSpec spec;
    spec.name = "chaos over fsdp replica groups";
    spec.ranks = 4;
    spec.replicas = 2;
    spec.strategy = "fsdp";
    spec.steps = steps;
    spec.d_model = 32;
    spec.layers = 1;
    spec.heads = 2;
    spec.run_toml = "step_delay_ms = 30\n";
    spec.extra_toml =
        "[fault_tolerance]\nenabled = true\nheartbeat_timeout_ms = 600\ncollective_timeout_ms = 1500\n"
        "restart_delay_ms = 200\nmax_restarts_per_minute = 1000\nmin_replicas = 2\n"
        "[chaos]\nenabled = true\nmean_interval_s = 0.5\nhang_s = 1.0\nactions = " +
        actions + "\n";
    const std::string scenario = dir.write("chaos.toml", it::scenarioToml(spec));
    const auto r = it::runDtrun({"run", scenario, "--chaos-seed", std::to_string(seed), "--summary",
                                 dir.file("s.json"), "--record", dir.file("r.dtrec"), "--quiet"},
                                {{}, {}, 900.0, ""});
    INFO("chaos seed " << seed);
    INFO(it::describe(r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    const auto s = it::readJsonFile(dir.file("s.json"));
    const auto& ftj = s["fault_tolerance"];
    INFO("summary: " << ftj.dump());
    CHECK(s["ok"] == true);
    CHECK(ftj["recoveries"].size() >= size_t(min_recoveries)); // it was chaotic
    // What went back is reported: nothing without a rollback.
    CHECK((ftj["rollbacks"] == 0) == (ftj["steps_rolled_back"] == 0));
    const dt::RecordingLoad load = dt::readRecording(dir.file("r.dtrec"));
    REQUIRE(load.complete);
    checkInvariants(load.record, steps, /*group_size=*/2);
    CHECK(it::waitForNoWorkers(10.0).empty()); // no process left running
}

} // namespace

// The issue's size (at least 100 faults), in the suite since 2026-11-29 (about
// 66 s; it replaced a 150-step run of at least 10 faults, 23 s); by name:
// build/tests/test_integration "[chaos100]". Kills and hangs take a whole
// group down for about a second (a restart); one fault in four is one here.
// With durable checkpoints for groups a job that lost both groups goes back
// to its newest checkpoint, not to step 0: 25 runs (this test, and dtrun
// with seeds 5..9 and 23..25, 5 of them beside two CPU hogs) finished, in 55
// to 72 s where timed; the 3 summaries read had 89 to 124 recoveries and 1
// to 3 rollbacks of 4 to 15 steps. Two runs
// did not, both early in the session that added those checkpoints and not
// seen again: one exited 2 (its output was not kept), and one, beside a
// LibTorch build, had group 1 restart every 2 s for 6 minutes. `dtrun run
// --log` prints every rank's log live, for the next time.
// The faults come in time (one per ~0.5 s), so the count follows the run's
// length: 500 steps on a faster machine (2026-11-29) ran 45 s and drew 88.
// 750 steps last about 65 s there (about 130 faults expected).
TEST_CASE("a long seeded chaos run over 2 x 2 FSDP replica groups: at least 100 faults, every invariant kept "
          "per shard",
          "[ft][chaos][slow][chaos100][solo]") {
    runGroupChaos(/*steps=*/750, /*seed=*/5, /*min_recoveries=*/100,
                  R"(["kill", "hang", "partition", "partition", "nan_gradients", "nan_gradients",)"
                  R"( "fail_collective", "fail_collective"])");
}

TEST_CASE("a durable checkpoint resumes a whole job, and a corrupt newest one is skipped",
          "[ft][checkpoint][slow]") {
    namespace fs = std::filesystem;
    it::TempDir dir;
    std::string toml = ftScenario(3, 12, "");
    toml.replace(toml.find("step_delay_ms = 50\n"), 19, "step_delay_ms = 50\ncheckpoint_every = 4\n");
    const std::string scenario = dir.write("ckpt.toml", toml);
    const std::string ckpt_dir = dir.file("ckpt");

    // The reference: 12 steps without a break.
    const auto straight = it::runDtrun({"run", scenario, "--summary", dir.file("straight.json"), "--quiet"},
                                       {{}, {}, 240.0, ""});
    INFO(it::describe(straight));
    REQUIRE(straight.exit_code == 0);
    const auto reference = it::readJsonFile(dir.file("straight.json"));

    // The first job: 8 steps, a checkpoint after every 4th (steps 3 and 7).
    const auto first = it::runDtrun({"run", scenario, "--steps", "8", "--checkpoint-dir", ckpt_dir,
                                     "--summary", dir.file("first.json"), "--quiet"},
                                    {{}, {}, 240.0, ""});
    INFO(it::describe(first));
    REQUIRE(first.exit_code == 0);
    REQUIRE(fs::exists(ckpt_dir + "/step-3/checkpoint.json"));
    REQUIRE(fs::exists(ckpt_dir + "/step-7/replica.dtparams"));
    {
        const auto meta = it::readJsonFile(ckpt_dir + "/step-3/checkpoint.json");
        CHECK(meta["format"] == "dtlab replica checkpoint");
        CHECK(meta["step"] == 3);
        CHECK(meta["committed_steps"] == 4);
        CHECK(meta["written_by_replica"] == 0); // the lowest replica id of the quorum
    }
    for (const auto& entry : fs::directory_iterator(ckpt_dir)) // no torn leftovers
        CHECK(entry.path().filename().string().find("partial") == std::string::npos);

    {
        INFO("a job resumed from the directory continues from its newest checkpoint, exactly");
        fs::copy(ckpt_dir, dir.file("good"), fs::copy_options::recursive);
        const auto resumed = it::runDtrun(
            {"run", scenario, "--resume", dir.file("good"), "--summary", dir.file("resumed.json"), "--quiet"},
            {{}, {}, 240.0, ""});
        INFO(it::describe(resumed));
        REQUIRE(resumed.exit_code == 0);
        CHECK(contains(resumed.err, "resuming from " + dir.file("good") + "/step-7"));
        const auto s = it::readJsonFile(dir.file("resumed.json"));
        CHECK(s["ok"] == true);
        // Steps 8..11, and the same bits as the run that never stopped.
        CHECK(s["fault_tolerance"]["committed_steps"][0] == 4);
        REQUIRE(s["params_checksum"][0].is_string());
        CHECK(s["params_checksum"][0] == reference["params_checksum"][0]);
        CHECK(s["params_checksum"][1] == reference["params_checksum"][1]);
    }

    {
        INFO("a directory with nothing usable, or a checkpoint of the wrong kind, is refused before anything "
             "starts");
        fs::create_directories(dir.file("empty"));
        const auto r = it::runDtrun({"run", scenario, "--resume", dir.file("empty")});
        CHECK(r.exit_code == 2);
        CHECK(contains(r.err, "holds no step-<S> checkpoint"));
        const auto r2 = it::runDtrun({"run", scenario, "--resume", ckpt_dir + "/step-7", "--steps", "8"});
        CHECK(r2.exit_code == 2);
        CHECK(contains(r2.err, "nothing left to train"));
        // Saving into the directory it resumes from would overwrite step-7.
        const auto r3 =
            it::runDtrun({"run", scenario, "--resume", ckpt_dir + "/step-3", "--checkpoint-dir", ckpt_dir});
        CHECK(r3.exit_code == 2);
        CHECK(contains(r3.err, "never overwritten"));
        it::ScenarioSpec sharded;
        sharded.strategy = "fsdp";
        sharded.d_model = 32;
        sharded.layers = 1;
        sharded.heads = 2;
        sharded.steps = 12;
        const auto r4 = it::runDtrun(
            {"run", dir.write("fsdp.toml", it::scenarioToml(sharded)), "--resume", ckpt_dir + "/step-3"});
        CHECK(r4.exit_code == 2);
        CHECK(contains(r4.err, "is a fault-tolerant replica checkpoint"));
    }
    {
        INFO("a corrupt newest checkpoint is reported and skipped, and the one before it is used");
        const std::string victim = ckpt_dir + "/step-7/replica.dtparams";
        {
            std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(300);
            char c = 0;
            f.read(&c, 1);
            f.seekp(300);
            c = char(c ^ 0x5a);
            f.write(&c, 1);
        }
        // A crash in the middle of a save leaves a .partial directory: never a candidate.
        fs::create_directories(ckpt_dir + "/step-9.partial-0-0");
        const auto resumed =
            it::runDtrun({"run", scenario, "--resume", ckpt_dir, "--checkpoint-dir", dir.file("ckpt2"),
                          "--summary", dir.file("resumed.json"), "--quiet"},
                         {{}, {}, 240.0, ""});
        INFO(it::describe(resumed));
        REQUIRE(resumed.exit_code == 0);
        CHECK(contains(resumed.err, "skipped checkpoint"));
        CHECK(contains(resumed.err, "step-7/replica.dtparams' is corrupt or torn: checksum mismatch"));
        CHECK(contains(resumed.err, "resuming from " + ckpt_dir + "/step-3"));
        const auto s = it::readJsonFile(dir.file("resumed.json"));
        CHECK(s["ok"] == true);
        CHECK(s["fault_tolerance"]["committed_steps"][0] == 8); // steps 4..11
        CHECK(s["params_checksum"][0] == reference["params_checksum"][0]);
        CHECK(fs::exists(dir.file("ckpt2") + "/step-11/checkpoint.json"));
    }
    {
        INFO("a replica state of the same step written by another run is refused: each file names its run");
        REQUIRE(fs::exists(dir.file("ckpt2") + "/step-7/replica.dtparams")); // the resumed run's own step 7
        const std::string mixed = dir.file("mixed");
        fs::copy(dir.file("good") + "/step-7", mixed);
        fs::copy_file(dir.file("ckpt2") + "/step-7/replica.dtparams", mixed + "/replica.dtparams",
                      fs::copy_options::overwrite_existing);
        const auto r = it::runDtrun({"run", scenario, "--resume", mixed, "--quiet"});
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
        CHECK(contains(r.err, "replica.dtparams' was written by run "));
    }

    CHECK(it::waitForNoWorkers(10.0).empty());
}
