// rank_telemetry.hpp: the one way a rank's training code builds its events
// (the worker's loop, the fault-tolerant loops and their Manager, the
// sharded, pipeline and DiLoCo strategies). Every field is named where the
// event is made:
//
//   telemetry.span(EventKind::Forward).from(t).step(step).unit(-2).emit();
//   telemetry.instant(EventKind::Commit).step(step).groupSize(n).emit();
//   telemetry.counter(EventKind::MemLive).step(step).value(bytes).emitIfDetailed();
//
// Steps:
//  1. span / instant / counter start an Event with its kind, phase and rank;
//     every other field keeps Event's default (step -1, unit -1, peer -1,
//     microbatch -1, group_size 0, value 0, bytes 0, seq 0) unless named.
//  2. emit() stamps the time on the Session clock and hands the 64-byte
//     record to the sink: a span runs from from() to to(), or to now when
//     to() is not given; an instant or a counter is at now.
//  3. Which events are kept when [telemetry] enabled = false: emit() always
//     sends; emitIfDetailed() sends only when the telemetry is detailed. The
//     call site chooses, so each loop's rule is written where its events are:
//     the worker keeps its Step span, instants, the loss and the last
//     DroppedEvents counter; the fault-tolerant loops keep everything but
//     heartbeats and memory counters; the strategies get no sink at all.
//  4. Without a sink (a strategy with telemetry off) nothing is emitted and
//     now() is 0.
// Bytes: one Event (64 bytes, events.hpp) per emit, queued by the rank's
// TelemetrySender; nothing here blocks.
#pragma once

#include "dtlab/events.hpp"
#include "telemetry/event_sink.hpp"

#include <cstdint>

namespace dt {

class RankTelemetry;

// One event being built; emit() or emitIfDetailed() sends it.
class [[nodiscard]] EventBuilder {
  public:
    EventBuilder(const RankTelemetry& telemetry, EventKind kind, EventPhase phase);

    EventBuilder& step(int64_t step) {
        m_event.step = int32_t(step);
        return *this;
    }
    EventBuilder& from(int64_t begin_ns) { // a span's begin
        m_event.t_ns = begin_ns;
        return *this;
    }
    EventBuilder& to(int64_t end_ns) { // a span's end (default: now, at emit)
        m_end_ns = end_ns;
        m_has_end = true;
        return *this;
    }
    EventBuilder& value(double value) {
        m_event.value = value;
        return *this;
    }
    EventBuilder& bytes(int64_t bytes) {
        m_event.bytes = bytes;
        return *this;
    }
    EventBuilder& seq(uint64_t seq) {
        m_event.seq = seq;
        return *this;
    }
    EventBuilder& unit(int unit) {
        m_event.unit = int16_t(unit);
        return *this;
    }
    EventBuilder& microbatch(int microbatch) {
        m_event.microbatch = int16_t(microbatch);
        return *this;
    }
    EventBuilder& peer(int rank) {
        m_event.peer = int16_t(rank);
        return *this;
    }
    EventBuilder& groupSize(int ranks) {
        m_event.group_size = uint16_t(ranks);
        return *this;
    }

    void emit();           // always (when there is a sink)
    void emitIfDetailed(); // only with detailed telemetry ([telemetry] enabled = true)

  private:
    const RankTelemetry& m_telemetry;
    Event m_event;
    int64_t m_end_ns = 0;
    bool m_has_end = false;
};

// The events of one rank. Cheap to copy: a sink pointer, the rank, a flag.
class RankTelemetry {
  public:
    // `sink` may be null (nothing is emitted); `detailed` = [telemetry] enabled.
    RankTelemetry(EventSink* sink, int rank, bool detailed)
        : m_sink(sink), m_rank(rank), m_detailed(detailed) {}

    [[nodiscard]] bool detailed() const { return m_detailed && m_sink; }
    [[nodiscard]] int64_t now() const { return m_sink ? m_sink->now() : 0; }
    [[nodiscard]] int rank() const { return m_rank; }
    [[nodiscard]] EventSink* sink() const { return m_sink; }

    EventBuilder span(EventKind kind) const { return EventBuilder(*this, kind, EventPhase::Span); }
    EventBuilder instant(EventKind kind) const { return EventBuilder(*this, kind, EventPhase::Instant); }
    EventBuilder counter(EventKind kind) const { return EventBuilder(*this, kind, EventPhase::Counter); }

  private:
    friend class EventBuilder;
    EventSink* m_sink;
    int m_rank;
    bool m_detailed;
};

inline EventBuilder::EventBuilder(const RankTelemetry& telemetry, EventKind kind, EventPhase phase)
    : m_telemetry(telemetry) {
    m_event.kind = kind;
    m_event.phase = phase;
    m_event.rank = telemetry.m_rank;
}

inline void EventBuilder::emit() {
    EventSink* sink = m_telemetry.m_sink;
    if (!sink)
        return;
    if (m_event.phase == EventPhase::Span) {
        m_event.dur_ns = (m_has_end ? m_end_ns : sink->now()) - m_event.t_ns;
    } else {
        m_event.t_ns = sink->now();
    }
    sink->emit(m_event);
}

inline void EventBuilder::emitIfDetailed() {
    if (m_telemetry.detailed())
        emit();
}

} // namespace dt
