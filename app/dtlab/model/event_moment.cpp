// event_moment.cpp: narration conditions as one-event matchers (event_moment.hpp).
#include "model/event_moment.hpp"

#include "model/event_meaning.hpp"

namespace dt::app {

static bool completesStep(const Event& e, int step_index, bool committed_steps) {
    return e.step == step_index &&
           (committed_steps ? e.kind == EventKind::Commit
                            : e.kind == EventKind::Step && e.phase == EventPhase::Span);
}

static bool completesCollective(const Event& e, EventKind kind) {
    return e.kind == kind && e.phase == EventPhase::WorkCompleted;
}

static std::function<bool(const Event&)> matcher(const NarrationCondition& c, double first_quorum_id,
                                                 bool committed_steps) {
    using Kind = NarrationCondition::Kind;
    const int value = c.value;
    switch (c.kind) {
    case Kind::StepAtLeast:
        return
            [value, committed_steps](const Event& e) { return completesStep(e, value - 1, committed_steps); };
    case Kind::FirstAllReduceEnds:
        return [](const Event& e) { return completesCollective(e, EventKind::AllReduce); };
    case Kind::FirstAllGatherEnds:
        return [](const Event& e) { return completesCollective(e, EventKind::AllGather); };
    case Kind::FirstReduceScatterEnds:
        return [](const Event& e) { return completesCollective(e, EventKind::ReduceScatter); };
    case Kind::RankDies:
        return [value](const Event& e) { return e.rank == value && (isKillSent(e) || isRankDeath(e)); };
    case Kind::RankHeals:
        return [value](const Event& e) { return e.rank == value && isHealReceived(e); };
    case Kind::NewQuorumForms:
        return [first = first_quorum_id](const Event& e) mutable {
            if (e.kind != EventKind::QuorumFormed)
                return false;
            if (first < 0)
                first = e.value;
            return e.value != first;
        };
    case Kind::FirstOuterSyncEnds:
        return [](const Event& e) { return isOuterSyncEnd(e); };
    case Kind::None:
    case Kind::CollectiveHangs:
    case Kind::RunFinished:
        break;
    }
    return {};
}

NarrationMoment narrationMoment(const NarrationCondition& c, double first_quorum_id, bool committed_steps) {
    NarrationMoment moment{matcher(c, first_quorum_id, committed_steps)};
    if (c.kind == NarrationCondition::Kind::StepAtLeast && c.value >= 1)
        moment.before_step = c.value;
    return moment;
}

} // namespace dt::app
