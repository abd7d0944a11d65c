// recording.hpp: a run saved to disk, for `dtlab --replay FILE`.
//
// Format (little-endian), version 5:
//   magic "DTLABREC" (8 bytes), u32 version
//   chunks until the end: {char tag[4], u32 payload_bytes, payload, u32 crc32(payload)}
//     "META"  JSON: scenario, ranks (pid, host, exit), ok, failure_reason, t_start_ns,
//             t_end_ns, final (version 5: true only in the run's last META). A META
//             between the first and the final one updates the ranks: no scenario
//     "EVTS"  Event records, 64 bytes each (events.hpp; kWireVersion layout),
//             at most kEventsPerChunk of them, spanning at most kChunkSpanNs of run
//     "LOGS"  repeated {i64 t_ns, i32 rank, u8 level, u32 length, text}
//     "END "  empty: the writer finished
//
// The file is written as the run goes (RecordingWriter): the header and a
// first META (final = false), then EVTS and LOGS chunks appended as they fill
// (the Session flushes every 0.25 s), a META again whenever a rank starts or
// exits, and at the end the final META and END. So a file cut anywhere (a
// crash, a killed dtlab) still holds every chunk before the cut.
//
// A reader keeps every chunk whose CRC checks and stops at the first torn or
// corrupt one, saying what was lost ("the file ends inside an 'EVTS' chunk at
// byte N: events after +12.3 s are missing; the run's end state (exit codes,
// ok) was never written"). The last META read wins; without the final one the
// run counts as not ok and ends at its last event.
//
// Where the stream goes: RecordingWriter writes `PATH.partial` and renames it
// onto PATH only when finish() succeeds, so a finished run never leaves half
// a file at PATH and a crash leaves PATH.partial, which `dtlab --replay` opens.
#pragma once

#include "dtlab/run_record.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dt {

constexpr uint32_t kRecordingVersion =
    5; // 2: event kinds renumbered (FSDP, checkpoints), Event::group; 3: fault-tolerance kinds appended; 4:
       // Event::backend (was reserved, 0 = gloo), BusBandwidth appended; 5: written as the run goes, in
       // small chunks, META's "final" (2, 3 and 4 still read)

constexpr size_t kEventsPerChunk = 512;            // events in one EVTS chunk, at most
constexpr int64_t kChunkSpanNs = 250'000'000;      // run time one EVTS chunk spans, at most
constexpr int64_t kRecordingFlushNs = 250'000'000; // the Session writes what is pending this often

struct RecordingLoad {
    RunRecord record;
    bool complete = false;        // END chunk reached, every chunk intact
    bool end_state_known = false; // the run's final META was read (versions 2-4: any META)
    size_t intact_bytes = 0;      // the header and the intact chunks: where reading stopped
    std::string problem;          // empty when complete; else what was lost and where
};

// Where the stream of a recording goes, as the Session reports it.
struct RecordingStatus {
    std::string path;         // the finished recording ("" = this run is not recorded)
    std::string partial_path; // path + ".partial": written while the run goes
    size_t events_written = 0;
    bool finished = false; // renamed onto `path`
    std::string error;     // writing failed: what happened (the .partial keeps what was written)
};

// `path` + ".partial".
[[nodiscard]] std::string partialRecordingPath(const std::string& path);

// Throws UsageError unless `path` can take a recording: its directory exists,
// and neither it nor its .partial is anything but a regular file (a
// directory, a device, a symlink are refused, never replaced).
void checkRecordingPath(const std::string& path);

// Streams one run to `PATH.partial` (format above). Not thread-safe: one
// thread (the Session's monitor) calls it. Write errors throw UsageError; what
// was written before stays in the .partial.
class RecordingWriter {
  public:
    // checkRecordingPath, then creates PATH.partial (replacing an older one) and
    // writes the header and a first META from `start` (scenario, ranks, t_start_ns).
    RecordingWriter(std::string path, const RunRecord& start);
    // Without finish() (the owner died or gave up) the .partial stays as it is.
    ~RecordingWriter();
    RecordingWriter(const RecordingWriter&) = delete;
    RecordingWriter& operator=(const RecordingWriter&) = delete;

    // Buffered; an EVTS chunk is written as soon as kEventsPerChunk events or
    // kChunkSpanNs of run time are pending.
    void addEvents(const Event* events, size_t count);
    void addLogs(const LogRecord* logs, size_t count);
    // A META with the ranks as they are now (a rank started, exited, said hello).
    void noteRanks(const std::vector<RankInfo>& ranks);
    // Write what is pending (events, logs) as chunks now.
    void flush();
    // Pending chunks, the final META from `end`, END; fsync; rename onto PATH.
    void finish(const RunRecord& end);
    // Remove the .partial (a run that never started).
    void discard();

    [[nodiscard]] const std::string& path() const { return m_path; }
    [[nodiscard]] const std::string& partialPath() const { return m_partial; }
    [[nodiscard]] size_t eventsWritten() const { return m_events_written; }

  private:
    void writeChunk(const char tag[4], const std::string& payload);
    void writeEventChunk();
    void writeMeta(const RunRecord& r, bool final_meta, bool with_scenario);

    std::string m_path;
    std::string m_partial;
    int m_fd = -1;
    RunRecord m_meta; // scenario, ranks, t_start_ns: the non-final METAs
    std::vector<Event> m_pending_events;
    std::vector<LogRecord> m_pending_logs;
    size_t m_events_written = 0;
};

// The whole record at once (File > Save recording): the same chunks through a
// RecordingWriter, so PATH is replaced only by a complete file. Throws UsageError.
void writeRecording(const RunRecord& record, const std::string& path);

// Throws UsageError if the file cannot be opened or is not a recording at all
// (bad magic or version, or no META); a torn or corrupt tail loads what came before it.
[[nodiscard]] RecordingLoad readRecording(const std::string& path);

} // namespace dt
