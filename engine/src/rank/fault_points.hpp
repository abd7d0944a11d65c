// fault_points.hpp: a scheduled kill or hang lands at the rank's own moment.
//
// A [[faults]] kill or hang with when = "step" or "allreduce" names a moment
// of one rank: its first event of step S, or its all-reduce of step S
// starting. The Session fires the fault when that event reaches it
// (fault_injector.cpp), but a telemetry batch (up to 20 ms) passes first,
// and a fast rank is a step further by then. So the rank stops there itself:
//   1. TelemetrySender::emit queues the event, sees that it is the moment
//      of a pending point (reached), ships it at once, and
//   2. the emitting thread waits (waitForRelease) until the Session acts:
//      a kill ends the process there; a hang (SIGSTOP) is followed by
//      ReleaseFaultPoint, which the rank reads once SIGCONT comes.
// So "kill rank 1 at step 3" dies at step 3 on any machine, and its peers
// wait for it in that step's collective. A restarted incarnation has no
// points (the Session fires each fault once). If the Session never acts
// (it could not signal the rank), the wait gives up after kMaxWaitNs with a
// warning, and the rank goes on.
#pragma once

#include "dtlab/events.hpp"
#include "dtlab/scenario.hpp"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

namespace dt {

class FaultPoints {
  public:
    static constexpr int64_t kMaxWaitNs = 10'000'000'000;

    FaultPoints(const Scenario& scenario, int rank, int incarnation);
    [[nodiscard]] bool empty() const { return m_pending.empty(); }
    // Whether `e` (this rank's, just queued) is a pending point's moment; the
    // point is then used up. Called under the sender's queue lock, so the
    // first matching event in queue order is the one the Session fires on.
    [[nodiscard]] bool reached(const Event& e);
    // Blocks the calling thread until release() (or kMaxWaitNs); false on the timeout.
    bool waitForRelease();
    void release(); // the control thread: ReleaseFaultPoint

  private:
    struct Point {
        int step;
        FaultWhen when;
    };
    std::vector<Point> m_pending;
    std::mutex m_mutex;
    std::condition_variable m_released_cv;
    int m_releases = 0; // ReleaseFaultPoint messages not yet used by a wait
};

} // namespace dt
