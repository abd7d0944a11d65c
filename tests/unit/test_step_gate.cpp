// test_step_gate.cpp: a rank's step gate and its scheduled fault points
// (rank/step_gate.hpp, rank/fault_points.hpp), with threads standing in for
// the training thread and the control reader. Each wait is on an event (a
// flag the waiting thread sets), never on time.
#include "rank/fault_points.hpp"
#include "rank/step_gate.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace {

// Runs gate.waitToStart(step) on a thread; `waiting` turns true just before it blocks.
struct GateWaiter {
    std::atomic<bool> waiting{false}, started{false};
    std::thread thread;
    GateWaiter(dt::StepGate& gate, int64_t step)
        : thread([&, step] {
              gate.waitToStart(step, [&](bool) { waiting = true; });
              started = true;
          }) {}
    ~GateWaiter() {
        if (thread.joinable())
            thread.join();
    }
};

bool spinUntil(const std::atomic<bool>& flag) {
    for (int i = 0; i < 2'000'000 && !flag.load(); ++i)
        std::this_thread::yield();
    return flag.load();
}

// The group's agreement for two ranks in one process: each call waits for
// the other rank's look (a collective), then both get the same answer.
struct TwoRankAgreement {
    std::mutex mutex;
    std::condition_variable done;
    dt::GateLook looks[2];
    dt::GroupGateLook result;
    int arrived = 0;
    uint64_t round = 0;
    std::atomic<int> rounds{0};
    dt::GroupGateLook agree(int rank, const dt::GateLook& look) {
        std::unique_lock<std::mutex> lock(mutex);
        looks[rank] = look;
        const uint64_t mine = round;
        if (++arrived == 2) {
            result = {looks[0].open && looks[1].open, std::max(looks[0].version, looks[1].version)};
            arrived = 0;
            ++round;
            ++rounds;
            done.notify_all();
        } else {
            done.wait(lock, [&] { return round != mine; });
        }
        return result;
    }
};

dt::Event eventOf(dt::EventKind kind, dt::EventPhase phase, int step) {
    dt::Event e;
    e.kind = kind;
    e.phase = phase;
    e.step = step;
    return e;
}

} // namespace

TEST_CASE("A rank starts a step only while the gate allows it, and a held retry waits", "[rank][gate]") {
    SECTION("a step up to the allowed one starts at once; the next waits until the gate moves") {
        dt::StepGate gate;
        gate.setAllowedStep(3);
        CHECK_FALSE(gate.waitToStart(3));
        GateWaiter next(gate, 4);
        REQUIRE(spinUntil(next.waiting));
        CHECK_FALSE(next.started.load());
        gate.setAllowedStep(4);
        next.thread.join();
        CHECK(next.started.load());
    }
    SECTION("an aborted step tried again waits when the Session holds retries, and passes when it does not") {
        dt::StepGate gate;
        gate.setAllowedStep(5, true);
        CHECK_FALSE(gate.waitToStart(5)); // the first attempt is the allowed one
        GateWaiter retry(gate, 5);        // the same step again: a new quorum would form
        REQUIRE(spinUntil(retry.waiting));
        CHECK_FALSE(retry.started.load());
        gate.setAllowedStep(5, false); // paced, or the end hold: a retry goes through
        retry.thread.join();
        CHECK(retry.started.load());
    }
    SECTION("a held retry goes on once the gate allows the next step") {
        dt::StepGate gate;
        gate.setAllowedStep(2, true);
        CHECK_FALSE(gate.waitToStart(2));
        GateWaiter retry(gate, 2);
        REQUIRE(spinUntil(retry.waiting));
        gate.setAllowedStep(3, true);
        retry.thread.join();
        CHECK(retry.started.load());
    }
    SECTION("a step that starts without waiting says nothing") {
        dt::StepGate gate;
        bool said = false;
        CHECK_FALSE(gate.waitToStart(0, [&](bool) { said = true; }));
        CHECK_FALSE(said);
    }
}

