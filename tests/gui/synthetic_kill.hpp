// synthetic_kill.hpp: two small synthetic runs with faults, for the state at
// a moment (test_run_state_at.cpp) and the views at the time cursor
// (test_views_at_cursor.cpp).
//
//   killRun()  plain DDP, 3 ranks, 10 steps of 100 ms from kT0 (each step runs
//              10..80 ms into its slot): rank 1 is SIGKILLed at +455 ms (it
//              completed steps 0..3), rank 2 is hung from +705 to +790 ms, rank
//              0 waits at a step gate from +880 to +905 ms and is slowed by 15 ms
//              in step 6; ranks 0 and 2 finish at +1000 ms. Memory: activations
//              grow by 10 B a step, so the value at a moment tells the step.
//   ftRun()    fault tolerant, 3 replicas commit a step every 100 ms; replica 1
//              is killed at +450 ms, restarted at +1000 ms (incarnation 1),
//              started at +1010 ms and commits again from step 11 (+1190 ms);
//              replica 0 aborts at +455 ms; replica 2 is partitioned from +500 ms
//              until the Session logs "partition healed" at +600 ms; the
//              lighthouse is down from +1300 to +1400 ms.
#pragma once

#include "dtlab/events.hpp"
#include "dtlab/scenario.hpp"

#include <csignal>
#include <vector>

namespace dt::test {

struct SyntheticFaults {
    static constexpr int64_t kMs = 1'000'000;
    static constexpr int64_t kT0 = 1'000'000'000;

    static Event instant(int rank, EventKind kind, int64_t t, double value = 0, int step = -1,
                         uint64_t seq = 0) {
        Event e;
        e.rank = rank;
        e.kind = kind;
        e.phase = EventPhase::Instant;
        e.t_ns = t;
        e.value = value;
        e.step = step;
        e.seq = seq;
        return e;
    }
    static Event span(int rank, int step, EventKind kind, int64_t t0, int64_t t1) {
        Event e;
        e.rank = rank;
        e.step = step;
        e.kind = kind;
        e.phase = EventPhase::Span;
        e.t_ns = t0;
        e.dur_ns = t1 - t0;
        return e;
    }
    static Event counter(int rank, int step, EventKind kind, double value, int64_t t) {
        Event e;
        e.rank = rank;
        e.step = step;
        e.kind = kind;
        e.phase = EventPhase::Counter;
        e.value = value;
        e.t_ns = t;
        return e;
    }
    static int64_t at(int64_t ms) { return kT0 + ms * kMs; }

    static Scenario ddpScenario() {
        Scenario s;
        s.name = "kill";
        s.topology.ranks = 3;
        s.run.steps = 10;
        return s;
    }
    static Scenario ftScenario() {
        Scenario s = ddpScenario();
        s.name = "ft";
        s.run.steps = 15;
        s.fault_tolerance.enabled = true;
        s.fault_tolerance.restart = "auto";
        return s;
    }

    static std::vector<Event> killRun() {
        std::vector<Event> ev;
        for (int r = 0; r < 3; ++r) {
            ev.push_back(instant(r, EventKind::RankStarted, at(0), 100 + r));
            ev.push_back(instant(r, EventKind::RankReady, at(1)));
        }
        for (int step = 0; step < 10; ++step)
            for (int r = 0; r < 3; ++r) {
                const int64_t b = at(100 * step + 10), e = at(100 * step + 80);
                if (r == 1 && e > at(455))
                    continue; // killed
                ev.push_back(span(r, step, EventKind::Step, b, e));
                ev.push_back(counter(r, step, EventKind::LossValue, 3.0 - 0.1 * step, e));
                ev.push_back(counter(r, step, EventKind::StepTimeMs, 70.0, e));
                ev.push_back(counter(r, step, EventKind::MemParameters, 1000, e));
                ev.push_back(counter(r, step, EventKind::MemGradients, 1000, e));
                ev.push_back(counter(r, step, EventKind::MemOptimizer, 2000, e));
                ev.push_back(counter(r, step, EventKind::MemActivations, 100 + 10 * step, e));
                ev.push_back(counter(r, step, EventKind::BytesSent, 500.0 * (step + 1), e));
            }
        ev.push_back(instant(1, EventKind::FaultInjected, at(455), SIGKILL));
        ev.push_back(instant(1, EventKind::ProcessExited, at(456), -SIGKILL));
        ev.push_back(instant(2, EventKind::FaultInjected, at(705), SIGSTOP));
        ev.push_back(instant(2, EventKind::FaultInjected, at(790), SIGCONT));
        ev.push_back(span(0, 8, EventKind::Paused, at(880), at(905)));
        ev.push_back(span(0, 6, EventKind::SlowDelay, at(665), at(680)));
        for (int r : {0, 2}) {
            ev.push_back(instant(r, EventKind::RankFinished, at(1000), 0, 9));
            ev.push_back(instant(r, EventKind::ProcessExited, at(1001), 0));
        }
        return ev;
    }

    static std::vector<Event> ftRun() {
        std::vector<Event> ev;
        ev.push_back(instant(-1, EventKind::QuorumFormed, at(0), 1, -1, 0b111));
        for (int r = 0; r < 3; ++r)
            ev.push_back(instant(r, EventKind::RankStarted, at(-50), 100 + r));
        for (int step = 0; step < 15; ++step)
            for (int r = 0; r < 3; ++r) {
                const int64_t b = at(100 * step), e = at(100 * step + 80);
                if (r == 1 && e > at(450) && b < at(1100))
                    continue; // dead, then restarting
                ev.push_back(span(r, step, EventKind::Step, b, e));
                ev.push_back(instant(r, EventKind::Commit, at(100 * step + 90), 0, step));
                ev.push_back(counter(r, step, EventKind::LossValue, 3.0 - 0.1 * step, e));
            }
        ev.push_back(instant(1, EventKind::FaultInjected, at(450), SIGKILL));
        ev.push_back(instant(1, EventKind::ProcessExited, at(452), -SIGKILL));
        ev.push_back(instant(0, EventKind::Abort, at(455), 1, 4));
        ev.push_back(instant(-1, EventKind::QuorumFormed, at(460), 2, -1, 0b101));
        ev.push_back(instant(1, EventKind::RankRestarted, at(1000), 1));
        ev.push_back(instant(1, EventKind::RankStarted, at(1010), 201));
        ev.push_back(instant(1, EventKind::RankReady, at(1020)));
        ev.push_back(instant(-1, EventKind::QuorumFormed, at(1095), 3, -1, 0b111));
        ev.push_back(instant(2, EventKind::FaultInjected, at(500), -5)); // partition
        ev.push_back(instant(-1, EventKind::LighthouseDown, at(1300)));
        ev.push_back(instant(-1, EventKind::LighthouseUp, at(1400)));
        return ev;
    }
    // The Session's log line that ends replica 2's partition.
    static LogRecord partitionHealed() {
        return LogRecord{at(600), -1, LogLevel::Warning, "rank 2: partition healed"};
    }
};

} // namespace dt::test
