// test_swarm_view.cpp: the SWARM view, headless: the grid's geometry at the
// presentation sizes, the state it draws from a synthetic swarm run (routes,
// a stage's DiLoCo round, a server killed and its call re-routed), and its
// fault buttons acting through ViewActions.
#include "gui/views_fixture.hpp"

#include "theme.hpp"
#include "views/view_list.hpp"
#include "views/view_swarm.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <string>
#include <vector>

using namespace dt;
using namespace dt::app;
using dt::test::HeadlessImGui;

namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT0 = 1000 * kMs;

// 2 trainers, 2 stages x 2 servers: ranks 2, 3 serve stage 0; 4, 5 stage 1.
Scenario swarmScenario() {
    Scenario s;
    s.name = "swarm";
    s.strategy.kind = StrategyKind::Swarm;
    s.strategy.microbatches = 2;
    s.topology.stages = 2;
    s.topology.ranks = 6;
    s.swarm.trainers = 2;
    s.swarm.servers_per_stage = 2;
    s.data.batch_per_rank = 8;
    s.run.steps = 4;
    return s;
}

Event span(int rank, EventKind kind, int64_t ms, int64_t dur_ms, int stage = -1, int peer = -1,
           double value = 0.0, int step = 0, int microbatch = -1) {
    Event e;
    e.rank = rank;
    e.kind = kind;
    e.phase = EventPhase::Span;
    e.t_ns = kT0 + ms * kMs;
    e.dur_ns = dur_ms * kMs;
    e.unit = int16_t(stage);
    e.peer = int16_t(peer);
    e.value = value;
    e.step = step;
    e.microbatch = int16_t(microbatch);
    e.bytes = 100;
    return e;
}

Event instant(int rank, EventKind kind, int64_t ms, double value = 0.0, int stage = -1, int peer = -1) {
    Event e;
    e.rank = rank;
    e.kind = kind;
    e.phase = EventPhase::Instant;
    e.t_ns = kT0 + ms * kMs;
    e.value = value;
    e.unit = int16_t(stage);
    e.peer = int16_t(peer);
    return e;
}

// A trainer's call and the server's serve inside it (forward: value 0, backward: 1).
void call(std::vector<Event>& out, int trainer, int server, int stage, bool backward, int64_t ms, int step,
          int microbatch) {
    const double value = backward ? 1.0 : 0.0;
    out.push_back(span(trainer, EventKind::SwarmCall, ms, 10, stage, server, value, step, microbatch));
    out.push_back(span(server, EventKind::SwarmServe, ms + 1, 8, stage, trainer, value, step, microbatch));
}

