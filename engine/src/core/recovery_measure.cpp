// recovery_measure.cpp: recoveries and commit counts from a run's events
// (definitions in recovery_measure.hpp). Events arrive per rank in order but
// ranks interleave, so they are sorted by time first.
#include "dtlab/recovery_measure.hpp"

#include "dtlab/fault_action.hpp"
#include "dtlab/scenario.hpp"

#include <algorithm>
#include <set>

namespace dt {

std::string faultLabel(const Event& e) {
    if (e.kind == EventKind::LighthouseDown)
        return "lighthouse";
    FaultAction action = FaultAction::Kill;
    if (faultActionFromEventCode(int(e.value), action))
        return faultActionName(action);
    return "fault";
}

RecoveryMeasure measureRecoveries(const std::vector<Event>& input, int world, int group_size) {
    const int G = std::max(1, group_size);
    const auto sameGroup = [G](int a, int b) { return a / G == b / G; };
    std::vector<Event> events = input;
    std::stable_sort(events.begin(), events.end(),
                     [](const Event& a, const Event& b) { return a.t_ns < b.t_ns; });

    RecoveryMeasure m;
    m.replicas.resize(size_t(std::max(world, 0)));
    std::set<int64_t> quorum_ids;
    // Rollbacks: a replica that starts afresh (a new process) or has just
    // healed commits a step the job had already committed, while no live
    // process holds that step or a later one. That happens only when every
    // replica was down at once: the restarted ones went back and redo those
    // steps. The episode lasts until the job passes its old highest step;
    // every step committed in it counts once. If every replica goes down
    // again before that, a new episode starts, and its steps count again.
    // (A fresh replica committing the step the others commit now is the
    // normal case: a live peer holds it. A replica that falls behind while
    // others live heals to their step first; a hung replica's late commit of
    // the step it was in is not fresh.)
    int64_t highest_committed = -1;
    std::set<int64_t> redone; // in the current episode
    std::vector<bool> fresh(size_t(std::max(world, 0)), true);
    std::vector<int64_t> latest(size_t(std::max(world, 0)), -1); // each live process's last commit
    bool in_rollback = false;
    for (const Event& e : events) {
        const bool on_rank = e.rank >= 0 && e.rank < world;
        if (on_rank && (e.kind == EventKind::RankStarted || (e.kind == EventKind::Heal && e.value == 0)))
            fresh[size_t(e.rank)] = true;
        // A new process holds nothing yet, and a dead one nothing any more
        // (its restart may start after the others have gone back).
        if (on_rank && (e.kind == EventKind::RankStarted || e.kind == EventKind::ProcessExited))
            latest[size_t(e.rank)] = -1;
        if (e.kind == EventKind::Commit && on_rank) {
            // A live process that committed the step before this one (or a
            // later one) means the job did not go back: this replica joined
            // it (a healed replica's commit can be stamped before or after
            // its peers' commits of the same step).
            bool live_ahead = false;
            for (size_t r = 0; r < latest.size(); ++r)
                live_ahead = live_ahead || (int(r) != e.rank && latest[r] >= 0 && latest[r] >= e.step - 1);
            if (fresh[size_t(e.rank)] && e.step < highest_committed && !live_ahead) {
                m.steps_rolled_back += int64_t(redone.size()); // the episode it interrupts
                redone.clear();
                in_rollback = true;
                m.rollbacks += 1;
            }
            latest[size_t(e.rank)] = e.step;
            fresh[size_t(e.rank)] = false;
            if (e.step > highest_committed)
                in_rollback = false;
            else if (in_rollback)
                redone.insert(e.step);
            highest_committed = std::max<int64_t>(highest_committed, e.step);
        }
    }
    m.steps_rolled_back += int64_t(redone.size());
    for (const Event& e : events) {
        const bool on_rank = e.rank >= 0 && e.rank < world;
        if (e.kind == EventKind::Commit && on_rank)
            m.replicas[size_t(e.rank)].committed += 1;
        if (e.kind == EventKind::Abort && on_rank)
            m.replicas[size_t(e.rank)].aborted += 1;
        if (e.kind == EventKind::Heal && e.value == 0 && on_rank)
            m.replicas[size_t(e.rank)].heals += 1;
        if (e.kind == EventKind::QuorumFormed && e.rank < 0)
            quorum_ids.insert(int64_t(e.value));
    }
    for (const auto& r : m.replicas) {
        m.committed_total += r.committed;
        m.aborted_total += r.aborted;
    }
    m.quorums = int64_t(quorum_ids.size());

    const auto isFault = [](const Event& e) {
        const bool injected = e.kind == EventKind::FaultInjected && e.rank >= 0 &&
                              int(e.value) != faultActionTraits(FaultAction::Resume).event_code;
        return injected || e.kind == EventKind::LighthouseDown;
    };
    for (size_t i = 0; i < events.size(); ++i) {
        const Event& f = events[i];
        if (!isFault(f))
            continue;
        Recovery r;
        r.fault = faultLabel(f);
        r.replica = f.kind == EventKind::LighthouseDown ? -1 : f.rank;
        r.fault_ns = f.t_ns;
        const auto ms = [&](const Event& e) { return double(e.t_ns - f.t_ns) / 1e6; };
        // The window: up to the next fault on the same replica (or the
        // lighthouse's next stop); what happens after it belongs to that fault.
        size_t end = events.size();
        for (size_t k = i + 1; k < events.size(); ++k)
            if (isFault(events[k]) && (events[k].kind == EventKind::LighthouseDown
                                           ? r.replica == -1
                                           : r.replica >= 0 && sameGroup(events[k].rank, r.replica))) {
                end = k;
                break;
            }
        // 1. Detection.
        int64_t detected_ns = f.t_ns;
        for (size_t k = i + 1; k < end; ++k) {
            const Event& e = events[k];
            const bool other = e.rank >= 0 && (r.replica < 0 || !sameGroup(e.rank, r.replica));
            if ((e.kind == EventKind::ReplicaLost && r.replica >= 0 && sameGroup(e.rank, r.replica)) ||
                (other && e.kind == EventKind::Abort) || (other && e.phase == EventPhase::WorkFailed)) {
                r.detected_ms = ms(e);
                r.detected_by = e.kind == EventKind::ReplicaLost
                                    ? (e.value >= 2.0   ? "lighthouse: replaced by its restart"
                                       : e.value >= 1.0 ? "lighthouse: heartbeat timeout"
                                                        : "lighthouse: connection closed")
                                : e.kind == EventKind::Abort ? "a survivor aborted"
                                                             : "a survivor's collective failed";
                detected_ns = e.t_ns;
                break;
            }
        }
        // 2. The new quorum answers the fault: the first new quorum id after it
        // was detected (after the fault when nothing detects it: the
        // lighthouse, a slow-down). A quorum another replica's return formed
        // earlier is not this fault's.
        int64_t quorum_before = -1; // the quorum in force then, to tell a new one
        for (size_t k = 0; k < end && (k < i || events[k].t_ns < detected_ns); ++k)
            if (events[k].kind == EventKind::QuorumFormed && events[k].rank < 0)
                quorum_before = int64_t(events[k].value);
        int64_t heal_end_ns = -1;
        for (size_t k = i + 1; k < end; ++k) {
            const Event& e = events[k];
            const bool other = e.rank >= 0 && (r.replica < 0 || !sameGroup(e.rank, r.replica));
            if (r.new_quorum_ms < 0 && e.t_ns >= detected_ns && e.kind == EventKind::QuorumFormed &&
                e.rank < 0 && int64_t(e.value) != quorum_before) {
                r.new_quorum_ms = ms(e);
                r.new_quorum_id = int64_t(e.value);
            }
            if (r.survivors_commit_ms < 0 && e.kind == EventKind::Commit && other && r.new_quorum_ms >= 0)
                r.survivors_commit_ms = ms(e);
            if (r.restarted_ms < 0 && e.kind == EventKind::RankRestarted && e.rank == r.replica)
                r.restarted_ms = ms(e);
            if (r.heal_ms < 0 && e.kind == EventKind::Heal && e.value == 0 && e.rank == r.replica) {
                // a span's event is emitted when it ends; t_ns is its start
                r.heal_duration_ms = double(e.dur_ns) / 1e6;
                r.heal_ms = double(e.t_ns + e.dur_ns - f.t_ns) / 1e6;
                r.heal_bytes = e.bytes;
                r.heal_source = e.peer;
                r.heal_transport = healTransportName(HealTransport(e.seq)); // the Heal span's seq
                r.heal_chunks = int(e.group_size);
                heal_end_ns = e.t_ns + e.dur_ns;
            }
            if (r.rejoined_ms < 0 && e.kind == EventKind::Commit && e.rank == r.replica &&
                (heal_end_ns >= 0 ? e.t_ns >= heal_end_ns : r.new_quorum_ms >= 0))
                r.rejoined_ms = ms(e);
        }
        // No quorum change (a slow-down): the survivors' next commit after the fault.
        if (r.survivors_commit_ms < 0 && r.new_quorum_ms < 0)
            for (size_t k = i + 1; k < end; ++k)
                if (events[k].kind == EventKind::Commit && events[k].rank >= 0 &&
                    (r.replica < 0 || !sameGroup(events[k].rank, r.replica))) {
                    r.survivors_commit_ms = ms(events[k]);
                    break;
                }
        m.recoveries.push_back(r);
    }
    return m;
}

} // namespace dt
