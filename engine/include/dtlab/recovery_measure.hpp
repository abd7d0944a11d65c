// recovery_measure.hpp: what fault tolerance did in a run, measured from its
// events (no LibTorch): one Recovery per injected fault, and per replica the
// steps it committed and the steps it attempted and aborted.
//
// For a fault on replica r injected at t0 (the Session's FaultInjected, or
// LighthouseDown for the lighthouse), each time is the first event after t0,
// and before the next fault on the same replica (or the lighthouse's next
// stop: what follows belongs to that fault), of:
//   detected      the lighthouse lost r (ReplicaLost: its connection closed,
//                 or its heartbeats stopped), or another replica aborted a
//                 step or saw a collective fail; detected_by names which
//   new_quorum    a quorum formed (the lighthouse's QuorumFormed, rank -1)
//                 with a new quorum id, at or after `detected` (after t0 when
//                 nothing detects the fault: the lighthouse, a slow-down); a
//                 quorum formed before the fault was seen answers something
//                 else (another replica coming back)
//   survivors_commit  a Commit by a replica other than r after new_quorum
//                 (after t0 when no new quorum formed: a slow-down)
//   restarted     RankRestarted of r
//   heal          r's receiving Heal span after t0: source, bytes, duration
//   rejoined      r's first Commit after its heal (after t0 without a heal)
// A time never reached is -1. Durations are in ms of run time from t0: the
// time the Session held the job (JobHeld: a presenter's pause, a hold at an
// event) is not counted, since the job's clock stood still then; held_ms says
// how much of it there was up to the latest phase. So detected <= new_quorum
// <= survivors_commit, and restarted <= heal <= rejoined.
#pragma once

#include "dtlab/events.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dt {

struct Recovery {
    std::string
        fault; // "kill", "hang", "slow", "fail_collective", "nan_gradients", "partition", "lighthouse", ...
    int replica = -1; // -1 = the lighthouse
    int64_t fault_ns = 0;
    double detected_ms = -1;
    // Who noticed first: "lighthouse: connection closed", "lighthouse: heartbeat timeout",
    // "lighthouse: replaced by its restart" (detection by heartbeat, restarted before the timeout),
    // "a survivor's collective failed", "a survivor aborted" ("" = not detected).
    std::string detected_by;
    double new_quorum_ms = -1;
    int64_t new_quorum_id = -1;
    double survivors_commit_ms = -1;
    double restarted_ms = -1;
    double heal_ms = -1; // when the heal ended
    double heal_duration_ms = -1;
    int64_t heal_bytes = 0;
    int heal_source = -1;
    std::string heal_transport; // "pg" or "http" (healTransportName), "" = no heal
    int heal_chunks = 0;        // http: the parallel fetches (0 = one)
    double rejoined_ms = -1;
    double held_ms = 0; // the job was held this long between the fault and its latest phase (not counted)
};

// The job's holds (JobHeld events, rank -1) as [t0, t1) intervals, t1 =
// INT64_MAX while still held; `events` sorted by time.
struct JobHold {
    int64_t t0, t1;
};
[[nodiscard]] std::vector<JobHold> jobHolds(const std::vector<Event>& events);
// How long the job was held within [t0, t1]; a hold still open at t1 counts up to t1.
[[nodiscard]] int64_t heldWithin(const std::vector<JobHold>& holds, int64_t t0, int64_t t1);
[[nodiscard]] int64_t heldNsBetween(const std::vector<Event>& events, int64_t t0, int64_t t1);

struct ReplicaCommits {
    int64_t committed = 0; // Commit events
    int64_t aborted = 0;   // Abort events
    int64_t heals = 0;     // receiving Heal spans
};

struct RecoveryMeasure {
    std::vector<Recovery> recoveries;
    std::vector<ReplicaCommits> replicas; // index = rank
    int64_t committed_total = 0;
    int64_t aborted_total = 0;
    int64_t quorums = 0; // distinct quorum ids issued
    // Steps committed again after the job had already committed them: when
    // every replica was down at once, the restarted ones went back (to the
    // newest durable checkpoint, or to step 0) and redid them. 0 when some
    // replica survived every fault. rollbacks: how many times that happened;
    // a step redone in two rollbacks counts twice.
    int64_t steps_rolled_back = 0;
    int64_t rollbacks = 0;
};

// group_size: ranks per replica group (ftGroupSize; 1 = every rank is one).
// A fault's survivors are the ranks of the other groups; its own group's
// ranks go down with it.
[[nodiscard]] RecoveryMeasure measureRecoveries(const std::vector<Event>& events, int world,
                                                int group_size = 1);

// "kill", "hang", ... for a FaultInjected event (its value is the action's event_code, fault_actions.def).
[[nodiscard]] std::string faultLabel(const Event& fault_injected);

} // namespace dt
