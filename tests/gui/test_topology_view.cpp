// test_topology_view.cpp: what a topology tile says about a rank (tileStatus),
// from a RunModel built from synthetic events and a RankProgress filled by hand.
#include "gui/views_fixture.hpp"

#include "model/rank_clock.hpp"
#include "views/view_topology.hpp"

#include <catch2/catch.hpp>

using namespace dt;
using namespace dt::app;
using dt::test::HeadlessImGui;
using dt::test::SyntheticRun;

namespace {

constexpr int64_t kMs = 1'000'000;

RankProgress running(int rank, int step, double step_ms) {
    RankProgress p;
    p.rank = rank;
    p.pid = 100 + rank;
    p.state = RankState::Running;
    p.step = step;
    p.last_step_ms = step_ms;
    return p;
}

// `world` running ranks of `model`'s scenario, live at 5 s.
ViewInputs liveInputs(const RunModel& model, std::vector<RankProgress>& ranks, int world, int step,
                      double step_ms) {
    ranks.clear();
    for (int r = 0; r < world; ++r)
        ranks.push_back(running(r, step, step_ms));
    ViewInputs in;
    in.model = &model;
    in.ranks = &ranks;
    in.now_ns = 5'000 * kMs;
    in.live = true;
    return in;
}

// Two frames of `view` at `size` (the second has the window's size); its grid.
TopologyView::Grid gridAfterTwoFrames(HeadlessImGui& imgui, TopologyView& view, const ViewInputs& in,
                                      ImVec2 size) {
    ImGui::GetIO().DisplaySize = size;
    CHECK(imgui.frame([&] { view.draw(in); }).balanced);
    CHECK(imgui.frame([&] { view.draw(in); }).balanced);
    return view.lastGrid();
}

} // namespace

TEST_CASE("A rank blocked in an all-reduce that never completes reads BLOCKED, not RUNNING",
          "[gui][issue22]") {
    // DDP: rank 2 was hung (SIGSTOP); ranks 0 and 1 started all-reduce #65 at 1 s
    // and wait in it. At 10.2 s they have waited 9.2 s; their last step took 312 ms.
    RunModel model;
    Scenario s;
    s.topology.ranks = 3;
    model.reset(s, 3);
    using W = EventPhase;
    const Event ev[] = {
        SyntheticRun::work(0, 3, EventKind::AllReduce, W::WorkStarted, 65, 0, 1000 * kMs, 3),
        SyntheticRun::work(1, 3, EventKind::AllReduce, W::WorkStarted, 65, 0, 1000 * kMs, 3),
        SyntheticRun::work(1, 3, EventKind::AllReduce, W::WorkCompleted, 65, 0, 1010 * kMs, 3),
    };
    model.ingest(ev, std::size(ev));
    const int64_t now = 10'200 * kMs;

    const TileStatus blocked = tileStatus(model, running(0, 2, 312), now);
    CHECK(blocked.blocked);
    CHECK(blocked.state == "BLOCKED");
    CHECK(blocked.wait == "waiting in all-reduce for 9.2 s");
    CHECK(blocked.step_time.empty()); // 312 ms/step is not what it does now

    const TileStatus training = tileStatus(model, running(1, 2, 312), now); // its all-reduce completed
    CHECK_FALSE(training.blocked);
    CHECK(training.state == "RUNNING");
    CHECK(training.step_time == "312 ms/step");

    SECTION("a partitioned replica waits for a quorum it cannot get: not RUNNING either") {
        RankProgress p = running(1, 2, 312);
        p.partitioned = true;
        const TileStatus st = tileStatus(model, p, now);
        CHECK(st.blocked);
        CHECK(st.state == "PARTITIONED");
        CHECK(st.step_time.empty());
    }
    SECTION("an all-reduce open for less than the stuck threshold is just in flight") {
        const TileStatus in_flight = tileStatus(model, running(0, 2, 312), 1500 * kMs);
        CHECK_FALSE(in_flight.blocked);
        CHECK(in_flight.state == "RUNNING");
    }
    SECTION("a dead or hung rank shows no step time as if current") {
        RankProgress killed = running(2, 2, 312);
        killed.state = RankState::Killed;
        CHECK(tileStatus(model, killed, now).step_time.empty());
        killed.state = RankState::Hung;
        CHECK(tileStatus(model, killed, now).step_time.empty());
    }
    SECTION("an open collective of a killed, restarted incarnation does not block the new process") {
        Event started;
        started.rank = 0;
        started.kind = EventKind::RankStarted;
        started.phase = EventPhase::Instant;
        started.t_ns = 5000 * kMs;
        model.ingest(&started, 1);
        CHECK_FALSE(tileStatus(model, running(0, 2, 312), now).blocked);
    }
    SECTION("the tile draws it") {
        HeadlessImGui imgui;
        std::vector<RankProgress> ranks = {running(0, 2, 312), running(1, 2, 312), running(2, 2, 312)};
        ranks[2].state = RankState::Hung;
        ViewInputs in;
        in.model = &model;
        in.ranks = &ranks;
        in.now_ns = now;
        in.live = true;
        TopologyView view;
        CHECK(imgui.frame([&] { view.draw(in); }).balanced);
    }
}

