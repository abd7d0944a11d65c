// test_trace_export.cpp: writeChromeTrace() on a hand-built RunRecord, read back as JSON.
//
// The record: 4 ranks, 3 steps. Rank r's step s starts at 100 s + r ms and has
// a forward (block 0), a backward and an all-reduce (seq = step; scheduled at
// +50 ms, started at +52 ms, completed at +60 + r ms). After step 2 the
// all-reduce seq 3 starts at 300 + r ms: ranks 0..2 fail at 330 + r ms and rank 3
// never ends (the hang); the run ends at 400 ms. Rank 0 also has a send to rank 1
// that no other rank shares, so it gets no flow arrow.
#include "dtlab/summary.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <vector>

namespace {

using dt::Event;
using dt::EventKind;
using dt::EventPhase;
using nlohmann::json;

constexpr int kRanks = 4;
constexpr int64_t kStartNs = 5'000'000'000; // record.t_start_ns: trace times are relative to it
constexpr int64_t kMs = 1'000'000;

Event makeEvent(int rank, EventKind kind, EventPhase phase, int step, int64_t msFromStart) {
    Event e;
    e.rank = rank;
    e.kind = kind;
    e.phase = phase;
    e.step = step;
    e.t_ns = kStartNs + msFromStart * kMs;
    return e;
}

Event span(int rank, EventKind kind, int step, int64_t ms, int64_t durMs, int unit = -1) {
    Event e = makeEvent(rank, kind, EventPhase::Span, step, ms);
    e.dur_ns = durMs * kMs;
    e.unit = static_cast<int16_t>(unit);
    return e;
}

Event work(int rank, EventKind kind, EventPhase phase, uint64_t seq, int step, int64_t ms) {
    Event e = makeEvent(rank, kind, phase, step, ms);
    e.seq = seq;
    e.bytes = 4096;
    e.group_size = kRanks;
    return e;
}

dt::RunRecord makeRecord() {
    dt::RunRecord record;
    record.scenario.name = "trace test";
    record.scenario.strategy.kind = dt::StrategyKind::Ddp;
    record.t_start_ns = kStartNs;
    record.t_end_ns = kStartNs + 400 * kMs;
    record.ok = false;
    record.failure_reason = "rank 3 hung";
    for (int r = 0; r < kRanks; ++r) {
        dt::RankInfo info;
        info.rank = r;
        info.pid = 2000 + r;
        record.ranks.push_back(info);
    }

    for (int r = 0; r < kRanks; ++r) {
        Event started = makeEvent(r, EventKind::RankStarted, EventPhase::Instant, -1, 0);
        started.value = 2000 + r;
        record.events.push_back(started);
        for (int s = 0; s < 3; ++s) {
            const int64_t t = 100 * s + r;
            record.events.push_back(span(r, EventKind::Forward, s, t + 1, 10, 0));
            Event backward = span(r, EventKind::Backward, s, t + 20, 30);
            backward.microbatch = 0;
            record.events.push_back(backward);
            record.events.push_back(work(r, EventKind::AllReduce, EventPhase::WorkScheduled, s, s, t + 50));
            record.events.push_back(work(r, EventKind::AllReduce, EventPhase::WorkStarted, s, s, t + 52));
            record.events.push_back(
                work(r, EventKind::AllReduce, EventPhase::WorkCompleted, s, s, t + 60 + r));
            Event loss = makeEvent(r, EventKind::LossValue, EventPhase::Counter, s, t + 70);
            loss.value = (r == 2 && s == 2) ? std::numeric_limits<double>::quiet_NaN() : 4.0 - s;
            record.events.push_back(loss);
            record.events.push_back(span(r, EventKind::Step, s, t, 90));
        }
        record.events.push_back(work(r, EventKind::AllReduce, EventPhase::WorkStarted, 3, 3, 300 + r));
        if (r != 3)
            record.events.push_back(work(r, EventKind::AllReduce, EventPhase::WorkFailed, 3, 3, 330 + r));
    }

    Event send = work(0, EventKind::Send, EventPhase::WorkStarted, 0, 2, 305);
    send.peer = 1;
    record.events.push_back(send);
    Event sent = send;
    sent.phase = EventPhase::WorkCompleted;
    sent.t_ns += kMs;
    record.events.push_back(sent);

    Event checksum = makeEvent(0, EventKind::ParamsChecksum, EventPhase::Instant, 2, 299);
    checksum.seq = 0xbeef;
    record.events.push_back(checksum);
    record.events.push_back(makeEvent(-1, EventKind::FaultInjected, EventPhase::Instant, 3, 303));
    return record;
}

json exportTrace(const dt::RunRecord& record) {
    std::ostringstream out;
    dt::writeChromeTrace(record, out);
    return json::parse(out.str()); // throws (and fails the test) if it is not valid JSON
}

std::vector<json> select(const json& trace, const std::function<bool(const json&)>& keep) {
    std::vector<json> found;
    for (const json& e : trace["traceEvents"]) {
        if (keep(e))
            found.push_back(e);
    }
    return found;
}

// The one collective span ("X" on track 2) of `rank` whose args.seq is `seq`.
json collectiveSpan(const json& trace, const std::string& name, int rank, uint64_t seq) {
    const auto found = select(trace, [&](const json& e) {
        return e["ph"] == "X" && e["tid"] == 2 && e["pid"] == rank + 1 && e["name"] == name &&
               e["args"]["seq"] == seq;
    });
    REQUIRE(found.size() == 1);
    return found.front();
}

} // namespace

