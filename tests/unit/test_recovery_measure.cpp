// test_recovery_measure.cpp: recoveries and commit counts from events
// (recovery_measure.hpp), against times written by hand.
#include "dtlab/recovery_measure.hpp"

#include <catch2/catch.hpp>

#include <csignal>

using namespace dt;

namespace {

constexpr int64_t kMs = 1'000'000;

Event at(int rank, EventKind kind, int64_t ms, double value = 0, EventPhase phase = EventPhase::Instant) {
    Event e;
    e.rank = rank;
    e.kind = kind;
    e.phase = phase;
    e.t_ns = ms * kMs;
    e.value = value;
    return e;
}

} // namespace

TEST_CASE("A kill's recovery is timed phase by phase", "[recovery]") {
    std::vector<Event> ev = {
        at(-1, EventKind::QuorumFormed, 0, 1),
        at(0, EventKind::Commit, 50),
        at(1, EventKind::Commit, 50),
        at(2, EventKind::Commit, 50),
        at(1, EventKind::FaultInjected, 100, SIGKILL),
        at(1, EventKind::ReplicaLost, 101),
        at(0, EventKind::Abort, 103, 1),
        at(-1, EventKind::QuorumFormed, 110, 2),
        at(0, EventKind::Commit, 180), // the survivors' next commit
        at(2, EventKind::Commit, 181),
        at(1, EventKind::RankRestarted, 600, 1),
        at(-1, EventKind::QuorumFormed, 1500, 3),
        at(1, EventKind::Commit, 1700), // after its heal
    };
    Event heal = at(1, EventKind::Heal, 1600, 0, EventPhase::Span);
    heal.dur_ns = 20 * kMs;
    heal.bytes = 4 * (3 * 100 + 2);
    heal.peer = 2;
    ev.push_back(heal);
    Event send =
        at(2, EventKind::Heal, 1600, 1, EventPhase::Span); // the sender's span is not a heal of replica 2
    send.dur_ns = 20 * kMs;
    ev.push_back(send);

    const RecoveryMeasure m = measureRecoveries(ev, 3);
    REQUIRE(m.recoveries.size() == 1);
    const Recovery& r = m.recoveries[0];
    CHECK(r.fault == "kill");
    CHECK(r.replica == 1);
    CHECK(r.detected_ms == Approx(1.0));
    CHECK(r.new_quorum_ms == Approx(10.0));
    CHECK(r.new_quorum_id == 2);
    CHECK(r.survivors_commit_ms == Approx(80.0));
    CHECK(r.restarted_ms == Approx(500.0));
    CHECK(r.heal_ms == Approx(1520.0));
    CHECK(r.heal_duration_ms == Approx(20.0));
    CHECK(r.heal_bytes == 1208);
    CHECK(r.heal_source == 2);
    CHECK(r.rejoined_ms == Approx(1600.0));

    SECTION("commits, aborts and heals are counted per replica") {
        CHECK(m.replicas[0].committed == 2);
        CHECK(m.replicas[1].committed == 2);
        CHECK(m.replicas[0].aborted == 1);
        CHECK(m.replicas[1].heals == 1);
        CHECK(m.replicas[2].heals == 0);
        CHECK(m.committed_total == 6);
        CHECK(m.aborted_total == 1);
        CHECK(m.quorums == 3);
    }
}

TEST_CASE("A recovery's stopwatch counts run time: the time the Session held the job does not count",
          "[recovery]") {
    // Replica 1 killed at 100 ms; the room holds the run from 105 to 4,105 ms (4 s), during
    // which nothing moves; then the new quorum, the commit, the restart.
    const std::vector<Event> ev = {
        at(-1, EventKind::QuorumFormed, 0, 1), at(1, EventKind::FaultInjected, 100, SIGKILL),
        at(1, EventKind::ReplicaLost, 101),    at(-1, EventKind::JobHeld, 105, 1),
        at(-1, EventKind::JobHeld, 4105, 0),   at(-1, EventKind::QuorumFormed, 4115, 2),
        at(0, EventKind::Commit, 4180),        at(1, EventKind::RankRestarted, 4600, 1),
        at(-1, EventKind::JobHeld, 5000, 1), // held again, still held at the end
    };
    const RecoveryMeasure m = measureRecoveries(ev, 3);
    REQUIRE(m.recoveries.size() == 1);
    const Recovery& r = m.recoveries[0];
    SECTION("a phase before the hold is its wall time") {
        CHECK(r.detected_ms == Approx(1.0));
    }
    SECTION("a phase after it leaves the 4 s held out") {
        CHECK(r.new_quorum_ms == Approx(15.0));
        CHECK(r.survivors_commit_ms == Approx(80.0));
        CHECK(r.restarted_ms == Approx(500.0));
        CHECK(r.held_ms == Approx(4000.0));
    }
    SECTION("heldNsBetween counts each hold inside the window, an open one up to its end") {
        CHECK(heldNsBetween(ev, 0, 200 * kMs) == 95 * kMs);
        CHECK(heldNsBetween(ev, 0, 5000 * kMs) == 4000 * kMs);
        CHECK(heldNsBetween(ev, 4600 * kMs, 5300 * kMs) == 300 * kMs);
        CHECK(heldNsBetween(ev, 6000 * kMs, 6000 * kMs) == 0);
    }
}

