// link_shaper.hpp: a modelled network link for one rank's communicator (the
// scenario's [network] table; changeable live from the Session).
//
// Loopback moves gigabytes per second, so a slow link is emulated: a
// collective that took `elapsed` on loopback is held until
//     latency + max(bytes sent, bytes received) / bandwidth
// has passed (the cost-model bytes of the algorithm, communicator.cpp). The
// transfer itself is real; only its completion is delayed, so the timeline
// shows the collective as long as it would be on that link.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace dt {

class LinkShaper {
  public:
    // bandwidth_mbit_s <= 0: no cap; latency_ms <= 0: none.
    void set(double bandwidth_mbit_s, double latency_ms) {
        m_bandwidth_mbit_s.store(std::max(0.0, bandwidth_mbit_s));
        m_latency_ms.store(std::max(0.0, latency_ms));
    }
    [[nodiscard]] double bandwidthMbitPerS() const { return m_bandwidth_mbit_s.load(); }
    [[nodiscard]] double latencyMs() const { return m_latency_ms.load(); }
    [[nodiscard]] bool active() const { return bandwidthMbitPerS() > 0 || latencyMs() > 0; }

    // How long a transfer of `bytes` takes on this link.
    [[nodiscard]] std::chrono::nanoseconds linkTime(int64_t bytes) const {
        double seconds = latencyMs() / 1e3;
        const double mbit = bandwidthMbitPerS();
        if (mbit > 0)
            seconds += double(bytes) * 8.0 / (mbit * 1e6);
        return std::chrono::nanoseconds(int64_t(seconds * 1e9));
    }

  private:
    std::atomic<double> m_bandwidth_mbit_s{0.0};
    std::atomic<double> m_latency_ms{0.0};
};

} // namespace dt
