// recording.cpp: write and read run recordings (format in recording.hpp).
//
// Writing (RecordingWriter): check PATH, create PATH.partial, write the header
// and a first META; then chunks as the run goes (one write() each, so a crash
// cuts at most the chunk being written); at the end the final META and END,
// fsync, rename onto PATH, fsync the directory.
//
// Reading (readRecording): the header, then chunk after chunk while the CRCs
// check; at the first torn or corrupt chunk, stop and say what was lost. A
// version-5 file whose final META never came gets a rebuilt end state: not ok,
// ended at its last event, and a failure reason saying so.
#include "dtlab/recording.hpp"

#include "dtlab/atomic_file.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/read_file.hpp"
#include "dtlab/summary.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dt {
namespace {

using Json = nlohmann::json;
constexpr char kMagic[8] = {'D', 'T', 'L', 'A', 'B', 'R', 'E', 'C'};

std::string directoryOf(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    if (slash == std::string::npos)
        return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

const char* fileKind(const struct stat& st) {
    if (S_ISDIR(st.st_mode))
        return "a directory";
    if (S_ISLNK(st.st_mode))
        return "a symbolic link";
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
        return "a device";
    if (S_ISFIFO(st.st_mode))
        return "a FIFO";
    if (S_ISSOCK(st.st_mode))
        return "a socket";
    return "not a regular file";
}

std::string chunkBytes(const char tag[4], const std::string& payload) {
    std::string out(tag, 4);
    const uint32_t size = uint32_t(payload.size());
    out.append(reinterpret_cast<const char*>(&size), 4);
    out.append(payload);
    const uint32_t crc =
        uint32_t(crc32(0L, reinterpret_cast<const Bytef*>(payload.data()), uInt(payload.size())));
    out.append(reinterpret_cast<const char*>(&crc), 4);
    return out;
}

// A rank update (neither the first META nor the final one) leaves the scenario out.
std::string metaJson(const RunRecord& r, bool final_meta, bool with_scenario) {
    Json j;
    if (with_scenario)
        j["scenario"] = Json::parse(scenarioToJson(r.scenario));
    Json ranks = Json::array();
    for (const auto& info : r.ranks)
        ranks.push_back({{"rank", info.rank},
                         {"pid", info.pid},
                         {"host", info.host},
                         {"started", info.started},
                         {"exited", info.exited},
                         {"exit_code", info.exit_code},
                         {"signal", info.term_signal},
                         {"error", info.error}});
    j["ranks"] = ranks;
    j["ok"] = r.ok;
    j["failure_reason"] = r.failure_reason;
    j["t_start_ns"] = r.t_start_ns;
    j["t_end_ns"] = r.t_end_ns;
    j["final"] = final_meta;
    return j.dump();
}

// Returns whether this META is the run's final one. The first META has the scenario.
bool applyMeta(RunRecord& r, const std::string& text, bool first) {
    const Json j = Json::parse(text);
    if (first || j.contains("scenario")) {
        r.scenario = scenarioFromJson(j.at("scenario").dump());
        validateRecordedScenario(r.scenario); // 0 ranks or 2e9 layers would crash or hang a replay
    }
    r.ranks.clear();
    for (const auto& x : j.at("ranks")) {
        RankInfo info;
        info.rank = x.at("rank");
        info.pid = x.at("pid");
        info.host = x.at("host");
        info.started = x.at("started");
        info.exited = x.at("exited");
        info.exit_code = x.at("exit_code");
        info.term_signal = x.at("signal");
        info.error = x.at("error");
        r.ranks.push_back(info);
    }
    r.ok = j.at("ok");
    r.failure_reason = j.at("failure_reason");
    r.t_start_ns = j.at("t_start_ns");
    r.t_end_ns = j.at("t_end_ns");
    return j.value("final", false);
}

// Why this event cannot be shown ("" when it can): a kind or phase this dtlab does not know
// (the views index tables by kind), or a rank below -1 (the Session).
std::string eventProblem(const Event& e) {
    if (uint16_t(e.kind) >= uint16_t(EventKind::Count))
        return "an event of unknown kind " + std::to_string(uint16_t(e.kind));
    if (uint8_t(e.phase) > uint8_t(EventPhase::WorkFailed))
        return "an event of unknown phase " + std::to_string(uint8_t(e.phase));
    if (e.rank < -1)
        return "an event of rank " + std::to_string(e.rank);
    return "";
}

void appendLogs(std::vector<LogRecord>& out, const char* payload, size_t size) {
    size_t p = 0;
    while (p + 17 <= size) {
        LogRecord log;
        uint8_t level = 0;
        uint32_t length = 0;
        std::memcpy(&log.t_ns, payload + p, 8);
        std::memcpy(&log.rank, payload + p + 8, 4);
        std::memcpy(&level, payload + p + 12, 1);
        std::memcpy(&length, payload + p + 13, 4);
        p += 17;
        if (p + length > size)
            break;
        log.level = LogLevel(level > 2 ? 2 : level);
        log.text.assign(payload + p, length);
        p += length;
        out.push_back(std::move(log));
    }
}

// "+12.3 s": a time on the Session clock, from the start of the run.
std::string sinceStart(int64_t t_ns, int64_t t_start_ns) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "+%.1f s", double(t_ns - t_start_ns) / 1e9);
    return buf;
}

} // namespace

