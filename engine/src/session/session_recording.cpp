// session_recording.cpp: the run streamed to its recording as it goes
// (SessionOptions::record_path; the format is in recording.hpp).
//
//   start()        open RECORD_PATH.partial: the header and a first META
//   monitor tick   take the new events, logs and changed ranks (mutex held,
//                  a copy), then write them (no mutex): full chunks at once,
//                  everything pending every kRecordingFlushNs, a META when a
//                  rank started or exited
//   end of run     the last batch, the final META and END, rename onto
//                  RECORD_PATH; only then does Session::finished() say true
//
// A write error does not stop the run: it is logged, the recording stops, and
// the .partial keeps what was written. A process killed mid-run leaves the
// .partial, which readRecording loads up to the last whole chunk.
#include "session/session_impl.hpp"

#include <algorithm>

namespace dt {
namespace {

bool sameRanks(const std::vector<RankInfo>& a, const std::vector<RankInfo>& b) {
    auto same = [](const RankInfo& x, const RankInfo& y) {
        return x.rank == y.rank && x.pid == y.pid && x.host == y.host && x.started == y.started &&
               x.exited == y.exited && x.exit_code == y.exit_code && x.term_signal == y.term_signal &&
               x.error == y.error;
    };
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), same);
}

} // namespace

void Session::Impl::startRecording() {
    if (options.record_path.empty())
        return;
    recorder = std::make_unique<RecordingWriter>(options.record_path, record);
    recording.path = recorder->path();
    recording.partial_path = recorder->partialPath();
    recorded_ranks = record.ranks;
    last_recording_flush_ns = monotonicNowNs();
}

void Session::Impl::takeRecordingBatch(bool ended) {
    if (!recorder)
        return;
    RecordingBatch& b = recording_batch;
    b.events.assign(record.events.begin() + std::ptrdiff_t(recorded_events), record.events.end());
    b.logs.assign(record.logs.begin() + std::ptrdiff_t(recorded_logs), record.logs.end());
    recorded_events = record.events.size();
    recorded_logs = record.logs.size();
    b.ranks_changed = !sameRanks(record.ranks, recorded_ranks);
    if (b.ranks_changed) {
        recorded_ranks = record.ranks;
        b.ranks = record.ranks;
    }
    recording.events_written = recorder->eventsWritten();
    if (ended) {
        b.end.scenario = record.scenario;
        b.end.ranks = record.ranks;
        b.end.t_start_ns = record.t_start_ns;
        b.end.t_end_ns = record.t_end_ns;
        b.end.ok = record.ok;
        b.end.failure_reason = record.failure_reason;
    }
}

void Session::Impl::writeRecordingBatch(bool ended) {
    if (!recorder)
        return;
    const RecordingBatch& b = recording_batch;
    try {
        recorder->addEvents(b.events.data(), b.events.size());
        recorder->addLogs(b.logs.data(), b.logs.size());
        if (b.ranks_changed)
            recorder->noteRanks(b.ranks);
        const int64_t now = monotonicNowNs();
        if (now - last_recording_flush_ns >= kRecordingFlushNs) {
            recorder->flush();
            last_recording_flush_ns = now;
        }
        if (!ended)
            return;
        recorder->finish(b.end);
        std::lock_guard<std::mutex> lock(mutex);
        recording.events_written = recorder->eventsWritten();
        recording.finished = true;
    } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex);
        recording.error = e.what();
        log(LogLevel::Warning, std::string("the recording stopped: ") + e.what() +
                                   "; what was written stays in " + recording.partial_path);
    }
    recorder.reset(); // finished, or given up: the .partial keeps what was written
}

} // namespace dt
