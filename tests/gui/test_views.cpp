// test_views.cpp: the RunModel and the timeline, memory, metrics and event log
// views, drawn headless (an ImGui context, no window, no GL) from synthetic events.
//
// [SECTION] RunModel: sorting, pairing, depths
// [SECTION] Timeline: level of detail and hit testing (pure)
// [SECTION] Views: empty states
// [SECTION] Views: drawing with data, interaction
// [SECTION] Timeline: one million events
#include "gui/views_fixture.hpp"

#include "views/view_event_log.hpp"
#include "views/view_memory.hpp"
#include "views/view_metrics.hpp"
#include "views/view_timeline.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>

using namespace dt;
using namespace dt::app;
using dt::test::FrameStats;
using dt::test::HeadlessImGui;
using dt::test::SyntheticRun;

namespace {

Event instant(int rank, EventKind kind, int64_t t, double value = 0.0) {
    Event e;
    e.rank = rank;
    e.kind = kind;
    e.phase = EventPhase::Instant;
    e.t_ns = t;
    e.value = value;
    return e;
}

RunModel emptyModel(int world) {
    RunModel model;
    Scenario scenario;
    scenario.topology.ranks = world;
    model.reset(scenario, world);
    return model;
}

// Records the navigator calls the event log makes.
struct FakeNavigator : TimelineNavigator {
    int64_t centered = -1;
    int rank = -2;
    void centerOn(int64_t t_ns, int r) override { centered = t_ns, rank = r; }
    void showRange(int64_t, int64_t) override {}
};

} // namespace

// -----------------------------------------------------------------------------
// [SECTION] RunModel: sorting, pairing, depths
// -----------------------------------------------------------------------------

TEST_CASE("RunModel pairs the phases of one Work into one comm span", "[gui]") {
    RunModel model = emptyModel(2);
    using W = EventPhase;

    SECTION("a completed collective has its scheduled, start and end times") {
        const Event e[] = {
            SyntheticRun::work(0, 3, EventKind::AllReduce, W::WorkScheduled, 7, 1, 100, 2, 4096),
            SyntheticRun::work(0, 3, EventKind::AllReduce, W::WorkStarted, 7, 1, 150, 2, 4096),
            SyntheticRun::work(0, 3, EventKind::AllReduce, W::WorkCompleted, 7, 1, 400, 2, 4096)};
        model.ingest(e, 3);
        REQUIRE(model.lane(0).comm.size() == 1);
        const SpanRecord& s = model.lane(0).comm[0];
        CHECK(s.t_scheduled == 100);
        CHECK(s.t0 == 150);
        CHECK(s.t1 == 400);
        CHECK(s.bytes == 4096);
        CHECK(s.seq == 7);
        CHECK(s.step == 3);
        CHECK(s.unit == 1);
        CHECK(s.group_size == 2);
        CHECK(s.started);
        CHECK_FALSE(s.open());
        CHECK_FALSE(s.failed);
        CHECK(s.depth == RankLane::kCommRow);
        CHECK(model.openCollectives() == 0);
        CHECK(model.findComm(0, kGroupWorld, EventKind::AllReduce, -1, 7) == &s);
        CHECK(model.findComm(1, kGroupWorld, EventKind::AllReduce, -1, 7) == nullptr);
    }
    SECTION("a hung collective stays open and counts as never completed") {
        const Event e[] = {SyntheticRun::work(1, 0, EventKind::AllReduce, W::WorkScheduled, 0, 0, 100, 2),
                           SyntheticRun::work(1, 0, EventKind::AllReduce, W::WorkStarted, 0, 0, 120, 2)};
        model.ingest(e, 2);
        REQUIRE(model.lane(1).comm.size() == 1);
        const SpanRecord& s = model.lane(1).comm[0];
        CHECK(s.open());
        CHECK(s.t1 == SpanRecord::kOpen);
        CHECK(s.endOr(5000) == 5000);
        CHECK(model.openCollectives() == 1);
        CHECK(model.lane(1).comm_end_max[0] == SpanRecord::kOpen);

        // The timeline draws it up to "now".
        TimeWindow w;
        w.start_ns = 0;
        w.ns_per_px = 10.0;
        w.width = 1000.0f;
        w.now_ns = 5000;
        std::vector<RowItem> items;
        buildRowItems(model.lane(1).comm, model.lane(1).comm_end_max, w, items);
        REQUIRE(items.size() == 1);
        CHECK(items[0].t1 == 5000);
        CHECK(items[0].x1 == Approx(500.0f));
    }
    SECTION("a failed collective is closed, marked failed and listed as notable") {
        const Event e[] = {SyntheticRun::work(0, 0, EventKind::AllGather, W::WorkScheduled, 2, -1, 100, 2),
                           SyntheticRun::work(0, 0, EventKind::AllGather, W::WorkStarted, 2, -1, 110, 2),
                           SyntheticRun::work(0, 0, EventKind::AllGather, W::WorkFailed, 2, -1, 900, 2)};
        model.ingest(e, 3);
        const SpanRecord& s = model.lane(0).comm.at(0);
        CHECK(s.failed);
        CHECK(s.t1 == 900);
        CHECK(model.openCollectives() == 0);
        REQUIRE(model.notable().size() == 1);
        CHECK(model.notable()[0].phase == W::WorkFailed);
        CHECK(describeNotable(model.notable()[0]).level == LogLevel::Error);
    }
    SECTION("phases arriving out of order still pair") {
        const Event e[] = {SyntheticRun::work(0, 0, EventKind::Send, W::WorkStarted, 0, -1, 150, 2, 64, 1),
                           SyntheticRun::work(0, 0, EventKind::Send, W::WorkScheduled, 0, -1, 100, 2, 64, 1),
                           SyntheticRun::work(0, 0, EventKind::Send, W::WorkCompleted, 0, -1, 300, 2, 64, 1)};
        model.ingest(e, 3);
        REQUIRE(model.lane(0).comm.size() == 1);
        CHECK(model.lane(0).comm[0].t_scheduled == 100);
        CHECK(model.lane(0).comm[0].t0 == 150);
        CHECK(model.lane(0).comm[0].t1 == 300);
        CHECK(model.findComm(0, kGroupWorld, EventKind::Send, 1, 0) != nullptr);
    }
    SECTION("a queued Work moves to its start time when it starts, keeping the row sorted") {
        // A scheduled at 100 (queued behind B), B scheduled and started at 110..200, A starts at 210.
        const Event e[] = {
            SyntheticRun::work(0, 0, EventKind::AllReduce, W::WorkScheduled, 5, 0, 100, 2),
            SyntheticRun::work(0, 0, EventKind::Broadcast, W::WorkScheduled, 9, -1, 110, 2, 8, 0),
            SyntheticRun::work(0, 0, EventKind::Broadcast, W::WorkStarted, 9, -1, 120, 2, 8, 0)};
        model.ingest(e, 3);
        const auto& comm = model.lane(0).comm;
        REQUIRE(comm.size() == 2);
        CHECK(comm[0].kind == EventKind::AllReduce);
        CHECK_FALSE(comm[0].started); // queued: drawn from its scheduled time, outlined
        CHECK(comm[0].t0 == 100);
        const Event later[] = {
            SyntheticRun::work(0, 0, EventKind::Broadcast, W::WorkCompleted, 9, -1, 200, 2, 8, 0),
            SyntheticRun::work(0, 0, EventKind::AllReduce, W::WorkStarted, 5, 0, 210, 2)};
        model.ingest(later, 2);
        CHECK(comm[0].kind == EventKind::Broadcast);
        CHECK(comm[1].kind == EventKind::AllReduce);
        CHECK(comm[1].t0 == 210);
        CHECK(model.findComm(0, kGroupWorld, EventKind::AllReduce, -1, 5) == &comm[1]);
        CHECK(model.findComm(0, kGroupWorld, EventKind::Broadcast, 0, 9) == &comm[0]);
        CHECK(model.lane(0).comm_end_max[0] == 200);
        CHECK(model.lane(0).comm_end_max[1] == SpanRecord::kOpen);
        CHECK(model.openCollectives() == 1);
    }
    SECTION("a restarted rank's Work with a reused seq becomes a new span") {
        const Event e[] = {SyntheticRun::work(0, 0, EventKind::AllReduce, W::WorkStarted, 0, 0, 100, 2),
                           SyntheticRun::work(0, 0, EventKind::AllReduce, W::WorkCompleted, 0, 0, 200, 2),
                           SyntheticRun::work(0, 0, EventKind::AllReduce, W::WorkStarted, 0, 0, 900, 2)};
        model.ingest(e, 3);
        REQUIRE(model.lane(0).comm.size() == 2);
        CHECK(model.findComm(0, kGroupWorld, EventKind::AllReduce, -1, 0)->t0 == 900);
    }
}

