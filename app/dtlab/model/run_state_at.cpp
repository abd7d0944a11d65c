// run_state_at.cpp: the state of a run at one moment, from its events (see run_state_at.hpp).
#include "model/run_state_at.hpp"

#include "dtlab/fault_action.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <string>

namespace dt::app {

namespace {

// A step's SlowDelay beyond [run] step_delay_ms shorter than this is the sleep's overshoot.
constexpr double kMinSlowMs = 10.0;

// The memory counters in kMemoryCategories' order (view_inputs.hpp keeps the same list),
// as the strategy's bookkeeping and as the allocator measured them.
constexpr std::array<EventKind, 5> kCategories = {
    EventKind::MemParameters,  EventKind::MemGradients,   EventKind::MemOptimizer,
    EventKind::MemActivations, EventKind::MemCommBuffers,
};
constexpr std::array<EventKind, 5> kMeasuredCategories = {
    EventKind::MemMeasuredParameters,  EventKind::MemMeasuredGradients,   EventKind::MemMeasuredOptimizer,
    EventKind::MemMeasuredActivations, EventKind::MemMeasuredCommBuffers,
};

// Latest value and largest value up to p (the samples; the summary has the allocator's exact peaks).
void latestAndPeak(const std::vector<CounterPoint>& points, const CounterPoint* p, double& now,
                   double& peak) {
    now = p->value;
    peak = 0.0;
    for (const CounterPoint* q = points.data(); q <= p; ++q)
        peak = std::max(peak, q->value);
}

// The last span of a row that ended by t (rows are sorted by start; steps do not overlap).
const SpanRecord* lastEndedBy(const std::vector<SpanRecord>& row, int64_t t, EventKind kind) {
    auto it =
        std::upper_bound(row.begin(), row.end(), t, [](int64_t v, const SpanRecord& s) { return v < s.t0; });
    for (int walked = 0; it != row.begin() && walked < 64; ++walked) {
        --it;
        if (it->kind == kind && !it->open() && it->t1 <= t)
            return &*it;
    }
    return nullptr;
}

// A span of `kind` in a row that covers t (started by t, not ended before it).
bool inSpan(const std::vector<SpanRecord>& row, int64_t t, EventKind kind) {
    auto it =
        std::upper_bound(row.begin(), row.end(), t, [](int64_t v, const SpanRecord& s) { return v < s.t0; });
    for (int walked = 0; it != row.begin() && walked < 16; ++walked) {
        --it;
        if (it->kind == kind && it->t1 > t)
            return true;
    }
    return false;
}

RankMemoryAt memoryAt(const RankLane& lane, int64_t t) {
    RankMemoryAt m;
    // Measured when the allocator reported by t; else the strategy's bookkeeping (an older recording).
    m.measured = counterAt(lane.counters[size_t(EventKind::MemMeasuredParameters)], t) != nullptr;
    const auto& categories = m.measured ? kMeasuredCategories : kCategories;
    for (size_t c = 0; c < categories.size(); ++c) {
        const auto& points = lane.counters[size_t(categories[c])];
        const CounterPoint* p = counterAt(points, t);
        if (!p)
            continue;
        m.any = true;
        double now = 0.0, peak = 0.0;
        latestAndPeak(points, p, now, peak);
        m.now[c] = int64_t(std::llround(now));
        m.peak[c] = int64_t(std::llround(peak));
    }
    const auto& temporaries = lane.counters[size_t(EventKind::MemMeasuredTemporaries)];
    if (const CounterPoint* p = counterAt(temporaries, t))
        latestAndPeak(temporaries, p, m.temporaries_now, m.temporaries_peak);
    const auto& startup = lane.counters[size_t(EventKind::MemStartupPeak)];
    if (const CounterPoint* p = counterAt(startup, t))
        m.startup_peak = p->value;
    if (const CounterPoint* p = counterAt(lane.counters[size_t(EventKind::MemRss)], t))
        m.rss = p->value;
    if (const CounterPoint* p = counterAt(lane.counters[size_t(EventKind::MemLive)], t))
        m.allocator_live = p->value;
    const auto& peaks = lane.counters[size_t(EventKind::MemPeak)];
    if (const CounterPoint* p = counterAt(peaks, t)) {
        m.allocator_peak = 0.0;
        for (const CounterPoint* q = peaks.data(); q <= p; ++q)
            m.allocator_peak = std::max(m.allocator_peak, q->value);
    }
    const auto& host = lane.counters[size_t(EventKind::MemHost)];
    if (const CounterPoint* p = counterAt(host, t)) {
        m.host_now = int64_t(std::llround(p->value));
        double peak = 0.0;
        for (const CounterPoint* q = host.data(); q <= p; ++q)
            peak = std::max(peak, q->value);
        m.host_peak = int64_t(std::llround(peak));
    }
    return m;
}

// A partition ends with the Session's log line "rank R: partition healed" (not an event).
bool partitionHealedAfter(const RunModel& model, int rank, int64_t since, int64_t t) {
    const std::string prefix = "rank " + std::to_string(rank) + ": partition healed";
    const auto& logs = model.logs();
    auto it = std::lower_bound(logs.begin(), logs.end(), since,
                               [](const LogRecord& l, int64_t v) { return l.t_ns < v; });
    for (; it != logs.end() && it->t_ns <= t; ++it)
        if (it->rank < 0 && it->text.rfind(prefix, 0) == 0)
            return true;
    return false;
}

} // namespace

const CounterPoint* counterAt(const std::vector<CounterPoint>& points, int64_t t_ns) {
    auto it = std::upper_bound(points.begin(), points.end(), t_ns,
                               [](int64_t v, const CounterPoint& p) { return v < p.t; });
    return it == points.begin() ? nullptr : &*(it - 1);
}

void RunStateAt::withHostsFrom(const std::vector<RankProgress>& other) {
    for (size_t r = 0; r < ranks.size() && r < other.size(); ++r) {
        ranks[r].host = other[r].host;
        ranks[r].link_mbit_s = other[r].link_mbit_s;
        ranks[r].link_latency_ms = other[r].link_latency_ms;
        if (ranks[r].pid == 0)
            ranks[r].pid = other[r].pid;
    }
}

RunStateAt runStateAt(const RunModel& model, int64_t t) {
    RunStateAt st;
    st.t_ns = t;
    const Scenario& scenario = model.scenario();
    const bool ft = scenario.fault_tolerance.enabled;
    const int world = model.world();
    st.ranks.resize(size_t(world));
    st.memory.resize(size_t(world));
    st.bytes_sent.assign(size_t(world), -1.0);

    // Fault tolerance: commits, aborts, the lighthouse, and whether some replica finished the job.
    std::vector<int64_t> last_commit_t(size_t(world), -1);
    bool job_done = false;
    for (const Event& e : model.ftEvents()) {
        if (e.t_ns > t)
            break;
        const bool on_rank = e.rank >= 0 && e.rank < world;
        if (e.kind == EventKind::Commit && on_rank) {
            RankProgress& p = st.ranks[size_t(e.rank)];
            p.step = e.step;
            p.committed = e.step + 1;
            last_commit_t[size_t(e.rank)] = e.t_ns;
        } else if (e.kind == EventKind::Abort && on_rank) {
            st.ranks[size_t(e.rank)].aborted += 1;
        } else if (e.kind == EventKind::LighthouseDown) {
            st.lighthouse_down = true;
        } else if (e.kind == EventKind::LighthouseUp) {
            st.lighthouse_down = false;
        }
    }
    if (ft)
        for (int r = 0; r < world && !job_done; ++r)
            for (const Event& e : model.lane(r).instants) {
                if (e.t_ns > t)
                    break;
                job_done = job_done || (e.kind == EventKind::RankFinished && e.value == 0);
            }

    for (int r = 0; r < world; ++r) {
        const RankLane& lane = model.lane(r);
        RankProgress& p = st.ranks[size_t(r)];
        p.rank = r;
        bool finished_seen = false;
        int64_t healing_since = -1;
        int64_t partitioned_since = -1;
        for (const Event& e : lane.instants) {
            if (e.t_ns > t)
                break;
            switch (e.kind) {
            case EventKind::RankStarted:
                p.pid = int(e.value);
                p.state = ft && p.incarnation > 0 ? RankState::Healing : RankState::Running;
                healing_since = p.state == RankState::Healing ? e.t_ns : -1;
                break;
            case EventKind::RankReady:
                if (p.state == RankState::Pending || p.state == RankState::Starting)
                    p.state = RankState::Running;
                break;
            case EventKind::RankRestarted:
                p.incarnation = int(e.value);
                p.state = RankState::Starting;
                finished_seen = false;
                break;
            case EventKind::RankFinished:
                finished_seen = true;
                p.state = RankState::Finished;
                break;
            case EventKind::RankFailed:
                p.state = RankState::Failed;
                break;
            case EventKind::FaultInjected: {
                const int code = int(std::lround(e.value));
                if (code == SIGSTOP && p.state != RankState::Killed && p.state != RankState::Failed)
                    p.state = RankState::Hung;
                else if (code == SIGCONT && p.state == RankState::Hung)
                    p.state = RankState::Running;
                else if (code == faultActionTraits(FaultAction::Partition).event_code)
                    partitioned_since = e.t_ns;
                break;
            }
            case EventKind::ProcessExited: {
                const int status = int(std::lround(e.value));
                if (status == 0 && finished_seen)
                    p.state = RankState::Finished;
                else if (status == -SIGKILL)
                    p.state = RankState::Killed;
                else
                    p.state = RankState::Failed;
                if (ft && p.state != RankState::Finished && scenario.fault_tolerance.restart == "auto" &&
                    !job_done)
                    p.state = RankState::Restarting;
                partitioned_since = -1;
                break;
            }
            default:
                break;
            }
        }
        p.partitioned = partitioned_since >= 0 && !partitionHealedAfter(model, r, partitioned_since, t);
        // A healing replica is back once it committed a step.
        if (p.state == RankState::Healing && last_commit_t[size_t(r)] > healing_since)
            p.state = RankState::Running;
        // Held at a step gate (pause, step mode, pace) at T.
        if (p.state == RankState::Running && inSpan(lane.compute[1], t, EventKind::Paused))
            p.state = RankState::Paused;

        // The last completed step (fault tolerant: the committed one, above) and its time.
        if (const SpanRecord* s = lastEndedBy(lane.compute[0], t, EventKind::Step)) {
            if (!ft)
                p.step = s->step;
            p.last_step_ms = double(s->t1 - s->t0) / 1e6;
            // The slow delay of that step beyond the scenario's own step_delay_ms, as measured: a
            // sleep overshoots by a few ms, so less than kMinSlowMs counts as none. (unit -3: a
            // fault-tolerant traffic delay before an all-reduce, not the step's.)
            if (const SpanRecord* d = lastEndedBy(lane.compute[1], t, EventKind::SlowDelay);
                d && d->step == s->step && d->unit != -3) {
                const double extra = double(d->t1 - d->t0) / 1e6 - scenario.run.step_delay_ms;
                p.delay_ms = extra >= kMinSlowMs ? std::round(extra) : 0.0;
            }
        }
        if (const CounterPoint* loss = counterAt(lane.counters[size_t(EventKind::LossValue)], t))
            p.last_loss = loss->value;
        if (const CounterPoint* sent = counterAt(lane.counters[size_t(EventKind::BytesSent)], t))
            st.bytes_sent[size_t(r)] = sent->value;
        st.memory[size_t(r)] = memoryAt(lane, t);
    }
    return st;
}

} // namespace dt::app
