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
//                  binary search (depth 0 = step, 1 = phases, 2 = per block).
//   comm spans     one per collective Work: scheduled, started, ended (or
//                  open while it has not completed: a hang looks like that),
//                  sorted by start.
//   counters       per kind: (t, step, value) in time order.
//   instants       lifecycle events (started, ready, finished, failed,
//                  checksum, fault injected, process exited).
#pragma once

#include "dtlab/events.hpp"
#include "dtlab/scenario.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace dt::app {

struct SpanRecord {
    int64_t t0 = 0;
    int64_t t1 = 0;              // == kOpen while a collective has not completed
    int64_t t_scheduled = 0;     // collectives: when it was queued
    int64_t bytes = 0;
    uint64_t seq = 0;
    int32_t step = -1;
    int16_t unit = -1;
    int16_t microbatch = -1;
    int16_t peer = -1;
    uint16_t group_size = 0;
    EventKind kind = EventKind::Step;
    uint8_t depth = 0;
    bool failed = false;
    static constexpr int64_t kOpen = INT64_MAX;
};

struct CounterPoint {
    int64_t t = 0;
    int32_t step = -1;
    double value = 0.0;
};

struct RankLane {
    static constexpr int kDepths = 3;
    std::array<std::vector<SpanRecord>, kDepths> compute; // each sorted by t0
    std::vector<SpanRecord> comm;                         // sorted by t0
    std::array<std::vector<CounterPoint>, size_t(EventKind::Count)> counters;
    std::vector<Event> instants;
};

class RunModel {
public:
    void reset(const Scenario& scenario, int world);
    void ingest(const Event* events, size_t count);      // any order per rank; cheap when nearly sorted
    void ingestLogs(const LogRecord* logs, size_t count);

    [[nodiscard]] int world() const { return int(m_lanes.size()); }
    [[nodiscard]] const Scenario& scenario() const { return m_scenario; }
    [[nodiscard]] const RankLane& lane(int rank) const { return m_lanes[size_t(rank)]; }
    [[nodiscard]] const std::vector<LogRecord>& logs() const { return m_logs; }
    [[nodiscard]] int64_t tBegin() const { return m_t_begin; }   // earliest event time, 0 if none
    [[nodiscard]] int64_t tEnd() const { return m_t_end; }       // latest event time
    [[nodiscard]] size_t eventCount() const { return m_event_count; }
    [[nodiscard]] bool empty() const { return m_event_count == 0; }

private:
    Scenario m_scenario;
    std::vector<RankLane> m_lanes;
    std::vector<LogRecord> m_logs;
    int64_t m_t_begin = 0;
    int64_t m_t_end = 0;
    size_t m_event_count = 0;
};

} // namespace dt::app
