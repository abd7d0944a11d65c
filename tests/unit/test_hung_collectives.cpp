// test_hung_collectives.cpp: hang diagnosis (hung_collectives.hpp) on
// synthetic Work records: which ranks started a collective that never
// completed, and which never joined it.
#include "dtlab/hung_collectives.hpp"

#include <catch2/catch.hpp>

using namespace dt;

namespace {

constexpr int64_t kMs = 1'000'000;

Event work(int rank, EventPhase phase, int64_t ms, uint64_t seq, int step = 14, int unit = 2,
           EventKind kind = EventKind::AllReduce, uint8_t group = kGroupWorld, int peer = -1) {
    Event e;
    e.rank = rank;
    e.kind = kind;
    e.phase = phase;
    e.t_ns = ms * kMs;
    e.seq = seq;
    e.step = step;
    e.unit = int16_t(unit);
    e.group = group;
    e.peer = int16_t(peer);
    return e;
}

// Every rank of `ranks` schedules, starts and completes collective `seq` at `ms`.
void completed(std::vector<Event>& ev, std::vector<int> ranks, uint64_t seq, int64_t ms) {
    for (int r : ranks) {
        ev.push_back(work(r, EventPhase::WorkScheduled, ms, seq));
        ev.push_back(work(r, EventPhase::WorkStarted, ms + 1, seq));
        ev.push_back(work(r, EventPhase::WorkCompleted, ms + 5, seq));
    }
}

GroupMembers worldOf(int n) {
    Scenario s;
    return groupMembersFor(s, n);
}

HangQuery at(int64_t ms, bool ended = false) {
    HangQuery q;
    q.now_ns = ms * kMs;
    q.threshold_ns = 2000 * kMs;
    q.run_ended = ended;
    q.unit_word = "bucket";
    return q;
}

} // namespace

