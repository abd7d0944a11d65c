// stage_checkpoint.hpp: durable checkpoints of pipelines under
// [fault_tolerance]: a replica group of one pipeline (`stages` ranks), or of
// K pipelines side by side (K = ranks / replicas / stages).
//  - whole stages (pipeline_data_parallel = "ddp", or K = 1): every
//    pipeline's stage i holds the same bits after a commit (in every group,
//    and in every pipeline of a group), so the quorum's lowest group writes,
//    and in it its first pipeline: one file per stage.
//  - sharded stages (pipeline_data_parallel = "zero1" or "fsdp", K >= 2):
//    stage i's flat parameters are split into K shards over the group's K
//    pipelines, pipeline k holding shard k and its AdamW state. Every rank of
//    the writing group writes its shard: one file per (stage, shard).
// When every group was down at once, the restarted ones each load it: stage
// i of pipeline k its stage's file, or shard k of it.
//
// Layout, DIR/step-<S>/ (S = the last step it holds):
//   checkpoint.json            format "dtlab stage checkpoint", version 1
//                              (whole stages) or 2 (sharded stages),
//                              step S, committed_steps S + 1, stages G,
//                              shards K (1 = whole stages; absent = 1),
//                              stage_numel [G K] (3 P_f + 2 for file f =
//                              i K + k), model, run_id
//   stage-<i>-of-<G>.dtparams  whole stages: "replica_state", replica_state.hpp's
//                              layout over stage i's parameters (committed
//                              steps, AdamW step, P_i parameters, exp_avg,
//                              exp_avg_sq: 4 (3 P_i + 2) bytes), and the run's
//                              identity, in params_io's format (FNV-1a checksum)
//   stage-<i>-of-<G>-shard-<k>-of-<K>.dtparams
//                              sharded stages: the same over shard k of stage
//                              i (S_i = padded P_i / K elements, the padding's
//                              zeros included: 4 (3 S_i + 2) bytes)
// Saving (a collective on the group: rank r is stage r % G of pipeline r / G):
// the writers put their files into DIR/step-<S>.partial, an all-reduce over
// the group says whether all did, rank 0 (stage 0 of pipeline 0) writes
// checkpoint.json and renames the directory; a failure anywhere is thrown by
// every rank after the last barrier, and no directory with a file missing is
// renamed. An existing step-<S> is never overwritten. A sharded checkpoint
// loads only with the same K (a shard's bounds depend on it).
#pragma once

#include "comm/communicator.hpp"

#include <ATen/Tensor.h>

#include <string>
#include <vector>

namespace torch::optim {
class AdamW;
}

namespace dt {

struct Scenario;

// How many shards each stage's file is split into for this scenario: K
// pipelines per group when pipeline_data_parallel shards the stages, else 1.
[[nodiscard]] int stageCheckpointShards(const Scenario& scenario);

// Returns the bytes this rank wrote (0 for a rank that writes nothing).
// `group`: the replica group, whose rank r is stage r % stages of pipeline
// r / stages. `shards` = stageCheckpointShards: 1, or the group's pipelines,
// and then `stage_params` is this rank's shard.
int64_t saveStageCheckpoint(const std::string& step_dir, int last_step, const Scenario& scenario,
                            const std::vector<at::Tensor>& stage_params, torch::optim::AdamW& optimizer,
                            Communicator& group, int stages, int shards);

// Stage `stage` (shard `shard` of `shards`) reads its file into its
// parameters and AdamW. Returns the last step the checkpoint holds. Throws
// UsageError naming the file.
int loadStageCheckpoint(const std::string& step_dir, const std::vector<at::Tensor>& stage_params,
                        torch::optim::AdamW& optimizer, int stage, int shard, int shards,
                        int64_t& bytes_read);

// checkpoint.json of this format, as many stages as [topology] stages and
// shards as stageCheckpointShards, every file present with a good checksum and the size checkpoint.json
// says, steps left to train. Throws UsageError naming the file.
void verifyStageCheckpoint(const std::string& step_dir, const Scenario& scenario);

} // namespace dt
