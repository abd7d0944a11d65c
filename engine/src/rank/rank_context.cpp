// rank_context.cpp: the fault switches' two methods with a body (rank_context.hpp).
#include "rank/rank_context.hpp"

#include <chrono>
#include <thread>
#include <utility>

namespace dt {

void RankFaultSwitches::setPartitioned(bool partitioned) {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_partitioned = partitioned;
    if (m_sink)
        m_sink(partitioned);
}

bool RankFaultSwitches::waitForGreeting(int64_t timeout_ms) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!greeted.load()) {
        if (std::chrono::steady_clock::now() > deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
}

void RankFaultSwitches::attachPartitionSink(PartitionSink sink) {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_sink = std::move(sink);
    if (m_sink && m_partitioned)
        m_sink(true);
}

} // namespace dt
