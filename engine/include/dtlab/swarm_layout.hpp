// swarm_layout.hpp: who is who in a SWARM run ([strategy] kind = "swarm").
//
// Ranks 0..T-1 are trainers (data and loss, no parameters); rank T + s K + k
// is server k of stage s (stage s's blocks; stage 0 also the embeddings, the
// last stage the final norm and the head). T = [swarm] trainers, K = [swarm]
// servers_per_stage, S = [topology] stages. Shared by the engine, the
// Session, the summary and the GUI so that they agree on every rank's role.
#pragma once

#include "dtlab/scenario.hpp"

#include <string>

namespace dt {

// The store key where server `rank` registers "host:port incarnation"
// (swarm.hpp); the Session empties it when the server's process dies.
[[nodiscard]] inline std::string swarmRegistrationKey(int rank) {
    return "dtlab/swarm/server/" + std::to_string(rank);
}

struct SwarmLayout {
    int trainers = 0;          // T
    int stages = 0;            // S
    int servers_per_stage = 0; // K

    [[nodiscard]] static SwarmLayout of(const Scenario& scenario) {
        return {scenario.swarm.trainers, scenario.topology.stages, scenario.swarm.servers_per_stage};
    }
    [[nodiscard]] int world() const { return trainers + stages * servers_per_stage; }
    [[nodiscard]] bool isTrainer(int rank) const { return rank >= 0 && rank < trainers; }
    [[nodiscard]] bool isServer(int rank) const { return rank >= trainers && rank < world(); }
    [[nodiscard]] int stageOf(int rank) const {
        return isServer(rank) ? (rank - trainers) / servers_per_stage : -1;
    }
    [[nodiscard]] int serverIndexOf(int rank) const {
        return isServer(rank) ? (rank - trainers) % servers_per_stage : -1;
    }
    [[nodiscard]] int serverRank(int stage, int k) const { return trainers + stage * servers_per_stage + k; }
};

} // namespace dt
