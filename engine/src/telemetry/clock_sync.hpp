// clock_sync.hpp: a rank's estimate of the Session's clock, and how wrong it
// may be.
//
// Every timestamp a rank sends is on the Session's clock (CLOCK_MONOTONIC of
// the Session's host). How a rank gets there:
//   1. Same host (its boot id equals the Session's, so CLOCK_MONOTONIC is one
//      and the same clock): offset 0, error 0; nothing is measured or applied.
//   2. Another host: a ping-pong gives a sample on both clocks,
//          t_send (rank)  ->  t_session (Session)  ->  t_recv (rank)
//      The Session read its clock somewhere between t_send and t_recv, so
//          offset = t_session - (t_send + t_recv) / 2,   |error| <= (t_recv - t_send) / 2
//      (Cristian's algorithm; a larger round trip only widens the bound).
//   3. The rank re-syncs every kResyncNs. Of the samples of the last
//      kWindowNs it uses the one with the smallest bound now (NTP's clock
//      filter: a sample delayed in a queue has a long round trip and loses).
//   4. Drift: two quartz clocks run at slightly different rates (parts per
//      million). The slope of a least-squares line through the window's
//      samples, once they span kMinDriftSpanNs, each weighted by
//      1 / (round trip / 2)^2, is the drift; the offset in use is carried
//      forward by it, and the bound grows with the sample's age at a rate r:
//          offset(t) = offset_s + drift x (t - t_s),  bound(t) = rtt_s / 2 + r x (t - t_s)
//      r = kUnmeasuredDriftPpm before the drift is measured (a quartz
//      clock's worst case), then 3 standard errors of the fitted slope
//      (at least 0.1 ppm).
// Plain arithmetic, no sockets: the sender feeds it, tests feed it made-up
// clocks with known offset and drift.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>

namespace dt {

struct ClockSample {
    int64_t t_send_ns = 0;    // rank clock, ping sent
    int64_t t_session_ns = 0; // Session clock, ping answered
    int64_t t_recv_ns = 0;    // rank clock, pong received
    [[nodiscard]] int64_t roundTripNs() const { return t_recv_ns - t_send_ns; }
    [[nodiscard]] int64_t offsetNs() const { return t_session_ns - (t_send_ns + t_recv_ns) / 2; }
};

// What a rank applies at one moment: session_time = local_time + offset_ns.
struct ClockEstimate {
    bool same_host = false;
    int64_t offset_ns = 0;
    int64_t error_bound_ns = 0;      // |true offset - offset_ns| <= this
    std::optional<double> drift_ppm; // how fast the rank's clock runs against the Session's
                                     // (+40: 40 us a second fast); empty until kMinDriftSpanNs
    double bound_growth_ppm = 0.0;   // r above: how fast the bound widens with the sample's age
    int64_t round_trip_ns = 0;       // of the sample in use
    int samples = 0;                 // in the window
};

// What a sender applies between syncs, cheap enough for every timestamp:
// session_time(local) = local + offset_ns + offset_slope x (local - at_local_ns).
struct ClockCorrection {
    int64_t offset_ns = 0;   // the estimate's offset at at_local_ns
    int64_t at_local_ns = 0; // the local time it was estimated for
    double offset_slope = 0; // the offset's change per ns of local time (-drift: a fast clock's offset falls)
    [[nodiscard]] int64_t sessionTime(int64_t local_ns) const;
};

class ClockSync {
  public:
    static constexpr int64_t kResyncNs = 1'250'000'000;        // one ping every 1.25 s
    static constexpr int64_t kWindowNs = 60'000'000'000;       // samples kept for a minute
    static constexpr int64_t kMinDriftSpanNs = 10'000'000'000; // drift once samples span 10 s
    static constexpr double kUnmeasuredDriftPpm = 100.0;

    // Same host: offset 0 for good, samples are ignored.
    void setSameHost() { m_same_host = true; }
    [[nodiscard]] bool sameHost() const { return m_same_host; }

    void addSample(const ClockSample& sample);

    // The estimate at local time `local_now_ns`.
    [[nodiscard]] ClockEstimate estimateAt(int64_t local_now_ns) const;
    // The estimate at `local_now_ns` as a correction to carry forward until the next sync.
    [[nodiscard]] ClockCorrection correctionAt(int64_t local_now_ns) const;

  private:
    struct Drift {
        double offset_slope = 0.0;   // d(offset) / d(local time), ns per ns
        double standard_error = 0.0; // of that slope
    };
    [[nodiscard]] std::optional<Drift> fitDrift() const;
    bool m_same_host = false;
    std::deque<ClockSample> m_samples; // oldest first
};

// This boot's id (/proc/sys/kernel/random/boot_id) as 16 bytes, all zero if it
// cannot be read. Two processes with the same non-zero id share CLOCK_MONOTONIC.
struct BootId {
    uint8_t bytes[16] = {};
    [[nodiscard]] bool known() const;
    [[nodiscard]] bool operator==(const BootId& other) const;
};
[[nodiscard]] BootId thisBootId();

// DTLAB_CLOCK_SKEW="OFFSET_MS[,DRIFT_PPM]": a rank that pretends to be on
// another host whose clock is OFFSET_MS ahead and runs DRIFT_PPM fast
// (|offset| <= 1e6 ms, |drift| <= 100 ppm, the bound's worst case before the
// drift is measured). Throws UsageError naming the
// variable on anything else.
struct ClockSkew {
    int64_t offset_ns = 0;
    double drift_ppm = 0.0;
};
[[nodiscard]] ClockSkew parseClockSkew(const std::string& text);

} // namespace dt