TEST_CASE("writeChromeTrace writes a Chrome trace that Perfetto can load", "[trace]") {
    const dt::RunRecord record = makeRecord();
    std::ostringstream out;
    dt::writeChromeTrace(record, out);
    const std::string text = out.str();
    const json trace = json::parse(text);

    SECTION("the top level has traceEvents, a display unit and the run's metadata") {
        CHECK(trace["traceEvents"].is_array());
        CHECK(trace["displayTimeUnit"] == "ms");
        CHECK(trace["otherData"]["scenario"] == "trace test");
        CHECK(trace["otherData"]["ok"] == false);
        CHECK(text.find("NaN") == std::string::npos);
    }

    SECTION("every rank is a named process and the Session is process 0") {
        for (int pid = 0; pid <= kRanks; ++pid) {
            const auto names = select(trace, [&](const json& e) {
                return e["ph"] == "M" && e["name"] == "process_name" && e["pid"] == pid;
            });
            REQUIRE(names.size() == 1);
            CHECK(names[0]["args"]["name"] == (pid == 0 ? "session" : "rank " + std::to_string(pid - 1)));
            const auto sortIndex = select(trace, [&](const json& e) {
                return e["ph"] == "M" && e["name"] == "process_sort_index" && e["pid"] == pid;
            });
            CHECK(sortIndex.size() == 1);
        }
    }

    SECTION("each rank has compute, communication and lifecycle tracks") {
        const std::map<int, std::string> expected = {{1, "compute"}, {2, "communication"}, {3, "lifecycle"}};
        for (const auto& [tid, name] : expected) {
            const auto threads = select(trace, [&](const json& e) {
                return e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == 2 && e["tid"] == tid;
            });
            REQUIRE(threads.size() == 1);
            CHECK(threads[0]["args"]["name"] == name);
        }
    }

    SECTION("a step span is an X event in microseconds relative to the run start") {
        const auto steps = select(trace, [](const json& e) {
            return e["ph"] == "X" && e["name"] == "step" && e["pid"] == 2 && e["args"]["step"] == 1;
        });
        REQUIRE(steps.size() == 1);
        CHECK(steps[0]["ts"].get<double>() == Approx(101000.0)); // 100 * 1 + 1 ms
        CHECK(steps[0]["dur"].get<double>() == Approx(90000.0)); // 90 ms
        CHECK(steps[0]["tid"] == 1);
        CHECK_FALSE(steps[0]["args"].contains("unit")); // -1 values are left out
        CHECK_FALSE(steps[0]["args"].contains("microbatch"));
    }

    SECTION("a span with a unit is named after its block") {
        const auto forwards = select(trace, [](const json& e) { return e["name"] == "forward block 0"; });
        CHECK(forwards.size() == kRanks * 3);
        CHECK(forwards[0]["args"]["unit"] == 0);
        const auto backwards = select(trace, [](const json& e) { return e["name"] == "backward"; });
        REQUIRE(backwards.size() == kRanks * 3);
        CHECK(backwards[0]["args"]["microbatch"] == 0);
    }

    SECTION("a completed collective runs from its start to its completion") {
        const json e = collectiveSpan(trace, "all-reduce", 2, 1);
        CHECK(e["ts"].get<double>() == Approx(154000.0)); // 100 + 2 + 52 ms
        CHECK(e["dur"].get<double>() == Approx(10000.0)); // (60 + 2) - 52 ms
        CHECK(e["args"]["queued_us"].get<double>() == Approx(2000.0));
        CHECK(e["args"]["state"] == "completed");
        CHECK(e["args"]["bytes"] == 4096);
        CHECK(e["args"]["group_size"] == kRanks);
        CHECK(e["args"]["step"] == 1);
    }

    SECTION("a failed collective ends at its failure") {
        const json e = collectiveSpan(trace, "all-reduce", 0, 3);
        CHECK(e["args"]["state"] == "failed");
        CHECK(e["dur"].get<double>() == Approx(30000.0));
        CHECK_FALSE(e["args"].contains("queued_us")); // it was never scheduled
    }

    SECTION("a collective that never completed stays open until the end of the run") {
        const json e = collectiveSpan(trace, "all-reduce", 3, 3);
        CHECK(e["args"]["state"] == "never completed (hung)");
        CHECK(e["ts"].get<double>() == Approx(303000.0));
        CHECK(e["dur"].get<double>() == Approx(97000.0)); // 400 - 303 ms
    }

    SECTION("counters are C events and a NaN value is null") {
        const auto losses =
            select(trace, [](const json& e) { return e["ph"] == "C" && e["name"] == "loss value"; });
        REQUIRE(losses.size() == kRanks * 3);
        const auto nan = select(trace, [](const json& e) {
            return e["ph"] == "C" && e["pid"] == 3 && e["ts"] == 272000.0; // rank 2, step 2: 200 + 2 + 70 ms
        });
        REQUIRE(nan.size() == 1);
        CHECK(nan[0]["args"]["value"].is_null());
        CHECK(losses[0]["args"]["value"].get<double>() == Approx(4.0));
    }

    SECTION("instants are thread-scoped i events on the lifecycle track") {
        const auto instants = select(trace, [](const json& e) { return e["ph"] == "i"; });
        CHECK(instants.size() == kRanks + 2); // rank started x 4, checksum, fault injected
        for (const json& e : instants) {
            CHECK(e["s"] == "t");
            CHECK(e["tid"] == 3);
        }
        const auto checksum = select(trace, [](const json& e) { return e["name"] == "params checksum"; });
        REQUIRE(checksum.size() == 1);
        CHECK(checksum[0]["args"]["checksum"] == "000000000000beef");
        const auto fault = select(trace, [](const json& e) { return e["name"] == "fault injected"; });
        REQUIRE(fault.size() == 1);
        CHECK(fault[0]["pid"] == 0);
    }

    SECTION("flow arrows join the lowest rank's collective to every other rank's") {
        const auto starts = select(trace, [](const json& e) { return e["ph"] == "s"; });
        const auto finishes = select(trace, [](const json& e) { return e["ph"] == "f"; });
        // 4 all-reduces (seq 0..3) on 4 ranks: 3 arrows each; the lone send has none.
        CHECK(starts.size() == 4 * (kRanks - 1));
        CHECK(finishes.size() == starts.size());

        std::map<uint64_t, json> startById;
        for (const json& s : starts) {
            CHECK(s["pid"] == 1); // rank 0
            CHECK(s["tid"] == 2);
            CHECK(s["cat"] == "collective");
            CHECK(s["name"] == "all-reduce");
            CHECK(startById.emplace(s["id"].get<uint64_t>(), s).second); // ids are unique
        }
        std::set<uint64_t> finishedIds;
        for (const json& f : finishes) {
            CHECK(f["bp"] == "e");
            CHECK(f["pid"] != 1);
            const uint64_t id = f["id"].get<uint64_t>();
            REQUIRE(startById.count(id) == 1);
            CHECK(f["name"] == startById[id]["name"]);
            CHECK(finishedIds.insert(id).second); // one finish per start
        }
    }

    SECTION("each arrow starts and ends where a collective span starts") {
        const auto collectiveStarts =
            select(trace, [](const json& e) { return e["ph"] == "X" && e["tid"] == 2; });
        auto spanStartsAt = [&](const json& flow) {
            for (const json& x : collectiveStarts) {
                if (x["pid"] == flow["pid"] && x["name"] == flow["name"] && x["ts"] == flow["ts"])
                    return true;
            }
            return false;
        };
        for (const json& flow :
             select(trace, [](const json& e) { return e["ph"] == "s" || e["ph"] == "f"; })) {
            CHECK(spanStartsAt(flow));
        }
        // The arrow into rank 3's hung all-reduce starts at rank 0's seq 3 (300 ms) and ends at 303 ms.
        const auto intoHang = select(
            trace, [](const json& e) { return e["ph"] == "f" && e["pid"] == 4 && e["ts"] == 303000.0; });
        CHECK(intoHang.size() == 1);
    }
}

TEST_CASE("writeChromeTrace of an empty record is still a valid trace", "[trace]") {
    dt::RunRecord record;
    record.scenario.name = "empty";
    const json trace = exportTrace(record);
    CHECK(trace["traceEvents"].is_array());
    const auto names = select(trace, [](const json& e) { return e["name"] == "process_name"; });
    CHECK(names.size() == 1); // the Session only
}
