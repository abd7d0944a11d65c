// recording.cpp: write and read run recordings (format in recording.hpp).
#include "dtlab/recording.hpp"

#include "dtlab/atomic_file.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/summary.hpp"

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <zlib.h>

namespace dt {
namespace {

using Json = nlohmann::json;
constexpr char kMagic[8] = {'D', 'T', 'L', 'A', 'B', 'R', 'E', 'C'};
constexpr size_t kEventsPerChunk = 65536;

void appendChunk(std::string& out, const char tag[4], const std::string& payload) {
    out.append(tag, 4);
    const uint32_t size = uint32_t(payload.size());
    out.append(reinterpret_cast<const char*>(&size), 4);
    out.append(payload);
    const uint32_t crc =
        uint32_t(crc32(0L, reinterpret_cast<const Bytef*>(payload.data()), uInt(payload.size())));
    out.append(reinterpret_cast<const char*>(&crc), 4);
}

std::string metaJson(const RunRecord& r) {
    Json j;
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
    return j.dump();
}

void applyMeta(RunRecord& r, const std::string& text) {
    const Json j = Json::parse(text);
    r.scenario = scenarioFromJson(j.at("scenario").dump());
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
}

} // namespace

void writeRecording(const RunRecord& record, const std::string& path) {
    std::string out(kMagic, 8);
    out.append(reinterpret_cast<const char*>(&kRecordingVersion), 4);
    const std::string meta = metaJson(record);
    appendChunk(out, "META", meta);
    for (size_t i = 0; i < record.events.size(); i += kEventsPerChunk) {
        const size_t n = std::min(kEventsPerChunk, record.events.size() - i);
        appendChunk(out, "EVTS",
                    std::string(reinterpret_cast<const char*>(record.events.data() + i), n * sizeof(Event)));
    }
    std::string logs;
    for (const auto& log : record.logs) {
        const uint8_t level = uint8_t(log.level);
        const uint32_t length = uint32_t(log.text.size());
        logs.append(reinterpret_cast<const char*>(&log.t_ns), 8);
        logs.append(reinterpret_cast<const char*>(&log.rank), 4);
        logs.append(reinterpret_cast<const char*>(&level), 1);
        logs.append(reinterpret_cast<const char*>(&length), 4);
        logs.append(log.text);
    }
    appendChunk(out, "LOGS", logs);
    appendChunk(out, "META", meta);
    appendChunk(out, "END ", "");
    writeFileAtomically(path, out);
}

RecordingLoad readRecording(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw UsageError("cannot open recording '" + path + "': " + std::strerror(errno));
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (bytes.size() < 12 || std::memcmp(bytes.data(), kMagic, 8) != 0)
        throw UsageError("'" + path + "' is not a dtlab recording (no DTLABREC header)");
    uint32_t version = 0;
    std::memcpy(&version, bytes.data() + 8, 4);
    // Versions 3 and 4 only appended event kinds and used a reserved byte
    // (Event::backend, 0 = gloo in older files), so versions 2 and 3 read the same.
    if (version < 2 || version > kRecordingVersion)
        throw UsageError("recording '" + path + "' has version " + std::to_string(version) +
                         "; this dtlab reads versions 2.." + std::to_string(kRecordingVersion));

    RecordingLoad load;
    bool have_meta = false;
    size_t at = 12;
    auto stop = [&](const std::string& why) {
        load.problem = why + " at byte " + std::to_string(at) + " of " + std::to_string(bytes.size()) +
                       "; loaded " + std::to_string(load.record.events.size()) + " events before it";
    };
    while (true) {
        if (at == bytes.size()) {
            stop("the recording ends without its END marker (truncated)");
            break;
        }
        if (at + 8 > bytes.size()) {
            stop("a torn chunk header");
            break;
        }
        char tag[5] = {0};
        std::memcpy(tag, bytes.data() + at, 4);
        uint32_t size = 0;
        std::memcpy(&size, bytes.data() + at + 4, 4);
        if (at + 8 + uint64_t(size) + 4 > bytes.size()) {
            stop(std::string("a truncated '") + tag + "' chunk");
            break;
        }
        const char* payload = bytes.data() + at + 8;
        uint32_t stored_crc = 0;
        std::memcpy(&stored_crc, payload + size, 4);
        if (uint32_t(crc32(0L, reinterpret_cast<const Bytef*>(payload), size)) != stored_crc) {
            stop(std::string("a corrupt '") + tag + "' chunk (CRC mismatch)");
            break;
        }
        const std::string_view t(tag, 4);
        if (t == "END ") {
            load.complete = true;
            break;
        }
        try {
            if (t == "META") {
                applyMeta(load.record, std::string(payload, size));
                have_meta = true;
            } else if (t == "EVTS") {
                if (size % sizeof(Event) != 0) {
                    stop("an events chunk whose size is not a multiple of 64");
                    break;
                }
                const size_t n = size / sizeof(Event);
                const size_t old = load.record.events.size();
                load.record.events.resize(old + n);
                std::memcpy(load.record.events.data() + old, payload, size);
            } else if (t == "LOGS") {
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
                    load.record.logs.push_back(std::move(log));
                }
            } // unknown chunk tags are skipped: newer writers may add chunks
        } catch (const std::exception& e) {
            stop(std::string("an unreadable '") + tag + "' chunk (" + e.what() + ")");
            break;
        }
        at += 8 + size + 4;
    }
    if (!have_meta)
        throw UsageError("recording '" + path + "' is unreadable: " + load.problem);
    return load;
}

} // namespace dt
