// recovery_measure.cpp: recoveries and commit counts from a run's events
// (definitions in recovery_measure.hpp). Events arrive per rank in order but
// ranks interleave, so they are sorted by time first.
#include "dtlab/recovery_measure.hpp"

#include "dtlab/fault_action.hpp"
#include "dtlab/scenario.hpp"

#include <algorithm>
#include <cstdint>
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

std::vector<JobHold> jobHolds(const std::vector<Event>& events) {
    std::vector<JobHold> holds;
    for (const Event& e : events) {
        if (e.kind != EventKind::JobHeld || e.rank >= 0)
            continue;
        const bool open = !holds.empty() && holds.back().t1 == INT64_MAX;
        if (e.value != 0.0 && !open)
            holds.push_back({e.t_ns, INT64_MAX});
        else if (e.value == 0.0 && open)
            holds.back().t1 = e.t_ns;
    }
    return holds;
}

int64_t heldWithin(const std::vector<JobHold>& holds, int64_t t0, int64_t t1) {
    int64_t held = 0;
    for (const JobHold& h : holds)
        held += std::max<int64_t>(0, std::min(h.t1, t1) - std::max(h.t0, t0));
    return held;
}

int64_t heldNsBetween(const std::vector<Event>& events, int64_t t0, int64_t t1) {
    return heldWithin(jobHolds(events), t0, t1);
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
    // Rollbacks: every replica was down at once (no live process held a
    // committed step: each had died or was a new process that had not
    // committed yet), so the restarted ones went back, to the newest durable
    // checkpoint or to step 0, and redo steps the job had committed. The
    // episode starts at the first commit of such a step after that moment,
    // however the replicas got their state (one may resume from the
    // checkpoint and the others heal from it), and lasts until the job
    // passes its old highest step; every step committed in it counts once.
    // If every replica goes down again before that, a new episode starts, and
    // its steps count again. A quorum of members that all hold no step starts
    // an episode too, even while a replica outside it is alive (fenced). (A replica restarted while another
    // lives heals to the live step; a hung replica's late commit of the step it was in is not after everyone
    // died.)
    int64_t highest_committed = -1;
    int64_t down_at = -1;      // the highest committed step when every replica was last down at once
    bool down_pending = false; // every replica was down, and no step has been redone since
    std::set<int64_t> redone;  // in the current episode
    std::vector<int64_t> latest(size_t(std::max(world, 0)), -1); // each live process's last commit
    bool in_rollback = false;
    for (const Event& e : events) {
        const bool on_rank = e.rank >= 0 && e.rank < world;
        // A new process holds nothing yet, and a dead one nothing any more.
        // (A process that finished the job, exit code 0, does not start an episode.)
        const bool started = e.kind == EventKind::RankStarted;
        const bool died = e.kind == EventKind::ProcessExited && e.value != 0;
        if (on_rank && (started || e.kind == EventKind::ProcessExited)) {
            latest[size_t(e.rank)] = -1;
            const bool none_holds =
                std::all_of(latest.begin(), latest.end(), [](int64_t step) { return step < 0; });
            if ((started || died) && none_holds && highest_committed >= 0) {
                down_at = highest_committed;
                down_pending = true;
            }
        }
        // A quorum whose members all hold no step (e.bytes: its highest member step) after the job
        // committed some starts the job over, whoever is still alive outside it: a replica the
        // fresh start went ahead without (fenced, lighthouse.hpp rule 5b) loses its newer steps.
        if (e.kind == EventKind::QuorumFormed && e.rank < 0 && e.bytes == 0 && highest_committed >= 0 &&
            !down_pending) {
            down_at = highest_committed;
            down_pending = true;
        }
        if (e.kind == EventKind::Commit && on_rank) {
            if (down_pending && e.step <= down_at) {
                m.steps_rolled_back += int64_t(redone.size()); // the episode it interrupts
                redone.clear();
                in_rollback = true;
                down_pending = false;
                m.rollbacks += 1;
            } else if (down_pending && e.step > down_at) {
                down_pending = false; // went on past its old highest step: nothing was redone
            }
            latest[size_t(e.rank)] = e.step;
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
    const std::vector<JobHold> holds = jobHolds(events);
    for (size_t i = 0; i < events.size(); ++i) {
        const Event& f = events[i];
        if (!isFault(f))
            continue;
        Recovery r;
        r.fault = faultLabel(f);
        r.replica = f.kind == EventKind::LighthouseDown ? -1 : f.rank;
        r.fault_ns = f.t_ns;
        // Run time from the fault: the time the job was held in between does not count.
        const auto runMs = [&](int64_t t) {
            const int64_t held = heldWithin(holds, f.t_ns, t);
            r.held_ms = std::max(r.held_ms, double(held) / 1e6);
            return double(t - f.t_ns - held) / 1e6;
        };
        const auto ms = [&](const Event& e) { return runMs(e.t_ns); };
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
                r.heal_ms = runMs(e.t_ns + e.dur_ns);
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
