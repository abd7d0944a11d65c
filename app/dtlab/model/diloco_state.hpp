// diloco_state.hpp: what a DiLoCo run is doing at one moment, from its events
// ([strategy] kind = "diloco"; the DiLoCo view draws it).
//
// Every rank is a replica that trains its own copy for H inner steps, then
// each fragment sends its pseudo-gradient and an outer step applies the
// average `sync_delay` steps later. From a RunModel (and the scenario it holds)
// this computes, at time t_ns:
//   replicas   per rank: its last completed step and, per fragment, the inner
//              steps since that fragment's last send out of the steps between
//              two of its syncs; its modelled link
//   syncs      the shown rank's sends (PseudoGradient spans) and applies
//              (OuterStep spans), in time order
//   fragments  sizes and bytes per sync (dilocoTheory), outer steps taken,
//              whether an exchange is in flight
//   bytes      the shown rank's cumulative BytesSent against steps done, and
//              the theory: DiLoCo's schedule x bytes per sync, and DDP
// Plain functions, no ImGui: tests call them on synthetic runs.
#pragma once

#include "dtlab/session.hpp"
#include "model/run_model.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace dt::app {

// The steps after which fragment f sends, in [0, steps) (diloco_schedule.hpp's
// sendsAfterStep), plus the run's last step for every fragment that trained
// since its previous send (the strategy syncs everything at the end). With
// quorum_delay >= 0 (Streaming DiLoCo under the quorum, that sync_delay):
// quorumRoundSendsAfterStep's rounds instead, and no sync at the end.
[[nodiscard]] std::vector<int> dilocoTheorySends(int fragment, int inner_steps, int fragments, int steps,
                                                 int quorum_delay = -1);
// The scenario's quorum_delay for dilocoTheorySends: its sync_delay when
// Streaming DiLoCo runs under the quorum, else -1.
[[nodiscard]] int dilocoQuorumDelay(const Scenario& scenario);

// Cumulative bytes one rank has sent after step s (index s = 0 .. steps-1)
// under the DiLoCo schedule (bytes_per_sync per fragment send) and under DDP.
struct DilocoBytesTheory {
    std::vector<double> diloco; // index = step
    std::vector<double> ddp;    // index = step
};
[[nodiscard]] DilocoBytesTheory dilocoBytesTheory(const Scenario& scenario, int steps);

// One replica row.
struct DilocoReplica {
    int rank = 0;
    int last_step = -1;          // last completed step (-1 = none yet)
    std::vector<int> since_sync; // per fragment: inner steps since its last send
    std::vector<int> period;     // per fragment: steps between its last send (or the start) and its next one
    double link_mbit_s = 0.0;    // 0 = uncapped
    double link_latency_ms = 0.0;
};

// One fragment's send (PseudoGradient) and its apply (OuterStep) on the shown rank.
struct DilocoSync {
    int fragment = 0;
    int send_step = -1;
    int apply_step = -1; // -1 = not applied yet (in flight)
    int64_t send_t = 0;  // ns: end of the PseudoGradient span
    int64_t apply_t = 0; // ns: end of the OuterStep span
    int64_t bytes = 0;   // encoded bytes of the pseudo-gradient
};

struct DilocoFragment {
    int fragment = 0;
    int64_t numel = 0;          // parameters (dilocoTheory)
    int64_t bytes_per_sync = 0; // bytes one rank sends per sync (theory)
    int outer_steps = 0;      // OuterStep spans of this fragment on the shown rank (= the latest one's value)
    bool in_flight = false;   // sent, not applied yet
    int next_apply_step = -1; // in flight: send step + tau
};

struct DilocoViewState {
    bool diloco = false;
    bool fault_tolerant = false; // [fault_tolerance] enabled: heals add to the bytes sent
    int quorum_delay = -1;       // >= 0: Streaming DiLoCo under the quorum (dilocoQuorumDelay)
    int inner_steps = 1, fragments = 1, sync_delay = 0, steps = 0;
    int shown_rank = 0;
    int current_step = -1; // the shown rank's last completed step
    std::vector<DilocoReplica> replicas;
    std::vector<DilocoFragment> frags;
    std::vector<DilocoSync> syncs; // the shown rank's, in time order
    std::vector<double> bytes_x,
        bytes_y; // the shown rank's cumulative BytesSent against steps done (step + 1)
    int64_t ddp_bytes_per_step = 0;
};

// The state at time t_ns from the run (pure; tests check it). `ranks` may be
// null (a replay: links then come from the scenario's [network]).
[[nodiscard]] DilocoViewState dilocoViewState(const RunModel& model, const std::vector<RankProgress>* ranks,
                                              int shown_rank, int64_t t_ns);

// The moment shown: the time cursor, else everything so far (the largest time).
[[nodiscard]] int64_t dilocoMoment(std::optional<int64_t> cursor_ns);
// The rank whose schedule, copies and bytes are shown: the selected one (-1 = none), else rank 0.
[[nodiscard]] int dilocoShownRank(int selected_rank);
// Links change without events (the link control): copy each replica's link from the live ranks.
void applyLiveLinks(DilocoViewState& state, const std::vector<RankProgress>& ranks);

} // namespace dt::app
