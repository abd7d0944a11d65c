// run_model.hpp: what the views draw, built from the event stream.
//
// The GUI thread feeds new events each frame (from a live Session through
// Session::copyEventsSince, or all at once from a recording) and the views
// read lanes, counters and logs from here. No LibTorch, no ImGui: headless
// tests build it from synthetic events.
//
// Per rank:
//   compute spans  Span events (step, data, forward/backward per block,
//                  optimizer, wait, paused, slow delay), kept sorted by start
//                  per depth level so a view finds the visible range by
//                  binary search (depth 0 = step, 1 = phases, 2 = per block;
//                  for a pipeline: F / B / Bi / W per microbatch and chunk).
//   comm spans     one per collective Work: scheduled, started, ended (or
//                  open while it has not completed: a hang looks like that),
//                  sorted by start.
//   counters       per kind: (t, step, value) in time order.
//   instants       lifecycle events (started, ready, finished, failed,
//                  checksum, fault injected, process exited, checkpoints).
//   ft events      (fault tolerance, all ranks and the Session together)
//                  heartbeats, quorums, commits, aborts, lost replicas,
//                  restarts, the lighthouse down / up: the quorum view reads
//                  them; the per-step ones stay out of the event log.
//   clock          the latest ClockSync instant (offset applied, error bound).
//   unit events    FSDP's UnitMaterialized / UnitFreed instants, kept apart:
//                  several per unit and microbatch, so they would drown the
//                  lifecycle markers and the event log; the FSDP flow view
//                  reads them.
//   grad ready     GradReady instants (one per parameter per backward), kept
//                  apart for the same reason; the autograd view reads them.
//   swarm events   a SWARM run's own events (isSwarmEvent), whole: a span
//                  record keeps no value (forward or backward, the outer
//                  round), which the SWARM view needs. They also go where
//                  their phase puts them (spans, instants).
//
// Collectives: the parts of one collective on different ranks are matched by
// (group, kind, seq): a rank can be in several process groups (HSDP: its shard
// group and its replicate group), each numbering its Works from 0.
//
// Every sorted span vector has a twin "end_max" vector: end_max[i] is the
// largest end time among spans [0, i]. It never decreases, so a view can
// binary-search it for the first span that may still be visible at time t,
// even when a long span started far before the view (Tracy searches the end
// times directly because its zones never overlap within a depth; ours can,
// e.g. a queued collective next to a running one).
//
// Cost: ingest() is O(1) per event when events arrive nearly sorted per rank
// (they do: each rank sends in time order). Records are inserted from the
// back, so an event that is a little late moves only a few records.
#pragma once

#include "dtlab/events.hpp"
#include "dtlab/hung_collectives.hpp"
#include "dtlab/scenario.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace dt::app {

struct SpanRecord {
    int64_t t0 = 0;
    int64_t t1 = 0;          // == kOpen while a collective has not completed
    int64_t t_scheduled = 0; // collectives: when it was queued
    int64_t bytes = 0;
    uint64_t seq = 0;
    int32_t step = -1;
    int16_t unit = -1;
    int16_t microbatch = -1;
    int16_t peer = -1;
    uint16_t group_size = 0;
    EventKind kind = EventKind::Step;
    uint8_t group = 0; // collectives: process group id (Event::group; kGroupWorld = 0)
    uint8_t depth = 0; // compute: 0..2; comm spans: RankLane::kCommRow
    bool failed = false;
    bool started = true; // collectives: false while only scheduled (queued)
    static constexpr int64_t kOpen = INT64_MAX;

    [[nodiscard]] bool open() const { return t1 == kOpen; }
    // End time for drawing: an open span runs to `now`.
    [[nodiscard]] int64_t endOr(int64_t now) const { return t1 == kOpen ? (now > t0 ? now : t0) : t1; }
};

struct CounterPoint {
    int64_t t = 0;
    int32_t step = -1;
    double value = 0.0;
};

struct RankLane {
    static constexpr int kDepths = 3;
    static constexpr int kCommRow = kDepths;                   // row index of the comm spans
    std::array<std::vector<SpanRecord>, kDepths> compute;      // each sorted by t0
    std::array<std::vector<int64_t>, kDepths> compute_end_max; // prefix max of t1 (see top)
    std::vector<SpanRecord> comm;      // sorted by t0 (start, or scheduled while queued)
    std::vector<int64_t> comm_end_max; // prefix max of t1; kOpen after an open span
    std::array<std::vector<CounterPoint>, size_t(EventKind::Count)> counters;
    std::array<double, size_t(EventKind::Count)> counter_max{}; // largest value seen per counter kind
    std::vector<Event> instants;                                // lifecycle, sorted by t
    std::vector<Event> unit_events;                             // UnitMaterialized / UnitFreed, sorted by t
    std::vector<Event> grad_ready;                              // GradReady, sorted by t
    // The rank's latest ClockSync (kind == ClockSync once it sent one): the
    // offset it applies to its clock and that offset's error bound
    // (telemetry/clock_sync.hpp); kept apart from the instants (one every
    // 1.25 s from a rank on another host would drown the event log).
    Event clock_sync;
    int clock_syncs = 0;
    // Every ParamsChecksum of the rank, sorted by t (fault tolerant: one per
    // commit, kept out of the instants; the rank details show the one at the
    // cursor: checksumAt).
    std::vector<Event> checksums;
    [[nodiscard]] bool hasClock() const { return clock_syncs > 0; }

