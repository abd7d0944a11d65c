// telemetry_sender.hpp: a rank's side of telemetry. Training threads call
// emit(); a sender thread ships batches to the Session. emit() never blocks
// on the network: the queue is bounded and a full queue drops the event and
// counts it (the count is itself sent, and shown by the Session).
#pragma once

#include "dtlab/events.hpp"
#include "telemetry/clock_sync.hpp"
#include "telemetry/event_sink.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <functional>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dt {

class TelemetrySender final : public EventSink {
  public:
    TelemetrySender(int rank, size_t queue_capacity);
    ~TelemetrySender();

    // Connects, says hello, measures the clock offset (least-RTT ping-pong).
    // Throws std::runtime_error if the Session cannot be reached in time.
    // Connects and authenticates both ways with `token` (telemetry_wire.hpp);
    // throws when the Session refuses us or cannot prove the token itself.
    // On the Session's host (same boot id) the offset is 0; elsewhere the
    // sender re-syncs every ClockSync::kResyncNs (clock_sync.hpp) and emits a
    // ClockSync event (offset, error bound) after each.
    void connect(const std::string& host, int port, int timeout_ms, const std::string& token = "");

    // Pretend to be on another host whose clock is `offset_ns` ahead of this
    // one and runs `drift_ppm` fast (DTLAB_CLOCK_SKEW; tests and teaching:
    // the ClockSync events then show the offset and drift being measured).
    // Call before connect().
    void simulateClockSkew(int64_t offset_ns, double drift_ppm);

    // Session-clock time now (local clock + the estimated offset); never goes
    // back when a re-sync moves the estimate.
    [[nodiscard]] int64_t now() const override;

    void emit(const Event& event) override; // thread-safe, never blocks on I/O
    void log(LogLevel level, const std::string& text);
    void close(); // flush what is queued, say Bye

    // Called on the control reader thread for every Session -> rank message.
    // Set before connect().
    void onControl(std::function<void(const wire::ControlMessage&)> handler) {
        m_on_control = std::move(handler);
    }

    // A moment at which the emitting thread stops (rank/fault_points.hpp):
    // `reached` is asked, under the queue lock, of each event queued; on true
    // the event is shipped at once and `wait` runs on the emitting thread
    // (never on the control reader, which must stay free to read the
    // release). Set before connect().
    void stopAt(std::function<bool(const Event&)> reached, std::function<void()> wait) {
        m_stop_reached = std::move(reached);
        m_stop_wait = std::move(wait);
    }

    [[nodiscard]] uint64_t dropped() const { return m_dropped.load(); }
    [[nodiscard]] uint64_t bytesWritten() const {
        return m_bytes_written.load();
    } // telemetry's own socket bytes
    [[nodiscard]] int64_t clockOffsetNs() const;
    [[nodiscard]] ClockEstimate clockEstimate() const;
    [[nodiscard]] int rank() const { return m_rank; }

  private:
    void senderLoop();
    void controlLoop();
    bool sendLog(LogLevel level, const std::string& text);
    [[nodiscard]] int64_t localNowNs() const; // this host's clock (or the simulated skewed one)
    void applyClockSample(const ClockSample& sample, bool emit_event); // re-estimate, publish, ClockSync
    void emitClockSync(const ClockEstimate& estimate);

    int m_rank;
    size_t m_capacity;
    int m_fd = -1;
    // The clock: m_clock holds the samples; now() applies the published
    // correction (ClockSync::correctionAt at the last sync).
    int64_t m_skew_offset_ns = 0; // simulateClockSkew
    double m_skew_drift = 0.0;
    mutable std::mutex m_clock_mutex;
    ClockSync m_clock;
    ClockCorrection m_correction;
    std::atomic<bool> m_same_host{false};
    mutable std::atomic<int64_t> m_last_now{INT64_MIN};
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::vector<Event> m_queue;
    std::vector<std::pair<LogLevel, std::string>> m_logs;
    bool m_closing = false;
    bool m_flush_now = false; // a stop point's event: ship it without waiting for the batch
    std::function<bool(const Event&)> m_stop_reached;
    std::function<void()> m_stop_wait;
    std::atomic<uint64_t> m_dropped{0};
    std::atomic<uint64_t> m_bytes_written{0};
    std::mutex m_send_mutex;
    std::thread m_thread;
    std::thread m_control_thread;
    std::function<void(const wire::ControlMessage&)> m_on_control;
};

} // namespace dt