TEST_CASE("A rank's clock line: nothing on the tile on the Session's host, the error bound from another host",
          "[gui][clock]") {
    RunModel model;
    Scenario s;
    s.topology.ranks = 3;
    model.reset(s, 3);
    Event same;
    same.rank = 0;
    same.kind = EventKind::ClockSync;
    same.phase = EventPhase::Instant;
    same.t_ns = 10 * kMs;
    same.unit = 0;
    Event measured = same;
    measured.rank = 1;
    measured.unit = 1;
    measured.bytes = -250'012'300; // offset applied
    measured.value = 12'400;       // error bound
    measured.dur_ns = 24'800;      // round trip
    Event older = measured;        // arrives late: must not replace the newer one
    older.t_ns = 5 * kMs;
    older.value = 99'000;
    Event drift = measured;
    drift.kind = EventKind::ClockDriftPpm;
    drift.phase = EventPhase::Counter;
    drift.value = 40.2;
    const Event ev[] = {same, measured, older, drift};
    model.ingest(ev, std::size(ev));

    SECTION("same host: exact, and the tile stays quiet") {
        const RankClockText t = rankClockText(model.lane(0));
        CHECK(t.tile.empty());
        CHECK(t.detail == "same host as the Session: one clock, offset 0 (exact)");
    }
    SECTION("another host: the bound on the tile, offset, round trip, drift and syncs in the details") {
        const RankClockText t = rankClockText(model.lane(1));
        CHECK(t.tile == "clock \xC2\xB1"
                        "12 \xC2\xB5s");
        CHECK(t.detail == "offset -250.0 ms \xC2\xB1"
                          "12 \xC2\xB5s (measured, round trip 25 \xC2\xB5s), drift "
                          "+40.2 ppm, 2 syncs");
    }
    SECTION("a rank that never reported a clock") {
        const RankClockText t = rankClockText(model.lane(2));
        CHECK(t.tile.empty());
        CHECK(t.detail == "-");
    }
    SECTION("ClockSync stays out of the event log's instants") {
        CHECK(model.lane(1).instants.empty());
    }
}

TEST_CASE("32 ranks in a topology view of a laptop's size: compact tiles, every rank in view",
          "[gui][topology]") {
    HeadlessImGui imgui;
    const auto gridFor = [&](int world, ImVec2 size) {
        RunModel model;
        Scenario s;
        s.topology.ranks = world;
        s.run.steps = 40;
        model.reset(s, world);
        std::vector<RankProgress> ranks;
        const ViewInputs in = liveInputs(model, ranks, world, 2, 3000);
        TopologyView view;
        return gridAfterTwoFrames(imgui, view, in, size);
    };
    SECTION("32 ranks in 480 x 490 px (the view at 1600 x 900): compact, all rows visible") {
        const TopologyView::Grid g = gridFor(32, ImVec2(480, 490));
        CHECK(g.compact);
        CHECK(g.columns >= 4);
        CHECK(g.rows * g.columns >= 32);
        CAPTURE(g.columns, g.rows);
        CHECK(g.fits);
    }
    SECTION("4 ranks keep their full tiles with buttons") {
        CHECK_FALSE(gridFor(4, ImVec2(480, 490)).compact);
    }
    SECTION("32 ranks with room for full tiles keep them") {
        CHECK_FALSE(gridFor(32, ImVec2(1600, 900)).compact);
    }
}