TEST_CASE("RunModel links collectives only within their process group", "[gui]") {
    // Two groups run a Work with the same kind and seq: rank 0 and 1 in group 1,
    // rank 2 in group 2. The timeline's arrows follow findPart.
    RunModel model = emptyModel(3);
    std::vector<Event> events;
    for (int r = 0; r < 3; ++r) {
        Event e = SyntheticRun::work(r, 0, EventKind::ReduceScatter, EventPhase::WorkStarted, 4, 0, 100, 2);
        e.group = uint8_t(r < 2 ? 1 : 2);
        events.push_back(e);
    }
    model.ingest(events.data(), events.size());
    const SpanRecord& s = model.lane(0).comm.at(0);
    CHECK(model.findPart(1, s) == &model.lane(1).comm.at(0));
    CHECK(model.findPart(2, s) == nullptr);
}

TEST_CASE("RunModel sorts spans by start and puts them at the right depth", "[gui]") {
    RunModel model = emptyModel(1);
    auto sp = [](EventKind k, int unit, int64_t b, int64_t e) {
        return SyntheticRun::span(0, 0, k, unit, b, e);
    };
    // Emitted when they end: the step (started first) arrives last; one data span is late.
    const Event e[] = {sp(EventKind::Forward, 0, 200, 300),   sp(EventKind::Forward, 1, 300, 400),
                       sp(EventKind::Backward, 1, 400, 450),  sp(EventKind::Backward, 0, 450, 500),
                       sp(EventKind::Backward, -2, 400, 510), sp(EventKind::Forward, -1, 150, 200),
                       sp(EventKind::Data, -1, 100, 150),     sp(EventKind::Optimizer, -1, 510, 600),
                       sp(EventKind::Step, -1, 100, 600)};
    model.ingest(e, sizeof(e) / sizeof(e[0]));
    const RankLane& lane = model.lane(0);

    SECTION("depths: step 0; phases, embed/head and whole backward 1; per block 2") {
        CHECK(spanDepth(EventKind::Step, -1) == 0);
        CHECK(spanDepth(EventKind::Data, -1) == 1);
        CHECK(spanDepth(EventKind::Forward, -1) == 1);
        CHECK(spanDepth(EventKind::Backward, -2) == 1);
        CHECK(spanDepth(EventKind::Wait, -1) == 1);
        CHECK(spanDepth(EventKind::Paused, -1) == 1);
        CHECK(spanDepth(EventKind::SlowDelay, -1) == 1);
        CHECK(spanDepth(EventKind::Forward, 0) == 2);
        CHECK(spanDepth(EventKind::Backward, 3) == 2);
        CHECK(lane.compute[0].size() == 1);
        CHECK(lane.compute[1].size() == 4);
        CHECK(lane.compute[2].size() == 4);
    }
    SECTION("each depth is sorted by start, with a prefix max of the ends") {
        for (int d = 0; d < RankLane::kDepths; ++d) {
            const auto& spans = lane.compute[size_t(d)];
            int64_t m = INT64_MIN;
            for (size_t i = 0; i < spans.size(); ++i) {
                if (i > 0)
                    CHECK(spans[i - 1].t0 <= spans[i].t0);
                m = std::max(m, spans[i].t1);
                CHECK(lane.compute_end_max[size_t(d)][i] == m);
            }
        }
        CHECK(lane.compute[1][0].kind == EventKind::Data);
        CHECK(lane.compute[1][1].kind == EventKind::Forward);
        CHECK(lane.compute[1][2].kind == EventKind::Backward);
        CHECK(lane.compute[1][2].unit == -2);
    }
    SECTION("times, counters, instants and logs") {
        CHECK(model.tBegin() == 100);
        CHECK(model.tEnd() == 600);
        CHECK(model.eventCount() == 9);
        const Event more[] = {SyntheticRun::counter(0, 0, EventKind::LossValue, 3.5, 700),
                              SyntheticRun::counter(0, 1, EventKind::LossValue, 2.5, 800),
                              instant(0, EventKind::RankFinished, 900),
                              instant(-1, EventKind::FaultInjected, 650, 9)};
        model.ingest(more, 4);
        double v = 0;
        REQUIRE(model.lastCounter(0, EventKind::LossValue, v));
        CHECK(v == 2.5);
        CHECK(lane.counter_max[size_t(EventKind::LossValue)] == 3.5);
        CHECK(lane.instants.size() == 1);
        REQUIRE(model.notable().size() == 2);
        CHECK(model.notable()[0].kind == EventKind::FaultInjected); // time order across ranks and the Session
        const LogRecord logs[] = {{500, 0, LogLevel::Error, "late"}, {100, -1, LogLevel::Info, "early"}};
        model.ingestLogs(logs, 2);
        CHECK(model.logs()[0].text == "early");
        const auto rows = buildEventLogRows(model);
        REQUIRE(rows.size() == 4);
        CHECK(rows[0].text == "early");
        CHECK(rows[1].text == "late");
        CHECK(rows[2].level == LogLevel::Warning);
        CHECK(rows[3].text.find("finished") != std::string::npos);
    }
}

