// checkpoint.hpp: what the CLI, the GUI and the Session check about a
// checkpoint before they start anything. Two kinds share one layout,
// DIR/step-<S>/checkpoint.json plus data files:
//   sharded  (zero1/zero2/fsdp/hsdp): engine/src/checkpoint/sharded_checkpoint.hpp
//   replica  (ddp under [fault_tolerance]): engine/src/checkpoint/replica_checkpoint.hpp
#pragma once

#include <string>
#include <vector>

namespace dt {

struct Scenario;

// checkpoint.json readable, every data file present with a good checksum,
// sizes that fit the scenario's model, and steps left to train after it.
// Throws UsageError naming the file and the problem.
void verifyShardedCheckpoint(const std::string& step_dir, const Scenario& scenario);

// The same for either kind: the kind the scenario needs (sharded for a sharded
// strategy, replica under fault tolerance), read from checkpoint.json.
void verifyCheckpoint(const std::string& step_dir, const Scenario& scenario);

struct CheckpointChoice {
    std::string step_dir;             // the checkpoint to resume from
    int step = -1;                    // its last step (S of step-<S>)
    std::vector<std::string> skipped; // newer ones that failed verification: "DIR/step-<S>: why"
};

// `path` is one checkpoint (DIR/step-<S>: verified and used as given) or a
// checkpoint directory DIR holding step-<S> entries: the newest that verifies
// is chosen, and every newer one that does not (torn, corrupt, a .partial
// left by a crash is not a candidate at all) is listed in `skipped` with the
// reason. Throws UsageError when nothing in DIR can be used.
[[nodiscard]] CheckpointChoice chooseCheckpoint(const std::string& path, const Scenario& scenario);

// A run starting at `first_step` would save DIR/step-<S> for some S that
// exists already: UsageError (checkpoints are never overwritten).
void checkCheckpointsNotOverwritten(const Scenario& scenario, int first_step);

} // namespace dt
