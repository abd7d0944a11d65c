// swarm_measure.hpp: what a SWARM run did, measured from its events (no
// LibTorch): for the summary's "swarm" section, its closing checks and the
// SWARM view.
//
//   per server      calls answered (forward, backward), calls dropped as
//                   stale, inner steps (Optimizer spans), rounds it led,
//                   starts (SwarmJoined), bytes served
//   per route       trainer -> server calls and bytes (the view's lines)
//   microbatches    stage 0's answered backward calls: each trainer
//                   microbatch ends with exactly one
//   backward_by_stage  answered backward calls per stage (a killed server's
//                   answered calls count: their gradients were accumulated
//                   until it died, see gradients_lost)
//   reroutes        SwarmReroute by reason: connection lost / no answer in time
//   deaths          per server process that died (the Session's
//                   ProcessExited of a server): when, the backward calls it
//                   had accumulated since its last inner step (lost with it),
//                   the time from its death to the end of the first call
//                   a trainer re-routed away from it (-1: none was), and when
//                   its restart served again (its next SwarmJoined)
//   samples_per_s   the trainers' samples (steps x batch_per_rank each) over
//                   the time from the first step's start to the last step's end
#pragma once

#include "dtlab/events.hpp"
#include "dtlab/scenario.hpp"

#include <cstdint>
#include <vector>

namespace dt {

struct SwarmServerTally {
    int rank = -1;
    int stage = -1;
    int server = -1; // k of the stage
    int64_t forward_calls = 0;
    int64_t backward_calls = 0;
    int64_t dropped_calls = 0;
    int64_t inner_steps = 0;
    int64_t rounds_led = 0;
    int starts = 0;
    int64_t bytes = 0;
};

struct SwarmRoute {
    int trainer = -1;
    int server_rank = -1;
    int64_t calls = 0;
    int64_t bytes = 0;
};

struct SwarmDeath {
    int rank = -1;
    int64_t t_ns = 0;
    int64_t gradients_lost = 0; // backward calls accumulated since its last inner step
    double reroute_ms = -1;     // death -> end of the first call re-routed away from it
    int64_t back_ns = -1;       // its next start (SwarmJoined) serving again; -1 = never
};

struct SwarmMeasure {
    std::vector<SwarmServerTally> servers; // layout order
    std::vector<SwarmRoute> routes;        // trainer-major
    int64_t microbatches = 0;
    std::vector<int64_t> backward_by_stage;
    int64_t reroutes_connection = 0;
    int64_t reroutes_timeout = 0;
    int64_t stage_empty_waits = 0;
    int64_t outer_rounds = 0; // the highest round any server reached
    std::vector<SwarmDeath> deaths;
    double samples_per_s = 0;
};

[[nodiscard]] SwarmMeasure measureSwarm(const Scenario& scenario, const std::vector<Event>& events);

} // namespace dt