TEST_CASE("RunModel skips events of a kind or phase it does not know", "[gui]") {
    // A counter of kind 0xFFFF once indexed lane.counters out of bounds (issue 23).
    RunModel model = emptyModel(1);
    Event bad_kind = instant(0, EventKind::LossValue, 100, 2.5);
    bad_kind.phase = EventPhase::Counter;
    bad_kind.kind = EventKind(0xFFFF);
    Event bad_phase = instant(0, EventKind::LossValue, 200, 2.5);
    bad_phase.phase = EventPhase(200);
    Event good = instant(0, EventKind::LossValue, 300, 2.0);
    good.phase = EventPhase::Counter;
    const Event events[] = {bad_kind, bad_phase, good};
    model.ingest(events, 3);
    CHECK(model.eventCount() == 1);
    REQUIRE(model.lane(0).counters[size_t(EventKind::LossValue)].size() == 1);
    CHECK(model.lane(0).counters[size_t(EventKind::LossValue)][0].value == 2.0);
}

// -----------------------------------------------------------------------------
// [SECTION] Timeline: level of detail and hit testing (pure)
// -----------------------------------------------------------------------------

TEST_CASE("The level-of-detail pass folds narrow spans and keeps wide ones", "[gui]") {
    RunModel model;
    SyntheticRun::fill(model, 1, 1000); // 1000 steps of 10 ms
    const RankLane& lane = model.lane(0);
    const auto& blocks = lane.compute[2]; // 8 per step
    TimeWindow w;
    w.width = 1000.0f;
    w.now_ns = model.tEnd();
    std::vector<RowItem> items;

    SECTION("zoomed in, every visible span is its own item") {
        w.start_ns = double(SyntheticRun::kT0);
        w.ns_per_px = 10'000.0; // 10 ms across the width: one step
        buildRowItems(blocks, lane.compute_end_max[2], w, items);
        REQUIRE(items.size() == 8);
        for (const RowItem& item : items)
            CHECK(item.count == 1);
        CHECK(items[0].x0 == Approx(40.0f)); // block 0 forward starts 0.4 ms in
        CHECK(items[0].x1 == Approx(90.0f));
    }
    SECTION("zoomed out, narrow spans fold and every span is counted once") {
        w.start_ns = double(model.tBegin()) - 1e6;
        w.ns_per_px = 10.2e6; // ~10 s across 1000 px: 10 ms per px
        buildRowItems(blocks, lane.compute_end_max[2], w, items);
        CHECK(items.size() < 50);
        size_t total = 0;
        for (const RowItem& item : items)
            total += item.count;
        CHECK(total == blocks.size());
        CHECK(items[0].folded());
    }
    SECTION("a long span that starts before the view is still found") {
        std::vector<SpanRecord> spans(3);
        spans[0].t0 = 0, spans[0].t1 = 1'000'000; // long
        spans[1].t0 = 10, spans[1].t1 = 20;
        spans[2].t0 = 30, spans[2].t1 = 40;
        std::vector<int64_t> end_max = {1'000'000, 1'000'000, 1'000'000};
        w.start_ns = 500'000;
        w.ns_per_px = 100.0;
        buildRowItems(spans, end_max, w, items);
        REQUIRE(items.size() == 1);
        CHECK(items[0].first == 0);
        CHECK(items[0].x0 == Approx(-2.0f)); // clamped to the area
    }
    SECTION("the item count stays near width / 3 px at any zoom") {
        for (double ns_per_px : {1e3, 1e4, 1e5, 1e6, 1e7, 1e8}) {
            items.clear();
            w.start_ns = double(model.tBegin());
            w.ns_per_px = ns_per_px;
            buildRowItems(blocks, lane.compute_end_max[2], w, items);
            CAPTURE(ns_per_px);
            CHECK(items.size() <= size_t(w.width / kMinSpanPx) + 2);
        }
    }
}

