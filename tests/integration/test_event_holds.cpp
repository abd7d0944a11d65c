// test_event_holds.cpp: a Session holds the run at an event itself
// (Session::armEventHold, session/run_gate.cpp), with real rank processes:
//   - a step count is held ahead: every rank ends step N-1 and waits before
//     step N, however fast the steps and however late their telemetry;
//   - a scheduled kill as its all-reduce starts: the victim stops at that
//     moment (rank/fault_points.hpp), the hold reaches the survivors before
//     the kill, and they abort that step and wait before trying it again: no
//     new quorum, no commit past it, until the run is resumed;
//   - a replica killed while a survivor still finishes its step stays down
//     until the run is resumed: its restart delay stands still from the
//     hold's order on, not only once every rank waits;
//   - a scheduled kill in plain DDP lands at its own step on any machine.
// Every wait is for an event (the hit, every rank waiting at its gate); the
// checks read the Session's own record.
#include "process_helpers.hpp"

#include "dtlab/session.hpp"

#include <catch2/catch.hpp>

#include <csignal>

namespace {

dt::SessionOptions optionsFor(const it::TempDir& dir, const it::ScenarioSpec& spec) {
    dt::SessionOptions options;
    options.scenario = dt::loadScenarioFile(dir.write("s.toml", it::scenarioToml(spec)));
    options.worker_executable = it::dtrunPath();
    return options;
}

it::ScenarioSpec tinySpec(int ranks, int steps) {
    it::ScenarioSpec spec;
    spec.ranks = ranks;
    spec.steps = steps;
    spec.batch_per_rank = 2;
    spec.d_model = 32;
    spec.layers = 1;
    spec.heads = 2;
    spec.timeout_s = 30;
    return spec;
}

// A hold at the SIGKILL of `rank` (a rank_dies breakpoint).
void armKillHold(dt::Session& session, int rank) {
    session.armEventHold("test", {[rank](const dt::Event& e) {
                                      return e.kind == dt::EventKind::FaultInjected && e.rank == rank &&
                                             int(e.value) == SIGKILL;
                                  },
                                  "rank " + std::to_string(rank) + " dies"});
}

// Every rank in `ranks` is waiting at its gate (the Session shows it Paused).
bool allWaiting(const dt::Session& session, const std::vector<int>& ranks) {
    const std::vector<dt::RankProgress> progress = session.progress();
    for (int r : ranks)
        if (progress[size_t(r)].state != dt::RankState::Paused)
            return false;
    return true;
}

std::vector<dt::EventHoldHit> waitForHit(dt::Session& session) {
    std::vector<dt::EventHoldHit> hits;
    it::waitFor(
        [&] {
            for (dt::EventHoldHit& h : session.takeEventHoldHits())
                hits.push_back(std::move(h));
            return !hits.empty() || session.finished();
        },
        120.0);
    return hits;
}

int64_t lastEventStep(const dt::RunRecord& record, dt::EventKind kind, int rank = -2) {
    int64_t last = -1;
    for (const dt::Event& e : record.events)
        if (e.kind == kind && (rank == -2 || e.rank == rank))
            last = std::max<int64_t>(last, e.step);
    return last;
}

} // namespace

