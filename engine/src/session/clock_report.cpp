// clock_report.cpp: per rank, how its timestamps reached the Session's clock
// (the summary's and the trace metadata's "clock"; see clock_report.hpp).
#include "session/clock_report.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dt {

using Json = nlohmann::ordered_json;

// Per rank: how its timestamps were put on the Session's clock (ClockSync
// instants, ClockDriftPpm counters; telemetry/clock_sync.hpp). null for a rank
// that never reported one.
nlohmann::ordered_json clockReportJson(const RunRecord& record) {
    struct Clock {
        bool seen = false, same_host = false;
        int64_t offset_ns = 0, error_bound_ns = 0, max_error_bound_ns = 0, syncs = 0;
        Json drift_ppm = nullptr;
    };
    std::vector<Clock> clocks(record.ranks.size());
    for (const Event& e : record.events) {
        if (e.rank < 0 || size_t(e.rank) >= clocks.size())
            continue;
        Clock& c = clocks[size_t(e.rank)];
        if (e.kind == EventKind::ClockSync) {
            c.seen = true;
            c.same_host = e.unit == 0;
            c.offset_ns = e.bytes;
            c.error_bound_ns = int64_t(std::llround(std::isfinite(e.value) ? e.value : 0.0));
            c.max_error_bound_ns = std::max(c.max_error_bound_ns, c.error_bound_ns);
            ++c.syncs;
        } else if (e.kind == EventKind::ClockDriftPpm && std::isfinite(e.value)) {
            c.drift_ppm = e.value;
        }
    }
    Json out = Json::array();
    for (const Clock& c : clocks) {
        if (!c.seen) {
            out.push_back(nullptr);
            continue;
        }
        out.push_back(Json{{"source", c.same_host ? "same host" : "measured"},
                           {"offset_ns", c.offset_ns},
                           {"error_bound_ns", c.error_bound_ns},
                           {"max_error_bound_ns", c.max_error_bound_ns},
                           {"syncs", c.syncs},
                           {"drift_ppm", c.drift_ppm}});
    }
    return out;
}

} // namespace dt