    // Row r: 0..kDepths-1 = compute depth, kCommRow = comm.
    [[nodiscard]] const std::vector<SpanRecord>& row(int r) const {
        return r == kCommRow ? comm : compute[size_t(r)];
    }
    [[nodiscard]] const std::vector<int64_t>& rowEndMax(int r) const {
        return r == kCommRow ? comm_end_max : compute_end_max[size_t(r)];
    }
};

// The rank's latest ParamsChecksum at or before t, or nullptr.
[[nodiscard]] const Event* checksumAt(const RankLane& lane, int64_t t);

// The instants the quorum view reads (fault tolerance).
[[nodiscard]] inline bool isFtEvent(EventKind kind) {
    switch (kind) {
    case EventKind::Heartbeat:
    case EventKind::QuorumFormed:
    case EventKind::Commit:
    case EventKind::Abort:
    case EventKind::ReplicaLost:
    case EventKind::RankRestarted:
    case EventKind::LighthouseDown:
    case EventKind::LighthouseUp:
    case EventKind::FaultInjected:
    case EventKind::ProcessExited:
    case EventKind::JobHeld: // the stopwatch counts run time without the holds
        return true;
    default:
        return false;
    }
}

// SWARM's own events (event_kinds.def; engine/src/swarm/): the SWARM view reads them whole.
[[nodiscard]] inline bool isSwarmEvent(EventKind kind) {
    switch (kind) {
    case EventKind::SwarmCall:
    case EventKind::SwarmServe:
    case EventKind::SwarmReroute:
    case EventKind::SwarmStageEmpty:
    case EventKind::SwarmJoined:
    case EventKind::SwarmOuterSync:
        return true;
    default:
        return false;
    }
}

// Why a collective never completed (RunModel::openCollectiveList): what its
// rank did after the collective started.
enum class OpenCollectiveFate : uint8_t {
    RankAlive, // nothing yet: in flight while the run is live (hung when it lasts); open when it stopped
    RankDied,  // its process was killed, failed, or restarted first: a fault left it open
    RankLeft,  // its rank finished and left (the job was done): nothing failed
};
struct OpenCollective {
    int rank = -1;
    SpanRecord span;
    OpenCollectiveFate fate = OpenCollectiveFate::RankAlive;
};

// A collective open this long is stuck, not in flight: the timeline hatches it
// red, and a rank waiting in it reads "waiting in all-reduce for 9.2 s". The
// same moment the hang diagnosis calls it hung (dtlab/hung_collectives.hpp).
inline constexpr int64_t kCollectiveStuckAfterNs = kCollectiveHungAfterNs;

// The diagnosis of the collective `rank`'s comm span `s` belongs to, or nullptr
// (a point-to-point span matches as its send: sender and receiver by group rank).
[[nodiscard]] const HungCollective* findHungFor(const std::vector<HungCollective>& hung, int rank,
                                                const SpanRecord& s);
// What the timeline writes on a hung span: "rank 1 never joined", "ranks {1,2}
// never joined", or "every rank started it".
[[nodiscard]] std::string missingRanksNote(const HungCollective& h);

// Compute depth of a span kind (0 = step, 1 = phase, 2 = per block); see run_model.cpp.
[[nodiscard]] int spanDepth(EventKind kind, int unit);

class RunModel {
  public:
    void reset(const Scenario& scenario, int world);
    void ingest(const Event* events, size_t count); // any order per rank; cheap when nearly sorted
    void ingestLogs(const LogRecord* logs, size_t count);