TEST_CASE("A replica group's ranks pass their gates together", "[rank][gate]") {
    SECTION("an order older than one already applied is ignored") {
        dt::StepGate gate;
        gate.setAllowedStep(10, false, 5);
        gate.setAllowedStep(3, false, 4); // sent before order 5, arrived after it
        CHECK_FALSE(gate.waitToStart(10));
        CHECK(gate.look(11, false).version == 5);
    }
    SECTION("a rank whose gate opened before its peer's hold arrived waits with the held peer, and both go "
            "on together") {
        // Both ranks ran step 5 and it aborted; the retry is next. The
        // Session's hold (order 2: no retry of step 5) reached rank 1 first;
        // rank 0 still has order 1 (run freely), so alone it would start.
        dt::StepGate gates[2];
        for (dt::StepGate& gate : gates) {
            gate.setAllowedStep(INT64_MAX, false, 1);
            CHECK_FALSE(gate.waitToStart(5)); // the first attempt
        }
        gates[1].setAllowedStep(5, true, 2);
        TwoRankAgreement agreement;
        std::atomic<bool> waiting[2] = {false, false}, passed[2] = {false, false},
                          held_as_retry[2] = {false, false};
        std::thread ranks[2];
        for (int r = 0; r < 2; ++r)
            ranks[r] = std::thread([&, r] {
                dt::passGateTogether(
                    gates[r], 5, [&](const dt::GateLook& look) { return agreement.agree(r, look); },
                    [&](bool retry) {
                        waiting[r] = true;
                        held_as_retry[r] = retry;
                    });
                passed[r] = true;
            });
        REQUIRE(spinUntil(waiting[0])); // rank 0 waits for order 2 although its own gate is open
        REQUIRE(spinUntil(waiting[1]));
        gates[0].setAllowedStep(5, true, 2); // the hold reaches rank 0: still held
        CHECK_FALSE(passed[0].load());
        CHECK_FALSE(passed[1].load());
        for (dt::StepGate& gate : gates)
            gate.setAllowedStep(INT64_MAX, false, 3); // Next: the run goes on
        for (std::thread& t : ranks)
            t.join();
        CHECK(passed[0].load());
        CHECK(passed[1].load());
        CHECK(held_as_retry[0].load()); // the Session counts both as held before a retry
        CHECK(held_as_retry[1].load());
        CHECK(agreement.rounds.load() == 2); // one "not every gate is open", one "go"
    }
    SECTION("open gates agree once and nobody waits") {
        dt::StepGate gates[2];
        TwoRankAgreement agreement;
        bool waited[2] = {true, true};
        std::thread ranks[2];
        for (int r = 0; r < 2; ++r)
            ranks[r] = std::thread([&, r] {
                waited[r] = dt::passGateTogether(
                    gates[r], 0, [&](const dt::GateLook& look) { return agreement.agree(r, look); });
            });
        for (std::thread& t : ranks)
            t.join();
        CHECK_FALSE(waited[0]);
        CHECK_FALSE(waited[1]);
        CHECK(agreement.rounds.load() == 1);
    }
}

TEST_CASE("A scheduled kill or hang stops its rank at its own moment", "[rank][faults]") {
    dt::Scenario s;
    s.faults.push_back({});
    s.faults[0].action = dt::FaultAction::Kill;
    s.faults[0].rank = 1;
    s.faults[0].step = 3;
    s.faults[0].when = dt::FaultWhen::AllReduce;
    SECTION("the all-reduce of that step starting is the moment, once; other events pass") {
        dt::FaultPoints points(s, 1, 0);
        REQUIRE_FALSE(points.empty());
        CHECK_FALSE(points.reached(eventOf(dt::EventKind::AllReduce, dt::EventPhase::WorkStarted, 2)));
        CHECK_FALSE(points.reached(eventOf(dt::EventKind::AllReduce, dt::EventPhase::WorkScheduled, 3)));
        CHECK_FALSE(points.reached(eventOf(dt::EventKind::Forward, dt::EventPhase::Span, 3)));
        CHECK(points.reached(eventOf(dt::EventKind::AllReduce, dt::EventPhase::WorkStarted, 3)));
        CHECK(points.empty());
        CHECK_FALSE(points.reached(eventOf(dt::EventKind::AllReduce, dt::EventPhase::WorkStarted, 3)));
    }
    SECTION("when = step: the rank's first event of that step or later") {
        s.faults[0].when = dt::FaultWhen::Step;
        s.faults[0].action = dt::FaultAction::Hang;
        dt::FaultPoints points(s, 1, 0);
        CHECK_FALSE(points.reached(eventOf(dt::EventKind::Step, dt::EventPhase::Span, 2)));
        CHECK(points.reached(eventOf(dt::EventKind::Data, dt::EventPhase::Span, 3)));
    }
    SECTION("another rank, a restarted incarnation, a timed fault and a non-signal fault have no point") {
        CHECK(dt::FaultPoints(s, 0, 0).empty());
        CHECK(dt::FaultPoints(s, 1, 1).empty());
        dt::Scenario timed = s;
        timed.faults[0].when = dt::FaultWhen::Time;
        CHECK(dt::FaultPoints(timed, 1, 0).empty());
        dt::Scenario slow = s;
        slow.faults[0].action = dt::FaultAction::Slow;
        CHECK(dt::FaultPoints(slow, 1, 0).empty());
    }
    SECTION("the stopped thread goes on when the Session releases it") {
        dt::FaultPoints points(s, 1, 0);
        std::atomic<bool> went_on{false};
        std::thread stopped([&] {
            CHECK(points.waitForRelease());
            went_on = true;
        });
        points.release();
        stopped.join();
        CHECK(went_on.load());
    }
}
