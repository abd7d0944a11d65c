// test_summary.cpp: summaryJson() numbers from a hand-built RunRecord, and writeFileAtomically().
//
// The record: 2 ranks, 3 steps of DDP, one all-reduce per step (seq = step), a
// broadcast before step 0, then an all-reduce seq 3 that fails on rank 1 and
// hangs on rank 0. Every expected number below is worked out in a comment.
#include "dtlab/atomic_file.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/summary.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using dt::Event;
using dt::EventKind;
using dt::EventPhase;

constexpr int64_t kStartNs = 1'000'000'000; // record.t_start_ns
constexpr int64_t kMs = 1'000'000;

Event makeEvent(int rank, EventKind kind, EventPhase phase, int step, int64_t t_ns) {
    Event e;
    e.rank = rank;
    e.kind = kind;
    e.phase = phase;
    e.step = step;
    e.t_ns = t_ns;
    return e;
}

Event counter(int rank, EventKind kind, int step, int64_t t_ns, double value) {
    Event e = makeEvent(rank, kind, EventPhase::Counter, step, t_ns);
    e.value = value;
    return e;
}

Event work(int rank, EventKind kind, EventPhase phase, uint64_t seq, int step, int64_t t_ns, int64_t bytes) {
    Event e = makeEvent(rank, kind, phase, step, t_ns);
    e.seq = seq;
    e.bytes = bytes;
    e.group_size = 2;
    return e;
}

// Step durations (ms):  rank 0: 100, 10, 20   rank 1: 50, 30, 40
// Loss:                 rank 0: 4.0, 3.0, 2.0 rank 1: 5.0, 3.5, 2.5
dt::RunRecord makeRecord() {
    const int64_t stepMs[2][3] = {{100, 10, 20}, {50, 30, 40}};
    const double loss[2][3] = {{4.0, 3.0, 2.0}, {5.0, 3.5, 2.5}};
    const double activations[3] = {100, 300, 200};
    const double peak[2][3] = {{20000, 25000, 24000}, {6e9, 5e9, 1e9}};

    dt::RunRecord record;
    record.scenario.name = "summary test";
    record.scenario.strategy.kind = dt::StrategyKind::Ddp;
    record.scenario.run.steps = 5;
    record.t_start_ns = kStartNs;
    record.t_end_ns = kStartNs + 2500 * kMs;
    record.ok = false;
    record.failure_reason = "rank 1 was killed";

    for (int r = 0; r < 2; ++r) {
        dt::RankInfo info;
        info.rank = r;
        info.pid = 1000 + r;
        info.started = true;
        info.exited = true;
        record.ranks.push_back(info);
    }
    record.ranks[0].exit_code = 0;
    record.ranks[1].term_signal = 9;
    record.ranks[1].error = "peer lost";

    for (int r = 0; r < 2; ++r) {
        int64_t t = kStartNs + 10 * kMs;
        // A broadcast of the initial parameters, before step 0: 1000 bytes.
        record.events.push_back(work(r, EventKind::Broadcast, EventPhase::WorkStarted, 0, -1, t, 1000));
        record.events.push_back(
            work(r, EventKind::Broadcast, EventPhase::WorkCompleted, 0, -1, t + kMs, 1000));
        t += 2 * kMs;
        for (int s = 0; s < 3; ++s) {
            // One all-reduce of 4096 bytes per step, seq = step.
            record.events.push_back(
                work(r, EventKind::AllReduce, EventPhase::WorkScheduled, s, s, t + kMs, 4096));
            record.events.push_back(
                work(r, EventKind::AllReduce, EventPhase::WorkStarted, s, s, t + 2 * kMs, 4096));
            record.events.push_back(
                work(r, EventKind::AllReduce, EventPhase::WorkCompleted, s, s, t + 5 * kMs, 4096));
            record.events.push_back(counter(r, EventKind::LossValue, s, t + 6 * kMs, loss[r][s]));
            // Cumulative bytes: rank r sends 1000 * (r + 1) and receives 900 * (r + 1) per step.
            record.events.push_back(
                counter(r, EventKind::BytesSent, s, t + 6 * kMs, 1000.0 * (r + 1) * (s + 1)));
            record.events.push_back(
                counter(r, EventKind::BytesReceived, s, t + 6 * kMs, 900.0 * (r + 1) * (s + 1)));
            record.events.push_back(counter(r, EventKind::MemParameters, s, t, 4096));
            record.events.push_back(counter(r, EventKind::MemGradients, s, t, s == 0 ? 0 : 4096));
            record.events.push_back(counter(r, EventKind::MemOptimizer, s, t, 8192));
            record.events.push_back(counter(r, EventKind::MemActivations, s, t, activations[s]));
            record.events.push_back(counter(r, EventKind::MemCommBuffers, s, t, 1024));
            record.events.push_back(counter(r, EventKind::MemPeak, s, t, peak[r][s]));
            Event step = makeEvent(r, EventKind::Step, EventPhase::Span, s, t);
            step.dur_ns = stepMs[r][s] * kMs;
            record.events.push_back(step);
            t += stepMs[r][s] * kMs;
        }
        // All-reduce seq 3: fails on rank 1, never completes on rank 0 (a hang).
        record.events.push_back(work(r, EventKind::AllReduce, EventPhase::WorkStarted, 3, 3, t, 4096));
        if (r == 1)
            record.events.push_back(
                work(r, EventKind::AllReduce, EventPhase::WorkFailed, 3, 3, t + kMs, 4096));
    }

    // Checksums: rank 0 reports twice (the last one counts), rank 1 once.
    Event first = makeEvent(0, EventKind::ParamsChecksum, EventPhase::Instant, 2, kStartNs + 2000 * kMs);
    first.seq = 0x1;
    Event last = first;
    last.seq = 0xab;
    Event other = makeEvent(1, EventKind::ParamsChecksum, EventPhase::Instant, 2, kStartNs + 2000 * kMs);
    other.seq = 0x0123456789abcdefULL;
    record.events.push_back(first);
    record.events.push_back(last);
    record.events.push_back(other);

    // Dropped events on rank 1 only (cumulative: 5, then 12).
    record.events.push_back(counter(1, EventKind::DroppedEvents, -1, kStartNs + 100 * kMs, 5));
    record.events.push_back(counter(1, EventKind::DroppedEvents, -1, kStartNs + 200 * kMs, 12));

    // A Session event (rank -1) is not a rank's and must not be counted.
    record.events.push_back(counter(-1, EventKind::LossValue, 0, kStartNs, 1000.0));
    return record;
}

