// swarm_routing.cpp: the two routing rules (see swarm_routing.hpp).
#include "swarm/swarm_routing.hpp"

#include <algorithm>
#include <limits>

namespace dt::swarm {

namespace {
constexpr double kAlpha = 0.3;
}

Router::Router(const std::string& rule, int stages, int servers_per_stage, uint64_t seed)
    : m_fastest(rule == "fastest"), m_per_stage(std::max(1, servers_per_stage)),
      m_servers(size_t(std::max(1, stages) * m_per_stage)), m_rng(seed) {}

void Router::update(Server& s, double sample) {
    s.ema = s.ema == 0.0 ? sample : (1.0 - kAlpha) * s.ema + kAlpha * sample;
}

int Router::choose(int stage, double now_s, double samples) {
    std::vector<int> candidates;
    double fastest_measured = 0.0; // the smallest ema among the measured
    for (int k = 0; k < m_per_stage; ++k) {
        const Server& s = at(stage, k);
        if (!s.live)
            continue;
        candidates.push_back(k);
        if (s.ema > 0 && (fastest_measured == 0.0 || s.ema < fastest_measured))
            fastest_measured = s.ema;
    }
    if (candidates.empty())
        return -1;
    if (m_fastest) {
        int best = -1;
        double best_finish = std::numeric_limits<double>::infinity();
        for (int k : candidates) {
            const Server& s = at(stage, k);
            const double finish = std::max(s.eta, now_s) + samples * s.ema;
            if (finish < best_finish) {
                best_finish = finish;
                best = k;
            }
        }
        at(stage, best).eta = best_finish;
        return best;
    }
    // Stochastic wiring: probability proportional to throughput.
    std::vector<double> weights;
    for (int k : candidates) {
        const double ema = at(stage, k).ema > 0 ? at(stage, k).ema : fastest_measured;
        weights.push_back(ema > 0 ? 1.0 / ema : 1.0);
    }
    std::discrete_distribution<int> pick(weights.begin(), weights.end());
    return candidates[size_t(pick(m_rng))];
}

void Router::recordCall(int stage, int server, double samples, double seconds) {
    update(at(stage, server), seconds / std::max(1.0, samples));
}

void Router::recordTimeout(int stage, int server, double samples, double seconds) {
    Server& s = at(stage, server);
    update(s, seconds / std::max(1.0, samples));
    s.eta = 0.0;
}

void Router::markDead(int stage, int server) {
    at(stage, server).live = false;
}

void Router::markLive(int stage, int server) {
    Server& s = at(stage, server);
    if (!s.live)
        s = Server{}; // a new incarnation: measured afresh
}

bool Router::live(int stage, int server) const {
    return at(stage, server).live;
}

int Router::liveCount(int stage) const {
    int n = 0;
    for (int k = 0; k < m_per_stage; ++k)
        n += at(stage, k).live ? 1 : 0;
    return n;
}

double Router::secondsPerSample(int stage, int server) const {
    return at(stage, server).ema;
}

} // namespace dt::swarm
