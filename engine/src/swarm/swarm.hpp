// swarm.hpp: SWARM parallelism ([strategy] kind = "swarm"), as DistQat runs
// it on Hivemind. The worker calls runSwarmRank instead of its usual loop.
//
//   trainer (swarm_trainer.cpp)  ranks 0..T-1: data, loss, no parameters;
//       each microbatch goes stage by stage to a server it picks per call
//       (swarm_routing.hpp), forward then backward, over swarm_rpc.hpp; a
//       failed call is retried on another server of the stage.
//   server (swarm_server.cpp)    one stage (swarm_stage.hpp); serves calls
//       from any trainer, steps AdamW after server_batch backward calls, and
//       every outer_every inner steps averages with its stage's servers
//       (swarm_outer_sync.hpp: DiLoCo and the stage's param mirror).
// Discovery (DistQat: a libp2p DHT): each server puts "host:port incarnation"
// under dtlab/swarm/server/<rank> in the Session's store; trainers read it.
// When a server's process dies the Session empties that key (Hivemind: the
// DHT entry expires), so its stage's DiLoCo rounds stop waiting for it;
// trainers learn a death by a failed call.
// Restarts: the Session restarts a dead server ([swarm] restart); the new
// incarnation takes its stage's state from the param mirror and registers.
#pragma once

#include "rank/rank_context.hpp"

namespace dt {

int trainSwarm(const RankContext& context);      // swarm_trainer.cpp
int serveSwarmStage(const RankContext& context); // swarm_server.cpp
[[nodiscard]] int runSwarmRank(const RankContext& context);

} // namespace dt
