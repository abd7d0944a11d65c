// rank_groups.cpp: builds a rank's process groups (see rank_groups.hpp).
#include "rank/rank_groups.hpp"

#include "comm/mpi_communicator.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/local_address.hpp"

#include <torch/csrc/distributed/c10d/Store.hpp>

namespace dt {

std::string glooInterfaceFor(const LaunchEnv& env) {
    const bool loopback =
        env.master_host == "127.0.0.1" || env.master_host == "localhost" || env.master_host.empty();
    return loopback ? "127.0.0.1" : localAddressTowards(env.master_host, env.master_port);
}

GlooOptions glooOptionsFor(const LaunchEnv& env, const Scenario& scenario) {
    GlooOptions gloo;
    gloo.timeout = std::chrono::milliseconds(int64_t(scenario.run.timeout_s * 1000));
    gloo.interface_host = glooInterfaceFor(env);
    return gloo;
}

std::unique_ptr<Communicator> makeGroupCommunicator(const GroupSpec& spec,
                                                    c10::intrusive_ptr<c10d::Store> store,
                                                    const GlooOptions& gloo, EventSink* sink) {
    std::unique_ptr<Communicator> comm;
    if (spec.backend == "mpi") {
        comm = makeMpiCommunicator(spec.color, spec.rank, spec.size, sink);
    } else if (spec.backend == "gloo") {
        GlooOptions options = gloo;
        options.prefix = spec.prefix;
        comm = makeGlooCommunicator(std::move(store), spec.rank, spec.size, options, sink);
    } else {
        throw UsageError("unknown communicator backend '" + spec.backend + "' (expected gloo or mpi)");
    }
    comm->setGroupId(spec.group_id);
    return comm;
}

RankGroups makeGroups(const LaunchEnv& env, const Scenario& scenario, c10::intrusive_ptr<c10d::Store> store,
                      EventSink* sink) {
    const GlooOptions gloo = glooOptionsFor(env, scenario);
    const std::string& backend = scenario.topology.backend;
    RankGroups g;
    g.world = makeGroupCommunicator({backend, "dtlab/world", 0, env.rank, env.world, kGroupWorld}, store,
                                    gloo, sink);
    if (scenario.strategy.kind == StrategyKind::Hsdp) {
        const int replicas = scenario.topology.replicas;
        const int shards = env.world / replicas;
        const int replica = env.rank / shards, shard = env.rank % shards;
        // MPI colors: 1 + replica for the shard groups, 1 + replicas + shard for the replicate groups.
        g.shard = makeGroupCommunicator({backend, "dtlab/shard" + std::to_string(replica), 1 + replica, shard,
                                         shards, groupIdShard(replica)},
                                        store, gloo, sink);
        g.replicate =
            makeGroupCommunicator({backend, "dtlab/replicate" + std::to_string(shard), 1 + replicas + shard,
                                   replica, replicas, groupIdReplicate(shard)},
                                  store, gloo, sink);
    }
    if (strategyTraits(scenario.strategy.kind).uses_stages && env.world > scenario.topology.stages) {
        // Pipelines side by side: the ranks running the same stage average their gradients.
        const int stages = scenario.topology.stages;
        const int stage = env.rank % stages, replica = env.rank / stages;
        g.data_parallel = makeGroupCommunicator({backend, "dtlab/pipe_dp" + std::to_string(stage), 1 + stage,
                                                 replica, env.world / stages, groupIdReplicate(stage)},
                                                store, gloo, sink);
    }
    return g;
}

} // namespace dt
