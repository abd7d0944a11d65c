// test_breakpoints.cpp: breakpoints read from synthetic events, one per kind,
// and the script's break / unbreak commands.
#include "model/breakpoints.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <csignal>

using dt::Event;
using dt::EventKind;
using dt::EventPhase;
using dt::app::Breakpoint;
using dt::app::BreakpointKind;
using dt::app::BreakpointList;

namespace {

Event event(EventKind kind, EventPhase phase, int rank, double value = 0.0, int64_t step = 0) {
    Event e;
    e.kind = kind;
    e.phase = phase;
    e.rank = rank;
    e.value = value;
    e.step = step;
    return e;
}

} // namespace

TEST_CASE("Breakpoints pause at the events they name", "[gui][breakpoints]") {
    BreakpointList list;

    SECTION("nothing is hit without a breakpoint") {
        CHECK_FALSE(list.check(event(EventKind::ProcessExited, EventPhase::Instant, 1, -9)));
    }
    SECTION("a death is a signal or an error, not a clean exit") {
        list.add({BreakpointKind::RankDies, 0});
        CHECK_FALSE(list.check(event(EventKind::ProcessExited, EventPhase::Instant, 1, 0)));
        const auto hit = list.check(event(EventKind::ProcessExited, EventPhase::Instant, 1, -9));
        REQUIRE(hit);
        CHECK(hit->what == "rank 1 died of signal 9");
        CHECK(hit->breakpoint.describe() == "a rank dies");
    }
    SECTION("a hang is the SIGSTOP fault") {
        list.add({BreakpointKind::RankHangs, 0});
        CHECK_FALSE(list.check(event(EventKind::FaultInjected, EventPhase::Instant, 2, SIGKILL)));
        CHECK(list.check(event(EventKind::FaultInjected, EventPhase::Instant, 2, SIGSTOP)));
    }
    SECTION("the quorum changes when its id does, not on the first quorum or a repeat") {
        list.add({BreakpointKind::QuorumChanges, 0});
        CHECK_FALSE(list.check(event(EventKind::QuorumFormed, EventPhase::Instant, -1, 1)));
        CHECK_FALSE(list.check(event(EventKind::QuorumFormed, EventPhase::Instant, -1, 1)));
        const auto hit = list.check(event(EventKind::QuorumFormed, EventPhase::Instant, -1, 2));
        REQUIRE(hit);
        CHECK(hit->what == "quorum 2 formed (was 1)");
    }
    SECTION("a failed collective, and one slower than X ms from its start to its completion") {
        list.add({BreakpointKind::CollectiveFails, 0});
        list.add({BreakpointKind::CollectiveSlower, 100});
        Event start = event(EventKind::AllReduce, EventPhase::WorkStarted, 0);
        start.seq = 7;
        start.t_ns = 1'000'000'000;
        CHECK_FALSE(list.check(start));
        Event done = start;
        done.phase = EventPhase::WorkCompleted;
        done.t_ns = start.t_ns + 50'000'000; // 50 ms: fast enough
        CHECK_FALSE(list.check(done));
        start.seq = 8;
        CHECK_FALSE(list.check(start));
        done.seq = 8;
        done.t_ns = start.t_ns + 250'000'000; // 250 ms
        const auto slow = list.check(done);
        REQUIRE(slow);
        CHECK(slow->breakpoint.kind == BreakpointKind::CollectiveSlower);
        CHECK(slow->what == "rank 0's all-reduce #8 took 250 ms");
        Event failed = start;
        failed.seq = 9;
        failed.phase = EventPhase::WorkFailed;
        const auto fail = list.check(failed);
        REQUIRE(fail);
        CHECK(fail->breakpoint.kind == BreakpointKind::CollectiveFails);
    }
    SECTION("a heal is a receiving Heal span; step N is the N-th step's end; a NaN loss") {
        list.add({BreakpointKind::Heal, 0});
        list.add({BreakpointKind::Step, 5});
        list.add({BreakpointKind::LossNaN, 0});
        CHECK_FALSE(list.check(event(EventKind::Heal, EventPhase::Span, 0, 1)));
        CHECK(list.check(event(EventKind::Heal, EventPhase::Span, 1, 0)));
        CHECK_FALSE(list.check(event(EventKind::Step, EventPhase::Span, 0, 0, 3)));
        const auto step = list.check(event(EventKind::Step, EventPhase::Span, 0, 0, 4));
        REQUIRE(step);
        CHECK(step->breakpoint.describe() == "step 5 is completed");
        CHECK_FALSE(list.check(event(EventKind::LossValue, EventPhase::Counter, 0, 2.5)));
        CHECK(list.check(event(EventKind::LossValue, EventPhase::Counter, 0, std::nan(""))));
    }
    SECTION("breakpoints are listed, replaced by kind and removed") {
        list.add({BreakpointKind::Step, 5});
        list.add({BreakpointKind::Step, 8});
        REQUIRE(list.list().size() == 1);
        CHECK(list.list()[0].arg == 8);
        CHECK(list.remove(BreakpointKind::Step));
        CHECK_FALSE(list.remove(BreakpointKind::Step));
        CHECK(list.list().empty());
    }
    SECTION("every kind has a script name that parses back") {
        for (const auto& info : dt::app::breakpointKinds()) {
            BreakpointKind k;
            REQUIRE(dt::app::parseBreakpointKind(info.id, k));
            CHECK(k == info.kind);
        }
        BreakpointKind k;
        CHECK_FALSE(dt::app::parseBreakpointKind("rank_explodes", k));
    }
}
