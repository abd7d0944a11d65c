// stage_checkpoint.hpp: durable checkpoints of one pipeline under
// [fault_tolerance] (a replica group of `stages` ranks, pipeline_data_parallel
// = "ddp"): each stage's parameters and AdamW state, one file per stage.
// After a commit every pipeline's stage i holds the same bits, so the
// quorum's lowest pipeline writes; when every pipeline was down at once, the
// restarted ones each load it, stage i its own file.
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
// Saving (every stage of the pipeline, a collective on its group): each
// stage writes its file into DIR/step-<S>.partial, an all-reduce of one int
// says whether all did, stage 0 writes checkpoint.json and renames the
// directory; a failure anywhere is thrown by every stage after the last
// barrier, and no directory with a stage missing is renamed. An existing
// step-<S> is never overwritten.
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

// Returns the bytes this stage wrote. `pipeline`: the pipeline's own group (rank = stage).
int64_t saveStageCheckpoint(const std::string& step_dir, int last_step, const Scenario& scenario,
                            const std::vector<at::Tensor>& stage_params, torch::optim::AdamW& optimizer,
                            Communicator& pipeline);

// Stage `stage` reads its file into its parameters and AdamW. Returns the
// last step the checkpoint holds. Throws UsageError naming the file.
int loadStageCheckpoint(const std::string& step_dir, const std::vector<at::Tensor>& stage_params,
                        torch::optim::AdamW& optimizer, int stage, int64_t& bytes_read);

// checkpoint.json of this format, as many stages as [topology] stages, every
// stage's file present with a good checksum and the size checkpoint.json
// says, steps left to train. Throws UsageError naming the file.
void verifyStageCheckpoint(const std::string& step_dir, const Scenario& scenario);

} // namespace dt
