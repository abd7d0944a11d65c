// test_recording_stream.cpp: a run's recording is written as the run goes
// (SessionOptions::record_path, dtrun --record), so that:
//   - a dtrun killed mid-run (SIGKILL: no chance to clean up) leaves
//     PATH.partial, which loads up to its last whole chunk and says the end
//     state was never written, and PATH is never created half-written;
//   - a Session that ends, or is destroyed mid-run, closes the recording onto
//     PATH with every event the Session collected (compared event by event);
//   - --record refuses a path that is not a regular file, with exit 2.
#include "process_helpers.hpp"

#include "dtlab/recording.hpp"
#include "dtlab/session.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

// 2 ranks of a narrow TinyGPT: fast steps, so a pace sets how long the run lasts.
std::string smallScenario(int steps) {
    it::ScenarioSpec spec;
    spec.name = "recording stream";
    spec.ranks = 2;
    spec.steps = steps;
    spec.batch_per_rank = 2;
    spec.d_model = 32;
    spec.layers = 1;
    spec.heads = 2;
    spec.timeout_s = 20;
    return it::scenarioToml(spec);
}

off_t fileSize(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

bool sameEvents(const std::vector<dt::Event>& a, const std::vector<dt::Event>& b, size_t n) {
    return a.size() >= n && b.size() >= n &&
           (n == 0 || std::memcmp(a.data(), b.data(), n * sizeof(dt::Event)) == 0);
}

dt::SessionOptions sessionOptions(const it::TempDir& dir, int steps, const std::string& record_path) {
    dt::SessionOptions options;
    options.scenario = dt::loadScenarioFile(dir.write("s.toml", smallScenario(steps)));
    options.worker_executable = it::dtrunPath();
    options.record_path = record_path;
    return options;
}

} // namespace

TEST_CASE("dtrun killed mid-run leaves PATH.partial, which loads", "[recording][slow]") {
    it::TempDir dir;
    const std::string path = dir.file("run.dtrec");
    const std::string partial = dt::partialRecordingPath(path);
    it::Process dtrun(
        {it::dtrunPath(), "run", dir.write("s.toml", smallScenario(200)), "--pace", "5", "--record", path},
        {{}, {}, 120.0, ""});
    // Wait until some steps are on disk (a few chunks past the first META).
    REQUIRE(it::waitFor([&] { return fileSize(partial) > 40000; }, 60.0));
    CHECK_FALSE(it::fileExists(path));
    dtrun.signal(SIGKILL);
    const it::ProcessResult r = dtrun.wait(30.0);
    INFO(it::describe(r));
    CHECK(r.signal == SIGKILL);
    CHECK(it::waitForNoWorkers(10.0).empty()); // the ranks die with it (PR_SET_PDEATHSIG)

    CHECK_FALSE(it::fileExists(path)); // never half a file at PATH
    REQUIRE(it::fileExists(partial));
    const dt::RecordingLoad load = dt::readRecording(partial);
    INFO(load.problem);
    CHECK_FALSE(load.complete);
    CHECK_FALSE(load.end_state_known);
    CHECK(contains(load.problem, "the run's end state (exit codes, ok) was never written"));
    CHECK_FALSE(load.record.ok);
    CHECK(contains(load.record.failure_reason, "before the run ended"));
    CHECK(load.record.events.size() > 100);
    // The ranks' pids came in a META written when they said hello.
    REQUIRE(load.record.ranks.size() == 2);
    for (const dt::RankInfo& info : load.record.ranks) {
        CHECK(info.started);
        CHECK(info.pid > 0);
        CHECK_FALSE(info.exited);
    }
    // A step every 0.2 s was made on each rank before the kill.
    int steps[2] = {-1, -1};
    for (const dt::Event& e : load.record.events)
        if (e.kind == dt::EventKind::Step && e.phase == dt::EventPhase::Span && e.rank >= 0 && e.rank < 2)
            steps[e.rank] = std::max(steps[e.rank], int(e.step));
    CHECK(steps[0] >= 1);
    CHECK(steps[1] >= 1);
}

TEST_CASE("a Session records its run as it goes and closes the recording at the end", "[recording][slow]") {
    it::TempDir dir;
    const std::string path = dir.file("run.dtrec");
    const std::string partial = dt::partialRecordingPath(path);

    SECTION("a run to its end: PATH holds every event the Session collected") {
        dt::Session session(sessionOptions(dir, 3, path));
        session.start();
        CHECK(it::fileExists(partial)); // from start() on
        session.waitUntilFinished();
        const dt::RecordingStatus status = session.recordingStatus();
        CHECK(status.finished);
        CHECK(status.error.empty());
        CHECK_FALSE(it::fileExists(partial));
        const dt::RunRecord record = session.snapshot();
        REQUIRE(record.ok);
        const dt::RecordingLoad load = dt::readRecording(path);
        INFO(load.problem);
        CHECK(load.complete);
        CHECK(load.record.ok);
        CHECK(status.events_written == record.events.size());
        REQUIRE(load.record.events.size() == record.events.size());
        CHECK(sameEvents(load.record.events, record.events, record.events.size()));
        CHECK(load.record.logs.size() == record.logs.size());
        for (int r = 0; r < 2; ++r) {
            CHECK(load.record.ranks[size_t(r)].exited);
            CHECK(load.record.ranks[size_t(r)].exit_code == 0);
        }
    }
    SECTION("a Session destroyed mid-run: PATH holds the run so far, stopped") {
        std::vector<dt::Event> before;
        {
            dt::Session session(sessionOptions(dir, 200, path));
            session.start();
            session.setPace(5.0);
            REQUIRE(it::waitFor([&] { return session.eventCount() > 200; }, 60.0));
            before = session.snapshot().events;
        } // ~Session: stop, wait for the monitor, which closes the recording
        CHECK(it::waitForNoWorkers(10.0).empty());
        CHECK_FALSE(it::fileExists(partial));
        const dt::RecordingLoad load = dt::readRecording(path);
        INFO(load.problem);
        CHECK(load.complete);
        CHECK_FALSE(load.record.ok);
        CHECK(load.record.failure_reason == "the Session was closed");
        CHECK(load.record.events.size() >= before.size());
        CHECK(sameEvents(load.record.events, before, before.size()));
    }
}

TEST_CASE("dtrun run --record refuses a path that is not a regular file, exit 2", "[recording][cli]") {
    it::TempDir dir;
    const std::string scenario = dir.write("s.toml", smallScenario(2));
    auto refused = [&](const std::string& path, const std::string& says) {
        const it::ProcessResult r = it::runDtrun({"run", scenario, "--record", path}, {{}, {}, 60.0, ""});
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
        CHECK(contains(r.err, says));
        CHECK(it::runningWorkerPids().empty());
    };
    SECTION("a directory") {
        std::filesystem::create_directory(dir.file("d"));
        refused(dir.file("d"), "is a directory");
    }
    SECTION("a symbolic link, whose target stays as it was") {
        const std::string target = dir.write("target", "keep me");
        REQUIRE(symlink(target.c_str(), dir.file("link.dtrec").c_str()) == 0);
        refused(dir.file("link.dtrec"), "is a symbolic link");
        CHECK(it::readTextFile(target) == "keep me");
    }
    SECTION("a device") {
        refused("/dev/null", "/dev/null");
    }
    SECTION("a .partial that is a directory") {
        std::filesystem::create_directory(dir.file("run.dtrec.partial"));
        refused(dir.file("run.dtrec"), "run.dtrec.partial' is a directory");
    }
}
