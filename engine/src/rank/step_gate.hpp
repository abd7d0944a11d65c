// step_gate.hpp: where a rank waits when the Session pauses, steps or paces
// the run, and how much "slow rank" delay it adds to each step.
//
// The Session sends SetAllowedStep / SetDelayMs over the telemetry socket; the
// control reader thread calls the setters; the training thread calls
// waitToStart(step) before each step (a fault-tolerant replica before each
// attempt: an aborted step is tried again under the same number).
//
// The rule: step s may start while s <= allowed. When the Session holds
// retries (a paused run, RunControl::holdsRetries), a second attempt at the
// step this rank last started needs s < allowed: the attempt that aborted
// was the allowed one, and trying again (a new quorum) is the next.
#pragma once

#include <climits>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

namespace dt {

class StepGate {
  public:
    void setAllowedStep(int64_t step, bool hold_retries = false) {
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_allowed = step;
            m_hold_retries = hold_retries;
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
    // Blocks until `step` may start; `on_wait(retry)` (if any) is called
    // once, without the gate's lock, just before it blocks (the rank says it
    // is held: a GateWait event, value 1 for a retried step). Returns true if it had to wait.
    bool waitToStart(int64_t step, const std::function<void(bool retry)>& on_wait = {}) {
        std::unique_lock<std::mutex> lock(m_mutex);
        const bool retry = step == m_last_started;
        m_last_started = step;
        const auto may_start = [&] {
            return step < m_allowed || (step == m_allowed && !(retry && m_hold_retries));
        };
        if (may_start())
            return false;
        if (on_wait) {
            lock.unlock();
            on_wait(retry);
            lock.lock();
        }
        m_open.wait(lock, may_start);
        return true;
    }

  private:
    mutable std::mutex m_mutex;
    std::condition_variable m_open;
    int64_t m_allowed = INT64_MAX;
    bool m_hold_retries = false;
    int64_t m_last_started = INT64_MIN;
    double m_delay_ms = 0.0;
};

} // namespace dt
