// launch_env.hpp: who am I? A rank learns its rank, world size and the
// Session's address from, in order of precedence:
//   1. dtrun worker flags (--rank, --world, --join)    started by the Session
//   2. Open MPI: OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK, plus --join or MASTER_ADDR/PORT
//   3. torchrun style: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT
#pragma once

#include <map>
#include <string>

namespace dt {

struct LaunchEnv {
    int rank = -1;
    int world = -1;
    int local_rank = 0;
    std::string master_host;
    int master_port = 0;
    std::string launcher; // "dtlab", "mpirun" or "torchrun"
};

struct WorkerFlags {
    int rank = -1; // -1 = not given
    int world = -1;
    std::string join; // "host:port", "" = not given
};

// `env` is the process environment as a map (tests pass their own).
// Throws UsageError naming the missing or malformed variable.
[[nodiscard]] LaunchEnv resolveLaunchEnv(const WorkerFlags& flags,
                                         const std::map<std::string, std::string>& env);
[[nodiscard]] std::map<std::string, std::string> processEnvironment();

} // namespace dt
