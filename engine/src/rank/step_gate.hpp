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
//
// A group that must start each attempt together (a replica group of G
// ranks: a rank let through while a peer waits would block in a collective
// the peer never joins) looks at its gates and agrees (GateLook, waitFor):
// the Session numbers its gate orders, so a rank whose order is older than
// a peer's waits for the newer one instead of starting alone.
#pragma once

#include <algorithm>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

namespace dt {

// What a rank sees at its gate for one attempt: open or not, under which order.
struct GateLook {
    bool open = true;
    uint32_t version = 0; // the number of the Session's order the gate is at (0: none numbered)
};
// A group's looks, agreed: every rank's gate open, and the newest order any rank is at.
struct GroupGateLook {
    bool all_open = true;
    uint32_t newest_order = 0;
};

class StepGate {
  public:
    // `order`: the Session's number for this gate (0: unnumbered); an order
    // older than one already applied is stale and ignored.
    void setAllowedStep(int64_t step, bool hold_retries = false, uint32_t order = 0) {
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            if (order != 0 && order < m_version)
                return;
            m_allowed = step;
            m_hold_retries = hold_retries;
            m_version = std::max(m_version, order);
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
        const bool retry = beginAttempt(step);
        return waitFor(step, retry, 0, on_wait);
    }
    // An attempt at `step` begins: true when it is a retry (the step this rank last began).
    bool beginAttempt(int64_t step) {
        std::lock_guard<std::mutex> lock(m_mutex);
        const bool retry = step == m_last_started;
        m_last_started = step;
        return retry;
    }
    [[nodiscard]] GateLook look(int64_t step, bool retry) const {
        std::lock_guard<std::mutex> lock(m_mutex);
        return {mayStart(step, retry), m_version};
    }
    // Blocks until the gate is at order `version` or later and the
    // attempt may start (on_wait as above). Returns true if it had to wait.
    bool waitFor(int64_t step, bool retry, uint32_t version, const std::function<void(bool retry)>& on_wait) {
        std::unique_lock<std::mutex> lock(m_mutex);
        const auto ready = [&] { return m_version >= version && mayStart(step, retry); };
        if (ready())
            return false;
        if (on_wait) {
            lock.unlock();
            on_wait(retry);
            lock.lock();
        }
        m_open.wait(lock, ready);
        return true;
    }

  private:
    bool mayStart(int64_t step, bool retry) const { // m_mutex held
        return step < m_allowed || (step == m_allowed && !(retry && m_hold_retries));
    }

    mutable std::mutex m_mutex;
    std::condition_variable m_open;
    int64_t m_allowed = INT64_MAX;
    bool m_hold_retries = false;
    int64_t m_last_started = INT64_MIN;
    uint32_t m_version = 0;
    double m_delay_ms = 0.0;
};

// A group's ranks pass their gates together. Each looks at its gate without
// waiting and `agree` (a collective over the group: every rank is at this
// step boundary, so nobody waits in it for long) says whether every gate is
// open and the newest order any rank is at; if not, each waits at its own
// gate (no collective) for that order and for its gate to open, and they
// agree again. A rank whose gate opened before a peer's order reached it
// waits for that order instead of starting alone. `on_wait` as in
// waitToStart, at each wait. Returns true if this rank had to wait.
inline bool passGateTogether(StepGate& gate, int64_t step,
                             const std::function<GroupGateLook(const GateLook&)>& agree,
                             const std::function<void(bool retry)>& on_wait = {}) {
    const bool retry = gate.beginAttempt(step);
    bool waited = false;
    for (;;) {
        const GroupGateLook group = agree(gate.look(step, retry));
        if (group.all_open)
            return waited;
        waited = gate.waitFor(step, retry, group.newest_order, on_wait) || waited;
    }
}

} // namespace dt
