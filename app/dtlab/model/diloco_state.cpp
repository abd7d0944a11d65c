// diloco_state.cpp: a DiLoCo run at one moment (see diloco_state.hpp).
#include "model/diloco_state.hpp"

#include "dtlab/diloco_theory.hpp"

// The fragment schedule is the engine's own (a pure header, no LibTorch). It
// lives under engine/src, which the app does not see on its include path.
#include "dtlab/diloco_schedule.hpp"

#include <algorithm>
#include <limits>

namespace dt::app {

std::vector<int> dilocoTheorySends(int fragment, int inner_steps, int fragments, int steps,
                                   int quorum_delay) {
    std::vector<int> out;
    const int H = std::max(1, inner_steps), F = std::max(1, fragments);
    for (int s = 0; s < steps; ++s) {
        const bool sends = quorum_delay >= 0
                               ? diloco::quorumRoundSendsAfterStep(s, fragment, H, F, quorum_delay)
                               : diloco::sendsAfterStep(s, fragment, H, F) || s == steps - 1;
        if (sends)
            out.push_back(s);
    }
    return out;
}

int dilocoQuorumDelay(const Scenario& scenario) {
    return dilocoStreamsUnderQuorum(scenario) ? std::max(0, scenario.diloco.sync_delay) : -1;
}

DilocoBytesTheory dilocoBytesTheory(const Scenario& scenario, int steps) {
    DilocoBytesTheory out;
    const DilocoTheory theory = dilocoTheory(scenario);
    const int F = std::max(1, scenario.diloco.fragments);
    std::vector<double> per_step(size_t(std::max(steps, 0)), 0.0);
    for (int f = 0; f < F && size_t(f) < theory.bytes_per_sync.size(); ++f)
        for (int s : dilocoTheorySends(f, scenario.diloco.inner_steps, F, steps, dilocoQuorumDelay(scenario)))
            per_step[size_t(s)] += double(theory.bytes_per_sync[size_t(f)]);
    double diloco = 0.0;
    for (int s = 0; s < steps; ++s) {
        diloco += per_step[size_t(s)];
        out.diloco.push_back(diloco);
        out.ddp.push_back(double(theory.ddp_bytes_per_step) * double(s + 1));
    }
    return out;
}

DilocoViewState dilocoViewState(const RunModel& model, const std::vector<RankProgress>* ranks, int shown_rank,
                                int64_t t_ns) {
    DilocoViewState st;
    const Scenario& sc = model.scenario();
    st.diloco = sc.strategy.kind == StrategyKind::Diloco;
    st.fault_tolerant = sc.fault_tolerance.enabled;
    st.inner_steps = std::max(1, sc.diloco.inner_steps);
    st.fragments = std::max(1, sc.diloco.fragments);
    st.sync_delay = std::max(0, sc.diloco.sync_delay);
    st.steps = sc.run.steps;
    st.quorum_delay = dilocoQuorumDelay(sc);
    const int H = st.inner_steps, F = st.fragments;
    const int world = model.world();
    st.shown_rank = std::clamp(shown_rank, 0, std::max(0, world - 1));

    const DilocoTheory theory = dilocoTheory(sc);
    st.ddp_bytes_per_step = theory.ddp_bytes_per_step;
    st.frags.resize(size_t(F));
    for (int f = 0; f < F; ++f) {
        DilocoFragment& frag = st.frags[size_t(f)];
        frag.fragment = f;
        if (size_t(f) < theory.fragment_numel.size())
            frag.numel = theory.fragment_numel[size_t(f)];
        if (size_t(f) < theory.bytes_per_sync.size())
            frag.bytes_per_sync = theory.bytes_per_sync[size_t(f)];
    }

    st.replicas.resize(size_t(world));
    for (int r = 0; r < world; ++r) {
        DilocoReplica& row = st.replicas[size_t(r)];
        row.rank = r;
        const RankLane& lane = model.lane(r);
        // The last Step span that ended by t (Step spans are sorted by start).
        for (auto it = lane.compute[0].rbegin(); it != lane.compute[0].rend(); ++it)
            if (it->kind == EventKind::Step && it->t1 <= t_ns) {
                row.last_step = it->step;
                break;
            }
        // Sends and applies, in time order.
        std::vector<int> last_send(size_t(F), -1);
        for (const SpanRecord& s : lane.compute[1]) {
            if (s.t0 > t_ns)
                break;
            if (s.t1 > t_ns)
                continue;
            if (s.kind == EventKind::Heal && s.unit == 0) {
                // Received a heal (fault-tolerant DiLoCo): the replica took a live
                // peer's global copy and state at step s.step, a fresh start for
                // every fragment.
                for (int& sent : last_send)
                    sent = std::max(sent, s.step);
                row.last_step = std::max(row.last_step, s.step);
                continue;
            }
            if (s.unit < 0 || s.unit >= F)
                continue;
            const int f = s.unit;
            if (s.kind == EventKind::PseudoGradient) {
                last_send[size_t(f)] = std::max(last_send[size_t(f)], s.step);
                row.last_step = std::max(
                    row.last_step, s.step); // sent in the step's optimizer phase, before its Step span ends
                if (r == st.shown_rank) {
                    DilocoSync sync;
                    sync.fragment = f;
                    sync.send_step = s.step;
                    sync.send_t = s.t1;
                    sync.bytes = s.bytes;
                    st.syncs.push_back(sync);
                }
            } else if (s.kind == EventKind::OuterStep && r == st.shown_rank) {
                // The event's value is the fragment's outer steps so far; the
                // run model keeps no span values, and one span per outer step
                // counts the same.
                st.frags[size_t(f)].outer_steps += 1;
                // It applies this fragment's oldest exchange still in flight.
                for (DilocoSync& sync : st.syncs)
                    if (sync.fragment == f && sync.apply_step < 0) {
                        sync.apply_step = s.step;
                        sync.apply_t = s.t1;
                        break;
                    }
            }
        }
        // Per fragment: inner steps since its last send, out of the steps
        // between that send (or the start) and its next one.
        for (int f = 0; f < F; ++f) {
            const int sent = last_send[size_t(f)];
            int next = -1;
            for (int s : dilocoTheorySends(f, H, F, st.steps, st.quorum_delay))
                if (s > sent) {
                    next = s;
                    break;
                }
            row.since_sync.push_back(std::max(0, row.last_step - sent));
            row.period.push_back(next >= 0 ? next - sent : H);
        }
        // The link: live progress, else (a replay) the scenario's [network].
        if (ranks && size_t(r) < ranks->size()) {
            row.link_mbit_s = (*ranks)[size_t(r)].link_mbit_s;
            row.link_latency_ms = (*ranks)[size_t(r)].link_latency_ms;
        } else {
            row.link_mbit_s = sc.network.bandwidth_mbit_s;
            row.link_latency_ms = sc.network.latency_ms;
        }
    }
    if (world > 0)
        st.current_step = st.replicas[size_t(st.shown_rank)].last_step;

    for (const DilocoSync& sync : st.syncs) {
        DilocoFragment& frag = st.frags[size_t(sync.fragment)];
        frag.in_flight = sync.apply_step < 0;
        frag.next_apply_step =
            frag.in_flight ? std::min(sync.send_step + st.sync_delay, std::max(0, st.steps - 1)) : -1;
    }

    if (world > 0)
        for (const CounterPoint& p : model.lane(st.shown_rank).counters[size_t(EventKind::BytesSent)]) {
            if (p.t > t_ns)
                break;
            if (!st.bytes_x.empty() && double(p.step + 1) <= st.bytes_x.back())
                continue; // keep x ascending
            st.bytes_x.push_back(double(p.step + 1));
            st.bytes_y.push_back(p.value);
        }
    return st;
}

int64_t dilocoMoment(std::optional<int64_t> cursor_ns) {
    return cursor_ns ? *cursor_ns : std::numeric_limits<int64_t>::max();
}

int dilocoShownRank(int selected_rank) {
    return selected_rank >= 0 ? selected_rank : 0;
}

void applyLiveLinks(DilocoViewState& state, const std::vector<RankProgress>& ranks) {
    for (DilocoReplica& row : state.replicas)
        if (size_t(row.rank) < ranks.size()) {
            row.link_mbit_s = ranks[size_t(row.rank)].link_mbit_s;
            row.link_latency_ms = ranks[size_t(row.rank)].link_latency_ms;
        }
}

} // namespace dt::app