TEST_CASE("Hit testing returns the span drawn under a pixel", "[gui]") {
    RunModel model;
    SyntheticRun::fill(model, 2, 3);
    LaneLayout lanes;
    lanes.top = 100.0f;
    lanes.row_height = 20.0f;
    lanes.lane_gap = 10.0f; // lane height 90
    TimeWindow w;
    w.start_ns = double(SyntheticRun::kT0);
    w.ns_per_px = 10'000.0; // 10 us per px: step 0 of rank 0 spans x 0..800
    w.width = 1000.0f;
    w.now_ns = model.tEnd();

    SECTION("rows and lanes from y") {
        int rank = -1, row = -1;
        CHECK(lanes.rowAt(105.0f, 2, rank, row));
        CHECK((rank == 0 && row == 0));
        CHECK(lanes.rowAt(100.0f + 90.0f + 3 * 20.0f + 5.0f, 2, rank, row));
        CHECK((rank == 1 && row == 3));
        CHECK_FALSE(lanes.rowAt(100.0f + 85.0f, 2, rank, row)); // the gap between lanes
        CHECK_FALSE(lanes.rowAt(99.0f, 2, rank, row));
        CHECK_FALSE(lanes.rowAt(100.0f + 2 * 90.0f + 5.0f, 2, rank, row)); // past the last rank
    }
    SECTION("the block, the phase and the collective under a point") {
        // Rank 0, row 2 (blocks), x = 60 px -> 0.6 ms into step 0: forward block 0.
        auto hit = hitTest(model, lanes, w, 60.0f, lanes.rowTop(0, 2) + 5.0f);
        REQUIRE(hit);
        CHECK(hit->rank == 0);
        CHECK(hit->row == 2);
        REQUIRE(hit->item.count == 1);
        const SpanRecord& s = model.lane(0).compute[2][hit->item.first];
        CHECK(s.kind == EventKind::Forward);
        CHECK(s.unit == 0);
        // Rank 1's comm row at 5 ms: bucket 0's all-reduce (4.61 .. 6.0 ms, shifted 7 us for rank 1).
        hit = hitTest(model, lanes, w, 500.0f, lanes.rowTop(1, 3) + 5.0f);
        REQUIRE(hit);
        const SpanRecord& c = model.lane(1).comm[hit->item.first];
        CHECK(c.kind == EventKind::AllReduce);
        CHECK(c.seq == 0);
        // Between steps (9 ms) there is nothing in the step row.
        CHECK_FALSE(hitTest(model, lanes, w, 900.0f, lanes.rowTop(0, 0) + 5.0f));
    }
    SECTION("compact lanes show the phase and comm rows, and hit the same spans") {
        LaneLayout compact = lanes;
        compact.compact = true; // lane height 2 x 20 + 10 = 50
        CHECK(compact.laneHeight() == 50.0f);
        int rank = -1, row = -1;
        CHECK(compact.rowAt(105.0f, 2, rank, row));
        CHECK((rank == 0 && row == LaneLayout::kPhaseRow));
        CHECK(compact.rowAt(100.0f + 50.0f + 25.0f, 2, rank, row));
        CHECK((rank == 1 && row == RankLane::kCommRow));
        CHECK_FALSE(compact.rowAt(100.0f + 45.0f, 2, rank, row)); // the gap
        CHECK(compact.slotOf(0) == -1);
        CHECK(compact.slotOf(2) == -1);
        // Rank 1's comm row at 5 ms is the same all-reduce as in full lanes.
        auto hit = hitTest(model, compact, w, 500.0f, compact.rowTop(1, RankLane::kCommRow) + 5.0f);
        REQUIRE(hit);
        CHECK(hit->row == RankLane::kCommRow);
        CHECK(model.lane(1).comm[hit->item.first].kind == EventKind::AllReduce);
    }
    SECTION("lanes turn compact only for more than 8 ranks that do not fit, and then all fit") {
        CHECK_FALSE(autoCompactLanes(8, 90.0f, 100.0f));  // few ranks: full lanes and a scrollbar
        CHECK_FALSE(autoCompactLanes(32, 10.0f, 400.0f)); // they fit
        CHECK(autoCompactLanes(32, 90.0f, 400.0f));
        LaneLayout fit = lanes;
        fitCompactLanes(fit, 32, 400.0f, 4.0f, 12.0f);
        CHECK(fit.compact);
        CHECK(fit.row_height == 5.0f); // (400 / 32 - 1) / 2 = 5.75, floored
        CHECK(32.0f * fit.laneHeight() <= 400.0f);
        fitCompactLanes(fit, 64, 200.0f, 4.0f, 12.0f); // too many: the minimum, and a scrollbar
        CHECK(fit.row_height == 4.0f);
        fitCompactLanes(fit, 9, 2000.0f, 4.0f, 12.0f); // room to spare: no taller than the maximum
        CHECK(fit.row_height == 12.0f);
    }
    SECTION("a span narrower than 3 px is hit within 1.5 px of its centre") {
        std::vector<RowItem> items(1);
        items[0].x0 = 50.0f;
        items[0].x1 = 50.5f;
        items[0].count = 1;
        CHECK(hitTestItems(items, 51.6f) == 0);
        CHECK(hitTestItems(items, 48.8f) == 0);
        CHECK(hitTestItems(items, 52.0f) == -1);
    }
}

// -----------------------------------------------------------------------------
// [SECTION] Views: empty states
// -----------------------------------------------------------------------------