TEST_CASE("Hang diagnosis names the ranks that never joined a collective", "[hang]") {
    std::vector<Event> ev;
    completed(ev, {0, 1, 2, 3}, 0, 100); // an earlier collective everyone finished

    SECTION("one rank missing: three wait, rank 1 never started") {
        for (int r : {0, 2, 3}) {
            ev.push_back(work(r, EventPhase::WorkScheduled, 1000, 1));
            ev.push_back(work(r, EventPhase::WorkStarted, 1000 + r, 1));
        }
        const auto hung = findHungCollectives(workPartsFromEvents(ev), worldOf(4), at(4000));
        REQUIRE(hung.size() == 1);
        const HungCollective& h = hung[0];
        CHECK(h.seq == 1);
        CHECK(h.step == 14);
        CHECK(h.unit == 2);
        CHECK(h.group_ranks == std::vector<int>{0, 1, 2, 3});
        CHECK(h.started_ranks == std::vector<int>{0, 2, 3});
        CHECK(h.waiting_ranks == std::vector<int>{0, 2, 3});
        CHECK(h.missing_ranks == std::vector<int>{1});
        CHECK(h.queued_ranks.empty());
        CHECK(h.open_since_ns == 1000 * kMs);
        CHECK(h.diagnosis == "all-reduce bucket 2 of step 14: ranks {0,2,3} waiting, rank 1 never joined");
    }

    SECTION("several ranks missing, one of them queued behind an earlier collective") {
        ev.push_back(work(0, EventPhase::WorkStarted, 1000, 1));
        ev.push_back(work(3, EventPhase::WorkStarted, 1001, 1));
        ev.push_back(work(2, EventPhase::WorkScheduled, 1002, 1)); // queued, never started
        const auto hung = findHungCollectives(workPartsFromEvents(ev), worldOf(4), at(4000));
        REQUIRE(hung.size() == 1);
        CHECK(hung[0].started_ranks == std::vector<int>{0, 3});
        CHECK(hung[0].missing_ranks == std::vector<int>{1, 2});
        CHECK(hung[0].queued_ranks == std::vector<int>{2});
        CHECK(hung[0].diagnosis == "all-reduce bucket 2 of step 14: ranks {0,3} waiting, ranks {1,2} never "
                                   "joined (rank 2 queued it behind an earlier collective)");
    }

    SECTION("none hung: a collective open for less than the threshold is in flight") {
        for (int r : {0, 2, 3})
            ev.push_back(work(r, EventPhase::WorkStarted, 1000, 1));
        CHECK(findHungCollectives(workPartsFromEvents(ev), worldOf(4), at(2999)).empty());
        SECTION("and it is hung once the threshold has passed, or when the run ended") {
            CHECK(findHungCollectives(workPartsFromEvents(ev), worldOf(4), at(3000)).size() == 1);
            CHECK(findHungCollectives(workPartsFromEvents(ev), worldOf(4), at(1500, true)).size() == 1);
        }
    }

    SECTION("a completed collective is never listed, however long a part of it stayed open") {
        for (int r : {0, 1, 2, 3})
            ev.push_back(work(r, EventPhase::WorkStarted, 1000, 1));
        ev.push_back(work(0, EventPhase::WorkCompleted, 9000, 1)); // the others' completions never arrived
        CHECK(findHungCollectives(workPartsFromEvents(ev), worldOf(4), at(60000, true)).empty());
    }

    SECTION("a collective that failed waiting for a rank that never came is listed with the failures") {
        for (int r : {0, 2, 3}) {
            ev.push_back(work(r, EventPhase::WorkStarted, 1000, 1));
            ev.push_back(work(r, EventPhase::WorkFailed, 1100, 1)); // Gloo timeout: not past any threshold
        }
        const auto hung = findHungCollectives(workPartsFromEvents(ev), worldOf(4), at(1200));
        REQUIRE(hung.size() == 1);
        CHECK(hung[0].failed_ranks == std::vector<int>{0, 2, 3});
        CHECK(hung[0].waiting_ranks.empty());
        CHECK(hung[0].missing_ranks == std::vector<int>{1});
        CHECK(hung[0].diagnosis ==
              "all-reduce bucket 2 of step 14: ranks {0,2,3} gave up (failed), rank 1 never joined");
    }

    SECTION("every rank started it: nobody is missing, and the diagnosis says so") {
        for (int r : {0, 1, 2, 3})
            ev.push_back(work(r, EventPhase::WorkStarted, 1000, 1));
        const auto hung = findHungCollectives(workPartsFromEvents(ev), worldOf(4), at(5000));
        REQUIRE(hung.size() == 1);
        CHECK(hung[0].missing_ranks.empty());
        CHECK(hung[0].diagnosis ==
              "all-reduce bucket 2 of step 14: ranks {0,1,2,3} waiting, every rank of the group started it");
    }
}

