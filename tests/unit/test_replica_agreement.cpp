// test_replica_agreement.cpp: which ranks must end with equal parameters, and
// the sentence that fails a run when they do not (core/replica_agreement.hpp).
#include "core/replica_agreement.hpp"

#include <catch2/catch.hpp>

using dt::Event;
using dt::EventKind;

namespace {

Event checksum(int rank, int step, uint64_t value) {
    Event e;
    e.rank = rank;
    e.kind = EventKind::ParamsChecksum;
    e.phase = dt::EventPhase::Instant;
    e.step = step;
    e.seq = value;
    return e;
}

dt::Scenario scenarioOf(dt::StrategyKind kind, int ranks, int stages = 1) {
    dt::Scenario s;
    s.strategy.kind = kind;
    s.topology.ranks = ranks;
    s.topology.stages = stages;
    return s;
}

} // namespace

TEST_CASE("Replicas that must end equal fail the run when they do not", "[verdict]") {
    const auto ddp = scenarioOf(dt::StrategyKind::Ddp, 3);

    SECTION("equal checksums: nothing to say") {
        CHECK(dt::replicaDisagreement(ddp, {checksum(0, 9, 7), checksum(1, 9, 7), checksum(2, 9, 7)}, 3)
                  .empty());
    }
    SECTION("one rank differs: the sentence names who holds what and why they must agree") {
        CHECK(dt::replicaDisagreement(ddp, {checksum(0, 9, 0xab), checksum(1, 9, 0x91), checksum(2, 9, 0xab)},
                                      3) ==
              "ranks end with different parameters at step 9: ranks 0 2 hold 00000000000000ab, rank 1 holds "
              "0000000000000091 (they must be equal under ddp)");
    }
    SECTION("each rank's last checksum counts, not an earlier one") {
        CHECK(dt::replicaDisagreement(ddp, {checksum(0, 9, 1), checksum(0, 9, 2), checksum(1, 9, 2)}, 2)
                  .empty());
    }
    SECTION("a replica whose last report is of an older step (dead, not restarted) is left out") {
        CHECK(dt::replicaDisagreement(ddp, {checksum(0, 9, 5), checksum(1, 4, 6), checksum(2, 9, 5)}, 3)
                  .empty());
    }
    SECTION("no checksums at all: nothing to compare") {
        CHECK(dt::replicaDisagreement(ddp, {}, 3).empty());
    }
    SECTION("a pipeline compares the copies of each stage, not different stages") {
        // 4 ranks, 2 stages: stage 0 = ranks 0 2, stage 1 = ranks 1 3.
        const auto pipe = scenarioOf(dt::StrategyKind::Pipeline, 4, 2);
        CHECK(dt::replicaDisagreement(
                  pipe, {checksum(0, 3, 10), checksum(1, 3, 20), checksum(2, 3, 10), checksum(3, 3, 20)}, 4)
                  .empty());
        CHECK(
            dt::replicaDisagreement(
                pipe, {checksum(0, 3, 10), checksum(1, 3, 20), checksum(2, 3, 10), checksum(3, 3, 21)}, 4) ==
            "ranks end with different parameters at step 3: rank 1 holds 0000000000000014, rank 3 holds "
            "0000000000000015 (the copies of stage 1 must be equal)");
    }
    SECTION("pipelines with sharded stages in replica groups compare the same rank of every group") {
        // 8 ranks, 2 groups of 2 pipelines x 2 stages, fsdp stages: ranks 0 and 2
        // hold different shards of stage 0; rank 0 and rank 4 the same one.
        auto groups = scenarioOf(dt::StrategyKind::Pipeline, 8, 2);
        groups.topology.replicas = 2;
        groups.fault_tolerance.enabled = true;
        groups.strategy.pipeline_data_parallel = "fsdp";
        std::vector<Event> events;
        for (int r = 0; r < 8; ++r)
            events.push_back(checksum(r, 5, uint64_t(100 + r % 4)));
        CHECK(dt::replicaDisagreement(groups, events, 8).empty());
        events[6] = checksum(6, 5, 999);
        CHECK(dt::replicaDisagreement(groups, events, 8) ==
              "ranks end with different parameters at step 5: rank 2 holds 0000000000000066, rank 6 holds "
              "00000000000003e7 (every replica group's copy of shard 2 must be equal)");
    }
    SECTION("a collectives run trains nothing: no group") {
        const auto coll = scenarioOf(dt::StrategyKind::Collectives, 2);
        CHECK(dt::replicaDisagreement(coll, {checksum(0, 0, 1), checksum(1, 0, 2)}, 2).empty());
    }
    SECTION("a checksum from a rank outside the world is ignored") {
        CHECK(dt::replicaDisagreement(ddp, {checksum(0, 9, 1), checksum(7, 9, 2), checksum(-1, 9, 3)}, 3)
                  .empty());
    }
}