    [[nodiscard]] int world() const { return int(m_lanes.size()); }
    [[nodiscard]] const Scenario& scenario() const { return m_scenario; }
    [[nodiscard]] const RankLane& lane(int rank) const { return m_lanes[size_t(rank)]; }
    [[nodiscard]] const std::vector<LogRecord>& logs() const { return m_logs; } // sorted by t
    [[nodiscard]] int64_t tBegin() const { return m_t_begin; } // earliest event time, 0 if none
    [[nodiscard]] int64_t tEnd() const { return m_t_end; }     // latest event time
    // The latest end of an event that reports work done: not a heartbeat, a gate's paused span or
    // the job's hold, which go on while the run is held (a held picture's "now" reaches it).
    [[nodiscard]] int64_t tEndOfWork() const { return m_t_end_of_work; }
    [[nodiscard]] size_t eventCount() const { return m_event_count; }
    [[nodiscard]] bool empty() const { return m_event_count == 0; }

    // Lifecycle instants of every rank and of the Session (rank -1), plus one
    // record per failed collective (its WorkFailed event), in time order: what
    // the event log lists.
    [[nodiscard]] const std::vector<Event>& notable() const { return m_notable; }
    // Fault-tolerance instants of every rank and of the Session (isFtEvent), in time order.
    [[nodiscard]] const std::vector<Event>& ftEvents() const { return m_ft_events; }
    // Every BusBandwidth counter (the backend comparison), in arrival order, whole (backend, op, size).
    [[nodiscard]] const std::vector<Event>& busBandwidthEvents() const { return m_bus_bandwidth; }
    // Every SWARM event (isSwarmEvent) of every rank, whole, sorted by t (a span by its start).
    [[nodiscard]] const std::vector<Event>& swarmEvents() const { return m_swarm_events; }
    // Bumped by every reset/ingest: views cache derived data against it.
    [[nodiscard]] uint64_t generation() const { return m_generation; }
    // Collectives that started and have not completed or failed (a hang shows here).
    [[nodiscard]] size_t openCollectives() const;
    // The oldest collective `rank`'s current process (since its latest
    // RankStarted) started and has not completed or failed: what it waits in
    // (a peer hung or died). nullptr = none.
    [[nodiscard]] const SpanRecord* blockingCollective(int rank) const;
    // Those collectives, each with its fate, by rank then start (O(comm spans):
    // call it when openCollectives() > 0, and cache it against generation()).
    [[nodiscard]] std::vector<OpenCollective> openCollectiveList() const;
    // Hang diagnosis (dtlab/hung_collectives.hpp) of the collectives open or
    // failed so far: which ranks of each group started it, which never did.
    // Live: open at least hangThresholdNs(scenario) at now_ns; run_ended (a
    // finished run, a replay): every collective still open. Cost: O(open and
    // failed Works x ranks); cache it against generation() and now.
    [[nodiscard]] std::vector<HungCollective> hungCollectives(int64_t now_ns, bool run_ended) const;
    // The comm span of `rank` for one Work, or nullptr. group is the process
    // group id (Event::group); peer is -1 for group collectives, the root for
    // broadcast, the other rank for send/recv.
    [[nodiscard]] const SpanRecord* findComm(int rank, uint8_t group, EventKind kind, int peer,
                                             uint64_t seq) const;
    // The part of the same Work as `s` on another rank (same group, kind, peer, seq).
    [[nodiscard]] const SpanRecord* findPart(int rank, const SpanRecord& s) const {
        return findComm(rank, s.group, s.kind, s.peer, s.seq);
    }
    // The last step `rank` completed by time t (its latest Step span that ended
    // at or before t); -1 = none yet (a failure before its first step).
    [[nodiscard]] int lastStepBefore(int rank, int64_t t) const;
    // Latest value of a counter on a rank; false when none was seen.
    [[nodiscard]] bool lastCounter(int rank, EventKind kind, double& value) const;
    // True when any rank reported this counter kind.
    [[nodiscard]] bool hasCounter(EventKind kind) const;

  private:
    struct LaneIndex {
        // (group, kind, peer, seq) -> position in RankLane::comm, for pairing the
        // Work phases and for linking the parts of one collective across ranks.
        std::unordered_map<uint64_t, uint32_t> comm_by_key;
    };
    RankLane& laneFor(int rank);
    void ingestSpan(RankLane& lane, const Event& e);
    void ingestWork(int rank, const Event& e);
    void ingestCounter(RankLane& lane, const Event& e);
    void ingestInstant(const Event& e);

    Scenario m_scenario;
    std::vector<RankLane> m_lanes;
    std::vector<LaneIndex> m_index;
    std::vector<LogRecord> m_logs;
    std::vector<Event> m_notable;
    std::vector<Event> m_ft_events;
    std::vector<Event> m_bus_bandwidth;
    std::vector<Event> m_swarm_events;
    int64_t m_t_begin = 0;
    int64_t m_t_end = 0;
    int64_t m_t_end_of_work = 0;
    size_t m_event_count = 0;
    size_t m_open_collectives = 0;
    uint64_t m_generation = 0;
};

} // namespace dt::app
