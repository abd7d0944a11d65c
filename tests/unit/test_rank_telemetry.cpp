// test_rank_telemetry.cpp: the rank's event builder (rank/rank_telemetry.hpp):
// the fields a call site names and nothing else, the span's end, the
// detailed-only rule, and no sink at all.
#include "rank/rank_telemetry.hpp"

#include <catch2/catch.hpp>

using namespace dt;

namespace {

// A sink whose clock the test sets.
class FixedClockSink final : public EventSink {
  public:
    int64_t now() const override { return t; }
    void emit(const Event& event) override { events.push_back(event); }
    int64_t t = 1000;
    std::vector<Event> events;
};

} // namespace

TEST_CASE("RankTelemetry builds events from named fields", "[telemetry]") {
    FixedClockSink sink;
    const RankTelemetry telemetry(&sink, 3, true);

    SECTION("a span runs from from() to now, and keeps Event's defaults for fields not named") {
        sink.t = 5000;
        telemetry.span(EventKind::Forward).from(1200).step(7).unit(-2).emit();
        REQUIRE(sink.events.size() == 1);
        const Event& e = sink.events[0];
        CHECK(e.kind == EventKind::Forward);
        CHECK(e.phase == EventPhase::Span);
        CHECK(e.rank == 3);
        CHECK(e.step == 7);
        CHECK(e.t_ns == 1200);
        CHECK(e.dur_ns == 3800);
        CHECK(e.unit == -2);
        const Event defaults;
        CHECK(e.microbatch == defaults.microbatch);
        CHECK(e.peer == defaults.peer);
        CHECK(e.group_size == defaults.group_size);
        CHECK(e.value == defaults.value);
        CHECK(e.bytes == defaults.bytes);
        CHECK(e.seq == defaults.seq);
    }

    SECTION("a span with to() ends there, not at now") {
        sink.t = 9000;
        telemetry.span(EventKind::Step).from(100).to(600).step(1).emit();
        REQUIRE(sink.events.size() == 1);
        CHECK(sink.events[0].t_ns == 100);
        CHECK(sink.events[0].dur_ns == 500);
    }

    SECTION("instants and counters are stamped now and carry every field named") {
        sink.t = 4242;
        telemetry.instant(EventKind::QuorumFormed)
            .step(12)
            .value(5)
            .groupSize(3)
            .seq(7)
            .unit(2)
            .bytes(13)
            .peer(0)
            .microbatch(1)
            .emit();
        telemetry.counter(EventKind::LossValue).step(12).value(2.5).emit();
        REQUIRE(sink.events.size() == 2);
        const Event& q = sink.events[0];
        CHECK(q.phase == EventPhase::Instant);
        CHECK(q.t_ns == 4242);
        CHECK(q.dur_ns == 0);
        CHECK(q.step == 12);
        CHECK(q.value == 5);
        CHECK(q.group_size == 3);
        CHECK(q.seq == 7);
        CHECK(q.unit == 2);
        CHECK(q.bytes == 13);
        CHECK(q.peer == 0);
        CHECK(q.microbatch == 1);
        const Event& c = sink.events[1];
        CHECK(c.phase == EventPhase::Counter);
        CHECK(c.t_ns == 4242);
        CHECK(c.value == 2.5);
    }

    SECTION("an event with no step named is outside a step (-1)") {
        telemetry.instant(EventKind::RankStarted).value(1234).emit();
        REQUIRE(sink.events.size() == 1);
        CHECK(sink.events[0].step == -1);
        CHECK(sink.events[0].value == 1234);
    }
}

TEST_CASE("RankTelemetry keeps detailed-only events out when telemetry is not detailed", "[telemetry]") {
    FixedClockSink sink;

    SECTION("without detail, emit() sends and emitIfDetailed() does not") {
        const RankTelemetry telemetry(&sink, 0, false);
        CHECK_FALSE(telemetry.detailed());
        telemetry.span(EventKind::Step).from(0).step(0).emit();
        telemetry.span(EventKind::Forward).from(0).step(0).emitIfDetailed();
        telemetry.counter(EventKind::MemLive).step(0).value(1).emitIfDetailed();
        REQUIRE(sink.events.size() == 1);
        CHECK(sink.events[0].kind == EventKind::Step);
    }

    SECTION("with detail, both send") {
        const RankTelemetry telemetry(&sink, 0, true);
        telemetry.span(EventKind::Step).from(0).step(0).emit();
        telemetry.span(EventKind::Forward).from(0).step(0).emitIfDetailed();
        CHECK(sink.events.size() == 2);
    }

    SECTION("without a sink nothing is sent, now() is 0 and nothing is detailed") {
        const RankTelemetry telemetry(nullptr, 0, true);
        CHECK(telemetry.now() == 0);
        CHECK_FALSE(telemetry.detailed());
        telemetry.span(EventKind::Wait).from(0).emit(); // must not crash
        telemetry.counter(EventKind::MemLive).value(1).emitIfDetailed();
        CHECK(sink.events.empty());
    }
}
