// run_facts.hpp: the few facts about a run that narration conditions and the
// scripted input wait for, gathered once per frame from non-blocking Session
// getters (or from a loaded recording). Plain data: tests fill it by hand.
#pragma once

#include "dtlab/scenario.hpp"
#include "dtlab/session.hpp"
#include "model/event_meaning.hpp"

#include <algorithm>
#include <vector>

namespace dt::app {

struct RunFacts {
    std::vector<RankProgress> ranks; // index = rank
    RunControl control;
    bool live = false;                      // a Session is running (false: a replay or nothing loaded)
    bool replay = false;                    // a recording is loaded
    bool finished = false;                  // every rank exited (always true in a replay)
    bool first_allreduce_ended = false;     // some rank completed an all-reduce
    bool first_allgather_ended = false;     // ... an all-gather
    bool first_reducescatter_ended = false; // ... a reduce-scatter
    std::vector<bool> rank_died;            // index = rank: it died at some point (a restarted replica too)
    std::vector<bool> rank_healed;          // index = rank: it received a live peer's state (a heal ended)
    double first_quorum_id = -1.0;          // the id of the first quorum seen (-1: none yet)
    bool new_quorum_formed = false;         // a quorum with another id formed after the first
    bool first_outer_sync_ended = false;    // DiLoCo: some replica completed an outer step
    bool collective_hung = false; // the hang diagnosis listed a collective (RunModel::hungCollectives)
    int steps_total = 0;          // [run] steps
    // The ranks 0..stepping_ranks-1 take training steps; -1 = every rank. A
    // swarm's servers serve calls and take no steps: only its trainers count.
    int stepping_ranks = -1;
    double elapsed_s = 0.0; // since the Session started (or the recording's length)

    // A rank that can no longer make progress: killed, failed (or exited before
    // finishing), or dead and waiting for the supervisor to start it again.
    [[nodiscard]] static bool gone(const RankProgress& p) {
        return p.state == RankState::Killed || p.state == RankState::Failed ||
               p.state == RankState::Restarting;
    }
    // Alive but not training now: frozen, or restarted and not yet healed
    // (fault tolerance goes on without it).
    [[nodiscard]] static bool stalled(const RankProgress& p) {
        return p.state == RankState::Hung || p.state == RankState::Healing;
    }
    [[nodiscard]] bool rankGone(int rank) const {
        return rank >= 0 && rank < int(ranks.size()) && gone(ranks[size_t(rank)]);
    }
    // Gone now, or died earlier in the run (killed, failed, then restarted).
    [[nodiscard]] bool rankDied(int rank) const {
        return rankGone(rank) || (rank >= 0 && rank < int(rank_died.size()) && rank_died[size_t(rank)]);
    }
    // What one event says, live or replayed: the first completed all-reduce,
    // all-gather or reduce-scatter, and a rank's death (ProcessExited with a
    // signal, -signo, or an exit code other than 0).
    // Also: a replica's heal (a receiving Heal span), a quorum whose id differs
    // from the first one, a DiLoCo outer step.
    void noteEvent(const Event& e) {
        if (e.phase == EventPhase::WorkCompleted) {
            first_allreduce_ended = first_allreduce_ended || e.kind == EventKind::AllReduce;
            first_allgather_ended = first_allgather_ended || e.kind == EventKind::AllGather;
            first_reducescatter_ended = first_reducescatter_ended || e.kind == EventKind::ReduceScatter;
        }
        if (e.kind == EventKind::QuorumFormed) {
            if (first_quorum_id < 0)
                first_quorum_id = e.value;
            new_quorum_formed = new_quorum_formed || e.value != first_quorum_id;
        }
        first_outer_sync_ended = first_outer_sync_ended || isOuterSyncEnd(e);
        if (isHealReceived(e))
            markRank(rank_healed, e.rank);
        if (isRankDeath(e))
            markRank(rank_died, e.rank);
    }
    static void markRank(std::vector<bool>& flags, int rank) {
        if (flags.size() <= size_t(rank))
            flags.resize(size_t(rank) + 1, false);
        flags[size_t(rank)] = true;
    }
    // Steps completed by every rank still alive (RankProgress::step is the last
    // completed step index, so it counts step + 1); -1 when no rank is alive.
    [[nodiscard]] size_t steppingCount() const {
        return stepping_ranks < 0 ? ranks.size() : std::min(ranks.size(), size_t(stepping_ranks));
    }
    [[nodiscard]] int stepsCompletedByAlive() const {
        int m = -1;
        bool any_training = false;
        for (size_t r = 0; r < steppingCount(); ++r)
            any_training = any_training || (!gone(ranks[r]) && !stalled(ranks[r]));
        for (size_t r = 0; r < steppingCount(); ++r) {
            const RankProgress& p = ranks[r];
            if (gone(p) || (any_training && stalled(p)))
                continue;
            m = m < 0 ? p.step + 1 : (p.step + 1 < m ? p.step + 1 : m);
        }
        return m;
    }
    // Steps completed by the fastest rank (what a progress line shows as "step n/N").
    [[nodiscard]] int stepsCompletedMax() const {
        int m = 0;
        for (size_t r = 0; r < steppingCount(); ++r)
            m = ranks[r].step + 1 > m ? ranks[r].step + 1 : m;
        return m;
    }
};

// Whether what a narration step waits for really happened in this run (or
// this recording). The narration says "Done" only for that.
[[nodiscard]] inline bool narrationConditionMet(const NarrationCondition& c, const RunFacts& f) {
    switch (c.kind) {
    case NarrationCondition::Kind::None:
        return true;
    case NarrationCondition::Kind::StepAtLeast:
        return f.stepsCompletedByAlive() >= c.value;
    case NarrationCondition::Kind::FirstAllReduceEnds:
        return f.first_allreduce_ended;
    case NarrationCondition::Kind::FirstAllGatherEnds:
        return f.first_allgather_ended;
    case NarrationCondition::Kind::FirstReduceScatterEnds:
        return f.first_reducescatter_ended;
    case NarrationCondition::Kind::RankDies:
        return f.rankDied(c.value);
    case NarrationCondition::Kind::RankHeals:
        return c.value >= 0 && c.value < int(f.rank_healed.size()) && f.rank_healed[size_t(c.value)];
    case NarrationCondition::Kind::NewQuorumForms:
        return f.new_quorum_formed;
    case NarrationCondition::Kind::FirstOuterSyncEnds:
        return f.first_outer_sync_ended;
    case NarrationCondition::Kind::CollectiveHangs:
        return f.collective_hung;
    case NarrationCondition::Kind::RunFinished:
        return f.finished;
    }
    return false;
}

// Whether Next is unlocked. In a replay, and once a live run has ended, every
// condition holds: nothing more can happen, and the presenter walks through
// the rest at will (a "step >= 5" after every rank was killed at step 3 would
// otherwise lock Next for good). The narration then says the condition did
// not happen (narrationConditionMet), never "Done".
[[nodiscard]] inline bool narrationConditionHolds(const NarrationCondition& c, const RunFacts& f) {
    return f.replay || f.finished || narrationConditionMet(c, f);
}

} // namespace dt::app
