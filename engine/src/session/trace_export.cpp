// trace_export.cpp: Chrome trace JSON (dtrun --trace FILE) for Perfetto and chrome://tracing.
//
// Format: {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}.
//   ts, dur   microseconds (double) since record.t_start_ns
//   pid       0 = the Session ("session"), rank + 1 = rank N ("rank N")
//   tid       1 "compute"        X events from Span records
//             2 "communication"  X events from Work records (one per collective)
//             3 "lifecycle"      i events from Instant records
//   C events  one counter series per (rank, counter kind): args {"value": v} (tid 1)
//   s/f       flow arrows from the lowest rank's span of a collective (kind, seq)
//             to the same collective's span on every other rank
// Events are written one by one as they are found (one small json object each),
// so a long run never needs its whole trace in memory as one json tree.
// The layout is described in docs/summary.md.
#include "dtlab/summary.hpp"
#include "session/clock_report.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>
#include <utility>

namespace dt {
namespace {

using Json = nlohmann::ordered_json; // keeps "name", "ph", "ts" first: easier to read

constexpr int kTidCompute = 1;
constexpr int kTidCommunication = 2;
constexpr int kTidLifecycle = 3;

// Writes the traceEvents array one event at a time.
class EventWriter {
  public:
    explicit EventWriter(std::ostream& out) : m_out(out) {}

    void write(const Json& event) {
        m_out << (m_first ? "\n" : ",\n");
        // Error text may hold invalid UTF-8: replace it rather than throw halfway through a file.
        m_out << event.dump(-1, ' ', false, Json::error_handler_t::replace);
        m_first = false;
    }

