// checkpoint.hpp: what the CLI and the GUI check about a sharded checkpoint
// before they start anything (the format is in engine/src/strategy/sharded_checkpoint.hpp).
#pragma once

#include <string>

namespace dt {

struct Scenario;

// checkpoint.json readable, every shard file present with a good checksum,
// units the size of the scenario's model, and steps left to train after it.
// Throws UsageError naming the file and the problem.
void verifyShardedCheckpoint(const std::string& step_dir, const Scenario& scenario);

} // namespace dt
