// rank_groups.hpp: the process groups of one rank, on the scenario's backend.
//
//   world           every rank                                    (all strategies)
//   shard           the ranks of this rank's replica              (hsdp)
//   replicate       the ranks holding the same shard, one per replica (hsdp)
//   data_parallel   the ranks running the same pipeline stage     (pipeline, ranks > stages)
//
// Backend "gloo": each group rendezvous on its own store prefix (PrefixStore over the rendezvous store).
// Backend "mpi":  each group is MPI_Comm_split of MPI_COMM_WORLD with a color
// (0 for the world, the replica / shard / stage for the others); every rank
// makes the groups in the same order, as MPI_Comm_split is collective.
#pragma once

#include "comm/communicator.hpp"
#include "comm/gloo_communicator.hpp"
#include "dtlab/launch_env.hpp"
#include "dtlab/scenario.hpp"

#include <memory>
#include <string>

namespace dt {

struct RankGroups {
    std::unique_ptr<Communicator> world, shard, replicate, data_parallel;
};

// One process group of `size` ranks, this rank being `rank` in it.
struct GroupSpec {
    std::string backend = "gloo"; // "gloo" | "mpi"
    std::string prefix;           // gloo: store prefix
    int color = 0;                // mpi: MPI_Comm_split color
    int rank = 0;
    int size = 1;
    uint8_t group_id = kGroupWorld; // Event::group of its Work records
};

// The address this rank's Gloo device binds to: loopback when the Session is on
// this host, else this host's address on the route to the Session
// (localAddressTowards), so ranks in other hosts or network namespaces reach it.
[[nodiscard]] std::string glooInterfaceFor(const LaunchEnv& env);

// Gloo options for this rank: glooInterfaceFor(env); timeout = [run] timeout_s.
[[nodiscard]] GlooOptions glooOptionsFor(const LaunchEnv& env, const Scenario& scenario);

[[nodiscard]] std::unique_ptr<Communicator> makeGroupCommunicator(const GroupSpec& spec,
                                                                  c10::intrusive_ptr<c10d::Store> store,
                                                                  const GlooOptions& gloo, EventSink* sink);

// The groups the scenario's strategy needs, on [topology] backend.
[[nodiscard]] RankGroups makeGroups(const LaunchEnv& env, const Scenario& scenario,
                                    c10::intrusive_ptr<c10d::Store> store, EventSink* sink);

} // namespace dt
