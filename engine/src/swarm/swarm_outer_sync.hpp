// swarm_outer_sync.hpp: DiLoCo among one stage's servers, through the
// Session's store (dtlab's stand-in for DistQat's DiLoCo averager, a Hivemind
// DecentralizedAverager per stage found through the DHT).
//
// When: as Hivemind's Optimizer does (its ProgressTracker), by the stage's
// collective progress, not one server's count: every backward call a server
// accumulates adds 1 to "dtlab/swarm/s<s>/progress"; round r starts for every
// server of the stage once that count reaches r x outer_every x server_batch
// x K (outer_every inner steps per server on average), each server noticing
// it after its next backward call that adds gradients, or at its next idle
// tick (50 ms).
//
// Every server holds the stage's global parameters g and outer momentum m as
// of the last round it took (P_s floats each). Round r:
//  0. a server behind (the mirror already holds round r or later: it was
//     busy, hung or restarted) takes the mirror instead of joining.
//  1. join: put "in<rank>" = (w, local parameters), w = inner steps since
//     the last round (DistQat weights each server's parameters by its inner
//     steps), then add 1 to "joined". The contribution goes in before the
//     count, so a server counted as joined never leaves the leader waiting
//     for its parameters, even if it dies the next moment. A round already
//     "closed" is not joined: the server only follows (3).
//  2. the first to claim "leader" (compareSet: the key is created holding
//     "<rank>|<its registration>", so no moment exists where a round has a
//     leader nobody can name, and its registration's incarnation tells it
//     from a restarted successor) leads: it waits until every server of the
//     stage still registered joined (the Session clears a dead server's
//     registration) or join_timeout_ms, sets "closed" (later joiners only
//     follow), reads and deletes every "in<rank>" there, and computes avg =
//     sum(w_i x_i) / sum(w_i), delta = g - avg (the pseudo-gradient),
//     Nesterov SGD m = mu m + delta, g -= lr (delta + mu m); if sum(w) = 0
//     nothing trained and g stays. It puts (r, g, m) into the stage's param
//     mirror "dtlab/swarm/s<s>/mirror" (the last round, "final", into
//     ".../final/mirror": a regular round still ending on another server
//     cannot overwrite it), sets local = g, then "closed" = n averaged and
//     "done".
//  3. every other server waits for "done" and takes g, m and local = g from
//     that mirror (DistQat: a server out of step loads the state from its
//     peers), so all hold the leader's bits; its own "in<rank>", if the
//     leader never read it (it came after the close), it deletes. If the
//     leader dies (its registration is cleared or belongs to a new
//     incarnation) or "done" does not come within join_timeout_ms + 5 s, it
//     gives the round up: it takes the round's result if the leader put it,
//     else keeps its state. Its "in<rank>" stays (a leader that was only
//     stopped may still read it). The last round, when the job ends, is
//     named "final".
// A server that starts (or restarts) takes the mirror if there is one, else
// it starts from the seed like every other (round 0).
// Bytes through the store per round and server: 4 P_s in; the leader reads
// 4 n P_s and writes 8 P_s, every other server reads 8 P_s.
#pragma once

#include "dtlab/scenario.hpp"

#include <ATen/ATen.h>

#include <c10/util/intrusive_ptr.h>

#include <cstdint>
#include <string>
#include <vector>

namespace c10d {
class Store;
}

namespace dt::swarm {

struct RoundResult {
    int round = 0;
    int averaged = 0;      // n, as the leader counted them (0: the mirror never came)
    bool led = false;      // this server computed the round
    int64_t bytes_put = 0; // into the store by this server
};

class OuterSync {
  public:
    // `local`: the stage's parameters (updated in place by rounds and loads).
    OuterSync(const Scenario& scenario, c10::intrusive_ptr<c10d::Store> store, int stage, int rank,
              std::vector<at::Tensor> local);

    // The mirror's state, if any: loads it into g, m and local; returns the
    // bytes read (0 = no mirror yet: start from the seed).
    int64_t loadMirror(int& round);
    // One round (named "r<next>"), or the last one ("final") when the job ends.
    RoundResult runRound(int inner_steps_since_last, bool final_round);
    // The stage's progress: add `calls` backward calls, return the total.
    int64_t addProgress(int64_t calls);
    // True once the stage's progress has reached the next round's start.
    [[nodiscard]] bool roundDue(int64_t progress) const;

  private:
    [[nodiscard]] at::Tensor flatLocal() const;
    void setLocal(const at::Tensor& flat);
    [[nodiscard]] std::string stageKey(const std::string& leaf) const; // "dtlab/swarm/s<stage>/<leaf>"
    [[nodiscard]] std::string mirrorKey() const;                       // the stage's param mirror
    void putMirror(const std::string& key);
    [[nodiscard]] int mirrorRound() const;       // -1 = no mirror yet
    [[nodiscard]] int registeredServers() const; // of this stage, alive as far as the Session knows
    [[nodiscard]] bool takeMirror(const std::string& key, int at_least_round, int64_t timeout_ms,
                                  int64_t& bytes);

    const SwarmConfig& m_config;
    int64_t m_calls_per_round = 1; // outer_every x server_batch x K
    c10::intrusive_ptr<c10d::Store> m_store;
    int m_stage = 0;
    int m_servers = 1;
    int m_first_server_rank = 0; // the stage's server 0
    int m_rank = 0;              // this server's rank
    std::vector<at::Tensor> m_local;
    at::Tensor m_global;   // P_s
    at::Tensor m_momentum; // P_s
    int m_round = 0;       // the last round this server took part in or took from the mirror
};

} // namespace dt::swarm