TEST_CASE("Every view draws its empty state without a model or events", "[gui]") {
    HeadlessImGui imgui;
    TimelineView timeline;
    MemoryView memory;
    MetricsView metrics;
    EventLogView log;
    RunModel empty = emptyModel(4);
    int selected = -1;
    for (const RunModel* model :
         {static_cast<const RunModel*>(nullptr), static_cast<const RunModel*>(&empty)}) {
        ViewInputs in;
        in.model = model;
        in.selected_rank = &selected;
        in.navigator = &timeline;
        CAPTURE(model != nullptr);
        CHECK_FALSE(MemoryView::hasData(in));
        CHECK_FALSE(MetricsView::hasData(in));
        CHECK_FALSE(EventLogView::hasData(in));
        for (int f = 0; f < 2; ++f) {
            FrameStats stats = imgui.frame([&] { timeline.draw(in); });
            CHECK(stats.balanced);
            CHECK(stats.vertices > 0); // the legend and the empty-state text
            CHECK(imgui.frame([&] { memory.draw(in); }).balanced);
            CHECK(imgui.frame([&] { metrics.draw(in); }).balanced);
            CHECK(imgui.frame([&] { log.draw(in); }).balanced);
        }
        CHECK(timeline.lastItemCount() == 0);
    }
    CHECK(std::string(timeline.helpText()).size() > 100);
    CHECK(std::string(memory.helpText()).size() > 100);
    CHECK(std::string(metrics.helpText()).size() > 100);
    CHECK(std::string(log.helpText()).size() > 100);
}

// -----------------------------------------------------------------------------
// [SECTION] Views: drawing with data, interaction
// -----------------------------------------------------------------------------

TEST_CASE("The timeline shows every one of 32 ranks in compact lanes", "[gui]") {
    HeadlessImGui imgui; // 1600 x 900
    RunModel model;
    SyntheticRun::fill(model, 32, 20);
    TimelineView timeline;
    ViewInputs in;
    in.model = &model;
    in.now_ns = model.tEnd();
    imgui.frame([&] { timeline.draw(in); });
    CHECK(imgui.frame([&] { timeline.draw(in); }).balanced);
    const LaneLayout& lanes = timeline.laneLayout();
    CHECK(lanes.compact);
    CHECK(lanes.row_height >= 4.0f);
    // Every lane ends above the display's bottom edge: no rank needs a scroll.
    CHECK(lanes.rowTop(31, RankLane::kCommRow) + lanes.row_height <= 900.0f);
    // Rank 31's all-reduce is under the mouse where it is drawn.
    const float y = lanes.rowTop(31, RankLane::kCommRow) + lanes.row_height * 0.5f;
    bool found = false;
    for (float x = 0.0f; x < timeline.window().width && !found; x += 2.0f)
        if (auto hit = hitTest(model, lanes, timeline.window(), x, y))
            found = hit->rank == 31 && hit->row == RankLane::kCommRow;
    CHECK(found);

    SECTION("unticking Compact gives full lanes back") {
        timeline.setCompactLanes(false);
        imgui.frame([&] { timeline.draw(in); });
        CHECK_FALSE(timeline.laneLayout().compact);
        CHECK(timeline.laneLayout().rowTop(31, 0) > 900.0f); // scrolled out of sight
    }
}