// Step 0 of both trainers: each of its two microbatches goes forward through
// stages 0 and 1 and back. Rank 3 steps and syncs (round 1, led by rank 2),
// then serves trainer 0's last backward call (1 gradient pending), and is
// killed at 200 ms; trainer 1's backward call to it is re-routed to rank 2 at
// 205 ms and ends at 216 ms.
std::vector<Event> syntheticSwarm() {
    std::vector<Event> ev;
    for (int r = 2; r < 6; ++r)
        ev.push_back(instant(r, EventKind::SwarmJoined, 0, 0.0, (r - 2) / 2));
    // microbatch 0: trainer 0 through ranks 2 and 5, trainer 1 through 3 and 4
    call(ev, 0, 2, 0, false, 10, 0, 0);
    call(ev, 1, 3, 0, false, 12, 0, 0);
    call(ev, 0, 5, 1, false, 20, 0, 0);
    call(ev, 1, 4, 1, false, 22, 0, 0);
    call(ev, 0, 5, 1, true, 30, 0, 0);
    call(ev, 1, 4, 1, true, 32, 0, 0);
    call(ev, 0, 2, 0, true, 40, 0, 0);
    call(ev, 1, 3, 0, true, 42, 0, 0);
    // inner steps, then the stage's DiLoCo round 1 (rank 2 led it, 2 averaged)
    for (int r : {2, 3}) {
        ev.push_back(span(r, EventKind::Optimizer, 55, 2, 0));
        Event sync = span(r, EventKind::SwarmOuterSync, 60, 5, 0, -1, 1.0);
        sync.group_size = 2;
        sync.seq = r == 2 ? 1 : 0;
        ev.push_back(sync);
    }
    // microbatch 1
    call(ev, 0, 2, 0, false, 100, 0, 1);
    call(ev, 1, 3, 0, false, 102, 0, 1);
    call(ev, 0, 5, 1, false, 110, 0, 1);
    call(ev, 1, 4, 1, false, 112, 0, 1);
    call(ev, 0, 5, 1, true, 120, 0, 1);
    call(ev, 1, 4, 1, true, 132, 0, 1);
    call(ev, 0, 3, 0, true, 145, 0, 1); // rank 3 holds this gradient when it dies
    ev.push_back(span(0, EventKind::Step, 0, 160));
    // rank 3 killed; trainer 1's backward call to it fails and goes to rank 2
    ev.push_back(instant(3, EventKind::FaultInjected, 200, SIGKILL));
    ev.push_back(instant(3, EventKind::ProcessExited, 203, -SIGKILL));
    Event reroute = instant(1, EventKind::SwarmReroute, 205, 1.0, 0, 3);
    reroute.step = 0;
    reroute.microbatch = 1;
    ev.push_back(reroute);
    call(ev, 1, 2, 0, true, 206, 0, 1);
    ev.push_back(span(1, EventKind::Step, 0, 220));
    return ev;
}

int64_t at(int64_t ms) {
    return kT0 + ms * kMs;
}

bool overlaps(const SwarmBox& a, const SwarmBox& b) {
    return a.x0 + 0.01f < b.x1 && b.x0 + 0.01f < a.x1 && a.y0 + 0.01f < b.y1 && b.y0 + 0.01f < a.y1;
}

bool inside(const SwarmBox& b, const SwarmBox& area) {
    return b.x0 >= area.x0 - 0.01f && b.x1 <= area.x1 + 0.01f && b.y0 >= area.y0 - 0.01f &&
           b.y1 <= area.y1 + 0.01f && b.x0 <= b.x1 && b.y0 <= b.y1;
}

// Records the fault and selection calls; the button labelled `press` is pressed (when enabled).
class FakeActions final : public NoViewActions {
  public:
    std::string press;
    std::vector<std::string> calls;

    void killRank(int rank) override { calls.push_back("killRank " + std::to_string(rank)); }
    void hangRank(int rank) override { calls.push_back("hangRank " + std::to_string(rank)); }
    void resumeRank(int rank) override { calls.push_back("resumeRank " + std::to_string(rank)); }
    void restartRank(int rank) override { calls.push_back("restartRank " + std::to_string(rank)); }
    void selectRank(int rank) override { calls.push_back("selectRank " + std::to_string(rank)); }

  protected:
    bool drawButton(const char* label, bool enabled, const char* why_disabled, const ImVec2& size) override {
        const bool pressed = plainButton(label, enabled, why_disabled, size);
        return pressed || (enabled && press == label);
    }
};

std::vector<RankProgress> runningRanks(int n) {
    std::vector<RankProgress> ranks(static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) {
        ranks[size_t(r)].rank = r;
        ranks[size_t(r)].pid = 100 + r;
        ranks[size_t(r)].state = RankState::Running;
    }
    return ranks;
}

} // namespace

