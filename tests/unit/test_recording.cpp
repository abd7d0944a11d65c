// test_recording.cpp: recordings written as the run goes, and read back after a cut.
//
// The run: 4 ranks, 8,232 events over about 10 s of Session time, fed to a
// RecordingWriter the way the Session's monitor feeds it (a batch every 20 ms,
// a flush every 250 ms, a META when rank 2 exits, logs on the way), then
// finished. The test walks the file's chunks itself, so "the events of the
// chunks before the cut" is worked out independently of readRecording.
#include "dtlab/errors.hpp"
#include "dtlab/recording.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

using dt::Event;
using dt::EventKind;
using dt::EventPhase;

constexpr int64_t kStartNs = 5'000'000'000;
constexpr int64_t kMs = 1'000'000;
constexpr int kRanks = 4;
constexpr size_t kEvents = 8232;

struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/dtlab-rec-XXXXXX";
        path = mkdtemp(tmpl);
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    [[nodiscard]] std::string file(const std::string& name) const { return path + "/" + name; }
};

std::string readBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void writeBytes(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

dt::RunRecord startRecord() {
    dt::RunRecord r;
    r.scenario = dt::loadScenarioFile(std::string(DTLAB_SOURCE_DIR) + "/scenarios/ddp_basics.toml");
    r.scenario.topology.ranks = kRanks;
    for (int i = 0; i < kRanks; ++i) {
        dt::RankInfo info;
        info.rank = i;
        info.pid = 1000 + i;
        info.host = "localhost";
        info.started = true;
        r.ranks.push_back(info);
    }
    r.t_start_ns = kStartNs;
    return r;
}

// Event i: rank i % 4, about 1.2 ms apart, fields that differ event to event.
Event eventNumber(size_t i) {
    Event e;
    e.rank = int(i % kRanks);
    e.t_ns = kStartNs + int64_t(i) * 1'200'000 + e.rank * 7'000;
    e.dur_ns = int64_t(i % 97) * 1000;
    e.kind = i % 3 == 0 ? EventKind::Step : EventKind::Forward;
    e.phase = EventPhase::Span;
    e.step = int(i / 100);
    e.value = double(i) * 0.5;
    e.seq = i;
    return e;
}

struct Written {
    std::vector<Event> events;
    std::vector<dt::LogRecord> logs;
    dt::RunRecord end;
};

// Feeds the writer like the Session's monitor: every 20 ms of run time the new
// events (in arrival order), every 250 ms a flush, rank 2's exit as a META.
// `finish`: false leaves the writer as a killed process would (the .partial).
Written streamRun(const std::string& path, bool finish) {
    Written w;
    dt::RunRecord record = startRecord();
    dt::RecordingWriter writer(path, record);
    size_t next = 0;
    int64_t last_flush = kStartNs;
    for (int64_t tick = kStartNs; next < kEvents; tick += 20 * kMs) {
        std::vector<Event> batch;
        while (next < kEvents && eventNumber(next).t_ns < tick)
            batch.push_back(eventNumber(next++));
        writer.addEvents(batch.data(), batch.size());
        w.events.insert(w.events.end(), batch.begin(), batch.end());
        if ((tick - kStartNs) % (500 * kMs) == 0) {
            dt::LogRecord log{tick, int((tick / kMs) % kRanks), dt::LogLevel::Info,
                              "log at " + std::to_string(tick)};
            writer.addLogs(&log, 1);
            w.logs.push_back(log);
        }
        if (tick == kStartNs + 6000 * kMs) {
            record.ranks[2].exited = true;
            record.ranks[2].term_signal = 9;
            writer.noteRanks(record.ranks);
        }
        if (tick - last_flush >= dt::kRecordingFlushNs) {
            writer.flush();
            last_flush = tick;
        }
    }
    record.ok = false;
    record.failure_reason = "rank 2 was killed";
    record.t_end_ns = w.events.back().t_ns + 5 * kMs;
    w.end = record;
    if (finish)
        writer.finish(record);
    else
        writer.flush(); // what a process killed after its last flush leaves
    return w;
}

struct Chunk {
    std::string tag;
    size_t begin = 0, end = 0; // bytes [begin, end) of the file
    size_t events = 0;         // EVTS: events in it
};

// The file's chunk table, read without readRecording.
std::vector<Chunk> chunksOf(const std::string& bytes) {
    std::vector<Chunk> out;
    size_t at = 12;
    while (at + 8 <= bytes.size()) {
        uint32_t size = 0;
        std::memcpy(&size, bytes.data() + at + 4, 4);
        Chunk c;
        c.tag = bytes.substr(at, 4);
        c.begin = at;
        c.end = at + 8 + size + 4;
        c.events = c.tag == "EVTS" ? size / sizeof(Event) : 0;
        if (c.end > bytes.size())
            break;
        out.push_back(c);
        at = c.end;
    }
    return out;
}

bool sameEvents(const std::vector<Event>& a, const Event* b, size_t n) {
    return a.size() == n && (n == 0 || std::memcmp(a.data(), b, n * sizeof(Event)) == 0);
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("a recording written as the run goes reads back whole", "[recording]") {
    TempDir dir;
    const std::string path = dir.file("run.dtrec");
    const Written w = streamRun(path, true);
    REQUIRE(w.events.size() == kEvents);

    SECTION("PATH holds it and no .partial is left") {
        CHECK(access(path.c_str(), F_OK) == 0);
        CHECK(access(dt::partialRecordingPath(path).c_str(), F_OK) != 0);
    }
    SECTION("every event, log, rank and the end state come back") {
        const dt::RecordingLoad load = dt::readRecording(path);
        INFO(load.problem);
        CHECK(load.complete);
        CHECK(load.end_state_known);
        CHECK(load.problem.empty());
        CHECK(sameEvents(load.record.events, w.events.data(), w.events.size()));
        REQUIRE(load.record.logs.size() == w.logs.size());
        for (size_t i = 0; i < w.logs.size(); ++i) {
            CHECK(load.record.logs[i].t_ns == w.logs[i].t_ns);
            CHECK(load.record.logs[i].text == w.logs[i].text);
        }
        REQUIRE(load.record.ranks.size() == w.end.ranks.size());
        for (size_t r = 0; r < w.end.ranks.size(); ++r) {
            CHECK(load.record.ranks[r].pid == w.end.ranks[r].pid);
            CHECK(load.record.ranks[r].exited == w.end.ranks[r].exited);
            CHECK(load.record.ranks[r].term_signal == w.end.ranks[r].term_signal);
        }
        CHECK_FALSE(load.record.ok);
        CHECK(load.record.failure_reason == "rank 2 was killed");
        CHECK(load.record.t_end_ns == w.end.t_end_ns);
        CHECK(load.record.scenario.topology.ranks == kRanks);
    }
    SECTION("events go in small chunks: at most 512 events and 0.25 s of run each") {
        const std::string bytes = readBytes(path);
        const std::vector<Chunk> chunks = chunksOf(bytes);
        REQUIRE(chunks.size() > 20);
        CHECK(chunks.front().tag == "META");
        CHECK(chunks.back().tag == "END ");
        CHECK(chunks[chunks.size() - 2].tag == "META");
        size_t evts = 0, total = 0;
        for (const Chunk& c : chunks) {
            if (c.tag != "EVTS")
                continue;
            ++evts;
            total += c.events;
            CHECK(c.events <= dt::kEventsPerChunk);
            Event first, last;
            std::memcpy(&first, bytes.data() + c.begin + 8, sizeof(Event));
            std::memcpy(&last, bytes.data() + c.end - 4 - sizeof(Event), sizeof(Event));
            CHECK(last.t_ns - first.t_ns < dt::kChunkSpanNs);
        }
        CHECK(total == kEvents);
        CHECK(evts >= 40); // ~10 s of run in chunks of at most 0.25 s
    }
}

TEST_CASE("a recording cut anywhere loads the events of the chunks before the cut", "[recording]") {
    TempDir dir;
    const std::string path = dir.file("run.dtrec");
    const Written w = streamRun(path, true);
    const std::string bytes = readBytes(path);
    const std::vector<Chunk> chunks = chunksOf(bytes);

    for (const double fraction : {0.10, 0.50, 0.99}) {
        DYNAMIC_SECTION("cut at " << int(fraction * 100) << "% of the file") {
            const size_t cut = size_t(double(bytes.size()) * fraction);
            size_t expected = 0;
            bool exit_meta_before = false;
            for (const Chunk& c : chunks)
                if (c.end <= cut) {
                    expected += c.events;
                    exit_meta_before = exit_meta_before || (c.tag == "META" && c.begin > 12);
                }
            const std::string cut_path = dir.file("cut.dtrec");
            writeBytes(cut_path, bytes.substr(0, cut));
            const dt::RecordingLoad load = dt::readRecording(cut_path);
            INFO("cut at byte " << cut << " of " << bytes.size() << ": " << load.problem);
            CHECK_FALSE(load.complete);
            CHECK_FALSE(load.end_state_known);
            CHECK(load.record.events.size() == expected);
            CHECK(sameEvents(load.record.events, w.events.data(), expected));
            CHECK(load.intact_bytes <= cut);
            // What was lost, said plainly.
            CHECK(contains(load.problem, "the file ends inside a"));
            CHECK(contains(load.problem, "at byte " + std::to_string(cut)));
            CHECK(contains(load.problem, "are missing"));
            CHECK(contains(load.problem, "the run's end state (exit codes, ok) was never written"));
            // The end state, rebuilt: not ok, ended at the last event read.
            CHECK_FALSE(load.record.ok);
            CHECK(contains(load.record.failure_reason, "before the run ended"));
            CHECK(load.record.t_end_ns >= load.record.events.back().t_ns);
            CHECK(load.record.ranks.size() == size_t(kRanks));
            // Rank 2's exit is known once the META written for it is before the cut.
            CHECK(load.record.ranks[2].exited == exit_meta_before);
            if (fraction == 0.99)
                CHECK(load.record.events.size() > kEvents * 95 / 100);
        }
    }
}

TEST_CASE("a recording cut in other places says what it kept", "[recording]") {
    TempDir dir;
    const std::string path = dir.file("run.dtrec");
    const Written w = streamRun(path, true);
    const std::string bytes = readBytes(path);
    const std::string cut_path = dir.file("cut.dtrec");

    SECTION("cut just before END: everything but the END marker") {
        writeBytes(cut_path, bytes.substr(0, bytes.size() - 12));
        const dt::RecordingLoad load = dt::readRecording(cut_path);
        CHECK_FALSE(load.complete);
        CHECK(load.end_state_known);
        CHECK(contains(load.problem, "only the END marker is missing"));
        CHECK(load.record.events.size() == kEvents);
        CHECK(load.record.failure_reason == "rank 2 was killed");
    }
    SECTION("cut between two chunks") {
        const std::vector<Chunk> chunks = chunksOf(bytes);
        const Chunk& c = chunks[chunks.size() / 2];
        writeBytes(cut_path, bytes.substr(0, c.end));
        const dt::RecordingLoad load = dt::readRecording(cut_path);
        CHECK(contains(load.problem, "between chunks"));
        CHECK(load.intact_bytes == c.end);
    }
    SECTION("a corrupt chunk in the middle: the chunks before it load, nothing after") {
        const std::vector<Chunk> chunks = chunksOf(bytes);
        const Chunk& c = chunks[chunks.size() / 2];
        std::string bad = bytes;
        bad[c.begin + 20] ^= 0x5a;
        writeBytes(cut_path, bad);
        const dt::RecordingLoad load = dt::readRecording(cut_path);
        CHECK(contains(load.problem, "CRC mismatch"));
        CHECK(load.intact_bytes == c.begin);
        size_t expected = 0;
        for (const Chunk& k : chunks)
            if (k.end <= c.begin)
                expected += k.events;
        CHECK(sameEvents(load.record.events, w.events.data(), expected));
    }
    SECTION("cut inside the first META: not a recording that can be shown") {
        writeBytes(cut_path, bytes.substr(0, 40));
        CHECK_THROWS_AS(dt::readRecording(cut_path), dt::UsageError);
    }
}

TEST_CASE("a writer that never finishes leaves PATH.partial, which loads, and PATH untouched",
          "[recording]") {
    TempDir dir;
    const std::string path = dir.file("run.dtrec");
    writeBytes(path, "an older file the user had here");
    const Written w = streamRun(path, false);
    CHECK(readBytes(path) == "an older file the user had here");
    const dt::RecordingLoad load = dt::readRecording(dt::partialRecordingPath(path));
    INFO(load.problem);
    CHECK_FALSE(load.complete);
    CHECK_FALSE(load.end_state_known);
    CHECK(contains(load.problem, "between chunks"));
    CHECK(sameEvents(load.record.events, w.events.data(), w.events.size()));
    CHECK(load.record.logs.size() == w.logs.size());
    CHECK(load.record.ranks[2].exited); // from the META written when it exited
}

TEST_CASE("a recording never replaces what is not a regular file", "[recording]") {
    TempDir dir;
    const dt::RunRecord start = startRecord();
    auto refusal = [&](const std::string& path) -> std::string {
        try {
            dt::RecordingWriter writer(path, start);
        } catch (const dt::UsageError& e) {
            return e.what();
        }
        return "";
    };
    SECTION("a directory") {
        std::filesystem::create_directory(dir.file("d"));
        CHECK(contains(refusal(dir.file("d")), "is a directory"));
        CHECK(std::filesystem::is_directory(dir.file("d")));
    }
    SECTION("a symbolic link: refused, its target untouched") {
        writeBytes(dir.file("target"), "keep me");
        REQUIRE(symlink(dir.file("target").c_str(), dir.file("link.dtrec").c_str()) == 0);
        CHECK(contains(refusal(dir.file("link.dtrec")), "is a symbolic link"));
        CHECK(readBytes(dir.file("target")) == "keep me");
    }
    SECTION("a device") {
        CHECK(contains(refusal("/dev/null"), "is a device"));
    }
    SECTION("a .partial that is a directory") {
        std::filesystem::create_directory(dir.file("run.dtrec.partial"));
        CHECK(contains(refusal(dir.file("run.dtrec")), "run.dtrec.partial' is a directory"));
    }
    SECTION("a .partial already there (a crashed run's recording) is refused and kept") {
        writeBytes(dir.file("run.dtrec.partial"), "a crashed run's events");
        CHECK(contains(refusal(dir.file("run.dtrec")), "run.dtrec.partial' already exists"));
        CHECK(readBytes(dir.file("run.dtrec.partial")) == "a crashed run's events");
    }
    SECTION("a directory that does not exist") {
        CHECK(contains(refusal(dir.file("no/such/run.dtrec")), "does not exist"));
    }
    SECTION("writeRecording refuses the same way") {
        std::filesystem::create_directory(dir.file("d2"));
        CHECK_THROWS_AS(dt::writeRecording(start, dir.file("d2")), dt::UsageError);
    }
}

TEST_CASE("recordings of other versions", "[recording]") {
    TempDir dir;
    const std::string path = dir.file("run.dtrec");
    const Written w = streamRun(path, true);
    std::string bytes = readBytes(path);

    SECTION("version 4 (its first META was already the final one) still reads, end state and all") {
        const uint32_t v4 = 4;
        std::memcpy(bytes.data() + 8, &v4, 4);
        writeBytes(path, bytes.substr(0, bytes.size() / 2));
        const dt::RecordingLoad load = dt::readRecording(path);
        CHECK_FALSE(load.complete);
        CHECK(load.end_state_known);
        CHECK_FALSE(contains(load.problem, "never written"));
        CHECK(sameEvents(load.record.events, w.events.data(), load.record.events.size()));
    }
    SECTION("a newer version is refused, naming the versions this build reads") {
        const uint32_t v6 = dt::kRecordingVersion + 1;
        std::memcpy(bytes.data() + 8, &v6, 4);
        writeBytes(path, bytes);
        try {
            (void)dt::readRecording(path);
            FAIL("no error");
        } catch (const dt::UsageError& e) {
            CHECK(contains(e.what(), "reads versions 2..5"));
        }
    }
}

// Inputs that once crashed or hung dtlab's replay (issue 23): each is now refused, or read
// up to the bad part, with the reason.
TEST_CASE("a recording with impossible contents is refused, not replayed", "[recording]") {
    TempDir dir;
    const std::string path = dir.file("bad.dtrec");
    auto errorOf = [&](const dt::RunRecord& record) {
        {
            dt::RecordingWriter writer(path, record);
            writer.finish(record);
        }
        try {
            (void)dt::readRecording(path);
        } catch (const dt::UsageError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };

    SECTION("a scenario of 0 ranks (the theory divides by it: SIGFPE)") {
        dt::RunRecord record = startRecord();
        record.scenario.topology.ranks = 0;
        const std::string error = errorOf(record);
        CHECK(contains(error, "is unreadable: an unreadable 'META' chunk at byte 12"));
        CHECK(contains(error, "its scenario: [topology] ranks: expected an integer in 1..64, got 0"));
    }
    SECTION("a model of 2e9 layers (a replay would build its theory forever)") {
        dt::RunRecord record = startRecord();
        record.scenario.model.layers = 2'000'000'000;
        CHECK(contains(errorOf(record),
                       "its scenario: [model] layers: expected an integer in 1..64, got 2000000000"));
    }
    SECTION("a model 2e9 wide") {
        dt::RunRecord record = startRecord();
        record.scenario.model.d_model = 2'000'000'000;
        CHECK(contains(errorOf(record), "[model] d_model: expected an integer in 1..8192, got 2000000000"));
    }
    SECTION("the data and checkpoints of the recording's machine need not exist here") {
        dt::RunRecord record = startRecord();
        record.scenario.data.path = dir.file("no-such-data");
        record.scenario.run.resume_from = dir.file("no-such-checkpoint");
        CHECK(errorOf(record) == "no error");
    }
    SECTION("an event of unknown kind or phase ends the reading there, with the reason") {
        for (const bool bad_kind : {true, false}) {
            dt::RunRecord record = startRecord();
            {
                dt::RecordingWriter writer(path, record);
                const Event good = eventNumber(0);
                writer.addEvents(&good, 1);
                writer.flush();
                Event bad = eventNumber(1);
                if (bad_kind)
                    bad.kind = EventKind(0xFFFF);
                else
                    bad.phase = EventPhase(200);
                writer.addEvents(&bad, 1);
                writer.finish(record);
            }
            const dt::RecordingLoad load = dt::readRecording(path);
            CHECK_FALSE(load.complete);
            REQUIRE(load.record.events.size() == 1);
            CHECK(load.record.events[0].kind == eventNumber(0).kind);
            CHECK(contains(load.problem, bad_kind
                                             ? "an event of unknown kind 65535 in the events chunk at byte "
                                             : "an event of unknown phase 200 in the events chunk at byte "));
        }
    }
}