void removeStepSpan(dt::RunRecord& record, int rank, int step) {
    auto& events = record.events;
    events.erase(std::remove_if(events.begin(), events.end(),
                                [&](const Event& e) {
                                    return e.rank == rank && e.step == step && e.kind == EventKind::Step;
                                }),
                 events.end());
}

// A fresh directory under the system temp directory, removed at the end of the test.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        path = std::filesystem::temp_directory_path() / ("dtlab_test_summary_" + std::to_string(::getpid()));
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
    // Names in the directory that look like a writeFileAtomically temp file.
    int tempFiles() const {
        int count = 0;
        for (const auto& entry : std::filesystem::directory_iterator(path)) {
            if (entry.path().filename().string().find(".tmp.") != std::string::npos)
                ++count;
        }
        return count;
    }
};

std::string readFile(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace

TEST_CASE("summaryJson computes a run's numbers from its events", "[summary]") {
    dt::RunRecord record = makeRecord();

    SECTION("the header fields come from the scenario and the record") {
        const auto j = nlohmann::json::parse(dt::summaryJson(record));
        CHECK(j["schema_version"] == 1);
        CHECK(j["scenario"] == "summary test");
        CHECK(j["ok"] == false);
        CHECK(j["failure_reason"] == "rank 1 was killed");
        CHECK(j["ranks"] == 2);
        CHECK(j["strategy"] == "ddp");
        CHECK(j["steps_requested"] == 5);
        CHECK(j["wall_time_s"].get<double>() == Approx(2.5));
    }

    SECTION("steps and losses are the means over ranks at the steps every rank completed") {
        const auto j = nlohmann::json::parse(dt::summaryJson(record));
        CHECK(j["steps"] == 3);
        CHECK(j["initial_loss"].get<double>() == Approx(4.5)); // (4.0 + 5.0) / 2
        CHECK(j["final_loss"].get<double>() == Approx(2.25));  // (2.0 + 2.5) / 2
        REQUIRE(j["loss_by_step"].size() == 3);
        CHECK(j["loss_by_step"][1].get<double>() == Approx(3.25)); // (3.0 + 3.5) / 2
    }

    SECTION("each step's end is the slowest rank's, in seconds from the start of the run") {
        const auto j = nlohmann::json::parse(dt::summaryJson(record));
        REQUIRE(j["step_end_s_by_step"].size() == 3);
        CHECK(j["step_end_s_by_step"][0].get<double>() == Approx(0.112)); // rank 0: 12 + 100 ms
        CHECK(j["step_end_s_by_step"][1].get<double>() == Approx(0.122)); // rank 0: + 10 ms
        CHECK(j["step_end_s_by_step"][2].get<double>() == Approx(0.142)); // rank 0: + 20 ms
    }

    SECTION("the median step time skips the warm-up step when there are 3 or more") {
        const auto j = nlohmann::json::parse(dt::summaryJson(record));
        REQUIRE(j["step_ms_median"].size() == 2);
        CHECK(j["step_ms_median"][0].get<double>() == Approx(15.0)); // median of 10, 20
        CHECK(j["step_ms_median"][1].get<double>() == Approx(35.0)); // median of 30, 40
    }

    SECTION("a rank that missed the last step lowers steps and the final loss") {
        removeStepSpan(record, 1, 2);
        const auto j = nlohmann::json::parse(dt::summaryJson(record));
        CHECK(j["steps"] == 2);
        CHECK(j["final_loss"].get<double>() == Approx(3.25));
        CHECK(j["loss_by_step"].size() == 2);
        // Rank 1 now has 2 steps: no warm-up skip, median of 50 and 30.
        CHECK(j["step_ms_median"][1].get<double>() == Approx(40.0));
    }

    SECTION("bytes are the last cumulative counters, as integers") {
        const auto j = nlohmann::json::parse(dt::summaryJson(record));
        CHECK(j["bytes_sent"] == nlohmann::json::array({3000, 6000}));
        CHECK(j["bytes_received"] == nlohmann::json::array({2700, 5400}));
        CHECK(j["bytes_sent"][0].is_number_integer());
    }

    SECTION("peak memory is the maximum of each memory counter per rank") {
        const auto j = nlohmann::json::parse(dt::summaryJson(record));
        const auto& rank0 = j["peak_memory"][0];
        CHECK(rank0["parameters"] == 4096);
        CHECK(rank0["gradients"] == 4096);
        CHECK(rank0["optimizer_state"] == 8192);
        CHECK(rank0["activations"] == 300);
        CHECK(rank0["comm_buffers"] == 1024);
        CHECK(rank0["live_peak"] == 25000);
        // Above 2^32: still an exact integer.
        CHECK(j["peak_memory"][1]["live_peak"].get<int64_t>() == 6'000'000'000LL);
        CHECK(j["peak_memory"][1]["live_peak"].is_number_integer());
    }

    SECTION("the allocator's measured categories, step peak, start-up peak and RSS are kept apart from the "
            "strategy's bookkeeping") {
        const int64_t t = kStartNs + 500 * kMs;
        const std::pair<EventKind, double> measured[] = {
            {EventKind::MemMeasuredParameters, 4100.0}, {EventKind::MemMeasuredGradients, 4200.0},
            {EventKind::MemMeasuredOptimizer, 8300.0},  {EventKind::MemMeasuredCommBuffers, 1100.0},
            {EventKind::MemMeasuredActivations, 900.0}, {EventKind::MemMeasuredTemporaries, 77.0},
            {EventKind::MemStartupPeak, 90000.0},       {EventKind::MemRss, 123456789.0}};
        for (int s = 0; s < 2; ++s) // step 1 lower than step 0: the maximum is kept
            for (const auto& [kind, bytes] : measured)
                record.events.push_back(counter(1, kind, s, t + s * kMs, bytes - 10.0 * s));
        // A measured category's Event::bytes is the allocator's own peak for it, above any sample.
        Event between = counter(1, EventKind::MemMeasuredActivations, 1, t + 2 * kMs, 100.0);
        between.bytes = 950;
        record.events.push_back(between);
        const auto j = nlohmann::json::parse(dt::summaryJson(record));
        const auto& m = j["peak_memory"][1]["measured"];
        CHECK(m["parameters"] == 4100);
        CHECK(m["gradients"] == 4200);
        CHECK(m["optimizer_state"] == 8300);
        CHECK(m["comm_buffers"] == 1100);
        CHECK(m["activations"] == 950);
        CHECK(m["temporaries"] == 77);
        // measured_held: the live values at the samples only (the 950 peak was never live at one).
        CHECK(j["peak_memory"][1]["measured_held"]["activations"] == 900);
        CHECK(j["peak_memory"][1]["measured_held"]["optimizer_state"] == 8300);
        CHECK(j["peak_memory"][1]["startup_peak"] == 90000);
        CHECK(j["peak_memory"][1]["rss"] == 123456789);
        // The strategy's own categories are untouched by the measured counters.
        CHECK(j["peak_memory"][1]["parameters"] != 4100);
        // The step peak is the MemPeak counter (here the only live counter, so live_peak too).
        CHECK(j["peak_memory"][0]["step_peak"] == 25000);
        CHECK(j["peak_memory"][0]["measured"]["parameters"] == 0); // rank 0 reported none
    }

    SECTION("an offloading run gets the host peak and the median copy and host-optimizer times") {
        CHECK_FALSE(nlohmann::json::parse(dt::summaryJson(record)).contains("offload"));
        record.scenario.strategy.kind = dt::StrategyKind::Zero2;
        record.scenario.strategy.offload_optimizer = true;
        const double down_ms[3] = {1.0, 3.0, 2.0}, up_ms[3] = {2.0, 2.0, 5.0};
        for (int s = 0; s < 3; ++s) {
            const int64_t t = kStartNs + 500 * kMs + s * 10 * kMs;
            Event down = makeEvent(0, EventKind::GradsToHost, EventPhase::Span, s, t);
            down.dur_ns = int64_t(down_ms[s] * double(kMs));
            down.bytes = 4000; // 2 x 4000 bytes in 2 + 2 ms (the medians): 0.002 GB/s
            Event up = makeEvent(0, EventKind::ParamsToDevice, EventPhase::Span, s, t + 5 * kMs);
            up.dur_ns = int64_t(up_ms[s] * double(kMs));
            up.bytes = 4000;
            record.events.push_back(down);
            record.events.push_back(up);
            record.events.push_back(counter(0, EventKind::MemHost, s, t, 16000.0 - 1000.0 * s));
            // AdamW on the host (value kOptimizerOnHost) inside the worker's whole optimizer span.
            Event adam = makeEvent(0, EventKind::Optimizer, EventPhase::Span, s, t + 2 * kMs);
            adam.dur_ns = (3 + s) * kMs; // 3, 4, 5 ms
            adam.value = dt::kOptimizerOnHost;
            Event whole = makeEvent(0, EventKind::Optimizer, EventPhase::Span, s, t);
            whole.dur_ns = 20 * kMs;
            record.events.push_back(adam);
            record.events.push_back(whole);
        }
        const auto j = nlohmann::json::parse(dt::summaryJson(record));
        CHECK(j["peak_memory"][0]["host"] == 16000);
        CHECK(j["peak_memory"][1]["host"] == 0);
        const auto& o = j["offload"];
        CHECK(o["bytes_each_way_per_step"][0] == 4000);
        CHECK(o["grads_to_host_ms_median"][0].get<double>() == Approx(2.0));
        CHECK(o["params_to_device_ms_median"][0].get<double>() == Approx(2.0));
        CHECK(o["host_optimizer_ms_median"][0].get<double>() == Approx(4.0)); // not the 20 ms spans around it
        CHECK(o["copy_gb_s_measured"][0].get<double>() == Approx(2.0 * 4000 / 4e6));
        CHECK(o["pcie4_x16_ms_each_way_theory"][0].get<double>() == Approx(4000 / 31.5e9 * 1e3));
        CHECK(o["grads_to_host_ms_median"][1].is_null()); // rank 1 reported no copies
        CHECK(o["copy_gb_s_measured"][1].is_null());
    }

    SECTION("the parameter checksum is the last one a rank reported, as 16 hex digits") {
        const auto j = nlohmann::json::parse(dt::summaryJson(record));
        CHECK(j["params_checksum"][0] == "00000000000000ab");
        CHECK(j["params_checksum"][1] == "0123456789abcdef");
    }

    SECTION("a rank without a checksum gets null") {
        record.events.erase(
            std::remove_if(record.events.begin(), record.events.end(),
                           [](const Event& e) { return e.rank == 1 && e.kind == EventKind::ParamsChecksum; }),
            record.events.end());
        const auto j = nlohmann::json::parse(dt::summaryJson(record));
        CHECK(j["params_checksum"][1].is_null());
    }

    SECTION("dropped events are the last cumulative counter, 0 when a rank reported none") {
        const auto j = nlohmann::json::parse(dt::summaryJson(record));
        CHECK(j["dropped_events"] == nlohmann::json::array({0, 12}));
        CHECK(j["dropped_events_total"] == 12);
    }

    SECTION("completed collectives are counted per kind over all ranks") {
        const auto j = nlohmann::json::parse(dt::summaryJson(record));
        CHECK(j["collectives"]["all-reduce"]["count"] == 6);     // 3 steps x 2 ranks
        CHECK(j["collectives"]["all-reduce"]["bytes"] == 24576); // 6 x 4096
        CHECK(j["collectives"]["all-reduce"]["max_bytes"] == 4096);
        CHECK(j["collectives"]["broadcast"]["count"] == 2);
        CHECK(j["collectives"]["broadcast"]["bytes"] == 2000);
        CHECK(j["failed_collectives"] == 1);
        CHECK(j["open_collective_works"] == 1);
    }

    SECTION("hung_collectives lists each collective that never completed, with who started it") {
        auto j = nlohmann::json::parse(dt::summaryJson(record));
        REQUIRE(j["hung_collectives"].size() == 1);
        const auto& h = j["hung_collectives"][0];
        CHECK(h["kind"] == "all-reduce");
        CHECK(h["seq"] == 3);
        CHECK(h["step"] == 3);
        CHECK(h["group_ranks"] == nlohmann::json::array({0, 1}));
        CHECK(h["started_ranks"] == nlohmann::json::array({0, 1}));
        CHECK(h["failed_ranks"] == nlohmann::json::array({1}));
        CHECK(h["missing_ranks"].empty());

        SECTION("and names the rank that never joined it") {
            record.events.erase(std::remove_if(record.events.begin(), record.events.end(),
                                               [](const Event& e) {
                                                   return e.rank == 1 && isWorkPhase(e.phase) && e.seq == 3;
                                               }),
                                record.events.end());
            j = nlohmann::json::parse(dt::summaryJson(record));
            REQUIRE(j["hung_collectives"].size() == 1);
            CHECK(j["hung_collectives"][0]["started_ranks"] == nlohmann::json::array({0}));
            CHECK(j["hung_collectives"][0]["missing_ranks"] == nlohmann::json::array({1}));
            CHECK(j["hung_collectives"][0]["diagnosis"] ==
                  "all-reduce of step 3: rank 0 waiting, rank 1 never joined");
        }
    }

    SECTION("exit gives each rank's pid, exit code or signal, and error") {
        const auto j = nlohmann::json::parse(dt::summaryJson(record));
        REQUIRE(j["exit"].size() == 2);
        CHECK(j["exit"][0]["pid"] == 1000);
        CHECK(j["exit"][0]["exit_code"] == 0);
        CHECK(j["exit"][0]["signal"] == 0);
        CHECK(j["exit"][1]["exit_code"].is_null()); // killed: no exit code
        CHECK(j["exit"][1]["signal"] == 9);
        CHECK(j["exit"][1]["error"] == "peer lost");
    }

    SECTION("clock gives each rank's offset and error bound from its last ClockSync, null without one") {
        // rank 0 on the Session's host; rank 1 measured twice, its drift once.
        Event same = makeEvent(0, EventKind::ClockSync, EventPhase::Instant, -1, kStartNs);
        same.unit = 0;
        record.events.push_back(same);
        for (int i = 0; i < 2; ++i) {
            Event sync = makeEvent(1, EventKind::ClockSync, EventPhase::Instant, -1, kStartNs + i * kMs);
            sync.unit = 1;
            sync.bytes = -250'000'000 - i * 40;
            sync.value = i == 0 ? 61'000.0 : 42'500.0;
            record.events.push_back(sync);
        }
        Event drift = makeEvent(1, EventKind::ClockDriftPpm, EventPhase::Counter, -1, kStartNs + kMs);
        drift.value = 39.5;
        record.events.push_back(drift);
        auto j = nlohmann::json::parse(dt::summaryJson(record));
        REQUIRE(j["clock"].size() == 2);
        CHECK(j["clock"][0]["source"] == "same host");
        CHECK(j["clock"][0]["offset_ns"] == 0);
        CHECK(j["clock"][0]["error_bound_ns"] == 0);
        CHECK(j["clock"][0]["drift_ppm"].is_null());
        CHECK(j["clock"][1]["source"] == "measured");
        CHECK(j["clock"][1]["offset_ns"] == -250'000'040);
        CHECK(j["clock"][1]["error_bound_ns"] == 42'500);
        CHECK(j["clock"][1]["max_error_bound_ns"] == 61'000);
        CHECK(j["clock"][1]["syncs"] == 2);
        CHECK(j["clock"][1]["drift_ppm"] == 39.5);

        record.events.erase(record.events.end() - 4, record.events.end());
        j = nlohmann::json::parse(dt::summaryJson(record));
        CHECK(j["clock"][0].is_null());
        CHECK(j["clock"][1].is_null());
    }

    SECTION("a NaN loss is written as null, so the file stays valid JSON") {
        for (Event& e : record.events) {
            if (e.kind == EventKind::LossValue && e.step == 2)
                e.value = std::numeric_limits<double>::quiet_NaN();
        }
        const std::string text = dt::summaryJson(record);
        CHECK(text.find("NaN") == std::string::npos);
        const auto j = nlohmann::json::parse(text);
        CHECK(j["final_loss"].is_null());
        CHECK(j["initial_loss"].get<double>() == Approx(4.5));
    }

    SECTION("the summary is pretty-printed with an indent of 2") {
        const std::string text = dt::summaryJson(record);
        CHECK(text.rfind("{\n  \"schema_version\": 1,\n", 0) == 0);
        CHECK(text.back() == '\n');
    }
}

TEST_CASE("summaryJson of an empty record has zero steps and null losses", "[summary]") {
    dt::RunRecord record;
    record.scenario.name = "empty";
    const auto j = nlohmann::json::parse(dt::summaryJson(record));
    CHECK(j["ranks"] == 0);
    CHECK(j["steps"] == 0);
    CHECK(j["initial_loss"].is_null());
    CHECK(j["final_loss"].is_null());
    CHECK(j["loss_by_step"].empty());
    CHECK(j["step_ms_median"].empty());
    CHECK(j["collectives"].is_object());
    CHECK(j["dropped_events_total"] == 0);
}

TEST_CASE("writeFileAtomically replaces a file or fails without leaving a temp file", "[summary]") {
    TempDir dir;

    SECTION("it creates a new file") {
        const auto path = dir.path / "summary.json";
        dt::writeFileAtomically(path.string(), "{}\n");
        CHECK(readFile(path) == "{}\n");
        CHECK(dir.tempFiles() == 0);
    }

    SECTION("it replaces an existing file's whole text") {
        const auto path = dir.path / "summary.json";
        std::ofstream(path) << "the old text, longer than the new one";
        dt::writeFileAtomically(path.string(), "new");
        CHECK(readFile(path) == "new");
        CHECK(dir.tempFiles() == 0);
    }

    SECTION("a missing directory throws a UsageError naming the path") {
        const auto path = dir.path / "missing" / "summary.json";
        try {
            dt::writeFileAtomically(path.string(), "text");
            FAIL("expected a UsageError");
        } catch (const dt::UsageError& error) {
            const std::string message = error.what();
            CHECK(message.find("cannot write '" + path.string() + "'") != std::string::npos);
            CHECK(message.find("No such file or directory") != std::string::npos);
        }
        CHECK_FALSE(std::filesystem::exists(dir.path / "missing"));
        CHECK(dir.tempFiles() == 0);
    }

    SECTION("a symlink or a FIFO at the temp names is neither followed, truncated nor blocked on") {
        const auto path = dir.path / "summary.json";
        const auto target = dir.path / "elsewhere.txt";
        std::ofstream(target) << "keep me";
        const std::string temp = path.string() + ".tmp." + std::to_string(::getpid());
        REQUIRE(::symlink(target.c_str(), temp.c_str()) == 0);
        REQUIRE(::mkfifo((temp + ".1").c_str(), 0600) == 0);
        dt::writeFileAtomically(path.string(), "new");
        CHECK(readFile(path) == "new");
        CHECK(readFile(target) == "keep me");
        CHECK(std::filesystem::is_symlink(temp)); // not ours: left where it was
        CHECK(std::filesystem::is_fifo(temp + ".1"));
        CHECK(dir.tempFiles() == 2);
    }

    SECTION("a failed rename removes the temp file and leaves the target as it was") {
        // Renaming a file over a non-empty directory fails (EISDIR) after the temp file was written.
        const auto target = dir.path / "occupied";
        std::filesystem::create_directories(target);
        std::ofstream(target / "keep.txt") << "keep";
        CHECK_THROWS_AS(dt::writeFileAtomically(target.string(), "text"), dt::UsageError);
        CHECK(std::filesystem::is_directory(target));
        CHECK(readFile(target / "keep.txt") == "keep");
        CHECK(dir.tempFiles() == 0);
    }
}