std::string partialRecordingPath(const std::string& path) {
    return path + ".partial";
}

void checkRecordingPath(const std::string& path) {
    if (path.empty())
        throw UsageError("no path given for the recording");
    const std::string dir = directoryOf(path);
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw UsageError("cannot record to '" + path + "': its directory '" + dir + "' does not exist");
    for (const std::string& p : {path, partialRecordingPath(path)})
        if (lstat(p.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
            throw UsageError("cannot record to '" + path + "': '" + p + "' is " + fileKind(st) +
                             ", and a recording only ever replaces a regular file; give another path");
    // The .partial is written while the run goes and renamed over PATH at its
    // end: one already there is another run's (a crashed one's recording,
    // which dtlab opens) or some file of the same name, and is never replaced.
    const std::string partial = partialRecordingPath(path);
    if (lstat(partial.c_str(), &st) == 0)
        throw UsageError("cannot record to '" + path + "': '" + partial +
                         "' already exists (a crashed run's recording? open it with dtlab, or move it) and "
                         "would be replaced; give another path");
}

// [SECTION] Writing --------------------------------------------------------------------

RecordingWriter::RecordingWriter(std::string path, const RunRecord& start)
    : m_path(std::move(path)), m_partial(partialRecordingPath(m_path)) {
    checkRecordingPath(m_path);
    m_meta.scenario = start.scenario;
    m_meta.ranks = start.ranks;
    m_meta.t_start_ns = start.t_start_ns;
    // O_EXCL | O_NOFOLLOW: whatever was put there since the check is refused, not replaced or followed.
    m_fd = ::open(m_partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (m_fd < 0)
        throw UsageError("cannot record to '" + m_partial + "': " + std::strerror(errno));
    std::string header(kMagic, 8);
    header.append(reinterpret_cast<const char*>(&kRecordingVersion), 4);
    const ssize_t n = ::write(m_fd, header.data(), header.size());
    try {
        if (n != ssize_t(header.size()))
            throw UsageError("cannot write the recording '" + m_partial + "': " + std::strerror(errno));
        writeMeta(m_meta, false, true);
    } catch (...) {
        discard(); // the destructor does not run when the constructor throws
        throw;
    }
}

RecordingWriter::~RecordingWriter() {
    if (m_fd >= 0)
        ::close(m_fd);
}

// One chunk, one write() (retried on a short write): the file grows by whole
// chunks unless the process dies inside this call.
void RecordingWriter::writeChunk(const char tag[4], const std::string& payload) {
    if (m_fd < 0)
        throw UsageError("the recording '" + m_partial + "' is closed");
    const std::string bytes = chunkBytes(tag, payload);
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(m_fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            throw UsageError("cannot write the recording '" + m_partial + "': " + std::strerror(errno));
        done += size_t(n);
    }
}

void RecordingWriter::writeEventChunk() {
    if (m_pending_events.empty())
        return;
    writeChunk("EVTS", std::string(reinterpret_cast<const char*>(m_pending_events.data()),
                                   m_pending_events.size() * sizeof(Event)));
    m_events_written += m_pending_events.size();
    m_pending_events.clear();
}

void RecordingWriter::writeMeta(const RunRecord& r, bool final_meta, bool with_scenario) {
    writeChunk("META", metaJson(r, final_meta, with_scenario));
}

void RecordingWriter::addEvents(const Event* events, size_t count) {
    for (size_t i = 0; i < count; ++i) {
        if (!m_pending_events.empty() && (m_pending_events.size() >= kEventsPerChunk ||
                                          events[i].t_ns - m_pending_events.front().t_ns >= kChunkSpanNs))
            writeEventChunk();
        m_pending_events.push_back(events[i]);
    }
    if (m_pending_events.size() >= kEventsPerChunk)
        writeEventChunk();
}

void RecordingWriter::addLogs(const LogRecord* logs, size_t count) {
    m_pending_logs.insert(m_pending_logs.end(), logs, logs + count);
}

void RecordingWriter::noteRanks(const std::vector<RankInfo>& ranks) {
    m_meta.ranks = ranks;
    writeMeta(m_meta, false, false);
}

void RecordingWriter::flush() {
    writeEventChunk();
    if (m_pending_logs.empty())
        return;
    std::string payload;
    for (const auto& log : m_pending_logs) {
        const uint8_t level = uint8_t(log.level);
        const uint32_t length = uint32_t(log.text.size());
        payload.append(reinterpret_cast<const char*>(&log.t_ns), 8);
        payload.append(reinterpret_cast<const char*>(&log.rank), 4);
        payload.append(reinterpret_cast<const char*>(&level), 1);
        payload.append(reinterpret_cast<const char*>(&length), 4);
        payload.append(log.text);
    }
    writeChunk("LOGS", payload);
    m_pending_logs.clear();
}

void RecordingWriter::finish(const RunRecord& end) {
    flush();
    writeMeta(end, true, true);
    writeChunk("END ", "");
    const int fd = m_fd;
    m_fd = -1;
    if (::fsync(fd) != 0 || ::close(fd) != 0)
        throw UsageError("cannot write the recording '" + m_partial + "': " + std::strerror(errno));
    struct stat st {};
    if (lstat(m_path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        throw UsageError("'" + m_path + "' became " + fileKind(st) +
                         " during the run: the recording stays in '" + m_partial + "'");
    if (::rename(m_partial.c_str(), m_path.c_str()) != 0)
        throw UsageError("cannot rename '" + m_partial + "' to '" + m_path + "': " + std::strerror(errno));
    syncDirectory(directoryOf(m_path));
}

void RecordingWriter::discard() {
    if (m_fd >= 0)
        ::close(m_fd);
    m_fd = -1;
    ::unlink(m_partial.c_str());
}

void writeRecording(const RunRecord& record, const std::string& path) {
    RecordingWriter writer(path, record);
    try {
        writer.addEvents(record.events.data(), record.events.size());
        writer.addLogs(record.logs.data(), record.logs.size());
        writer.finish(record);
    } catch (...) {
        writer.discard();
        throw;
    }
}

// [SECTION] Reading --------------------------------------------------------------------

RecordingLoad readRecording(const std::string& path) {
    const std::string bytes = readRegularFile(path, "recording"); // a directory or a device: a UsageError
    if (bytes.size() < 12 || std::memcmp(bytes.data(), kMagic, 8) != 0)
        throw UsageError("'" + path + "' is not a dtlab recording (no DTLABREC header)");
    uint32_t version = 0;
    std::memcpy(&version, bytes.data() + 8, 4);
    // Versions 3 and 4 only appended event kinds and used a reserved byte
    // (Event::backend, 0 = gloo in older files), so versions 2 and 3 read the
    // same; version 5 only adds META's "final" and writes as the run goes.
    if (version < 2 || version > kRecordingVersion)
        throw UsageError("recording '" + path + "' has version " + std::to_string(version) +
                         "; this dtlab reads versions 2.." + std::to_string(kRecordingVersion));

    RecordingLoad load;
    RunRecord& rec = load.record;
    bool have_meta = false;
    size_t at = 12;
    std::string cut; // why reading stopped before END ("" = it did not)
    while (true) {
        if (at == bytes.size()) {
            cut =
                "the file ends after byte " + std::to_string(at) + ", between chunks, without its END marker";
            break;
        }
        if (at + 8 > bytes.size()) {
            cut = "the file ends inside a chunk header at byte " + std::to_string(bytes.size());
            break;
        }
        char tag[5] = {0};
        std::memcpy(tag, bytes.data() + at, 4);
        uint32_t size = 0;
        std::memcpy(&size, bytes.data() + at + 4, 4);
        if (at + 8 + uint64_t(size) + 4 > bytes.size()) {
            cut = std::string("the file ends inside ") + (tag[0] == 'E' ? "an '" : "a '") + tag +
                  "' chunk at byte " + std::to_string(bytes.size()) + " (the chunk starts at byte " +
                  std::to_string(at) + ")";
            break;
        }
        const char* payload = bytes.data() + at + 8;
        uint32_t stored_crc = 0;
        std::memcpy(&stored_crc, payload + size, 4);
        if (uint32_t(crc32(0L, reinterpret_cast<const Bytef*>(payload), size)) != stored_crc) {
            cut = std::string("a corrupt '") + tag + "' chunk at byte " + std::to_string(at) +
                  " (CRC mismatch; nothing after it is read)";
            break;
        }
        const std::string_view t(tag, 4);
        if (t == "END ") {
            load.complete = true;
            at += 8 + size + 4;
            break;
        }
        try {
            if (t == "META") {
                const bool final_meta = applyMeta(rec, std::string(payload, size), !have_meta);
                have_meta = true;
                load.end_state_known = final_meta || version < 5; // 2-4 wrote the final META first
            } else if (t == "EVTS") {
                if (size % sizeof(Event) != 0) {
                    cut = "an events chunk at byte " + std::to_string(at) +
                          " whose size is not a multiple of 64";
                    break;
                }
                const size_t n = size / sizeof(Event);
                std::vector<Event> events(n);
                if (n > 0) // an empty chunk: no data() to copy into (memcpy with null is undefined)
                    std::memcpy(events.data(), payload, size);
                for (size_t i = 0; i < n && cut.empty(); ++i)
                    if (std::string problem = eventProblem(events[i]); !problem.empty())
                        cut = problem + " in the events chunk at byte " + std::to_string(at) +
                              " (nothing from that chunk on is read)";
                if (!cut.empty())
                    break;
                rec.events.insert(rec.events.end(), events.begin(), events.end());
            } else if (t == "LOGS") {
                appendLogs(rec.logs, payload, size);
            } // unknown chunk tags are skipped: newer writers may add chunks
        } catch (const std::exception& e) {
            cut = std::string("an unreadable '") + tag + "' chunk at byte " + std::to_string(at) + " (" +
                  e.what() + ")";
            break;
        }
        at += 8 + size + 4;
    }
    load.intact_bytes = at;
    if (!have_meta)
        throw UsageError("recording '" + path + "' is unreadable: " + (cut.empty() ? "it has no META" : cut));
    if (load.complete && load.end_state_known)
        return load;

    // What was lost. Events are in per-rank order, so the latest one read is
    // the one whose time bounds what survived.
    int64_t last_ns = 0;
    for (const Event& e : rec.events)
        last_ns = std::max(last_ns, e.t_ns);
    for (const LogRecord& log : rec.logs)
        last_ns = std::max(last_ns, log.t_ns);
    std::string lost;
    if (load.complete) {
        lost = "the END marker came before the run's final state"; // never written by RecordingWriter
        load.complete = false;
    } else {
        lost = cut + ": ";
        if (load.end_state_known)
            lost += "every event and the run's end state were read; only the END marker is missing";
        else if (rec.events.empty())
            lost += "every event is missing";
        else
            lost += "events after " + sinceStart(last_ns, rec.t_start_ns) + " are missing";
    }
    if (!load.end_state_known) {
        lost += "; the run's end state (exit codes, ok) was never written";
        // Rebuilt: the ranks as the last META left them, not ok, ended at the last thing recorded.
        rec.ok = false;
        rec.t_end_ns = std::max(last_ns, rec.t_start_ns);
        rec.failure_reason =
            "the recording stops at " + sinceStart(rec.t_end_ns, rec.t_start_ns) +
            ", before the run ended (its writer was cut off: a crash, or a killed dtrun or dtlab)";
    }
    load.problem = lost + " (loaded " + std::to_string(rec.events.size()) + " events)";
    return load;
}

} // namespace dt
