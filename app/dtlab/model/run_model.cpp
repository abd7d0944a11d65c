// run_model.cpp: sorting and pairing the event stream into lanes (see run_model.hpp).
//
// [SECTION] Sorted insertion helpers
// [SECTION] Reset and dispatch
// [SECTION] Compute spans
// [SECTION] Collectives (Work pairing)
// [SECTION] Counters, instants, logs
// [SECTION] Queries
#include "model/run_model.hpp"

#include "model/event_meaning.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <tuple>

namespace dt::app {
namespace {

// -----------------------------------------------------------------------------
// [SECTION] Sorted insertion helpers
// -----------------------------------------------------------------------------

// Events arrive nearly sorted per rank, so the right position is almost always
// the back. Walk back a few records; if that is not enough (a very late event)
// fall back to a binary search over the rest.
template <typename T, typename TimeOf>
size_t sortedPosition(const std::vector<T>& items, int64_t t, TimeOf timeOf) {
    size_t pos = items.size();
    for (int walked = 0; pos > 0 && timeOf(items[pos - 1]) > t; ++walked) {
        if (walked == 32) {
            auto it = std::upper_bound(items.begin(), items.begin() + ptrdiff_t(pos), t,
                                       [&](int64_t value, const T& item) { return value < timeOf(item); });
            return size_t(it - items.begin());
        }
        --pos;
    }
    return pos;
}

template <typename T, typename TimeOf>
size_t insertSorted(std::vector<T>& items, const T& item, int64_t t, TimeOf timeOf) {
    const size_t pos = sortedPosition(items, t, timeOf);
    items.insert(items.begin() + ptrdiff_t(pos), item);
    return pos;
}

// Recompute end_max[i] = max(t1 of spans[0..i]) from `from` on. Stops as soon
// as a stored value is already right: everything after it is then right too.
void refreshEndMax(const std::vector<SpanRecord>& spans, std::vector<int64_t>& end_max, size_t from) {
    int64_t m = from > 0 ? end_max[from - 1] : std::numeric_limits<int64_t>::min();
    for (size_t i = from; i < spans.size(); ++i) {
        m = std::max(m, spans[i].t1);
        if (i > from && end_max[i] == m)
            break;
        end_max[i] = m;
    }
}

const auto spanStart = [](const SpanRecord& s) { return s.t0; };

// One Work is identified on a rank by (group, kind, peer, seq): collectives
// number their seq per process group (peer -1, or the root for broadcast);
// send/recv number it per (direction, peer). Packed into 64 bits:
//   kind 8 | group 8 | peer + 1 16 | seq 32   (4 billion Works per group)
uint64_t commKey(uint8_t group, EventKind kind, int peer, uint64_t seq) {
    return (uint64_t(uint8_t(kind)) << 56) | (uint64_t(group) << 48) | (uint64_t(uint16_t(peer + 1)) << 32) |
           (seq & 0xFFFFFFFFull);
}
uint64_t commKey(const SpanRecord& s) {
    return commKey(s.group, s.kind, s.peer, s.seq);
}
static_assert(size_t(EventKind::Count) <= 256, "commKey packs the kind into 8 bits");

bool isUnitEvent(EventKind kind) {
    return kind == EventKind::UnitMaterialized || kind == EventKind::UnitFreed;
}

// Fault-tolerance instants that come every step (or every 100 ms): kept for
// the quorum view, out of the lifecycle markers and the event log. The
// lighthouse's own decisions (QuorumFormed on rank -1) stay notable.
bool isFrequentFtEvent(const Event& e, bool fault_tolerant) {
    switch (e.kind) {
    case EventKind::Heartbeat:
    case EventKind::Commit:
        return true;
    case EventKind::QuorumFormed:
        return e.rank >= 0;
    case EventKind::ParamsChecksum:
        return fault_tolerant; // one per commit
    default:
        return false;
    }
}

bool isHungState(const SpanRecord& s) {
    return s.started && s.open();
}

} // namespace

const HungCollective* findHungFor(const std::vector<HungCollective>& hung, int rank, const SpanRecord& s) {
    for (const HungCollective& h : hung) {
        if (h.group != s.group || h.seq != s.seq)
            continue;
        const bool p2p = s.kind == EventKind::Send || s.kind == EventKind::Recv;
        const bool same =
            p2p ? h.kind == EventKind::Send && (s.kind == EventKind::Send ? h.peer : h.sender) == s.peer
                : h.kind == s.kind && h.peer == s.peer;
        if (same && std::find(h.group_ranks.begin(), h.group_ranks.end(), rank) != h.group_ranks.end())
            return &h;
    }
    return nullptr;
}

std::string missingRanksNote(const HungCollective& h) {
    if (h.missing_ranks.empty())
        return "every rank started it";
    return (h.missing_ranks.size() == 1 ? "rank " + std::to_string(h.missing_ranks[0])
                                        : "ranks " + rankSetText(h.missing_ranks)) +
           " never joined";
}

const Event* checksumAt(const RankLane& lane, int64_t t) {
    auto it = std::upper_bound(lane.checksums.begin(), lane.checksums.end(), t,
                               [](int64_t v, const Event& e) { return v < e.t_ns; });
    return it == lane.checksums.begin() ? nullptr : &*(it - 1);
}

int spanDepth(EventKind kind, int unit) {
    switch (kind) {
    case EventKind::Step:
        return 0; // the whole step
    case EventKind::Forward:
    case EventKind::Backward:
    case EventKind::BackwardInput: // pipeline: unit = chunk, beside its F and B
    case EventKind::BackwardWeight:
    case EventKind::Recompute:
        return unit >= 0 ? 2 : 1; // per block (or pipeline chunk) : embed/head (-1) or whole backward (-2)
    case EventKind::QuorumWait:
        return 2; // fault tolerance: overlaps forward and backward (depth 1)
    default:
        return 1; // data, loss, optimizer, wait, paused, slow delay
    }
}

// -----------------------------------------------------------------------------
// [SECTION] Reset and dispatch
// -----------------------------------------------------------------------------

void RunModel::reset(const Scenario& scenario, int world) {
    m_scenario = scenario;
    m_lanes.assign(size_t(std::max(world, 0)), RankLane{});
    m_index.assign(m_lanes.size(), LaneIndex{});
    m_logs.clear();
    m_notable.clear();
    m_ft_events.clear();
    m_bus_bandwidth.clear();
    m_swarm_events.clear();
    m_t_begin = m_t_end = m_t_end_of_work = 0;
    m_event_count = 0;
    m_open_collectives = 0;
    ++m_generation;
}

RankLane& RunModel::laneFor(int rank) {
    if (size_t(rank) >= m_lanes.size()) { // a recording or a joined rank beyond the scenario's world
        m_lanes.resize(size_t(rank) + 1);
        m_index.resize(size_t(rank) + 1);
    }
    return m_lanes[size_t(rank)];
}

void RunModel::ingest(const Event* events, size_t count) {
    constexpr int kMaxRank = 1 << 15;
    for (size_t i = 0; i < count; ++i) {
        const Event& e = events[i];
        if (e.rank < -1 || e.rank >= kMaxRank)
            continue; // not a rank we can draw
        if (uint16_t(e.kind) >= uint16_t(EventKind::Count) ||
            uint8_t(e.phase) > uint8_t(EventPhase::WorkFailed))
            continue; // a kind or phase this build does not know: the lanes index tables by kind
        const int64_t end = e.phase == EventPhase::Span ? e.t_ns + std::max<int64_t>(e.dur_ns, 0) : e.t_ns;
        if (m_event_count == 0) {
            m_t_begin = e.t_ns;
            m_t_end = end;
        } else {
            m_t_begin = std::min(m_t_begin, e.t_ns);
            m_t_end = std::max(m_t_end, end);
        }
        ++m_event_count;
        if (e.kind != EventKind::Heartbeat && e.kind != EventKind::Paused && e.kind != EventKind::JobHeld)
            m_t_end_of_work = std::max(m_t_end_of_work, end);
        if (isSwarmEvent(e.kind) && e.rank >= 0) // whole, for the SWARM view (see run_model.hpp)
            insertSorted(m_swarm_events, e, e.t_ns, [](const Event& x) { return x.t_ns; });

        if (e.rank < 0) { // the Session itself: only instants mean something
            if (e.phase == EventPhase::Instant)
                ingestInstant(e);
            continue;
        }
        switch (e.phase) {
        case EventPhase::Span:
            ingestSpan(laneFor(e.rank), e);
            break;
        case EventPhase::Counter:
            ingestCounter(laneFor(e.rank), e);
            break;
        case EventPhase::Instant:
            ingestInstant(e);
            break;
        case EventPhase::WorkScheduled:
        case EventPhase::WorkStarted:
        case EventPhase::WorkCompleted:
        case EventPhase::WorkFailed:
            ingestWork(e.rank, e);
            break;
        }
    }
    if (count > 0)
        ++m_generation;
}

// -----------------------------------------------------------------------------
// [SECTION] Compute spans
// -----------------------------------------------------------------------------

// The fields a span takes from its event as they are (compute and comm alike).
static SpanRecord spanFromEvent(const Event& e) {
    SpanRecord s;
    s.t0 = e.t_ns;
    s.bytes = e.bytes;
    s.seq = e.seq;
    s.step = e.step;
    s.unit = e.unit;
    s.microbatch = e.microbatch;
    s.peer = e.peer;
    s.group_size = e.group_size;
    s.kind = e.kind;
    s.group = e.group;
    return s;
}

void RunModel::ingestSpan(RankLane& lane, const Event& e) {
    SpanRecord s = spanFromEvent(e);
    s.t1 = e.t_ns + std::max<int64_t>(e.dur_ns, 0);
    s.depth = uint8_t(spanDepth(e.kind, e.unit));
    auto& spans = lane.compute[s.depth];
    auto& end_max = lane.compute_end_max[s.depth];
    const size_t pos = insertSorted(spans, s, s.t0, spanStart);
    end_max.insert(end_max.begin() + ptrdiff_t(pos), 0);
    refreshEndMax(spans, end_max, pos);
}

// -----------------------------------------------------------------------------
// [SECTION] Collectives (Work pairing)
// -----------------------------------------------------------------------------
//
// Scheduled, Started and Completed/Failed of one Work become one SpanRecord:
//   t_scheduled  when it was queued,
//   t0           when it started (the scheduled time while it is only queued),
//   t1           when it completed or failed; kOpen until then.
// A record's position follows t0, so when Started moves t0 later the record
// bubbles right; the key index is patched for every record that moves.

void RunModel::ingestWork(int rank, const Event& e) {
    RankLane& lane = laneFor(rank);
    LaneIndex& index = m_index[size_t(rank)];
    auto& comm = lane.comm;
    const uint64_t key = commKey(e.group, e.kind, e.peer, e.seq);

    // The record now at `to` was at `from`: keep the key index pointing at it (only if it
    // pointed at that record: an older incarnation of a key keeps its slot).
    auto moved = [&](size_t from, size_t to) {
        auto it = index.comm_by_key.find(commKey(comm[to]));
        if (it != index.comm_by_key.end() && it->second == from)
            it->second = uint32_t(to);
    };

    auto found = index.comm_by_key.find(key);
    bool fresh = found == index.comm_by_key.end();
    if (!fresh) {
        // A phase this record has already seen means a new Work with the same
        // key (a restarted rank numbers its collectives from 0 again).
        const SpanRecord& r = comm[found->second];
        switch (e.phase) {
        case EventPhase::WorkScheduled:
            fresh = r.t_scheduled != 0;
            break;
        case EventPhase::WorkStarted:
            fresh = r.started;
            break;
        default:
            fresh = !r.open();
            break;
        }
    }

    if (fresh) {
        SpanRecord s = spanFromEvent(e);
        s.t1 = SpanRecord::kOpen;
        s.depth = uint8_t(RankLane::kCommRow);
        s.started = e.phase != EventPhase::WorkScheduled;
        if (e.phase == EventPhase::WorkScheduled)
            s.t_scheduled = e.t_ns;
        if (e.phase == EventPhase::WorkCompleted || e.phase == EventPhase::WorkFailed) {
            s.t1 = e.t_ns;
            s.failed = e.phase == EventPhase::WorkFailed;
        }
        const size_t pos = insertSorted(comm, s, s.t0, spanStart);
        for (size_t i = comm.size() - 1; i > pos; --i)
            moved(i - 1, i); // records after pos shifted by one
        index.comm_by_key[key] = uint32_t(pos);
        lane.comm_end_max.insert(lane.comm_end_max.begin() + ptrdiff_t(pos), 0);
        refreshEndMax(comm, lane.comm_end_max, pos);
        if (isHungState(s))
            ++m_open_collectives;
        if (s.failed)
            m_notable.insert(
                m_notable.begin() +
                    ptrdiff_t(sortedPosition(m_notable, e.t_ns, [](const Event& x) { return x.t_ns; })),
                e);
        return;
    }

    const size_t original = found->second;
    size_t idx = original;
    SpanRecord& r = comm[idx];
    const bool was_hung = isHungState(r);
    switch (e.phase) {
    case EventPhase::WorkScheduled:
        r.t_scheduled = e.t_ns; // Started came first; t0 stays the start
        break;
    case EventPhase::WorkStarted: {
        r.started = true;
        r.t0 = e.t_ns;
        // Keep the vector sorted by t0: bubble the record to its new place.
        while (idx + 1 < comm.size() && comm[idx + 1].t0 < comm[idx].t0) {
            std::swap(comm[idx], comm[idx + 1]);
            moved(idx + 1, idx); // its neighbour first (safe if both share a key)
            moved(idx, idx + 1); // then the Work we are updating
            ++idx;
        }
        while (idx > 0 && comm[idx - 1].t0 > comm[idx].t0) {
            std::swap(comm[idx], comm[idx - 1]);
            moved(idx - 1, idx);
            moved(idx, idx - 1);
            --idx;
        }
        break;
    }
    case EventPhase::WorkCompleted:
    case EventPhase::WorkFailed:
        r.t1 = std::max(e.t_ns, r.t0);
        r.failed = e.phase == EventPhase::WorkFailed;
        if (r.failed)
            m_notable.insert(
                m_notable.begin() +
                    ptrdiff_t(sortedPosition(m_notable, e.t_ns, [](const Event& x) { return x.t_ns; })),
                e);
        break;
    default:
        break;
    }
    const SpanRecord& now = comm[idx];
    const bool is_hung = isHungState(now);
    if (is_hung && !was_hung)
        ++m_open_collectives;
    if (!is_hung && was_hung)
        --m_open_collectives;
    // Start from the first position this update can have changed.
    refreshEndMax(comm, lane.comm_end_max, std::min(idx, original));
}

// -----------------------------------------------------------------------------
// [SECTION] Counters, instants, logs
// -----------------------------------------------------------------------------

void RunModel::ingestCounter(RankLane& lane, const Event& e) {
    // The backend comparison's counters carry backend, op and size: kept whole for the bandwidth view.
    if (e.kind == EventKind::BusBandwidth)
        m_bus_bandwidth.push_back(e);
    auto& points = lane.counters[size_t(e.kind)];
    double& m = lane.counter_max[size_t(e.kind)];
    m = points.empty() ? e.value : std::max(m, e.value);
    insertSorted(points, CounterPoint{e.t_ns, e.step, e.value}, e.t_ns,
                 [](const CounterPoint& p) { return p.t; });
}

void RunModel::ingestInstant(const Event& e) {
    const auto timeOf = [](const Event& x) { return x.t_ns; };
    if (isUnitEvent(e.kind)) { // frequent: for the FSDP flow view only (see run_model.hpp)
        if (e.rank >= 0)
            insertSorted(laneFor(e.rank).unit_events, e, e.t_ns, timeOf);
        return;
    }
    if (e.kind == EventKind::GradReady) { // frequent: for the autograd view only (see run_model.hpp)
        if (e.rank >= 0)
            insertSorted(laneFor(e.rank).grad_ready, e, e.t_ns, timeOf);
        return;
    }
    if (e.kind ==
        EventKind::GateWait) // the Session's cue (a rank begins to wait); the Paused span shows the wait
        return;
    if (e.kind == EventKind::ClockSync) { // the latest only (see RankLane::clock_sync)
        if (e.rank >= 0) {
            RankLane& lane = laneFor(e.rank);
            if (lane.clock_syncs == 0 || e.t_ns >= lane.clock_sync.t_ns)
                lane.clock_sync = e;
            ++lane.clock_syncs;
        }
        return;
    }
    if (e.kind == EventKind::ParamsChecksum && e.rank >= 0)
        insertSorted(laneFor(e.rank).checksums, e, e.t_ns, timeOf);
    if (m_scenario.fault_tolerance.enabled && isFtEvent(e.kind))
        insertSorted(m_ft_events, e, e.t_ns, timeOf);
    if (e.kind == EventKind::JobHeld) // the stopwatch's (above); the Paused spans show the holds
        return;
    if (isFrequentFtEvent(e, m_scenario.fault_tolerance.enabled))
        return;
    if (e.rank >= 0)
        insertSorted(laneFor(e.rank).instants, e, e.t_ns, timeOf);
    insertSorted(m_notable, e, e.t_ns, timeOf);
}

void RunModel::ingestLogs(const LogRecord* logs, size_t count) {
    for (size_t i = 0; i < count; ++i)
        insertSorted(m_logs, logs[i], logs[i].t_ns, [](const LogRecord& l) { return l.t_ns; });
    if (count > 0)
        ++m_generation;
}

// -----------------------------------------------------------------------------
// [SECTION] Queries
// -----------------------------------------------------------------------------

size_t RunModel::openCollectives() const {
    return m_open_collectives;
}

const SpanRecord* RunModel::blockingCollective(int rank) const {
    if (rank < 0 || size_t(rank) >= m_lanes.size() || m_open_collectives == 0)
        return nullptr;
    const RankLane& lane = m_lanes[size_t(rank)];
    int64_t started = std::numeric_limits<int64_t>::min(); // its current process's start
    for (const Event& e : lane.instants)
        if (e.kind == EventKind::RankStarted)
            started = e.t_ns;
    auto it = std::lower_bound(lane.comm_end_max.begin(), lane.comm_end_max.end(), SpanRecord::kOpen);
    for (size_t i = size_t(it - lane.comm_end_max.begin()); i < lane.comm.size(); ++i)
        if (isHungState(lane.comm[i]) && lane.comm[i].t0 >= started)
            return &lane.comm[i];
    return nullptr;
}

std::vector<OpenCollective> RunModel::openCollectiveList() const {
    std::vector<OpenCollective> out;
    if (m_open_collectives == 0)
        return out;
    for (int r = 0; r < world(); ++r) {
        const RankLane& lane = m_lanes[size_t(r)];
        // end_max turns kOpen at the first open span: nothing before it is open.
        auto it = std::lower_bound(lane.comm_end_max.begin(), lane.comm_end_max.end(), SpanRecord::kOpen);
        for (size_t i = size_t(it - lane.comm_end_max.begin()); i < lane.comm.size(); ++i) {
            const SpanRecord& s = lane.comm[i];
            if (!isHungState(s))
                continue;
            OpenCollective oc;
            oc.rank = r;
            oc.span = s;
            // The first end of the rank's process after the collective started.
            for (const Event& e : lane.instants) {
                if (e.t_ns < s.t0)
                    continue;
                const bool died = e.kind == EventKind::RankFailed || e.kind == EventKind::RankRestarted ||
                                  e.kind == EventKind::RankStarted || isRankDeath(e);
                const bool left =
                    e.kind == EventKind::RankFinished || (e.kind == EventKind::ProcessExited && e.value == 0);
                if (died || left) {
                    oc.fate = died ? OpenCollectiveFate::RankDied : OpenCollectiveFate::RankLeft;
                    break;
                }
            }
            out.push_back(oc);
        }
    }
    return out;
}

std::vector<HungCollective> RunModel::hungCollectives(int64_t now_ns, bool run_ended) const {
    // The candidates: every open span and every failed one (their WorkFailed records are notable).
    struct Candidate {
        int rank;
        const SpanRecord* span;
    };
    std::vector<Candidate> candidates;
    if (m_open_collectives > 0)
        for (int r = 0; r < world(); ++r) {
            const RankLane& lane = m_lanes[size_t(r)];
            auto it = std::lower_bound(lane.comm_end_max.begin(), lane.comm_end_max.end(), SpanRecord::kOpen);
            for (size_t i = size_t(it - lane.comm_end_max.begin()); i < lane.comm.size(); ++i)
                if (isHungState(lane.comm[i]))
                    candidates.push_back({r, &lane.comm[i]});
        }
    for (const Event& e : m_notable)
        if (e.phase == EventPhase::WorkFailed)
            if (const SpanRecord* s = findComm(e.rank, e.group, e.kind, e.peer, e.seq))
                candidates.push_back({e.rank, s});
    if (candidates.empty())
        return {};

    // Every rank's part of each candidate's collective (a send's receive on its peer).
    std::vector<WorkPart> parts;
    std::set<std::tuple<int, uint64_t>> taken; // (rank, commKey)
    auto add = [&](int rank, const SpanRecord& s) {
        if (!taken.insert({rank, commKey(s)}).second)
            return;
        WorkPart p;
        p.rank = rank;
        p.group = s.group;
        p.kind = s.kind;
        p.peer = s.peer;
        p.seq = s.seq;
        p.step = s.step;
        p.unit = s.unit;
        p.microbatch = s.microbatch;
        p.t_scheduled = s.t_scheduled != 0 ? s.t_scheduled : -1;
        p.t_started = s.started ? s.t0 : -1;
        p.t_ended = s.open() ? -1 : s.t1;
        p.failed = s.failed;
        parts.push_back(p);
    };
    for (const Candidate& c : candidates) {
        const SpanRecord& s = *c.span;
        if (s.kind == EventKind::Send || s.kind == EventKind::Recv) {
            add(c.rank, s);
            const EventKind other = s.kind == EventKind::Send ? EventKind::Recv : EventKind::Send;
            if (const SpanRecord* p = findComm(s.peer, s.group, other, c.rank, s.seq))
                add(s.peer, *p); // the world group's peers are global ranks
            continue;
        }
        for (int r = 0; r < world(); ++r)
            if (const SpanRecord* p = findPart(r, s))
                add(r, *p);
    }
    return findHungCollectives(parts, groupMembersFor(m_scenario, world()),
                               hangQueryFor(m_scenario, now_ns, run_ended));
}

const SpanRecord* RunModel::findComm(int rank, uint8_t group, EventKind kind, int peer, uint64_t seq) const {
    if (rank < 0 || size_t(rank) >= m_lanes.size())
        return nullptr;
    const auto& map = m_index[size_t(rank)].comm_by_key;
    auto it = map.find(commKey(group, kind, peer, seq));
    return it == map.end() ? nullptr : &m_lanes[size_t(rank)].comm[it->second];
}

int RunModel::lastStepBefore(int rank, int64_t t) const {
    if (rank < 0 || size_t(rank) >= m_lanes.size())
        return -1;
    const std::vector<SpanRecord>& steps = m_lanes[size_t(rank)].compute[0];
    auto it = std::upper_bound(steps.begin(), steps.end(), t,
                               [](int64_t v, const SpanRecord& s) { return v < s.t0; });
    while (it != steps.begin()) {
        --it;
        if (it->kind == EventKind::Step && it->t1 <= t)
            return it->step;
    }
    return -1;
}

bool RunModel::lastCounter(int rank, EventKind kind, double& value) const {
    if (rank < 0 || size_t(rank) >= m_lanes.size())
        return false;
    const auto& points = m_lanes[size_t(rank)].counters[size_t(kind)];
    if (points.empty())
        return false;
    value = points.back().value;
    return true;
}

bool RunModel::hasCounter(EventKind kind) const {
    for (const auto& lane : m_lanes)
        if (!lane.counters[size_t(kind)].empty())
            return true;
    return false;
}

} // namespace dt::app
