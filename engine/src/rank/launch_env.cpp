// launch_env.cpp: rank, world size and Session address from flags or the
// environment (precedence in the header).
#include "dtlab/launch_env.hpp"

#include "dtlab/errors.hpp"
#include "telemetry/telemetry_wire.hpp"

extern char** environ;

namespace dt {
namespace {

int parseInt(const std::string& name, const std::string& value) {
    try {
        size_t used = 0;
        const int v = std::stoi(value, &used);
        if (used != value.size())
            throw std::invalid_argument(name);
        return v;
    } catch (const std::exception&) {
        throw UsageError(name + ": expected an integer, got '" + value + "'");
    }
}

const std::string* find(const std::map<std::string, std::string>& env, const char* key) {
    auto it = env.find(key);
    return it == env.end() ? nullptr : &it->second;
}

} // namespace

std::map<std::string, std::string> processEnvironment() {
    std::map<std::string, std::string> env;
    for (char** e = environ; e && *e; ++e) {
        std::string entry = *e;
        const auto eq = entry.find('=');
        if (eq != std::string::npos)
            env[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    return env;
}

LaunchEnv resolveLaunchEnv(const WorkerFlags& flags, const std::map<std::string, std::string>& env) {
    LaunchEnv out;
    if (flags.rank >= 0 || flags.world >= 0) {
        out.launcher = "dtlab";
        out.rank = flags.rank;
        out.world = flags.world;
        out.local_rank = flags.rank;
    } else if (const auto* r = find(env, "OMPI_COMM_WORLD_RANK")) {
        out.launcher = "mpirun";
        out.rank = parseInt("OMPI_COMM_WORLD_RANK", *r);
        const auto* w = find(env, "OMPI_COMM_WORLD_SIZE");
        if (!w)
            throw UsageError("OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not");
        out.world = parseInt("OMPI_COMM_WORLD_SIZE", *w);
        if (const auto* l = find(env, "OMPI_COMM_WORLD_LOCAL_RANK"))
            out.local_rank = parseInt("OMPI_COMM_WORLD_LOCAL_RANK", *l);
    } else if (const auto* r2 = find(env, "RANK")) {
        out.launcher = "torchrun";
        out.rank = parseInt("RANK", *r2);
        const auto* w = find(env, "WORLD_SIZE");
        if (!w)
            throw UsageError("RANK is set but WORLD_SIZE is not");
        out.world = parseInt("WORLD_SIZE", *w);
        if (const auto* l = find(env, "LOCAL_RANK"))
            out.local_rank = parseInt("LOCAL_RANK", *l);
    } else {
        throw UsageError("a worker needs its rank: pass --rank and --world, or start it under mpirun "
                         "(OMPI_COMM_WORLD_RANK) or torchrun (RANK, WORLD_SIZE)");
    }
    if (out.world < 1 || out.rank < 0 || out.rank >= out.world)
        throw UsageError("rank " + std::to_string(out.rank) + " is outside the world of " +
                         std::to_string(out.world) + " ranks");

    if (!flags.join.empty()) {
        wire::splitAddress(flags.join, out.master_host, out.master_port);
    } else {
        const auto* addr = find(env, "MASTER_ADDR");
        const auto* port = find(env, "MASTER_PORT");
        if (!addr || !port)
            throw UsageError(
                "a worker needs the Session's address: pass --join HOST:PORT or set MASTER_ADDR and "
                "MASTER_PORT");
        out.master_host = *addr;
        out.master_port = parseInt("MASTER_PORT", *port);
        if (out.master_port <= 0 || out.master_port > 65535)
            throw UsageError("MASTER_PORT must be 1..65535");
    }
    return out;
}

} // namespace dt
