// replica_checkpoint.hpp: durable checkpoints of a fault-tolerant run.
//
// Healing copies state from a live peer; a durable checkpoint is what is left
// when every replica is gone at once. After a commit every replica holds the
// same bits, so one replica writes the job's checkpoint: the member with the
// lowest replica id in the quorum that committed the step.
//
// Layout, DIR/step-<S> (S = the last step it contains):
//   checkpoint.json    format "dtlab replica checkpoint", version 1, step S,
//                      committed_steps (S + 1), state_numel (3P + 2), model
//   replica.dtparams   one tensor "replica_state" in replica_state.hpp's layout
//                      (committed steps, AdamW step, params, exp_avg,
//                      exp_avg_sq: 4 (3P + 2) bytes), and for DiLoCo a
//                      second, "outer_state": the global model and the
//                      outer momentum (8P bytes; checkpoint.json's
//                      outer_numel = 2P, 0 without), in params_io's file
//                      format, whose FNV-1a checksum covers every byte.
//                      (DiLoCo under the quorum: saved after a committed
//                      outer step, when every replica's local model equals
//                      the global one, so one replica's file serves all.
//                      Streaming DiLoCo: saved at the end of a committed
//                      fragment's round; the global model and momentum are
//                      laid out in model order as for one fragment, and
//                      checkpoint.json's outer_rounds says how many rounds
//                      were committed, so the next fragment is known. Its
//                      local model is the writer's, as after a heal.)
// Saving: both files go into DIR/step-<S>.partial-<replica>-<incarnation>/,
// which is then renamed to DIR/step-<S>. A writer killed half-way leaves a
// .partial directory, never a torn step-<S>; an existing step-<S> is never
// overwritten. Loading: every replica of a new job reads the same file.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace torch::optim {
class AdamW;
}

namespace dt {

struct Scenario;

// Returns the bytes written. outer: DiLoCo's global model and momentum laid
// end to end (2P fp32), undefined for ddp; outer_rounds: the outer rounds
// committed (Streaming DiLoCo's next fragment is outer_rounds % F).
int64_t saveReplicaCheckpoint(const std::string& step_dir, int last_step, const Scenario& scenario,
                              const std::vector<at::Tensor>& params, torch::optim::AdamW& optimizer,
                              int replica, int incarnation, const at::Tensor& outer = at::Tensor(),
                              int64_t outer_rounds = 0);

// Overwrites the parameters and the AdamW state (and, given `outer`, copies
// the checkpoint's outer state into it; a checkpoint without one, or with
// one when `outer` is null, is refused); returns the committed steps it
// holds (the next step to train). Throws UsageError naming the file.
int64_t loadReplicaCheckpoint(const std::string& step_dir, const std::vector<at::Tensor>& params,
                              torch::optim::AdamW& optimizer, int64_t& bytes_read,
                              at::Tensor* outer = nullptr, int64_t* outer_rounds = nullptr);

// checkpoint.json readable and of this format, the state the size of the
// scenario's model, the checksum good, and steps left to train after it.
void verifyReplicaCheckpoint(const std::string& step_dir, const Scenario& scenario);

// True when STEP_DIR holds a replica checkpoint of `last_step` written by the
// run `run_id` already (a job that went back after every replica was down
// commits that step again, with the same bits: nothing to save).
[[nodiscard]] bool replicaCheckpointSavedByRun(const std::string& step_dir, int last_step,
                                               const std::string& run_id);

} // namespace dt
