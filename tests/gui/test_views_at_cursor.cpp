// test_views_at_cursor.cpp: every view shows the run at the time cursor.
//
// The inputs are filled as AppContext::viewInputs() fills them at a cursor:
// `state` is runStateAt(cursor) and `ranks` points at its ranks. With the
// cursor just after a kill, each view's own state (not its pixels) says the
// rank is dead there, though the run went on (and, in the FT run, the replica
// came back) after it.
#include "gui/synthetic_kill.hpp"
#include "gui/views_fixture.hpp"

#include "model/run_state_at.hpp"
#include "views/view_event_log.hpp"
#include "views/view_memory.hpp"
#include "views/view_metrics.hpp"
#include "views/view_quorum.hpp"
#include "views/view_timeline.hpp"
#include "views/view_topology.hpp"
#include "widgets/time_controls.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <string>

using namespace dt;
using namespace dt::app;
using dt::test::HeadlessImGui;
using F = dt::test::SyntheticFaults;

namespace {

// Remembers whether each button was drawn enabled, and the playback calls.
class RecordingActions final : public NoViewActions {
  public:
    std::map<std::string, bool> enabled;
    std::vector<std::string> calls;
    void cursorLive() override { calls.push_back("live"); }
    void play(double) override { calls.push_back("play"); }

  protected:
    bool drawButton(const char* label, bool on, const char* why, const ImVec2& size) override {
        enabled[label] = on;
        return NoViewActions::drawButton(label, on, why, size);
    }
};

// The views' inputs at `cursor`, as the app fills them.
struct AtCursor {
    RunModel model;
    std::optional<int64_t> cursor;
    RunStateAt state;
    std::vector<RankProgress> live_ranks; // the Session's now: every rank finished or running
    int selected = -1;
    RecordingActions actions;

    AtCursor(const Scenario& scenario, const std::vector<Event>& events, int64_t at) {
        model.reset(scenario, 3);
        model.ingest(events.data(), events.size());
        cursor = at;
        state = runStateAt(model, at);
        live_ranks = runStateAt(model, model.tEnd()).ranks;
    }
    ViewInputs inputs(bool live = false) {
        ViewInputs in;
        in.model = &model;
        in.now_ns = model.tEnd();
        in.live = live;
        in.replay = !live;
        in.cursor_ns = &cursor;
        in.state = &state;
        in.ranks = cursor ? &state.ranks : &live_ranks;
        in.selected_rank = &selected;
        in.actions = &actions;
        return in;
    }
};

} // namespace

