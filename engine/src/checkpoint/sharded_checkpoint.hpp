// sharded_checkpoint.hpp: save and load the sharded training state of
// zero1/zero2/fsdp/hsdp, and load it onto a different shard count.
//
// Layout of one checkpoint, DIR/step-<S>/ (S = the last step it contains):
//   checkpoint.json           format, version, strategy, shard count N, step,
//                             AdamW step count, per unit {id, numel, padded}
//   shard-<r>-of-<N>.dtparams rank r's slice of every unit: "unit<id>/param",
//                             "unit<id>/exp_avg", "unit<id>/exp_avg_sq", each
//                             (padded / N) fp32 (params_io.hpp format, FNV-1a checksum)
// Saving: every shard writes its file into DIR/step-<S>.partial (atomically,
// temp + rename), the ranks agree every file is written (an all-reduce of one
// int), then shard 0 writes checkpoint.json and renames the directory to
// DIR/step-<S>: a crash leaves only a .partial directory, never a torn
// step-<S>. An existing step-<S> is never overwritten. A failure on any rank
// is thrown by every rank after the last barrier (nobody is left waiting).
// Loading (resharding): each rank reads every old shard file, concatenates
// the slices of each unit into its old padded vector, cuts the padding, pads
// for the new shard count N' and takes its own new slice. A missing file, a
// checksum mismatch, a unit whose size differs from the scenario's model or an
// unreadable checkpoint.json is a UsageError naming the file and the problem.
#pragma once

#include "comm/communicator.hpp"
#include "dtlab/checkpoint.hpp"
#include "sharding/flat_unit.hpp"

#include <string>
#include <vector>

namespace torch::optim {
class AdamW;
}

namespace dt {

struct Scenario;

// Returns the bytes this rank wrote (0 when `writer` is false: an hsdp replica other than 0).
int64_t saveShardedCheckpoint(const std::string& step_dir, int last_step, const Scenario& scenario,
                              std::vector<FlatUnit>& units, torch::optim::AdamW& optimizer,
                              Communicator& comm, bool writer);

// Fills this rank's shards (and, when `whole_params`, each unit's full vector:
// zero1/zero2 keep the whole parameters) and the AdamW state. Returns the
// step the checkpoint ended at.
int loadShardedCheckpoint(const std::string& step_dir, std::vector<FlatUnit>& units,
                          torch::optim::AdamW& optimizer, int shard_rank, bool whole_params,
                          int64_t& bytes_read);

// "DIR/step-<S>"
[[nodiscard]] std::string checkpointStepDir(const std::string& dir, int last_step);

} // namespace dt
