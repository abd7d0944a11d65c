// swarm_measure.cpp: one pass over a SWARM run's events (see the header).
#include "dtlab/swarm_measure.hpp"

#include "dtlab/swarm_layout.hpp"

#include <algorithm>
#include <limits>

namespace dt {

SwarmMeasure measureSwarm(const Scenario& scenario, const std::vector<Event>& events) {
    SwarmMeasure m;
    if (scenario.strategy.kind != StrategyKind::Swarm)
        return m;
    const SwarmLayout layout = SwarmLayout::of(scenario);
    for (int s = 0; s < layout.stages; ++s)
        for (int k = 0; k < layout.servers_per_stage; ++k) {
            SwarmServerTally t;
            t.rank = layout.serverRank(s, k);
            t.stage = s;
            t.server = k;
            m.servers.push_back(t);
        }
    for (int t = 0; t < layout.trainers; ++t)
        for (const auto& s : m.servers)
            m.routes.push_back({t, s.rank, 0, 0});
    m.backward_by_stage.assign(size_t(std::max(0, layout.stages)), 0);
    const auto server = [&](int rank) -> SwarmServerTally* {
        return layout.isServer(rank) ? &m.servers[size_t(rank - layout.trainers)] : nullptr;
    };
    // Per server: backward calls answered since its last inner step (lost if it dies now).
    std::vector<int64_t> pending(m.servers.size(), 0);
    int64_t first_step_ns = std::numeric_limits<int64_t>::max(), last_step_end_ns = 0;
    int64_t steps_done = 0;
    for (const Event& e : events) {
        switch (e.kind) {
        case EventKind::SwarmServe:
            if (SwarmServerTally* s = server(e.rank)) {
                s->bytes += e.bytes;
                if (e.seq != 0) {
                    ++s->dropped_calls;
                } else if (e.value == 0.0) {
                    ++s->forward_calls;
                } else {
                    ++s->backward_calls;
                    ++pending[size_t(e.rank - layout.trainers)];
                }
            }
            break;
        case EventKind::SwarmCall:
            if (layout.isTrainer(e.rank) && layout.isServer(e.peer)) {
                SwarmRoute& r = m.routes[size_t(e.rank * int(m.servers.size()) + (e.peer - layout.trainers))];
                ++r.calls;
                r.bytes += e.bytes;
                if (e.value == 1.0 && e.unit >= 0 && e.unit < layout.stages) {
                    ++m.backward_by_stage[size_t(e.unit)];
                    if (e.unit == 0)
                        ++m.microbatches;
                }
            }
            break;
        case EventKind::Optimizer:
            if (SwarmServerTally* s = server(e.rank)) {
                ++s->inner_steps;
                pending[size_t(e.rank - layout.trainers)] = 0;
            }
            break;
        case EventKind::SwarmOuterSync:
            if (SwarmServerTally* s = server(e.rank)) {
                s->rounds_led += e.seq == 1 ? 1 : 0;
                m.outer_rounds = std::max<int64_t>(m.outer_rounds, int64_t(e.value));
            }
            break;
        case EventKind::SwarmJoined:
            if (SwarmServerTally* s = server(e.rank))
                ++s->starts;
            break;
        case EventKind::SwarmReroute:
            (e.value == 2.0 ? m.reroutes_timeout : m.reroutes_connection) += 1;
            break;
        case EventKind::SwarmStageEmpty:
            m.stage_empty_waits += e.value == 1.0 ? 1 : 0;
            break;
        case EventKind::ProcessExited:
            if (server(e.rank) && e.value != 0.0) { // a server's process died (not a clean leave)
                SwarmDeath d;
                d.rank = e.rank;
                d.t_ns = e.t_ns;
                d.gradients_lost = pending[size_t(e.rank - layout.trainers)];
                pending[size_t(e.rank - layout.trainers)] = 0;
                m.deaths.push_back(d);
            }
            break;
        case EventKind::Step:
            if (layout.isTrainer(e.rank) && e.phase == EventPhase::Span) {
                first_step_ns = std::min(first_step_ns, e.t_ns);
                last_step_end_ns = std::max(last_step_end_ns, e.t_ns + e.dur_ns);
                ++steps_done;
            }
            break;
        default:
            break;
        }
    }
    // Death -> the first call re-routed away from the dead server completes.
    for (SwarmDeath& d : m.deaths) {
        // A kill is injected (FaultInjected) a little before the process is reaped.
        int64_t t0 = d.t_ns;
        for (const Event& e : events)
            if (e.kind == EventKind::FaultInjected && e.rank == d.rank && e.t_ns <= d.t_ns &&
                d.t_ns - e.t_ns < 2'000'000'000LL)
                t0 = std::min(t0, e.t_ns);
        d.t_ns = t0;
        for (const Event& e : events)
            if (e.kind == EventKind::SwarmJoined && e.rank == d.rank && e.t_ns > t0) {
                d.back_ns = e.t_ns;
                break;
            }
        for (size_t i = 0; i < events.size() && d.reroute_ms < 0; ++i) {
            const Event& r = events[i];
            if (r.kind != EventKind::SwarmReroute || r.peer != d.rank || r.t_ns < t0)
                continue;
            for (const Event& c : events)
                if (c.kind == EventKind::SwarmCall && c.rank == r.rank && c.unit == r.unit &&
                    c.t_ns >= r.t_ns) {
                    const int64_t end = c.t_ns + c.dur_ns;
                    if (d.reroute_ms < 0 || double(end - t0) / 1e6 < d.reroute_ms)
                        d.reroute_ms = double(end - t0) / 1e6;
                    break;
                }
        }
    }
    if (steps_done > 0 && last_step_end_ns > first_step_ns)
        m.samples_per_s = double(steps_done) * scenario.data.batch_per_rank /
                          (double(last_step_end_ns - first_step_ns) / 1e9);
    return m;
}

} // namespace dt