TEST_CASE("With the cursor at a kill every view says the rank is dead there", "[gui][cursor]") {
    HeadlessImGui imgui;
    AtCursor at(F::ddpScenario(), F::killRun(), F::at(460));
    // Now (the end) rank 1 is killed and the others finished; at the cursor the others still run.
    REQUIRE(at.live_ranks[0].state == RankState::Finished);

    SECTION("topology: the tiles read the ranks at the cursor; the buttons act on now") {
        TopologyView view;
        ViewInputs in = at.inputs(/*live=*/true);
        REQUIRE(imgui.frame([&] { view.draw(in); }).balanced);
        CHECK((*in.ranks)[1].state == RankState::Killed);
        CHECK((*in.ranks)[0].state == RankState::Running);
        CHECK_FALSE(at.actions.enabled.at("Kill##rank1"));
        CHECK(at.actions.enabled.at("Kill##rank0"));
        // Now rank 2 is hung (a live run): Resume follows now, though at the cursor it runs.
        RunFacts facts;
        facts.ranks = at.live_ranks;
        facts.ranks[2].state = RankState::Hung;
        in.facts = &facts;
        REQUIRE(imgui.frame([&] { view.draw(in); }).balanced);
        CHECK((*in.ranks)[2].state == RankState::Running);
        CHECK(at.actions.enabled.at("Resume##rank2"));
    }
    SECTION("memory: the bars are the samples up to the cursor, the killed rank's faded") {
        MemoryView view;
        ViewInputs in = at.inputs();
        REQUIRE(imgui.frame([&] { view.draw(in); }).balanced);
        const MemoryBars dead = memoryBars(in, 1), alive = memoryBars(in, 0);
        CHECK(dead.gone());
        CHECK(dead.now[3] == 130); // activations at step 3, its last report
        CHECK_FALSE(alive.gone());
        CHECK(alive.now[3] == 130);
        CHECK(alive.peak[3] == 130); // not the run's peak (190)
    }
    SECTION("metrics: the lines stop at the cursor and the line above says rank 1 is killed") {
        MetricsView view;
        ViewInputs in = at.inputs();
        REQUIRE(imgui.frame([&] { view.draw(in); }).balanced);
        const MetricsSeries cut = buildMetricsSeries(at.model, F::at(460));
        CHECK(cut.loss[0].x.back() == 3.0);
        CHECK(cut.loss[1].x.back() == 3.0);
        CHECK(buildMetricsSeries(at.model).loss[0].x.back() == 9.0);
        const std::string line = metricsAtCursorLine(in);
        CHECK(line.find("rank 1 killed") != std::string::npos);
        CHECK(line.find("rank 0 step 4, loss 2.700") != std::string::npos);
    }
    SECTION("event log: the rows end at the cursor, with the kill last") {
        EventLogView view;
        ViewInputs in = at.inputs();
        REQUIRE(imgui.frame([&] { view.draw(in); }).balanced);
        REQUIRE(view.lastVisibleRow());
        CHECK(view.lastVisibleRow()->text.find("killed by signal 9") != std::string::npos);
        CHECK(view.lastVisibleRow()->rank == 1);
        CHECK(view.hiddenAfterCursor() > 0); // the hang, the finishes
    }
    SECTION("timeline and the time controls: the badge says cursor, not now; Live clears it") {
        TimelineView timeline;
        ViewInputs in = at.inputs(/*live=*/true);
        REQUIRE(imgui.frame([&] { timeline.draw(in); }).balanced);
        const std::string badge = cursorBadgeText(in);
        CAPTURE(badge);
        CHECK(badge.rfind("CURSOR +0.46 s (now +1.0 s)", 0) ==
              0); // from the first event (+0 ms) to the last (+1001 ms)
        TimeControlsState ui;
        REQUIRE(imgui.frame([&] { drawTimeControls(in, ui); }).balanced);
        CHECK(at.actions.enabled.at("Live##time"));
        CHECK(at.actions.enabled.at("Play##time"));
        at.cursor.reset();
        CHECK(cursorBadgeText(at.inputs(true)).empty());
    }
}

TEST_CASE("With the cursor at a replica's kill the quorum view says it is dead there",
          "[gui][cursor][quorum]") {
    HeadlessImGui imgui;
    AtCursor at(F::ftScenario(), F::ftRun(), F::at(460));
    // Now (the end) replica 1 is back and running.
    REQUIRE(at.live_ranks[1].state == RankState::Running);
    QuorumView view;
    ViewInputs in = at.inputs();
    REQUIRE(imgui.frame([&] { view.draw(in); }).balanced);
    const QuorumViewState& st = view.lastState();
    CHECK(st.rows[1].health == ReplicaHealth::Restarting);
    CHECK(st.rows[1].committed == 4);
    CHECK_FALSE(st.rows[1].in_quorum);
    CHECK(st.rows[0].health == ReplicaHealth::Healthy);
    CHECK(st.quorum_id == 2);
    // The stopwatch is measured on the events up to the cursor: the restart has not happened there.
    REQUIRE(st.recovery);
    CHECK(st.recovery->replica == 1);
    CHECK(st.recovery->restarted_ms < 0);

    SECTION("without a cursor the badges are those of now") {
        at.cursor.reset();
        ViewInputs now = at.inputs();
        REQUIRE(imgui.frame([&] { view.draw(now); }).balanced);
        CHECK(view.lastState().rows[1].health == ReplicaHealth::Healthy);
        REQUIRE(view.lastState().recovery);
        CHECK(view.lastState().recovery->replica ==
              -1); // the latest fault by the end: the lighthouse stopped
    }
}
