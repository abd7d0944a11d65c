// worker.hpp: one rank (`dtrun worker`): join the Session, train, report.
#pragma once

#include "dtlab/launch_env.hpp"

#include <string>

namespace dt {

struct WorkerArgs {
    WorkerFlags flags;
    std::string params_out_dir; // overrides the Session's setting when not empty
    int incarnation = 0;        // fault tolerance: how many times the supervisor restarted this rank
    std::string token_file;     // the shared token; "" = DTLAB_TOKEN from the environment, or none
};

// The shared token of a Session: the first line of `token_file` when given
// (surrounding whitespace removed), else DTLAB_TOKEN, else "". A token file
// that cannot be read, is empty, or is readable by other users is a UsageError.
[[nodiscard]] std::string readSessionToken(const std::string& token_file);

// Returns the process exit code: 0 done, kExitRankFailed on a communication
// failure, kExitUsage on bad input. Never returns normally after a fault it
// cannot recover from without first telling the Session why.
int runWorker(const WorkerArgs& args);

} // namespace dt
