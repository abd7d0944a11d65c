// replica_agreement.hpp: do the ranks that must end with equal parameters end
// with them? Part of a run's verdict: a run whose replicas differ is not ok,
// whatever else went right (a replica taken over by an impostor, a lost
// update, a heal that copied the wrong state).
//
// Which ranks must agree (their ParamsChecksum, the FNV-1a hash of every
// parameter's bytes, of their last report):
//   whole-model strategies (ddp, zero1, zero2, fsdp, hsdp, diloco,
//   tensor_parallel: each rank's fullParameters is the whole model)
//                          all ranks, one group
//   pipeline               the ranks of one stage (rank % stages) in every
//                          data-parallel pipeline
//   collectives            nothing is trained: no group
// Compared: each rank's last checksum, among the ranks whose last checksum is
// of the latest step any rank reported (a fault-tolerant replica that died
// and stayed dead reported an older step: it is left out, not a mismatch).
#pragma once

#include "dtlab/events.hpp"
#include "dtlab/scenario.hpp"

#include <string>
#include <vector>

namespace dt {

// "" when every group agrees (or nothing can be compared); otherwise the
// reason, e.g. "ranks end with different parameters at step 19: rank 0, 2
// hold 00ab..., rank 1 holds 91ce... (they must be equal under ddp)".
[[nodiscard]] std::string replicaDisagreement(const Scenario& scenario, const std::vector<Event>& events,
                                              int world);

} // namespace dt
