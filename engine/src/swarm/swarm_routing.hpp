// swarm_routing.hpp: a trainer's choice of server for each call to a stage.
//
// Each trainer keeps, per server, an exponential moving average of the
// seconds per sample its calls took (queueing at the server included, so a
// busy or slowed server looks slow), alpha = 0.3. Two rules:
//   "throughput"  SWARM's stochastic wiring (Ryabinin et al. 2023, sec. 3.2):
//                 a server at random with probability proportional to its
//                 throughput 1 / ema; a server not measured yet counts as fast
//                 as the fastest measured one, so every server gets tried.
//   "fastest"     after Hivemind's ExpertBalancer (DistQat's
//                 BalancedRemoteExpert), which keeps a running total of the
//                 expected load per expert and picks the smallest: here the
//                 server with the lowest expected finish time max(eta, now) +
//                 samples x ema (the max lets an idle server's backlog drain
//                 with time); the choice pushes its eta on.
// markDead / markLive: the trainer bans a server after any failed call, a
// timeout included (SWARM's balancer bans after an error but not after a
// deadline exceeded: docs/concepts/swarm.md), and lifts the ban after 1 s
// or when the server registers again (swarm_trainer.cpp); a timeout also
// counts as one slow sample (recordTimeout).
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace dt::swarm {

class Router {
  public:
    Router(const std::string& rule, int stages, int servers_per_stage, uint64_t seed);

    // The server (0..K-1) for a call of `samples` samples at time now_s, or
    // -1 when the stage has no live server.
    [[nodiscard]] int choose(int stage, double now_s, double samples);
    void recordCall(int stage, int server, double samples, double seconds);
    void recordTimeout(int stage, int server, double samples, double seconds);
    void markDead(int stage, int server);
    void markLive(int stage, int server);
    [[nodiscard]] bool live(int stage, int server) const;
    [[nodiscard]] int liveCount(int stage) const;
    // Seconds per sample as measured (0 = not measured yet).
    [[nodiscard]] double secondsPerSample(int stage, int server) const;

  private:
    struct Server {
        bool live = true;
        double ema = 0.0; // seconds per sample; 0 = not measured
        double eta = 0.0; // "fastest": when this trainer expects it free
    };
    Server& at(int stage, int server) { return m_servers[size_t(stage * m_per_stage + server)]; }
    const Server& at(int stage, int server) const { return m_servers[size_t(stage * m_per_stage + server)]; }
    void update(Server& s, double sample);

    bool m_fastest = false;
    int m_per_stage = 1;
    std::vector<Server> m_servers;
    std::mt19937_64 m_rng;
};

} // namespace dt::swarm