TEST_CASE("The SWARM grid keeps every box inside its area and apart", "[gui][swarm][layout]") {
    struct Shape {
        int trainers, stages, servers;
    };
    const std::vector<Shape> shapes = {{2, 2, 2}, {4, 3, 3}, {1, 4, 2}, {8, 2, 4}, {3, 1, 1}};
    const std::vector<ImVec2> displays = {{1600, 900}, {1920, 1080}};
    const std::vector<float> fonts = {14, 28, 32};
    SECTION("at 1600x900 and 1920x1080 with 14 to 32 px text, for a few swarm shapes") {
        for (const ImVec2& display : displays)
            for (float font : fonts)
                for (const Shape& shape : shapes) {
                    INFO(display.x << "x" << display.y << ", " << font << " px, T = " << shape.trainers
                                   << ", S = " << shape.stages << ", K = " << shape.servers);
                    // The lower band of the right column: three quarters of the width, 40 % of the
                    // height, or what the view gives the grid at the least (it scrolls then): per box a
                    // line, its padding and the gap, 1.65 lines.
                    const float line_h = font * 1.25f;
                    const float least = line_h * 1.65f * float(std::max(shape.trainers, shape.servers));
                    const float top = display.y * 0.55f;
                    const SwarmBox area{display.x * 0.25f, top, display.x - 8.0f,
                                        top + std::max(display.y * 0.4f, least)};
                    const SwarmGrid g =
                        swarmGrid(shape.trainers, shape.stages, shape.servers, area, line_h, font);
                    REQUIRE(g.trainers.size() == size_t(shape.trainers));
                    REQUIRE(g.servers.size() == size_t(shape.stages * shape.servers));
                    REQUIRE(g.columns.size() == size_t(shape.stages + 1));
                    std::vector<SwarmBox> all = g.trainers;
                    all.insert(all.end(), g.servers.begin(), g.servers.end());
                    for (size_t i = 0; i < all.size(); ++i) {
                        CHECK(inside(all[i], area));
                        CHECK(all[i].width() > font * 2.0f);      // room for "r12" at least
                        CHECK(all[i].height() >= line_h * 1.29f); // a line of text at least
                        for (size_t j = i + 1; j < all.size(); ++j)
                            CHECK_FALSE(overlaps(all[i], all[j]));
                    }
                    // Columns left to right, a gap between them for the routes.
                    for (size_t c = 1; c < g.columns.size(); ++c)
                        CHECK(g.columns[c].x0 - g.columns[c - 1].x1 >= font * 0.5f);
                    for (const SwarmBox& t : g.trainers)
                        CHECK(t.x1 < g.servers.front().x0);
                    // Server s*K + k sits in stage s's column, servers of a stage top to bottom.
                    for (int s = 0; s < shape.stages; ++s)
                        for (int k = 0; k < shape.servers; ++k) {
                            const SwarmBox& b = g.servers[size_t(s * shape.servers + k)];
                            CHECK(b.x0 == Approx(g.columns[size_t(s + 1)].x0));
                            if (k > 0)
                                CHECK(b.y0 >= g.servers[size_t(s * shape.servers + k - 1)].y1);
                        }
                    CHECK(g.server_lines >= 1);
                    CHECK(g.trainer_lines >= 1);
                    if (font <= 14.0f && shape.servers <= 3)
                        CHECK(g.server_lines == kSwarmServerLines); // small text: every line of a server
                }
    }
    SECTION("a tiny area still keeps the boxes inside and apart") {
        const SwarmBox area{10.0f, 10.0f, 60.0f, 40.0f};
        const SwarmGrid g = swarmGrid(4, 3, 3, area, 38.0f, 32.0f);
        std::vector<SwarmBox> all = g.trainers;
        all.insert(all.end(), g.servers.begin(), g.servers.end());
        for (size_t i = 0; i < all.size(); ++i) {
            CHECK(inside(all[i], area));
            for (size_t j = i + 1; j < all.size(); ++j)
                CHECK_FALSE(overlaps(all[i], all[j]));
        }
        CHECK(g.server_lines == 0);
    }
}

