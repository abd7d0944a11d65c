// test_event_moment.cpp: a narration step's moment as the one event the
// Session holds at (model/event_moment.hpp).
#include "model/event_moment.hpp"

#include "dtlab/fault_action.hpp"

#include <catch2/catch.hpp>

namespace {

dt::Event event(dt::EventKind kind, dt::EventPhase phase, int rank, int step, double value = 0.0) {
    dt::Event e;
    e.kind = kind;
    e.phase = phase;
    e.rank = rank;
    e.step = step;
    e.value = value;
    return e;
}

dt::NarrationCondition condition(const std::string& text) {
    dt::NarrationCondition c;
    REQUIRE(dt::parseNarrationCondition(text, c));
    return c;
}

} // namespace

TEST_CASE("A narration step's moment is the one event at which it happens", "[gui][narration]") {
    using K = dt::EventKind;
    using P = dt::EventPhase;
    SECTION("step >= 10: the end of step index 9, gated ahead before step 10") {
        const auto m = dt::app::narrationMoment(condition("step >= 10"), -1, false);
        REQUIRE(m.matches);
        CHECK(m.before_step == 10);
        CHECK_FALSE(m.matches(event(K::Step, P::Span, 0, 8)));
        CHECK(m.matches(event(K::Step, P::Span, 1, 9)));
    }
    SECTION("under a quorum a step is done when committed, not when an attempt ends") {
        const auto m = dt::app::narrationMoment(condition("step >= 10"), -1, true);
        CHECK_FALSE(m.matches(event(K::Step, P::Span, 0, 9)));
        CHECK(m.matches(event(K::Commit, P::Instant, 0, 9)));
    }
    SECTION("rank 1 dies: the Session's SIGKILL to it, or its exit with a signal; not another rank's") {
        const auto m = dt::app::narrationMoment(condition("rank 1 dies"), -1, false);
        const int kill = dt::faultActionTraits(dt::FaultAction::Kill).event_code;
        CHECK(m.before_step == INT64_MAX);
        CHECK(m.matches(event(K::FaultInjected, P::Instant, 1, -1, kill)));
        CHECK(m.matches(event(K::ProcessExited, P::Instant, 1, -1, -9)));
        CHECK_FALSE(m.matches(event(K::FaultInjected, P::Instant, 2, -1, kill)));
        CHECK_FALSE(m.matches(event(K::ProcessExited, P::Instant, 1, -1, 0)));
    }
    SECTION("a new quorum: an id other than the first one seen, even when the app saw none yet") {
        const auto m = dt::app::narrationMoment(condition("new quorum forms"), -1, true);
        CHECK_FALSE(m.matches(event(K::QuorumFormed, P::Instant, -1, -1, 1)));
        CHECK_FALSE(m.matches(event(K::QuorumFormed, P::Instant, 0, -1, 1)));
        CHECK(m.matches(event(K::QuorumFormed, P::Instant, -1, -1, 2)));
    }
    SECTION("a hang is time passing and the run's end is no moment to hold: no matcher") {
        CHECK_FALSE(dt::app::narrationMoment(condition("a collective hangs"), -1, false).matches);
        CHECK_FALSE(dt::app::narrationMoment(condition("run finished"), -1, false).matches);
    }
}
