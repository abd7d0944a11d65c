// stage_checkpoint.hpp: durable checkpoints of pipelines under
// [fault_tolerance]: a replica group of one pipeline (`stages` ranks), or of
// several pipelines side by side whose stage copies are kept equal by
// pipeline_data_parallel = "ddp". Each stage's parameters and AdamW state, one
// file per stage. After a commit every pipeline's stage i holds the same bits
// (in every group, and in every pipeline of a group), so the quorum's lowest
// group writes, and in it its first pipeline; when every group was down at
// once, the restarted ones each load it, stage i of every pipeline its file.
//
// Layout, DIR/step-<S>/ (S = the last step it holds):
//   checkpoint.json            format "dtlab stage checkpoint", version 1,
//                              step S, committed_steps S + 1, stages G,
//                              stage_numel [G] (3 P_i + 2 each), model, run_id
//   stage-<i>-of-<G>.dtparams  "replica_state": replica_state.hpp's layout
//                              over stage i's parameters (committed steps,
//                              AdamW step, P_i parameters, exp_avg,
//                              exp_avg_sq: 4 (3 P_i + 2) bytes), and the run's
//                              identity, in params_io's format (FNV-1a checksum)
// Saving (a collective on the group: rank r is stage r % G of pipeline r / G):
// the first pipeline's stages write their files into DIR/step-<S>.partial,
// an all-reduce over the group says whether all did, rank 0 (stage 0 of
// pipeline 0) writes checkpoint.json and renames the directory; a failure
// anywhere is thrown by every rank after the last barrier, and no directory
// with a stage missing is renamed. An existing step-<S> is never overwritten.
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

// Returns the bytes this rank wrote (0 outside the first pipeline). `group`:
// the replica group, whose rank r is stage r % stages of pipeline r / stages.
int64_t saveStageCheckpoint(const std::string& step_dir, int last_step, const Scenario& scenario,
                            const std::vector<at::Tensor>& stage_params, torch::optim::AdamW& optimizer,
                            Communicator& group, int stages);

// Stage `stage` reads its file into its parameters and AdamW. Returns the
// last step the checkpoint holds. Throws UsageError naming the file.
int loadStageCheckpoint(const std::string& step_dir, const std::vector<at::Tensor>& stage_params,
                        torch::optim::AdamW& optimizer, int stage, int64_t& bytes_read);

// checkpoint.json of this format, as many stages as [topology] stages, every
// stage's file present with a good checksum and the size checkpoint.json
// says, steps left to train. Throws UsageError naming the file.
void verifyStageCheckpoint(const std::string& step_dir, const Scenario& scenario);

} // namespace dt
