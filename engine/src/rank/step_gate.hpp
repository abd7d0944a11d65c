// step_gate.hpp: where a rank waits when the Session pauses, steps or paces
// the run, and how much "slow rank" delay it adds to each step.
//
// The Session sends SetAllowedStep / SetDelayMs over the telemetry socket; the
// control reader thread calls the setters; the training thread calls
// waitToStart(step) before each step.
#pragma once

#include <climits>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace dt {

class StepGate {
  public:
    void setAllowedStep(int64_t step) {
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_allowed = step;
        }
        m_open.notify_all();
    }
    void setDelayMs(double ms) {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_delay_ms = ms;
    }
    [[nodiscard]] double delayMs() const {
        std::lock_guard<std::mutex> lock(m_mutex);
        return m_delay_ms;
    }
    // Blocks until `step` may start. Returns true if it had to wait.
    bool waitToStart(int64_t step) {
        std::unique_lock<std::mutex> lock(m_mutex);
        if (step <= m_allowed)
            return false;
        m_open.wait(lock, [&] { return step <= m_allowed; });
        return true;
    }

  private:
    mutable std::mutex m_mutex;
    std::condition_variable m_open;
    int64_t m_allowed = INT64_MAX;
    double m_delay_ms = 0.0;
};

} // namespace dt