TEST_CASE("The SWARM view's state: routes, rounds, a death and its re-route", "[gui][swarm]") {
    RunModel model;
    model.reset(swarmScenario(), 6);
    const std::vector<Event> events = syntheticSwarm();
    model.ingest(events.data(), events.size());
    REQUIRE_FALSE(model.swarmEvents().empty());

    SECTION("after the re-route: calls per route, the death's cost, the red outline and the sentence") {
        const SwarmViewState st = swarmViewState(model, at(300));
        const SwarmMeasure& m = st.measure;
        REQUIRE(m.routes.size() == 8); // 2 trainers x 4 servers, trainer-major
        CHECK(m.routes[0].calls == 3); // trainer 0 -> rank 2: forward, backward, forward
        CHECK(m.routes[1].calls == 1); // trainer 0 -> rank 3: the backward it died holding
        CHECK(m.routes[3].calls == 4); // trainer 0 -> rank 5
        CHECK(m.routes[4].calls == 1); // trainer 1 -> rank 2: the re-routed call
        CHECK(st.max_route_calls == 4);
        CHECK(m.microbatches == 4);
        CHECK(st.expected_microbatches == 2 * 4 * 2);
        REQUIRE(m.deaths.size() == 1);
        CHECK(m.deaths[0].rank == 3);
        CHECK(m.deaths[0].gradients_lost == 1);
        CHECK(m.deaths[0].reroute_ms == Approx(16.0)); // kill at 200 ms, re-routed call ends at 216
        CHECK(m.reroutes_connection == 1);
        CHECK(m.samples_per_s == Approx(16.0 / 0.22)); // 2 trainer steps of 8 samples in 220 ms
        REQUIRE(st.reroute);
        CHECK(st.reroute->rank == 1);
        CHECK(st.reroute->peer == 3);
        CHECK(st.recent_reroutes == 1);
        CHECK(st.rerouted_from == std::vector<bool>{false, true, false, false});
    }
    SECTION("stage 0's DiLoCo round 1 was led by rank 2; stage 1 has none yet") {
        const SwarmViewState st = swarmViewState(model, at(300));
        REQUIRE(st.stages.size() == 2);
        CHECK(st.stages[0].round == 1);
        CHECK(st.stages[0].averaged == 2);
        CHECK(st.stages[0].leader == 2);
        CHECK(st.stages[1].round == -1);
        CHECK(st.last_round == std::vector<int64_t>{1, 1, -1, -1});
        CHECK(st.led_last == std::vector<bool>{true, false, false, false});
    }
    SECTION("each trainer's latest microbatch is its live route, its latest call marked") {
        const SwarmViewState st = swarmViewState(model, at(300));
        int latest = 0;
        for (const SwarmLiveCall& c : st.live) {
            latest += c.latest ? 1 : 0;
            if (c.trainer == 1 && c.latest) {
                CHECK(c.server_rank == 2); // the backward call sent again after the re-route
                CHECK(c.backward);
                CHECK(c.rerouted);
            } else {
                CHECK_FALSE(c.rerouted);
            }
        }
        CHECK(latest == 2);
        CHECK(st.live.size() == 8); // microbatch 1 of each: 4 calls
    }
    SECTION("the highlight fades 2 s after the re-route; the death stays in the totals") {
        const SwarmViewState st = swarmViewState(model, at(205) + kSwarmRerouteWindowNs + kMs);
        CHECK_FALSE(st.reroute);
        CHECK(st.rerouted_from == std::vector<bool>{false, false, false, false});
        CHECK(st.measure.deaths.size() == 1);
    }
    SECTION("at a moment before the kill nothing has died and nothing was re-routed") {
        const SwarmViewState st = swarmViewState(model, at(180));
        CHECK(st.measure.deaths.empty());
        CHECK_FALSE(st.reroute);
        CHECK(st.measure.routes[4].calls == 0);
        CHECK(st.measure.samples_per_s == Approx(8.0 / 0.16)); // trainer 0's step only
    }
}

