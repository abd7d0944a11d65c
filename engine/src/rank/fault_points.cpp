// fault_points.cpp: see fault_points.hpp.
#include "rank/fault_points.hpp"

#include <algorithm>
#include <chrono>

namespace dt {

FaultPoints::FaultPoints(const Scenario& scenario, int rank, int incarnation) {
    if (incarnation != 0)
        return;
    for (const FaultConfig& f : scenario.faults) {
        const bool signalled = f.action == FaultAction::Kill || f.action == FaultAction::Hang;
        const bool at_rank_moment = f.when == FaultWhen::Step || f.when == FaultWhen::AllReduce;
        if (f.rank == rank && signalled && at_rank_moment)
            m_pending.push_back({f.step, f.when});
    }
}

// The same rule as Session::Impl::maybeInjectFault: "step" = any event of
// step S or later, "allreduce" = an all-reduce of step S starting.
bool FaultPoints::reached(const Event& e) {
    const auto it = std::find_if(m_pending.begin(), m_pending.end(), [&](const Point& p) {
        return p.when == FaultWhen::Step
                   ? e.step >= p.step
                   : e.kind == EventKind::AllReduce && e.phase == EventPhase::WorkStarted && e.step == p.step;
    });
    if (it == m_pending.end())
        return false;
    m_pending.erase(it);
    return true;
}

bool FaultPoints::waitForRelease() {
    std::unique_lock<std::mutex> lock(m_mutex);
    const bool released =
        m_released_cv.wait_for(lock, std::chrono::nanoseconds(kMaxWaitNs), [this] { return m_releases > 0; });
    if (released)
        m_releases -= 1;
    return released;
}

void FaultPoints::release() {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_releases += 1;
    }
    m_released_cv.notify_all();
}

} // namespace dt