  private:
    std::ostream& m_out;
    bool m_first = true;
};

int pidOf(int rank) {
    return rank >= 0 ? rank + 1 : 0;
}

// A metadata ("M") event: the name or sort order of a process or a track.
Json metadata(const char* name, int pid, int tid, Json args) {
    return Json{{"name", name}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

std::string checksumHex(uint64_t checksum) {
    char text[17];
    std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(checksum));
    return text;
}

// A collective that started and has not ended yet (per rank, kind, seq).
struct OpenWork {
    Event started;
    bool has_scheduled = false;
    int64_t scheduled_ns = 0;
};

class TraceExporter {
  public:
    TraceExporter(const RunRecord& record, std::ostream& out) : m_record(record), m_writer(out) {
        m_end_ns = record.t_end_ns;
        // Normally t_end_ns; later if the record was cut before its last event.
        for (const Event& e : record.events) {
            m_end_ns = std::max(m_end_ns, e.t_ns + std::max<int64_t>(e.dur_ns, 0));
        }
    }

    void run() {
        writeMetadata();
        for (const Event& e : m_record.events)
            writeEvent(e);
        // Collectives that started and never ended: a hang, drawn up to the end of the run.
        for (const auto& [key, open] : m_open) {
            (void)key;
            writeCollective(open, m_end_ns, nullptr, "never completed (hung)");
        }
        writeFlows();
    }

  private:
    using WorkKey = std::tuple<int, EventKind, uint64_t>; // (rank, kind, seq)
    using CollectiveId = std::pair<EventKind, uint64_t>;  // (kind, seq): one collective across ranks

    double us(int64_t t_ns) const { return static_cast<double>(t_ns - m_record.t_start_ns) / 1000.0; }

    // ---- process and track names ----------------------------------------------
    void writeMetadata() {
        int processes = static_cast<int>(m_record.ranks.size());
        for (const Event& e : m_record.events)
            processes = std::max(processes, e.rank + 1);
        for (int pid = 0; pid <= processes; ++pid) {
            const std::string name = pid == 0 ? "session" : "rank " + std::to_string(pid - 1);
            m_writer.write(metadata("process_name", pid, 0, {{"name", name}}));
            m_writer.write(metadata("process_sort_index", pid, 0, {{"sort_index", pid}}));
            const std::pair<int, const char*> tracks[] = {
                {kTidCompute, "compute"}, {kTidCommunication, "communication"}, {kTidLifecycle, "lifecycle"}};
            for (const auto& [tid, trackName] : tracks) {
                m_writer.write(metadata("thread_name", pid, tid, {{"name", trackName}}));
                m_writer.write(metadata("thread_sort_index", pid, tid, {{"sort_index", tid}}));
            }
        }
    }

    // ---- one recorded event -------------------------------------------------------
    void writeEvent(const Event& e) {
        switch (e.phase) {
        case EventPhase::Span:
            writeSpan(e);
            break;
        case EventPhase::Counter:
            writeCounter(e);
            break;
        case EventPhase::Instant:
            writeInstant(e);
            break;
        case EventPhase::WorkScheduled:
            m_scheduled[WorkKey{e.rank, e.kind, e.seq}] = e.t_ns;
            break;
        case EventPhase::WorkStarted:
            startCollective(e);
            break;
        case EventPhase::WorkCompleted:
            endCollective(e, "completed");
            break;
        case EventPhase::WorkFailed:
            endCollective(e, "failed");
            break;
        }
    }

    void writeSpan(const Event& e) {
        std::string name(eventKindLabel(e.kind));
        if (e.unit >= 0)
            name += " block " + std::to_string(e.unit);
        Json args = Json::object();
        if (e.step >= 0)
            args["step"] = e.step;
        if (e.microbatch >= 0)
            args["microbatch"] = e.microbatch;
        if (e.unit >= 0)
            args["unit"] = e.unit;
        if (e.bytes > 0)
            args["bytes"] = e.bytes;
        m_writer.write(Json{{"name", name},
                            {"cat", "compute"},
                            {"ph", "X"},
                            {"ts", us(e.t_ns)},
                            {"dur", static_cast<double>(std::max<int64_t>(e.dur_ns, 0)) / 1000.0},
                            {"pid", pidOf(e.rank)},
                            {"tid", kTidCompute},
                            {"args", args}});
    }

    void writeCounter(const Event& e) {
        const Json value = std::isfinite(e.value) ? Json(e.value) : Json(nullptr); // NaN is not JSON
        m_writer.write(Json{{"name", std::string(eventKindLabel(e.kind))},
                            {"cat", "counter"},
                            {"ph", "C"},
                            {"ts", us(e.t_ns)},
                            {"pid", pidOf(e.rank)},
                            {"tid", kTidCompute}, // counters are per process; tid 1 adds no thread
                            {"args", {{"value", value}}}});
    }

    void writeInstant(const Event& e) {
        Json args = Json::object();
        if (e.step >= 0)
            args["step"] = e.step;
        if (e.kind == EventKind::RankStarted)
            args["pid"] = static_cast<int64_t>(e.value);
        if (e.kind == EventKind::ProcessExited)
            args["status"] = static_cast<int64_t>(e.value);
        if (e.kind == EventKind::ParamsChecksum)
            args["checksum"] = checksumHex(e.seq);
        m_writer.write(Json{{"name", std::string(eventKindLabel(e.kind))},
                            {"cat", "lifecycle"},
                            {"ph", "i"},
                            {"s", "t"},
                            {"ts", us(e.t_ns)},
                            {"pid", pidOf(e.rank)},
                            {"tid", kTidLifecycle},
                            {"args", args}});
    }

    // ---- collectives: Work records paired by (rank, kind, seq) -----------------
    void startCollective(const Event& e) {
        const WorkKey key{e.rank, e.kind, e.seq};
        auto previous = m_open.find(key);
        if (previous != m_open.end()) { // started again before it ended: the first one hung
            writeCollective(previous->second, m_end_ns, nullptr, "never completed (hung)");
            m_open.erase(previous);
        }
        OpenWork open;
        open.started = e;
        auto scheduled = m_scheduled.find(key);
        if (scheduled != m_scheduled.end()) {
            open.has_scheduled = true;
            open.scheduled_ns = scheduled->second;
            m_scheduled.erase(scheduled);
        }
        m_open.emplace(key, open);
        noteCollectiveSpan(e.kind, e.seq, e.rank, e.t_ns);
    }

    void endCollective(const Event& e, const char* state) {
        const WorkKey key{e.rank, e.kind, e.seq};
        auto it = m_open.find(key);
        if (it != m_open.end()) {
            writeCollective(it->second, e.t_ns, &e, state);
            m_open.erase(it);
            return;
        }
        // An end without a start (the start was dropped): a zero-length span at the end.
        OpenWork alone;
        alone.started = e;
        writeCollective(alone, e.t_ns, &e, state);
        noteCollectiveSpan(e.kind, e.seq, e.rank, e.t_ns);
    }

    void writeCollective(const OpenWork& open, int64_t end_ns, const Event* end, const char* state) {
        const Event& s = open.started;
        Json args = Json::object();
        const int step = s.step >= 0 ? s.step : (end ? end->step : -1);
        if (step >= 0)
            args["step"] = step;
        args["seq"] = s.seq;
        args["bytes"] = s.bytes > 0 ? s.bytes : (end ? end->bytes : 0);
        args["group_size"] = s.group_size;
        if (s.peer >= 0)
            args["peer"] = s.peer;
        if (open.has_scheduled)
            args["queued_us"] = static_cast<double>(s.t_ns - open.scheduled_ns) / 1000.0;
        args["state"] = state;
        const double dur = static_cast<double>(std::max<int64_t>(end_ns - s.t_ns, 0)) / 1000.0;
        m_writer.write(Json{{"name", std::string(eventKindLabel(s.kind))},
                            {"cat", "collective"},
                            {"ph", "X"},
                            {"ts", us(s.t_ns)},
                            {"dur", dur},
                            {"pid", pidOf(s.rank)},
                            {"tid", kTidCommunication},
                            {"args", args}});
    }

    void noteCollectiveSpan(EventKind kind, uint64_t seq, int rank, int64_t t_ns) {
        // The first span of a rank for this collective is the one the arrows join.
        m_collectives[CollectiveId{kind, seq}].emplace(rank, t_ns);
    }

    // ---- flow arrows: lowest rank -> every other rank, per collective ----------
    void writeFlows() {
        uint64_t nextId = 1;
        for (const auto& [id, spans] : m_collectives) {
            if (spans.size() < 2)
                continue;
            const std::string name(eventKindLabel(id.first));
            const auto& [sourceRank, sourceStart] = *spans.begin(); // std::map: lowest rank first
            for (auto it = std::next(spans.begin()); it != spans.end(); ++it) {
                const auto& [targetRank, targetStart] = *it;
                const uint64_t flowId = nextId++;
                m_writer.write(Json{{"name", name},
                                    {"cat", "collective"},
                                    {"ph", "s"},
                                    {"id", flowId},
                                    {"ts", us(sourceStart)},
                                    {"pid", pidOf(sourceRank)},
                                    {"tid", kTidCommunication}});
                m_writer.write(Json{{"name", name},
                                    {"cat", "collective"},
                                    {"ph", "f"},
                                    {"bp", "e"},
                                    {"id", flowId},
                                    {"ts", us(targetStart)},
                                    {"pid", pidOf(targetRank)},
                                    {"tid", kTidCommunication}});
            }
        }
    }

    const RunRecord& m_record;
    EventWriter m_writer;
    int64_t m_end_ns = 0;                                         // where hung collectives end
    std::map<WorkKey, int64_t> m_scheduled;                       // WorkScheduled time, until its start
    std::map<WorkKey, OpenWork> m_open;                           // started, not yet ended
    std::map<CollectiveId, std::map<int, int64_t>> m_collectives; // rank -> its span's start
};

} // namespace

void writeChromeTrace(const RunRecord& record, std::ostream& out) {
    out << "{\"traceEvents\": [";
    TraceExporter(record, out).run();
    out << "\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": ";
    Json other;
    other["generator"] = "dtlab";
    other["scenario"] = record.scenario.name;
    other["strategy"] = strategyKindName(record.scenario.strategy.kind);
    other["ranks"] = record.ranks.size();
    other["steps_requested"] = record.scenario.run.steps;
    other["ok"] = record.ok;
    other["failure_reason"] = record.failure_reason;
    other["t_start_ns"] = record.t_start_ns;
    other["clock"] = clockReportJson(record); // per rank: offset applied and its error bound
    out << other.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n}\n";
}

} // namespace dt