TEST_CASE("A hold at an event stops the run at that moment", "[holds][slow]") {
    it::TempDir dir("dtlab-holds");

    SECTION("a step count: every rank ends step 4 and waits before step 5, however fast the steps") {
        dt::Session session(optionsFor(dir, tinySpec(2, 40)));
        session.start();
        session.armEventHold("test", {[](const dt::Event& e) {
                                          return e.kind == dt::EventKind::Step &&
                                                 e.phase == dt::EventPhase::Span && e.step == 4;
                                      },
                                      "step >= 5", 5});
        const std::vector<dt::EventHoldHit> hits = waitForHit(session);
        REQUIRE(hits.size() == 1);
        CHECK(hits[0].held_at == 4);
        CHECK(hits[0].before.mode == dt::RunMode::Run);
        REQUIRE(it::waitFor([&] { return allWaiting(session, {0, 1}); }, 60.0));
        const dt::RunRecord held = session.snapshot();
        CHECK(lastEventStep(held, dt::EventKind::Step) == 4);
        CHECK(lastEventStep(held, dt::EventKind::GateWait, 0) == 5);
        CHECK(lastEventStep(held, dt::EventKind::GateWait, 1) == 5);
        session.resume();
        session.waitUntilFinished();
        CHECK(session.snapshot().ok);
    }

    SECTION("a kill as its all-reduce starts: the survivors abort that step and wait before a new quorum") {
        it::ScenarioSpec spec = tinySpec(3, 30);
        spec.extra_toml = "[fault_tolerance]\nenabled = true\nrestart_delay_ms = 300\n";
        spec.faults_toml = "[[faults]]\naction = \"kill\"\nrank = 1\nstep = 6\nwhen = \"allreduce\"\n";
        dt::Session session(optionsFor(dir, spec));
        session.start();
        armKillHold(session, 1);
        const std::vector<dt::EventHoldHit> hits = waitForHit(session);
        REQUIRE(hits.size() == 1);
        CHECK(hits[0].held_at == 6);
        REQUIRE(it::waitFor([&] { return allWaiting(session, {0, 2}); }, 60.0));
        const dt::RunRecord held = session.snapshot();
        int64_t quorum_before_kill = -1, quorum_after_kill = -1;
        bool killed = false;
        for (const dt::Event& e : held.events) {
            killed = killed || (e.kind == dt::EventKind::FaultInjected && e.rank == 1);
            if (e.kind == dt::EventKind::QuorumFormed && e.rank < 0)
                (killed ? quorum_after_kill : quorum_before_kill) = int64_t(e.value);
        }
        REQUIRE(killed);
        CHECK(quorum_after_kill == -1); // no new quorum while held
        for (int survivor : {0, 2}) {
            INFO("replica " << survivor);
            CHECK(lastEventStep(held, dt::EventKind::Commit, survivor) == 5);   // step 6 never committed
            CHECK(lastEventStep(held, dt::EventKind::Abort, survivor) == 6);    // it aborted step 6 ...
            CHECK(lastEventStep(held, dt::EventKind::GateWait, survivor) == 6); // ... and waits to retry it
        }
        session.resume();
        session.waitUntilFinished();
        const dt::RunRecord end = session.snapshot();
        CHECK(end.ok);
        CHECK(lastEventStep(end, dt::EventKind::Commit, 0) == 29);
    }

    SECTION(
        "a replica killed while a survivor still finishes its step is not restarted until the run resumes") {
        // Replica 0 sleeps 1.5 s at the end of step 2 (a slow-down); replicas 1
        // and 2 start step 3 meanwhile and replica 1 dies there. The hold comes
        // at the kill; replica 0 reaches its gate about 1.5 s later, long after
        // the 200 ms restart delay.
        // 30 steps of at least 25 ms: the run goes on for over half a second after the resume, well
        // past the 200 ms restart delay (which counts from the resume: the job's clock stood still).
        it::ScenarioSpec spec = tinySpec(3, 30);
        spec.run_toml = "step_delay_ms = 25\n";
        spec.extra_toml = "[fault_tolerance]\nenabled = true\nrestart_delay_ms = 200\n";
        spec.faults_toml = "[[faults]]\naction = \"slow\"\nrank = 0\nstep = 2\nwhen = \"step\"\ndelay_ms = "
                           "1500\nduration_s = 1\n[[faults]]\naction = \"kill\"\nrank = 1\nstep = 3\nwhen = "
                           "\"step\"\n";
        dt::Session session(optionsFor(dir, spec));
        session.start();
        armKillHold(session, 1);
        REQUIRE(waitForHit(session).size() == 1);
        REQUIRE(it::waitFor([&] { return allWaiting(session, {0, 2}); }, 60.0));
        const std::vector<dt::RankProgress> held = session.progress();
        CHECK(held[1].state == dt::RankState::Restarting);
        CHECK(held[1].incarnation == 0);
        session.resume();
        CHECK(it::waitFor([&] { return session.progress()[1].incarnation == 1; },
                          60.0)); // back after the resume
        session.waitUntilFinished();
        const dt::RunRecord end = session.snapshot();
        CHECK(end.ok);
    }

    SECTION("a scheduled kill in plain DDP lands at its own step: rank 1 dies in step 3, never past it") {
        it::ScenarioSpec spec = tinySpec(2, 40);
        spec.faults_toml = "[[faults]]\naction = \"kill\"\nrank = 1\nstep = 3\nwhen = \"step\"\n";
        dt::Session session(optionsFor(dir, spec));
        session.start();
        session.waitUntilFinished();
        const dt::RunRecord end = session.snapshot();
        CHECK_FALSE(end.ok);
        CHECK(lastEventStep(end, dt::EventKind::Step, 1) == 2); // it ended steps 0..2 and no more
        CHECK(lastEventStep(end, dt::EventKind::Step, 0) <= 2); // its peer cannot end step 3 without it
    }
}
