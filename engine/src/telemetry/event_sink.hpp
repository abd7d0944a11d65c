// event_sink.hpp: what engine code emits events into. The rank's
// TelemetrySender implements it; tests use RecordingEventSink.
#pragma once

#include "dtlab/clock.hpp"
#include "dtlab/events.hpp"

#include <mutex>
#include <vector>

namespace dt {

class EventSink {
public:
    virtual ~EventSink() = default;
    [[nodiscard]] virtual int64_t now() const = 0; // Session clock, ns
    virtual void emit(const Event& event) = 0;     // thread-safe, never blocks on I/O
};

// A compute span from `begin` to now (strategies' Wait, Forward, ... spans),
// with the bytes it moved and a value where the kind has them.
// No-op without a sink (telemetry off).
inline void emitSpanUntilNow(EventSink* sink, EventKind kind, int64_t begin, int rank, int step, int unit,
                             int microbatch, int64_t bytes = 0, double value = 0.0) {
    if (!sink) return;
    Event e;
    e.kind = kind;
    e.phase = EventPhase::Span;
    e.t_ns = begin;
    e.dur_ns = sink->now() - begin;
    e.rank = rank;
    e.step = step;
    e.unit = int16_t(unit);
    e.microbatch = int16_t(microbatch);
    e.bytes = bytes;
    e.value = value;
    sink->emit(e);
}

// A counter sample taken now (strategies' memory counters). No-op without a sink.
inline void emitCounterNow(EventSink* sink, EventKind kind, double value, int rank, int step, int microbatch = -1) {
    if (!sink) return;
    Event e;
    e.kind = kind;
    e.phase = EventPhase::Counter;
    e.t_ns = sink->now();
    e.rank = rank;
    e.step = step;
    e.microbatch = int16_t(microbatch);
    e.value = value;
    sink->emit(e);
}

// Keeps every event in memory (tests, in-process ranks).
class RecordingEventSink final : public EventSink {
public:
    int64_t now() const override { return monotonicNowNs(); }
    void emit(const Event& event) override {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_events.push_back(event);
    }
    std::vector<Event> events() const {
        std::lock_guard<std::mutex> lock(m_mutex);
        return m_events;
    }

private:
    mutable std::mutex m_mutex;
    std::vector<Event> m_events;
};

} // namespace dt
