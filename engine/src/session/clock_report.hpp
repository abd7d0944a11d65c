// clock_report.hpp: per rank, how its timestamps were put on the Session's
// clock, from its ClockSync instants and ClockDriftPpm counters
// (telemetry/clock_sync.hpp): {source "same host" | "measured", offset_ns,
// error_bound_ns (the last sync's), max_error_bound_ns, syncs, drift_ppm}
// or null for a rank that never reported one. docs/summary.md, "clock".
#pragma once

#include "dtlab/run_record.hpp"

#include <nlohmann/json.hpp>

namespace dt {
[[nodiscard]] nlohmann::ordered_json clockReportJson(const RunRecord& record);
} // namespace dt
