// run_state_at.hpp: the state of a run at one moment T, derived only from the
// events with t <= T (as the RunModel holds them).
//
// It is one function of the events, so "the state at the time cursor" reads
// the same live and in a replay, and the views can show any moment the same
// way they show now. Per rank:
//   ranks      a RankProgress, as the Session keeps it live: the state
//              (starting, running, paused, hung, killed, failed, restarting,
//              healing, finished), the last completed (or, fault tolerant,
//              committed) step, pid, incarnation, commits and aborts, the last
//              loss and ms/step, the slow delay and whether it is partitioned.
//              host and link are not in the events: the app copies them from
//              the live progress or the recording (withHostsFrom).
//   memory     the latest sample per category (kMemoryCategories' order) and
//              each category's largest sample so far; the allocator's live and
//              peak bytes; host memory (optimizer offload)
//   bytes_sent the cumulative bytes sent (the cost model's counter) at T
// Run-wide: whether the lighthouse is down (its LighthouseDown / Up events).
//
// The state rules are the Session's (rank_table.cpp, rank_processes.cpp,
// replica_restarts.cpp) replayed on the events:
//   RankStarted             running (pid = value); a restarted replica
//                           (incarnation > 0) is healing until its first Commit
//   RankRestarted           starting, incarnation = value
//   FaultInjected           SIGSTOP: hung; SIGCONT: running again;
//                           partition: partitioned (until the Session logs
//                           "rank R: partition healed")
//   RankFinished, RankFailed   finished, failed
//   ProcessExited           0 after RankFinished: finished; -SIGKILL: killed;
//                           else failed; fault tolerant with restart = "auto"
//                           while no replica finished the job: restarting
//   a Paused span around T  paused (held at a step gate)
//   a SlowDelay span        the delay beyond [run] step_delay_ms (10 ms or more)
// Cost: per rank a binary search in its step and counter rows plus a walk
// over its lifecycle instants up to T; the fault-tolerance instants up to T
// once. Cheap enough for every frame of a playback.
#pragma once

#include "dtlab/session.hpp"
#include "model/run_model.hpp"

#include <array>
#include <cstdint>
#include <vector>

namespace dt::app {

// Memory of one rank at T, in the order of kMemoryCategories (view_inputs.hpp):
// parameters, gradients, optimizer state, activations, comm buffers.
struct RankMemoryAt {
    bool any = false;              // some category was reported by T
    std::array<int64_t, 5> now{};  // the latest sample of each category
    std::array<int64_t, 5> peak{}; // the largest sample of each category up to T
    double allocator_live = -1.0;  // MemLive; -1 = not reported
    double allocator_peak = -1.0;  // largest MemPeak up to T; -1 = not reported
    int64_t host_now = -1;         // MemHost (optimizer offload); -1 = not reported
    int64_t host_peak = -1;
    // The tracking allocator's own numbers, when the rank reports them:
    bool measured = false; // now/peak are the allocator's owner tags (else the strategy's bookkeeping)
    double temporaries_now = -1.0;  // MemMeasuredTemporaries; -1 = not reported
    double temporaries_peak = -1.0; // its largest sample up to T
    double startup_peak = -1.0;     // MemStartupPeak
    double rss = -1.0;              // MemRss (the latest)
};

struct RunStateAt {
    int64_t t_ns = 0;
    std::vector<RankProgress> ranks; // index = rank
    std::vector<RankMemoryAt> memory;
    std::vector<double> bytes_sent; // cumulative at T; -1 = none yet
    bool lighthouse_down = false;

    // Copy what the events do not carry (host, link) from another progress list.
    void withHostsFrom(const std::vector<RankProgress>& other);
};

// The state at t_ns, from the events with t <= t_ns alone.
[[nodiscard]] RunStateAt runStateAt(const RunModel& model, int64_t t_ns);

// The latest point at or before t_ns, or nullptr (points sorted by t).
[[nodiscard]] const CounterPoint* counterAt(const std::vector<CounterPoint>& points, int64_t t_ns);

} // namespace dt::app