TEST_CASE("A fault that changes no quorum is timed to the survivors' next commit", "[recovery]") {
    const std::vector<Event> ev = {
        at(-1, EventKind::QuorumFormed, 0, 1),
        at(2, EventKind::FaultInjected, 100, -2.0), // slow (SetDelayMs)
        at(0, EventKind::Commit, 130),
    };
    const RecoveryMeasure m = measureRecoveries(ev, 3);
    REQUIRE(m.recoveries.size() == 1);
    CHECK(m.recoveries[0].fault == "slow");
    CHECK(m.recoveries[0].new_quorum_ms < 0);
    CHECK(m.recoveries[0].survivors_commit_ms == Approx(30.0));
    CHECK(m.recoveries[0].restarted_ms < 0);
}

TEST_CASE("The lighthouse going down is a recovery of replica -1", "[recovery]") {
    const std::vector<Event> ev = {
        at(-1, EventKind::QuorumFormed, 0, 1), at(-1, EventKind::LighthouseDown, 100),
        at(-1, EventKind::LighthouseUp, 3100), at(-1, EventKind::QuorumFormed, 3150, 2),
        at(0, EventKind::Commit, 3200),
    };
    const RecoveryMeasure m = measureRecoveries(ev, 2);
    REQUIRE(m.recoveries.size() == 1);
    CHECK(m.recoveries[0].fault == "lighthouse");
    CHECK(m.recoveries[0].replica == -1);
    CHECK(m.recoveries[0].new_quorum_ms == Approx(3050.0));
    CHECK(m.recoveries[0].survivors_commit_ms == Approx(3100.0));
}

TEST_CASE("A recovery's phases run in order from its own fault", "[recovery][issue22]") {
    // Chaos: replica 1 was killed and comes back (quorum 3 at +271 ms after
    // the hang below); replica 2 is hung at 1000 ms and found only when the
    // survivors' all-reduce times out (+3647 ms); then replica 2 is killed
    // later, and that kill's restart must not be read as the hang's.
    std::vector<Event> ev = {
        at(-1, EventKind::QuorumFormed, 0, 1),
        at(1, EventKind::FaultInjected, 500, SIGKILL),
        at(1, EventKind::ReplicaLost, 501),
        at(-1, EventKind::QuorumFormed, 510, 2),
        at(2, EventKind::FaultInjected, 1000, SIGSTOP),
        at(1, EventKind::RankRestarted, 1200, 1),
        at(-1, EventKind::QuorumFormed, 1271, 3), // replica 1 is back: not the hang's answer
        at(0, EventKind::Commit, 1300),
        at(0, EventKind::Abort, 4647, 1), // the hang is seen
        at(-1, EventKind::QuorumFormed, 4700, 4),
        at(0, EventKind::Commit, 4750),
        at(2, EventKind::FaultInjected, 9000, SIGKILL),
        at(2, EventKind::ReplicaLost, 9001),
        at(2, EventKind::RankRestarted, 10000, 1),
    };
    const RecoveryMeasure m = measureRecoveries(ev, 3);
    REQUIRE(m.recoveries.size() == 3);
    const Recovery& hang = m.recoveries[1];
    CHECK(hang.fault == "hang");
    CHECK(hang.detected_ms == Approx(3647.0));
    CHECK(hang.new_quorum_ms == Approx(3700.0)); // not +271 ms: that quorum answered replica 1's return
    CHECK(hang.new_quorum_id == 4);
    CHECK(hang.survivors_commit_ms == Approx(3750.0));
    CHECK(hang.restarted_ms == -1); // the restart at 10 s answers the kill at 9 s
    const Recovery& kill = m.recoveries[2];
    CHECK(kill.restarted_ms == Approx(1000.0));
    for (const Recovery& r : m.recoveries) {
        CAPTURE(r.fault, r.replica);
        if (r.new_quorum_ms >= 0)
            CHECK(r.new_quorum_ms >= r.detected_ms);
        if (r.survivors_commit_ms >= 0)
            CHECK(r.survivors_commit_ms >= r.new_quorum_ms);
    }
}

namespace {

Event commitOf(int rank, int step, int64_t ms) {
    Event e = at(rank, EventKind::Commit, ms);
    e.step = step;
    return e;
}

} // namespace

