// event_sink.hpp: what engine code emits events into. The rank's
// TelemetrySender implements it; tests use RecordingEventSink. Events are
// built with RankTelemetry (rank/rank_telemetry.hpp).
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