TEST_CASE("The SWARM view is for swarm runs, draws at any text size and acts on the chosen server",
          "[gui][swarm]") {
    HeadlessImGui imgui;
    FakeActions actions;
    RunModel model;
    model.reset(swarmScenario(), 6);
    std::vector<RankProgress> ranks = runningRanks(6);
    int selected = -1;
    ViewInputs in;
    in.model = &model;
    in.live = true;
    in.ranks = &ranks;
    in.selected_rank = &selected;
    in.actions = &actions;
    SwarmView view;

    SECTION("it opens for swarm runs only, and is registered under the id \"swarm\"") {
        CHECK(view.relevantTo(swarmScenario()) == true);
        Scenario ddp;
        CHECK(view.relevantTo(ddp) == false);
        bool listed = false;
        for (const auto& v : makeViews())
            listed = listed || v->id() == "swarm";
        CHECK(listed);
    }
    SECTION("before any SWARM event it draws its empty state") {
        CHECK(swarmEmpty(in) == SwarmEmpty::NoEvents);
        CHECK(view.isEmpty(in));
        const auto stats = imgui.frame([&] { view.draw(in); });
        CHECK(stats.balanced);
        CHECK(stats.vertices > 0);
    }
    const std::vector<Event> events = syntheticSwarm();
    model.ingest(events.data(), events.size());
    in.now_ns = at(300);

    SECTION("it draws balanced at 14 and 32 px") {
        for (float font : {14.0f, 32.0f}) {
            ImGui::GetIO().FontGlobalScale = font / ImGui::GetIO().Fonts->Fonts[0]->FontSize;
            applyTheme(fallbackTheme(), font);
            CHECK_FALSE(view.isEmpty(in));
            const auto stats = imgui.frame([&] { view.draw(in); });
            CHECK(stats.balanced);
            CHECK(view.lastGrid().servers.size() == 4);
            CHECK(view.lastState().reroute.has_value());
        }
        ImGui::GetIO().FontGlobalScale = 1.0f;
    }
    SECTION("Kill acts on the selected server") {
        selected = 3;
        actions.press = "Kill##swarm";
        CHECK(imgui.frame([&] { view.draw(in); }).balanced);
        CHECK(actions.calls == std::vector<std::string>{"killRank 3"});
    }
    SECTION("with a trainer selected, the buttons act on the first server") {
        selected = 0;
        actions.press = "Hang##swarm";
        imgui.frame([&] { view.draw(in); });
        CHECK(actions.calls == std::vector<std::string>{"hangRank 2"});
    }
    SECTION("a hung server gets Resume, a dead one Restart") {
        selected = 4;
        ranks[4].state = RankState::Hung;
        actions.press = "Resume##swarm";
        imgui.frame([&] { view.draw(in); });
        CHECK(actions.calls == std::vector<std::string>{"resumeRank 4"});
        actions.calls.clear();
        ranks[4].state = RankState::Killed;
        actions.press = "Kill##swarm"; // disabled: it is dead
        imgui.frame([&] { view.draw(in); });
        CHECK(actions.calls.empty());
        actions.press = "Restart##swarm";
        imgui.frame([&] { view.draw(in); });
        CHECK(actions.calls == std::vector<std::string>{"restartRank 4"});
    }
    SECTION("a replay draws no fault buttons") {
        in.live = false;
        in.replay = true;
        actions.press = "Kill##swarm";
        imgui.frame([&] { view.draw(in); });
        CHECK(actions.calls.empty());
    }
    SECTION("a click on a server's box selects its rank") {
        imgui.frame([&] { view.draw(in); });
        REQUIRE(view.lastGrid().servers.size() == 4);
        const SwarmBox& b = view.lastGrid().servers[3]; // rank 5
        const ImVec2 centre((b.x0 + b.x1) * 0.5f, (b.y0 + b.y1) * 0.5f);
        imgui.mouse(centre);
        imgui.frame([&] { view.draw(in); });
        imgui.mouse(centre, true);
        imgui.frame([&] { view.draw(in); });
        imgui.mouse(centre, false);
        CHECK(imgui.frame([&] { view.draw(in); }).balanced);
        imgui.mouse(ImVec2(-1, -1));
        CHECK(std::find(actions.calls.begin(), actions.calls.end(), "selectRank 5") != actions.calls.end());
    }
}