TEST_CASE("The views draw a small run and respond to the mouse", "[gui]") {
    HeadlessImGui imgui;
    RunModel model;
    SyntheticRun::fill(model, 4, 50, /*counters=*/true);
    // A hung all-reduce on rank 2 and a kill, for the tooltip and the log.
    const int64_t t_hang = model.tEnd() + 1'000'000;
    const Event extra[] = {
        SyntheticRun::work(2, 50, EventKind::AllReduce, EventPhase::WorkScheduled, 100, 0, t_hang, 4),
        SyntheticRun::work(2, 50, EventKind::AllReduce, EventPhase::WorkStarted, 100, 0, t_hang + 1000, 4),
        instant(1, EventKind::FaultInjected, t_hang + 2000, 9),
        instant(1, EventKind::ProcessExited, t_hang + 3000, -9),
    };
    model.ingest(extra, 4);
    const LogRecord logs[] = {{t_hang + 2500, -1, LogLevel::Warning, "killed rank 1"}};
    model.ingestLogs(logs, 1);

    TimelineView timeline;
    int selected = -1;
    ViewInputs in;
    in.model = &model;
    in.now_ns = model.tEnd() + 50'000'000;
    in.live = false;
    in.selected_rank = &selected;
    in.navigator = &timeline;

    SECTION("the timeline fits the run, and the wheel zooms around the cursor") {
        imgui.frame([&] { timeline.draw(in); });
        FrameStats stats = imgui.frame([&] { timeline.draw(in); });
        CHECK(stats.balanced);
        const TimeWindow w0 = timeline.window();
        CHECK(w0.start_ns <= double(model.tBegin()));
        CHECK(w0.endNs() >= double(in.now_ns));
        CHECK(model.openCollectives() == 1);

        const float x = timeline.areaLeft() + 400.0f;
        const float y = timeline.laneLayout().rowTop(0, 0) + 5.0f;
        const double t_at = w0.timeAt(400.0f);
        imgui.mouse(ImVec2(x, y), false, 2.0f);
        CHECK(imgui.frame([&] { timeline.draw(in); }).balanced);
        const TimeWindow w1 = timeline.window();
        CHECK(w1.ns_per_px < w0.ns_per_px * 0.7);
        CHECK(w1.timeAt(400.0f) == Approx(t_at).epsilon(1e-6));
    }
    SECTION("a click selects the span under the cursor; the navigator centres the view") {
        timeline.showRange(SyntheticRun::kT0, SyntheticRun::kT0 + 10'000'000); // step 0
        imgui.frame([&] { timeline.draw(in); });
        const TimeWindow w = timeline.window();
        // Rank 1's comm row, in bucket 0's all-reduce (4.61 .. 6.0 ms).
        const float x = timeline.areaLeft() + float(w.xOf(double(SyntheticRun::kT0) + 5.0e6));
        const float y = timeline.laneLayout().rowTop(1, RankLane::kCommRow) + 5.0f;
        imgui.mouse(ImVec2(x, y));
        CHECK(imgui.frame([&] { timeline.draw(in); }).balanced); // hover: tooltip and links
        imgui.mouse(ImVec2(x, y), true);
        imgui.frame([&] { timeline.draw(in); });
        imgui.mouse(ImVec2(x, y), false);
        CHECK(imgui.frame([&] { timeline.draw(in); }).balanced);
        REQUIRE(timeline.selection());
        CHECK(timeline.selection()->rank == 1);
        CHECK(timeline.selection()->row == RankLane::kCommRow);
        CHECK(timeline.selection()->span.kind == EventKind::AllReduce);
        CHECK(timeline.selection()->span.seq == 0);
        CHECK(selected == 1);

        timeline.centerOn(t_hang, 2);
        imgui.mouse(ImVec2(-1, -1));
        imgui.frame([&] { timeline.draw(in); });
        const TimeWindow c = timeline.window();
        CHECK(c.timeAt(c.width * 0.5f) == Approx(double(t_hang)).epsilon(1e-9));
    }
    SECTION("hovering the hung collective draws its tooltip") {
        timeline.showRange(t_hang - 1'000'000, in.now_ns + 1'000'000);
        imgui.frame([&] { timeline.draw(in); });
        const TimeWindow w = timeline.window();
        const float x = timeline.areaLeft() + float(w.xOf(double(t_hang) + 10e6));
        const float y = timeline.laneLayout().rowTop(2, RankLane::kCommRow) + 5.0f;
        auto hit = hitTest(model, timeline.laneLayout(), w, x - timeline.areaLeft(), y);
        REQUIRE(hit);
        CHECK(model.lane(2).comm[hit->item.first].open());
        imgui.mouse(ImVec2(x, y));
        FrameStats stats = imgui.frame([&] { timeline.draw(in); });
        CHECK(stats.balanced);
        CHECK(ImGui::GetDrawData()->CmdListsCount >= 2); // the view and its tooltip window
    }
    SECTION("memory bars: latest values now, the largest as peak, theory when given") {
        const MemoryBars b = memoryBars(in, 0);
        CHECK(b.any);
        CHECK(b.now[0] == 1'000'000);
        CHECK(b.now[3] == 500'000 + 1000 * (49 % 3));
        CHECK(b.peak[3] == 502'000);
        CHECK_FALSE(b.theory);
        in.memory_theory = [](int) {
            return std::optional<std::array<int64_t, 5>>(
                std::array<int64_t, 5>{1'000'000, 1'000'000, 2'000'000, 0, 0});
        };
        CHECK(memoryBars(in, 0).theory);
        CHECK(b.host_now == -1); // no offload: no host row
        MemoryView memory;
        CHECK(MemoryView::hasData(in));
        imgui.mouse(ImVec2(400, 80));
        CHECK(imgui.frame([&] { memory.draw(in); }).balanced);
    }
    SECTION("memory bars: the allocator's measured categories replace the bookkeeping once reported, "
            "with temporaries, step peak, start-up peak and RSS beside them") {
        CHECK_FALSE(memoryBars(in, 0).measured); // the synthetic run reports bookkeeping only
        const int64_t t = model.tEnd();
        const Event measured[] = {
            SyntheticRun::counter(0, 50, EventKind::MemMeasuredParameters, 1'004'096, t + 1),
            SyntheticRun::counter(0, 50, EventKind::MemMeasuredActivations, 700'000, t + 1),
            SyntheticRun::counter(0, 51, EventKind::MemMeasuredActivations, 20'000, t + 2),
            SyntheticRun::counter(0, 51, EventKind::MemMeasuredTemporaries, 3'000, t + 2),
            SyntheticRun::counter(0, 51, EventKind::MemStartupPeak, 9'000'000, t + 2),
            SyntheticRun::counter(0, 51, EventKind::MemRss, 200'000'000, t + 2)};
        model.ingest(measured, 6);
        const MemoryBars b = memoryBars(in, 0);
        CHECK(b.measured);
        CHECK(b.now[0] == 1'004'096); // the allocator's parameters, not the bookkeeping's 1,000,000
        CHECK(b.now[3] == 20'000);
        CHECK(b.peak[3] == 700'000);
        CHECK(b.temporaries_now == 3'000);
        CHECK(b.startup_peak == 9'000'000);
        CHECK(b.rss == 200'000'000);
        CHECK_FALSE(memoryBars(in, 1).measured); // rank 1 reported no tags: its bookkeeping stays
        MemoryView memory;
        imgui.mouse(ImVec2(400, 80));
        CHECK(imgui.frame([&] { memory.draw(in); }).balanced);
    }
    SECTION("memory bars: an offloading rank's host bytes, latest and largest, beside the device bars") {
        const int64_t t = model.tEnd();
        const Event host[] = {SyntheticRun::counter(0, 50, EventKind::MemHost, 6'000'000, t + 1),
                              SyntheticRun::counter(0, 51, EventKind::MemHost, 5'000'000, t + 2)};
        model.ingest(host, 2);
        const MemoryBars b = memoryBars(in, 0);
        CHECK(b.host_now == 5'000'000);
        CHECK(b.host_peak == 6'000'000);
        CHECK(memoryBars(in, 1).host_now == -1);
        in.memory_host_theory = 6'000'000;
        MemoryView memory;
        imgui.mouse(ImVec2(400, 80));
        CHECK(imgui.frame([&] { memory.draw(in); }).balanced);
    }
    SECTION("metrics: throughput from step time, bytes per step from the cumulative counter") {
        const MetricsSeries m = buildMetricsSeries(model);
        REQUIRE(m.loss.size() == 4);
        CHECK(m.tokens);
        const Scenario& sc = model.scenario();
        const double tokens = double(sc.data.batch_per_rank) * sc.model.context * 4;
        CHECK(m.throughput[1].y[0] == Approx(tokens / (8.1 / 1000.0)));
        CHECK(m.wire_bytes[0].y[0] == Approx(1.5e6));
        CHECK(m.wire_bytes[0].y[10] == Approx(1.5e6));
        CHECK(m.step_ms[2].y.size() == 50);
        MetricsView metrics;
        imgui.mouse(ImVec2(300, 200));
        CHECK(imgui.frame([&] { metrics.draw(in); }).balanced);
        CHECK(imgui.frame([&] { metrics.draw(in); }).balanced);
    }
    SECTION("the event log lists the kill in time order and a click jumps the timeline") {
        const auto rows = buildEventLogRows(model);
        REQUIRE(rows.size() == 3);
        CHECK(rows[0].text.find("fault injected: SIGKILL") != std::string::npos);
        CHECK(rows[1].text == "killed rank 1");
        CHECK(rows[2].text.find("killed by signal 9") != std::string::npos);
        CHECK(rows[2].level == LogLevel::Error);
        // The view adds the hang diagnosis of the collective left open at the end.
        const auto shown = buildEventLogRows(model, model.hungCollectives(model.tEnd(), true));
        REQUIRE(shown.size() == 4);
        const auto hung = std::find_if(shown.begin(), shown.end(),
                                       [](const EventLogRow& r) { return r.text.rfind("hung: ", 0) == 0; });
        REQUIRE(hung != shown.end());
        INFO(hung->text);
        CHECK(hung->text.find("never joined") !=
              std::string::npos); // the fixture leaves rank 2 waiting alone
        const int killed_row =
            int(std::find_if(shown.begin(), shown.end(),
                             [](const EventLogRow& r) {
                                 return r.text.find("killed by signal 9") != std::string::npos;
                             }) -
                shown.begin());
        FakeNavigator nav;
        in.navigator = &nav;
        EventLogView log;
        imgui.mouse(ImVec2(-1, -1));
        CHECK(imgui.frame([&] { log.draw(in); }).balanced);
        CHECK(log.visibleRowCount() == 4);
        // The kill's row: header + killed_row rows below the filter line.
        const float row_h = ImGui::GetTextLineHeight() + ImGui::GetStyle().CellPadding.y * 2.0f;
        const float y = ImGui::GetFrameHeightWithSpacing() + 8.0f /* window padding */ +
                        ImGui::GetFrameHeight() /* title */ + row_h * (float(killed_row) + 1.5f);
        imgui.mouse(ImVec2(300, y));
        imgui.frame([&] { log.draw(in); });
        imgui.mouse(ImVec2(300, y), true);
        imgui.frame([&] { log.draw(in); });
        imgui.mouse(ImVec2(300, y), false);
        imgui.frame([&] { log.draw(in); });
        CHECK(nav.centered == rows[2].t_ns);
        CHECK(nav.rank == 1);
        CHECK(selected == 1);
    }
}

TEST_CASE("The event log says when a rank failed: after its last completed step, or before its first",
          "[gui][issue22]") {
    RunModel model = emptyModel(2);
    const Event e[] = {
        SyntheticRun::span(0, 0, EventKind::Step, -1, 100, 200),
        SyntheticRun::span(0, 1, EventKind::Step, -1, 200, 300),
        SyntheticRun::span(0, 2, EventKind::Step, -1, 300, 450), // ends after the failure below
        instant(0, EventKind::RankFailed, 400),                  // the engine sends step -1
        instant(1, EventKind::RankFailed, 50),                   // before any step
        instant(1, EventKind::RankFinished, 60),                 // a finish before a step says so too
    };
    model.ingest(e, std::size(e));
    CHECK(model.lastStepBefore(0, 400) == 1);
    CHECK(model.lastStepBefore(1, 400) == -1);
    std::vector<std::string> texts;
    for (const EventLogRow& row : buildEventLogRows(model))
        texts.push_back(row.text);
    REQUIRE(texts.size() == 3);
    CHECK(texts[0] == "rank failed before its first step");
    CHECK(texts[1] == "rank finished before its first step");
    CHECK(texts[2] == "rank failed after step 1");
    for (const std::string& t : texts)
        CHECK(t.find("-1") == std::string::npos);
    // A fault that is not a signal is named, not read as one ("fault injected: signal (signal -5)").
    CHECK(describeNotable(instant(1, EventKind::FaultInjected, 70, -5)).text == "fault injected: partition");
    CHECK(describeNotable(instant(1, EventKind::FaultInjected, 70, 9)).text ==
          "fault injected: SIGKILL (signal 9)");
}

TEST_CASE("The loss line breaks where a rank was dead or restarted", "[gui][issue22]") {
    // Rank 1 reports steps 0..15, dies, and its restarted incarnation heals
    // straight to step 396: 380 steps it never ran. Rank 0 runs throughout.
    RunModel model = emptyModel(2);
    std::vector<Event> ev;
    ev.push_back(instant(1, EventKind::RankStarted, 1));
    for (int step = 0; step < 400; ++step) {
        const int64_t t = 100 + int64_t(step) * 10;
        ev.push_back(SyntheticRun::counter(0, step, EventKind::LossValue, 5.0 - step * 0.001, t));
        if (step <= 15)
            ev.push_back(SyntheticRun::counter(1, step, EventKind::LossValue, 5.0 - step * 0.001, t));
        if (step >= 396)
            ev.push_back(SyntheticRun::counter(1, step, EventKind::LossValue, 4.6, t));
    }
    ev.push_back(instant(1, EventKind::RankStarted, 100 + 390 * 10)); // the new incarnation
    model.ingest(ev.data(), ev.size());
    const MetricsSeries m = buildMetricsSeries(model);
    REQUIRE(m.loss.size() == 2);
    const auto breaks = [](const PlotSeries& s) {
        return std::count_if(s.y.begin(), s.y.end(), [](double y) { return std::isnan(y); });
    };
    CHECK(breaks(m.loss[0]) == 0);
    REQUIRE(breaks(m.loss[1]) == 1);
    const PlotSeries& r1 = m.loss[1];
    const auto gap = std::find_if(r1.y.begin(), r1.y.end(), [](double y) { return std::isnan(y); });
    const size_t i = size_t(gap - r1.y.begin());
    CHECK(r1.x[i - 1] == 15.0);
    CHECK(r1.x[i + 1] == 396.0);
    CHECK(std::is_sorted(r1.x.begin(), r1.x.end())); // the plot's hover searches x

    SECTION(
        "a restart that goes on from the next step breaks too; a step done twice keeps its latest value") {
        PlotSeries s;
        s.x = {0, 1, 2, 2, 3};
        s.y = {5, 4, 3, 2.5, 2};
        breakAtGaps(s, {0, 0, 0, 1, 1}); // step 2 again by the next incarnation
        CHECK(s.x == std::vector<double>{0, 1, 1.5, 2, 3});
        CHECK(std::isnan(s.y[2])); // the break between the incarnations
        CHECK(s.y[3] == 2.5);      // the latest step 2
    }
    SECTION("the plot draws the broken line") {
        HeadlessImGui imgui;
        ViewInputs in;
        in.model = &model;
        MetricsView view;
        CHECK(imgui.frame([&] { view.draw(in); }).balanced);
    }
}

TEST_CASE("'never completed' is said only of collectives a fault left open, naming them", "[gui][issue22]") {
    using W = EventPhase;
    RunModel model = emptyModel(3);
    // Rank 2 leaves in the middle of an all-reduce because the job finished (a clean end).
    const Event clean[] = {
        SyntheticRun::work(2, 99, EventKind::AllReduce, W::WorkStarted, 99, -1, 1000, 3),
        instant(2, EventKind::RankFinished, 1100, 1.0),
        instant(2, EventKind::ProcessExited, 1200, 0.0),
    };
    model.ingest(clean, std::size(clean));
    REQUIRE(model.openCollectives() == 1);
    std::vector<OpenCollective> open = model.openCollectiveList();
    REQUIRE(open.size() == 1);
    CHECK(open[0].fate == OpenCollectiveFate::RankLeft);
    bool fault = true;
    std::string line = openCollectivesSummary(open, &fault);
    CHECK_FALSE(fault);
    CHECK(line.find("never completed") == std::string::npos);
    CHECK(line.find("not a fault") != std::string::npos);

    // Rank 1 is killed as its all-reduce #15 of step 15 starts.
    const Event killed[] = {
        SyntheticRun::work(1, 15, EventKind::AllReduce, W::WorkStarted, 15, -1, 500, 3),
        instant(1, EventKind::ProcessExited, 510, -9.0),
        instant(1, EventKind::RankStarted, 900), // restarted: a new incarnation
    };
    model.ingest(killed, std::size(killed));
    open = model.openCollectiveList();
    REQUIRE(open.size() == 2);
    CHECK(open[0].rank == 1);
    CHECK(open[0].fate == OpenCollectiveFate::RankDied);
    line = openCollectivesSummary(open, &fault);
    CHECK(fault);
    CHECK(line == "1 collective never completed: rank 1's all-reduce #15 (step 15), its process died");

    // Nothing open: nothing to say.
    CHECK(openCollectivesSummary({}, &fault).empty());
    CHECK_FALSE(fault);
}

// -----------------------------------------------------------------------------
// [SECTION] Timeline: one million events
// -----------------------------------------------------------------------------

TEST_CASE("The timeline draws 8 ranks x 1,000,000 events at a cost bounded by what is visible", "[gui]") {
    constexpr int kWorld = 8;
    constexpr int kSteps = 1'000'000 / (kWorld * SyntheticRun::kEventsPerStep) + 1; // 5953 steps, 60 s
    RunModel model;
    const auto t0 = std::chrono::steady_clock::now();
    SyntheticRun::fill(model, kWorld, kSteps);
    const double ingest_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    REQUIRE(model.eventCount() >= 1'000'000);
    size_t spans = 0;
    for (int r = 0; r < kWorld; ++r) {
        for (const auto& v : model.lane(r).compute)
            spans += v.size();
        spans += model.lane(r).comm.size();
    }
    WARN("ingested " << model.eventCount() << " events into " << spans << " spans in " << ingest_s << " s");

    HeadlessImGui imgui;
    TimelineView timeline;
    ViewInputs in;
    in.model = &model;
    in.now_ns = model.tEnd();

    imgui.frame([&] { timeline.draw(in); }); // the first frame fits the whole run
    const FrameStats out = imgui.frame([&] { timeline.draw(in); });
    CHECK(out.balanced);
    CHECK(timeline.window().endNs() >= double(model.tEnd()));
    WARN("zoomed out: " << out.vertices << " vertices, " << out.commands << " draw commands, "
                        << timeline.lastItemCount() << " row items (" << timeline.lastFoldCount()
                        << " folded)");
    CHECK(timeline.lastFoldCount() > 0);
    CHECK(out.vertices < 100'000);              // vs 1,000,000 events
    CHECK(timeline.lastItemCount() < 32 * 600); // 32 rows x (width / 3 px) at most

    timeline.showRange(SyntheticRun::kT0 + 3000 * SyntheticRun::kStepNs,
                       SyntheticRun::kT0 + 3002 * SyntheticRun::kStepNs);
    const FrameStats in2 = imgui.frame([&] { timeline.draw(in); });
    CHECK(in2.balanced);
    WARN("zoomed in (2 steps): " << in2.vertices << " vertices, " << in2.commands << " draw commands, "
                                 << timeline.lastItemCount() << " row items");
    CHECK(timeline.lastItemCount() <=
          size_t(kWorld) * 2 * 17 + 64); // 2 steps x 17 spans per rank, plus edges
    CHECK(timeline.lastFoldCount() == 0);
    CHECK(in2.vertices < 100'000);
}
