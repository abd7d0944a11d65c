// rank_clock.cpp: the clock line of a rank (see rank_clock.hpp).
#include "model/rank_clock.hpp"

#include <cmath>
#include <cstdio>

namespace dt::app {

std::string clockDuration(double ns) {
    const double a = std::fabs(ns);
    char buf[32];
    if (a < 1e3)
        std::snprintf(buf, sizeof(buf), "%.0f ns", ns);
    else if (a < 1e6)
        std::snprintf(buf, sizeof(buf), "%.*f \xC2\xB5s", a < 1e4 ? 1 : 0, ns / 1e3);
    else if (a < 1e9)
        std::snprintf(buf, sizeof(buf), "%.*f ms", a < 1e7 ? 2 : 1, ns / 1e6);
    else
        std::snprintf(buf, sizeof(buf), "%.3f s", ns / 1e9);
    return buf;
}

RankClockText rankClockText(const RankLane& lane) {
    RankClockText text;
    if (!lane.hasClock()) {
        text.detail = "-";
        return text;
    }
    const Event& sync = lane.clock_sync;
    if (sync.unit == 0) {
        text.detail = "same host as the Session: one clock, offset 0 (exact)";
        return text;
    }
    const std::string bound = "\xC2\xB1" + clockDuration(sync.value); // ±
    text.tile = "clock " + bound;
    text.detail = "offset " + std::string(sync.bytes >= 0 ? "+" : "-") +
                  clockDuration(std::fabs(double(sync.bytes))) + " " + bound + " (measured, round trip " +
                  clockDuration(double(sync.dur_ns)) + ")";
    const auto& drift = lane.counters[size_t(EventKind::ClockDriftPpm)];
    if (!drift.empty()) {
        char buf[48];
        std::snprintf(buf, sizeof(buf), ", drift %+.1f ppm", drift.back().value);
        text.detail += buf;
    }
    text.detail += ", " + std::to_string(lane.clock_syncs) + (lane.clock_syncs == 1 ? " sync" : " syncs");
    return text;
}

} // namespace dt::app