TEST_CASE(
    "replica groups of several ranks are laid out apart, each under a line that names it one failure domain",
    "[gui][topology]") {
    HeadlessImGui imgui;
    RunModel model;
    Scenario s;
    s.topology.ranks = 4;
    s.topology.replicas = 2;
    s.strategy.kind = StrategyKind::Fsdp;
    s.fault_tolerance.enabled = true;
    s.run.steps = 40;
    REQUIRE(ftGroupSize(s) == 2);
    model.reset(s, 4);
    std::vector<RankProgress> ranks;
    const ViewInputs in = liveInputs(model, ranks, 4, 12, 60);
    TopologyView view;
    const auto gridAt = [&](ImVec2 size) { return gridAfterTwoFrames(imgui, view, in, size); };
    SECTION("a wide pane: one row per group even where three tiles would fit on a row") {
        const TopologyView::Grid g = gridAt(ImVec2(900, 700));
        CAPTURE(g.columns, g.rows);
        REQUIRE(g.columns >= 3);
        CHECK(g.group_headers == 2);
        CHECK(g.rows == 2);
        CHECK(g.fits);
    }
    SECTION("a narrow pane: each group's ranks on rows of their own") {
        const TopologyView::Grid g = gridAt(ImVec2(300, 900));
        CAPTURE(g.columns, g.rows);
        REQUIRE(g.columns == 1);
        CHECK(g.group_headers == 2);
        CHECK(g.rows == 4);
    }
    SECTION("a group with a dead rank keeps its rows and its header line while it restarts") {
        ranks[3].state = RankState::Killed;
        ranks[2].state = RankState::Restarting;
        CHECK(gridAt(ImVec2(900, 700)).group_headers == 2);
    }
    SECTION("in a pane too short for both groups, a rank of the lower group that dies scrolls its group into "
            "view") {
        const TopologyView::Grid before = gridAt(ImVec2(300, 520));
        REQUIRE_FALSE(before.fits);
        CHECK(before.scroll_y == 0.0f);
        CHECK(gridAt(ImVec2(300, 520)).scroll_y == 0.0f); // nothing died: it stays where it is
        ranks[3].state = RankState::Killed;
        (void)gridAt(ImVec2(300, 520)); // the scroll is asked for in this frame, done in the next
        CHECK(gridAt(ImVec2(300, 520)).scroll_y > 0.0f);
    }
    SECTION("without fault tolerance the ranks are one grid") {
        s.fault_tolerance.enabled = false;
        model.reset(s, 4);
        const TopologyView::Grid g = gridAt(ImVec2(900, 700));
        CHECK(g.group_headers == 0);
        CHECK(g.rows == (4 + g.columns - 1) / g.columns);
    }
}

TEST_CASE("A tile's header never draws its title over its state word: the title shortens first",
          "[gui][topology]") {
    // 10 px per character, 4 px padding: "rank 2  stage 0 server 0" (24 chars)
    // and "RUNNING" (7) need 24 x 10 + 7 x 10 + 3 x 4 = 322 px.
    const auto width = [](const std::string& text) { return 10.0f * float(text.size()); };
    const std::vector<std::string> titles = {"rank 2  stage 0 server 0", "rank 2  s0 / k0", "r2 s0/k0"};
    SECTION("a wide tile: the whole title and the whole word") {
        const TileHeader h = fitTileHeader(titles, "RUNNING", 322.0f, 4.0f, width);
        CHECK(h.title == "rank 2  stage 0 server 0");
        CHECK(h.word == "RUNNING");
    }
    SECTION("a tile too narrow for both: the next shorter title, the word kept whole") {
        const TileHeader h = fitTileHeader(titles, "RUNNING", 321.0f, 4.0f, width);
        CHECK(h.title == "rank 2  s0 / k0");
        CHECK(h.word == "RUNNING");
    }
    SECTION("narrower still: the shortest title with the word's first 4 letters, then no word") {
        const TileHeader four = fitTileHeader(titles, "RUNNING", 8 * 10 + 4 * 10 + 12, 4.0f, width);
        CHECK(four.title == "r2 s0/k0");
        CHECK(four.word == "RUNN");
        const TileHeader none = fitTileHeader(titles, "RUNNING", 8 * 10 + 12, 4.0f, width);
        CHECK(none.title == "r2 s0/k0");
        CHECK(none.word.empty());
    }
    SECTION("every choice fits the width it was given") {
        for (float w = 40.0f; w <= 400.0f; w += 7.0f) {
            const TileHeader h = fitTileHeader(titles, "RESTARTING", w, 4.0f, width);
            CAPTURE(w, h.title, h.word);
            if (!h.word.empty())
                CHECK(width(h.title) + width(h.word) + 12.0f <= w);
        }
    }
}
