// hung_collectives.hpp: hang diagnosis. For every collective that has not
// completed, which ranks of its group started it and which never did.
//
// PyTorch's Flight Recorder analyzer reads each rank's ring buffer of
// collectives after a hang and reports "collective N: missing ranks {1}".
// dtlab has every rank's Work records in one place (the Session, a recording,
// the GUI's RunModel), so the same diagnosis is one pure function over them,
// live or after the run:
//
//   1. A collective is one Work across ranks, identified by (group, kind,
//      peer, seq): seq counts per process group (docs/architecture.md). A send
//      and its receive are the same collective: (group, sender, receiver, seq).
//   2. Each rank's part of it is: never seen, queued (WorkScheduled only),
//      started (WorkStarted), completed or failed.
//   3. It is listed when no rank completed it, some rank started it, and
//      either some started part is still open for at least `threshold_ns`
//      (live), the run has ended with it open, or it failed on some rank (a
//      Gloo timeout or a closed connection: the run failed waiting in it).
//   4. Its group's ranks come from `members` (the scenario's fixed groups,
//      groupMembersFor); a group not in it (a fault-tolerant quorum's group)
//      is taken to be the ranks that ever sent a Work record in it.
//   missing = group ranks that never started it (queued ones included).
//
// No LibTorch, no sockets: unit tests feed synthetic WorkParts.
#pragma once

#include "dtlab/events.hpp"
#include "dtlab/scenario.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dt {

// One rank's part of one Work (the Scheduled / Started / Completed | Failed
// records of that rank folded together).
struct WorkPart {
    int rank = -1;
    uint8_t group = kGroupWorld;
    EventKind kind = EventKind::AllReduce;
    int peer = -1; // group collectives: -1 (the root for broadcast); send/recv: the other rank in the group
    uint64_t seq = 0;
    int step = -1;
    int unit = -1;
    int microbatch = -1;
    int64_t t_scheduled = -1; // -1 = no WorkScheduled seen
    int64_t t_started = -1;   // -1 = never started (queued)
    int64_t t_ended = -1;     // -1 = still open
    bool failed = false;      // ended with WorkFailed
};

// Group id -> its global ranks in group-rank order (members[local rank] = global rank).
using GroupMembers = std::map<uint8_t, std::vector<int>>;

// The scenario's fixed process groups (rank_groups.cpp): world; hsdp's shard
// and replicate groups; side-by-side pipelines' data-parallel groups.
[[nodiscard]] GroupMembers groupMembersFor(const Scenario& scenario, int world);

// What a Work part's unit index means in sentences: "bucket" (ddp), "unit"
// (zero / fsdp / hsdp), "fragment" (diloco), "chunk" (pipeline), else "unit".
[[nodiscard]] const char* unitWordFor(StrategyKind kind);

// A collective open this long, with nothing failed or completed, is hung: 2 s,
// or the collective timeout when that is shorter (Gloo fails it then). Why
// 2 s: the slowest step of the shipped scenarios takes about 2.4 s, and a
// collective is open at most about as long as the slowest rank's compute
// before it joins, so a part open 2 s while a peer has not even started is
// no longer a straggler; the timeline hatches such a span red from the same
// moment (kCollectiveStuckAfterNs in the app).
inline constexpr int64_t kCollectiveHungAfterNs = 2'000'000'000;
[[nodiscard]] int64_t hangThresholdNs(const Scenario& scenario);

struct HangQuery {
    int64_t now_ns = 0;                            // the Session clock now (or the end of the run)
    int64_t threshold_ns = kCollectiveHungAfterNs; // open at least this long = hung (live)
    bool run_ended = false;                        // the run is over: anything still open is hung
    const char* unit_word = "unit";                // unitWordFor(strategy)
    bool name_microbatch = false;                  // say "microbatch M" (several microbatches per step)
};

// The query for a run of this scenario: its threshold, unit word and microbatches.
[[nodiscard]] HangQuery hangQueryFor(const Scenario& scenario, int64_t now_ns, bool run_ended);

struct HungCollective {
    uint8_t group = kGroupWorld;
    EventKind kind = EventKind::AllReduce;
    int peer = -1;   // as in WorkPart, for a send/recv: the receiver's group rank
    int sender = -1; // send/recv only: the sending group rank
    uint64_t seq = 0;
    int step = -1;
    int unit = -1;
    int microbatch = -1;
    std::vector<int> group_ranks;   // global ranks of its group (sorted)
    std::vector<int> started_ranks; // started it (open now, or failed after starting)
    std::vector<int> waiting_ranks; // started and still open (subset of started)
    std::vector<int> failed_ranks;  // started and failed (timeout, peer lost)
    std::vector<int> missing_ranks; // never started it (queued ones included)
    std::vector<int> queued_ranks;  // scheduled it and never started (subset of missing)
    int64_t open_since_ns = 0;      // the earliest start among its parts
    std::string what;               // "all-reduce bucket 2 of step 14"
    std::string diagnosis;          // what + ": ranks {0,2,3} waiting, rank 1 never joined"
};

// The diagnosis (steps above). Parts may be every Work part of the run or only
// those of the collectives in question; a rank's part that appears twice for
// one key (a restarted rank numbers from 0 again) counts by its latest start.
// Sorted by open_since_ns, then group, kind, seq.
[[nodiscard]] std::vector<HungCollective>
findHungCollectives(const std::vector<WorkPart>& parts, const GroupMembers& members, const HangQuery& query);

// Folds Work records into parts (events in per-rank time order, as a
// RunRecord holds them): Scheduled, Started and Completed | Failed of one
// (rank, group, kind, peer, seq); a phase seen twice starts a new part.
[[nodiscard]] std::vector<WorkPart> workPartsFromEvents(const std::vector<Event>& events);

// "{0,2,3}"
[[nodiscard]] std::string rankSetText(const std::vector<int>& ranks);

} // namespace dt
