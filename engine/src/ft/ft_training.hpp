// ft_training.hpp: the fault-tolerant training loops, one rank each. The
// worker calls trainFaultTolerant (DDP, ft_training.cpp),
// trainFaultTolerantDiloco (ft_diloco.cpp) or trainFaultTolerantGroup
// (zero1/zero2/fsdp replica groups, ft_group_training.cpp) instead of its
// usual loop when the scenario has [fault_tolerance] enabled = true. Both are thin loops over
// ft::Manager (ft_manager.hpp: quorum, heal, all-reduce, vote), which also
// reads the fault switches and the context (rank/rank_context.hpp).
#pragma once

#include "rank/rank_context.hpp"

namespace dt {

// Trains until the replica has committed every step (or the Session says the
// job finished). Returns the exit code; throws CommError when no quorum comes
// within quorum_timeout_ms.
int trainFaultTolerant(const RankContext& context);
// The same for [strategy] kind = "diloco" (ft_diloco.cpp): a quorum per outer sync.
int trainFaultTolerantDiloco(const RankContext& context);
// Streaming DiLoCo ([diloco] fragments > 1, sync_delay, alpha or quantized;
// ft_streaming_diloco.cpp): a quorum per fragment's round, every H / F steps.
int trainFaultTolerantStreamingDiloco(const RankContext& context);
// zero1, zero2 and fsdp (ft_group_training.cpp): this rank's part of a replica
// group of ftGroupSize ranks that shards the model; the quorum across groups.
int trainFaultTolerantGroup(const RankContext& context);

} // namespace dt
