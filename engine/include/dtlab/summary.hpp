// summary.hpp: the JSON summary of a run (dtrun --summary FILE) and the
// Chrome trace export (dtrun --trace FILE), both computed from a RunRecord.
#pragma once

#include "dtlab/run_record.hpp"

#include <ostream>
#include <string>

namespace dt {

// Summary JSON, schema documented in docs/summary.md. Fields (at least):
//   schema_version, scenario, ok, failure_reason, ranks, steps (completed by all
//   ranks), strategy, initial_loss, final_loss (mean over ranks at first/last
//   completed step), step_ms_median[rank], bytes_sent[rank], bytes_received[rank],
//   peak_memory[rank]{parameters, gradients, optimizer_state, activations,
//   comm_buffers, live_peak}, params_checksum[rank] (16 hex digits),
//   dropped_events[rank], exit[rank]{code, signal, error}.
[[nodiscard]] std::string summaryJson(const RunRecord& record);

// Chrome trace JSON (Perfetto, chrome://tracing): one process per rank with
// named tracks (compute, communication), spans as X events, counters as C
// events, instants as i events, and flow arrows (s/f) linking the parts of one
// collective across ranks (matched by kind and seq).
void writeChromeTrace(const RunRecord& record, std::ostream& out);

} // namespace dt