TEST_CASE("Hang diagnosis reads the scenario's groups and point-to-point pairs", "[hang]") {
    SECTION("hsdp: a replicate group's missing rank is named by its global rank") {
        Scenario s;
        s.strategy.kind = StrategyKind::Hsdp;
        s.topology.replicas = 2;
        const GroupMembers m = groupMembersFor(s, 4); // shards 2: replicate group of shard 1 = {1, 3}
        CHECK(m.at(groupIdReplicate(1)) == std::vector<int>{1, 3});
        CHECK(m.at(groupIdShard(1)) == std::vector<int>{2, 3});
        std::vector<Event> ev = {
            work(1, EventPhase::WorkStarted, 10, 0, 3, 0, EventKind::AllReduce, groupIdReplicate(1))};
        const auto hung = findHungCollectives(workPartsFromEvents(ev), m, at(10, true));
        REQUIRE(hung.size() == 1);
        CHECK(hung[0].group_ranks == std::vector<int>{1, 3});
        CHECK(hung[0].missing_ranks == std::vector<int>{3});
    }

    SECTION(
        "fault-tolerant groups of 2 pipelines x 2 stages: each stage's ranks in a group are a stage group") {
        Scenario s;
        s.strategy.kind = StrategyKind::Pipeline;
        s.topology.ranks = 8;
        s.topology.stages = 2;
        s.topology.replicas = 2;
        s.fault_tolerance.enabled = true;
        const GroupMembers m = groupMembersFor(s, 8); // groups {0..3}, {4..7}
        CHECK(m.at(groupIdShard(1)) == std::vector<int>{4, 5, 6, 7});
        CHECK(m.at(groupIdStage(0)) == std::vector<int>{0, 2}); // group 0, stage 0
        CHECK(m.at(groupIdStage(3)) == std::vector<int>{5, 7}); // group 1, stage 1
    }

    SECTION("a send whose receive never started names the receiver; a matched pair is one collective") {
        std::vector<Event> ev = {
            work(0, EventPhase::WorkStarted, 10, 0, 1, 0, EventKind::Send, kGroupWorld, 1),
            work(1, EventPhase::WorkStarted, 11, 0, 1, 0, EventKind::Recv, kGroupWorld, 0),
            work(0, EventPhase::WorkCompleted, 12, 0, 1, 0, EventKind::Send, kGroupWorld, 1),
            work(1, EventPhase::WorkCompleted, 12, 0, 1, 0, EventKind::Recv, kGroupWorld, 0),
            work(1, EventPhase::WorkStarted, 20, 1, 2, 0, EventKind::Send, kGroupWorld,
                 2), // rank 2 never receives
        };
        const auto hung = findHungCollectives(workPartsFromEvents(ev), worldOf(3), at(30, true));
        REQUIRE(hung.size() == 1);
        CHECK(hung[0].group_ranks == std::vector<int>{1, 2});
        CHECK(hung[0].started_ranks == std::vector<int>{1});
        CHECK(hung[0].missing_ranks == std::vector<int>{2});
    }

    SECTION("the microbatch is named only when a step has several") {
        Event e = work(0, EventPhase::WorkStarted, 10, 0, 4, 1);
        e.microbatch = 0;
        Scenario s;
        s.strategy.kind = StrategyKind::Ddp;
        const auto one =
            findHungCollectives(workPartsFromEvents({e}), worldOf(2), hangQueryFor(s, 20 * kMs, true));
        REQUIRE(one.size() == 1);
        CHECK(one[0].what == "all-reduce bucket 1 of step 4");
        s.strategy.microbatches = 4;
        const auto four =
            findHungCollectives(workPartsFromEvents({e}), worldOf(2), hangQueryFor(s, 20 * kMs, true));
        REQUIRE(four.size() == 1);
        CHECK(four[0].what == "all-reduce bucket 1 microbatch 0 of step 4");
    }

    SECTION("a group the scenario does not fix (a quorum's) is the ranks seen in it") {
        std::vector<Event> ev = {
            work(0, EventPhase::WorkStarted, 10, 0, 1, -1, EventKind::AllReduce, 5),
            work(2, EventPhase::WorkStarted, 10, 0, 1, -1, EventKind::AllReduce, 5),
            work(0, EventPhase::WorkCompleted, 12, 0, 1, -1, EventKind::AllReduce, 5),
            work(2, EventPhase::WorkCompleted, 12, 0, 1, -1, EventKind::AllReduce, 5),
            work(2, EventPhase::WorkStarted, 20, 1, 2, -1, EventKind::AllReduce, 5),
        };
        const auto hung = findHungCollectives(workPartsFromEvents(ev), worldOf(3), at(30, true));
        REQUIRE(hung.size() == 1);
        CHECK(hung[0].group_ranks == std::vector<int>{0, 2});
        CHECK(hung[0].missing_ranks == std::vector<int>{0});
        CHECK(hung[0].what == "all-reduce of step 2 in group 5");
    }
}
