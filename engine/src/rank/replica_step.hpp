// replica_step.hpp: the begin and end of one training step of a rank that
// runs its own loop (the fault-tolerant loops in ft/, SWARM's trainers).
//
//  1. beginReplicaStep: the Session's step gate (a Paused span when it held
//     the rank, a GateWait instant for each wait); returns the step's begin
//     time. beginGroupReplicaStep: the same for a replica group of G ranks,
//     which pass their gates together (step_gate.hpp's passGateTogether).
//  2. endReplicaStep: the step's slow-down ([run] step_delay_ms plus the
//     Session's delay for this rank), the Step span, the step time and the
//     modelled bytes sent so far (counters StepTimeMs, BytesSent).
#pragma once

#include "rank/rank_context.hpp"
#include "rank/rank_telemetry.hpp"
#include "rank/step_gate.hpp"

#include <cstdint>
#include <functional>

namespace dt {

int64_t beginReplicaStep(const RankContext& context, const RankTelemetry& telemetry, int64_t step);
// A replica group's ranks pass the gate together (step_gate.hpp's
// passGateTogether; `agree` is a collective over the group): a rank let
// through alone would wait in a collective its held peer never joins, until
// it timed out.
int64_t beginGroupReplicaStep(const RankContext& context, const RankTelemetry& telemetry, int64_t step,
                              const std::function<GroupGateLook(const GateLook&)>& agree);
void endReplicaStep(const RankContext& context, const RankTelemetry& telemetry, int64_t step,
                    int64_t step_begin, int64_t bytes_sent);

} // namespace dt