TEST_CASE("Steps redone after every replica was down are counted, and nothing else is", "[recovery]") {
    SECTION("both replicas die at step 5 and the restarted ones start again from step 0") {
        std::vector<Event> ev;
        int64_t t = 0;
        for (int s = 0; s <= 5; ++s)
            for (int r = 0; r < 2; ++r)
                ev.push_back(commitOf(r, s, t += 10));
        ev.push_back(at(0, EventKind::RankStarted, t += 10));
        ev.push_back(at(1, EventKind::RankStarted, t += 10));
        for (int s = 0; s <= 8; ++s)
            for (int r = 0; r < 2; ++r)
                ev.push_back(commitOf(r, s, t += 10));
        const RecoveryMeasure m = measureRecoveries(ev, 2);
        CHECK(m.rollbacks == 1);
        CHECK(m.steps_rolled_back == 6); // steps 0..5, each once however many replicas redid it
    }
    SECTION("a dead replica whose restart starts late holds nothing: the first one back starts the episode") {
        // Both die after step 5. Replica 1's new process starts first, resumes
        // from a checkpoint of step 2 and commits 3, 4; replica 0's new process
        // starts only then and heals to 5. Steps 3, 4 and 5 were redone.
        std::vector<Event> ev;
        int64_t t = 0;
        for (int s = 0; s <= 5; ++s)
            for (int r = 0; r < 2; ++r)
                ev.push_back(commitOf(r, s, t += 10));
        ev.push_back(at(0, EventKind::ProcessExited, t += 10, 9));
        ev.push_back(at(1, EventKind::ProcessExited, t += 10, 9));
        ev.push_back(at(1, EventKind::RankStarted, t += 10));
        Event loaded = at(1, EventKind::CheckpointLoaded, t += 10);
        loaded.step = 2;
        ev.push_back(loaded);
        ev.push_back(commitOf(1, 3, t += 10));
        ev.push_back(commitOf(1, 4, t += 10));
        ev.push_back(at(0, EventKind::RankStarted, t += 10));
        Event heal = at(0, EventKind::Heal, t += 10, 0.0, EventPhase::Span);
        heal.step = 5;
        ev.push_back(heal);
        for (int s = 5; s <= 7; ++s)
            for (int r = 0; r < 2; ++r)
                ev.push_back(commitOf(r, s, t += 10));
        const RecoveryMeasure m = measureRecoveries(ev, 2);
        CHECK(m.rollbacks == 1);
        CHECK(m.steps_rolled_back == 3);
    }
    SECTION("every replica down again before the job caught up is a second rollback") {
        // Both die after step 5 and start again from 0; replica 0 alone reaches
        // step 2, then dies too, and replica 1 starts again from 0.
        std::vector<Event> ev;
        int64_t t = 0;
        for (int s = 0; s <= 5; ++s)
            for (int r = 0; r < 2; ++r)
                ev.push_back(commitOf(r, s, t += 10));
        for (int r = 0; r < 2; ++r) {
            ev.push_back(at(r, EventKind::ProcessExited, t += 10, 9));
            ev.push_back(at(r, EventKind::RankStarted, t += 10));
        }
        for (int s = 0; s <= 2; ++s)
            ev.push_back(commitOf(0, s, t += 10));
        ev.push_back(at(0, EventKind::ProcessExited, t += 10, 9));
        ev.push_back(at(1, EventKind::ProcessExited, t += 10, 9));
        ev.push_back(at(1, EventKind::RankStarted, t += 10));
        for (int s = 0; s <= 7; ++s)
            ev.push_back(commitOf(1, s, t += 10));
        const RecoveryMeasure m = measureRecoveries(ev, 2);
        CHECK(m.rollbacks == 2);
        CHECK(m.steps_rolled_back == 3 + 6); // 0..2 in the first, 0..5 in the second
    }
    SECTION(
        "one restarted replica resumes and another heals from it, its commit stamped first: one rollback") {
        // Both die after step 19 (DiLoCo, H = 4). Replica 1 comes back first,
        // resumes from the checkpoint of step 15 and commits 16..19 at its next
        // outer sync; replica 0 heals from it in that round and its commit of
        // step 19 is stamped before replica 1's commits.
        std::vector<Event> ev;
        int64_t t = 0;
        for (int s = 0; s <= 19; ++s)
            for (int r = 0; r < 2; ++r)
                ev.push_back(commitOf(r, s, t += 10));
        ev.push_back(at(0, EventKind::ProcessExited, t += 10, 9));
        ev.push_back(at(1, EventKind::ProcessExited, t += 10, 9));
        ev.push_back(at(1, EventKind::RankStarted, t += 10));
        ev.push_back(at(0, EventKind::RankStarted, t += 10));
        Event heal = at(0, EventKind::Heal, t += 10, 0.0, EventPhase::Span);
        heal.step = 19;
        ev.push_back(heal);
        ev.push_back(commitOf(0, 19, t += 10));
        for (int s = 16; s <= 19; ++s)
            ev.push_back(commitOf(1, s, t += 1));
        for (int s = 20; s <= 23; ++s)
            for (int r = 0; r < 2; ++r)
                ev.push_back(commitOf(r, s, t += 10));
        const RecoveryMeasure m = measureRecoveries(ev, 2);
        CHECK(m.rollbacks == 1);
        CHECK(m.steps_rolled_back == 4); // 16..19
    }
    SECTION("a job that finished, its processes exiting with 0, starts no episode") {
        std::vector<Event> ev;
        int64_t t = 0;
        for (int s = 0; s <= 5; ++s)
            for (int r = 0; r < 2; ++r)
                ev.push_back(commitOf(r, s, t += 10));
        ev.push_back(at(0, EventKind::ProcessExited, t += 10, 0));
        ev.push_back(at(1, EventKind::ProcessExited, t += 10, 0));
        ev.push_back(commitOf(1, 5, t += 10)); // a late event of the last step
        const RecoveryMeasure m = measureRecoveries(ev, 2);
        CHECK(m.rollbacks == 0);
    }
    SECTION("a replica restarted while another lives heals to the highest step: no rollback") {
        std::vector<Event> ev;
        int64_t t = 0;
        for (int s = 0; s <= 5; ++s)
            for (int r = 0; r < 2; ++r)
                ev.push_back(commitOf(r, s, t += 10));
        ev.push_back(commitOf(0, 6, t += 10)); // replica 1 is down, replica 0 goes on
        ev.push_back(at(1, EventKind::RankStarted, t += 10));
        Event heal = at(1, EventKind::Heal, t += 10, 0.0, EventPhase::Span);
        heal.step = 7;
        ev.push_back(heal);
        ev.push_back(commitOf(0, 7, t += 10)); // the same step, the survivor first
        ev.push_back(commitOf(1, 7, t += 1));
        ev.push_back(commitOf(0, 8, t += 10));
        ev.push_back(commitOf(1, 8, t += 1));
        const RecoveryMeasure m = measureRecoveries(ev, 2);
        CHECK(m.rollbacks == 0);
        CHECK(m.steps_rolled_back == 0);
    }
    SECTION("a fresh start while a stopped replica holds newer steps is a rollback, counted before it is "
            "fenced") {
        // 3 replicas commit steps 0..5; replicas 1 and 2 die, replica 0 goes on to step 8 and is
        // stopped; 1 and 2 restart, form a quorum of members holding no step (a fresh start) and
        // redo steps 6..8 from the durable checkpoint of step 5; replica 0 is killed only after.
        std::vector<Event> ev;
        int64_t t = 0;
        for (int s = 0; s <= 5; ++s)
            for (int r = 0; r < 3; ++r)
                ev.push_back(commitOf(r, s, t += 10));
        ev.push_back(at(1, EventKind::ProcessExited, t += 10, 137));
        ev.push_back(at(2, EventKind::ProcessExited, t += 10, 137));
        for (int s = 6; s <= 8; ++s)
            ev.push_back(commitOf(0, s, t += 10));
        ev.push_back(at(1, EventKind::RankStarted, t += 10));
        ev.push_back(at(2, EventKind::RankStarted, t += 10));
        Event fresh = at(-1, EventKind::QuorumFormed, t += 1000, 7);
        fresh.bytes = 0; // the highest step of its members
        ev.push_back(fresh);
        for (int s = 6; s <= 8; ++s)
            for (int r = 1; r < 3; ++r)
                ev.push_back(commitOf(r, s, t += 10));
        ev.push_back(at(0, EventKind::ProcessExited, t += 10, 137)); // fenced
        for (int r = 1; r < 3; ++r)
            ev.push_back(commitOf(r, 9, t += 10));
        const RecoveryMeasure m = measureRecoveries(ev, 3);
        CHECK(m.rollbacks == 1);
        CHECK(m.steps_rolled_back == 3);
        // The same quorum holding replica 0's steps (highest member step 9) starts nothing.
        for (Event& e : ev)
            if (e.kind == EventKind::QuorumFormed)
                e.bytes = 9;
        CHECK(measureRecoveries(ev, 3).rollbacks == 0);
    }
    SECTION("a hung replica's late commit of the step it was in is not a rollback") {
        std::vector<Event> ev{commitOf(0, 0, 10), commitOf(1, 0, 11), commitOf(0, 1, 20), commitOf(0, 2, 30),
                              commitOf(1, 1, 40)};
        const RecoveryMeasure m = measureRecoveries(ev, 2);
        CHECK(m.rollbacks == 0);
        CHECK(m.steps_rolled_back == 0);
    }
}
