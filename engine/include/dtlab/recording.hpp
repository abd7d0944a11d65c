// recording.hpp: a run saved to disk, for `dtlab --replay FILE`.
//
// Format (little-endian), version 1:
//   magic "DTLABREC" (8 bytes), u32 version
//   chunks until the end: {char tag[4], u32 payload_bytes, payload, u32 crc32(payload)}
//     "META"  JSON: scenario, ranks (pid, host, exit), ok, failure_reason, t_start_ns, t_end_ns
//     "EVTS"  Event records, 64 bytes each (events.hpp; kWireVersion layout)
//     "LOGS"  repeated {i64 t_ns, i32 rank, u8 level, u32 length, text}
//     "END "  empty: the writer finished
// A reader keeps every chunk whose CRC checks and stops at the first torn or
// corrupt one, reporting what was lost. META is written first and again just
// before END (the final state wins).
#pragma once

#include "dtlab/run_record.hpp"

#include <string>

namespace dt {

constexpr uint32_t kRecordingVersion =
    4; // 2: event kinds renumbered (FSDP, checkpoints), Event::group; 3: fault-tolerance kinds appended; 4:
       // Event::backend (was reserved, 0 = gloo), BusBandwidth appended (2 and 3 still read)

struct RecordingLoad {
    RunRecord record;
    bool complete = false; // END chunk reached, every chunk intact
    std::string problem;   // empty when complete; else what was lost and where
};

// Writes atomically (temp file + rename). Throws UsageError on I/O failure.
void writeRecording(const RunRecord& record, const std::string& path);

// Throws UsageError if the file cannot be opened or is not a recording at all
// (bad magic or version); a torn or corrupt tail loads what came before it.
[[nodiscard]] RecordingLoad readRecording(const std::string& path);

} // namespace dt
