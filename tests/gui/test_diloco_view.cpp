// test_diloco_view.cpp: the DiLoCo view, headless, from a synthetic Streaming
// DiLoCo run: 2 replicas, H = 4 inner steps, 2 fragments, sync delay 1, 8 steps
// of 100 ms. Fragment 0 sends after step 3 (its first H steps), fragment 1
// H / F = 2 steps later, after step 5, and both after the last step, 7 (the
// schedule of diloco_schedule.hpp); each send is applied one step later, the
// last step's at once.
#include "gui/views_fixture.hpp"

#include "views/view_diloco.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace dt;
using namespace dt::app;
using dt::test::HeadlessImGui;
using dt::test::SyntheticRun;

namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT0 = 1000 * kMs;
constexpr int64_t kBytesPerSend = 1000;

Scenario dilocoScenario() {
    Scenario s;
    s.name = "diloco";
    s.topology.ranks = 2;
    s.strategy.kind = StrategyKind::Diloco;
    s.diloco.inner_steps = 4;
    s.diloco.fragments = 2;
    s.diloco.sync_delay = 1;
    s.run.steps = 8;
    return s;
}

// The fragments that send after `step` in the scenario above.
std::vector<int> senders(int step) {
    if (step == 3)
        return {0};
    if (step == 5)
        return {1};
    if (step == 7)
        return {0, 1};
    return {};
}

std::vector<Event> syntheticDilocoRun() {
    std::vector<Event> ev;
    for (int r = 0; r < 2; ++r) {
        double sent = 0.0;
        std::vector<int> in_flight; // fragments sent, not applied yet
        for (int step = 0; step < 8; ++step) {
            const int64_t t = kT0 + step * 100 * kMs;
            // An exchange sent last step is applied at the start of this one's optimizer phase.
            for (int f : in_flight)
                ev.push_back(
                    SyntheticRun::span(r, step, EventKind::OuterStep, f, t + 60 * kMs, t + 62 * kMs));
            in_flight.clear();
            for (int f : senders(step)) {
                Event send =
                    SyntheticRun::span(r, step, EventKind::PseudoGradient, f, t + 70 * kMs, t + 80 * kMs);
                send.bytes = kBytesPerSend;
                ev.push_back(send);
                sent += double(kBytesPerSend);
                if (step == 7)
                    ev.push_back(
                        SyntheticRun::span(r, step, EventKind::OuterStep, f, t + 82 * kMs, t + 84 * kMs));
                else
                    in_flight.push_back(f);
            }
            ev.push_back(SyntheticRun::counter(r, step, EventKind::BytesSent, sent, t + 90 * kMs));
            ev.push_back(SyntheticRun::span(r, step, EventKind::Step, -1, t, t + 95 * kMs));
        }
    }
    return ev;
}

RunModel dilocoModel() {
    RunModel model;
    model.reset(dilocoScenario(), 2);
    const std::vector<Event> events = syntheticDilocoRun();
    model.ingest(events.data(), events.size());
    return model;
}

} // namespace

TEST_CASE("The DiLoCo view's theory follows the engine's fragment schedule", "[gui][diloco]") {
    SECTION("each fragment sends H steps apart, staggered by H / F, and everything syncs at the last step") {
        CHECK(dilocoTheorySends(0, 4, 2, 8) == std::vector<int>{3, 7});
        CHECK(dilocoTheorySends(1, 4, 2, 8) == std::vector<int>{5, 7});
        CHECK(dilocoTheorySends(0, 4, 2, 12) == std::vector<int>{3, 7, 11});
        CHECK(dilocoTheorySends(1, 4, 2, 12) == std::vector<int>{5, 9, 11});
    }
    SECTION("classic DiLoCo (one fragment) sends after every H-th step") {
        CHECK(dilocoTheorySends(0, 10, 1, 30) == std::vector<int>{9, 19, 29});
    }
    SECTION("under the quorum one fragment's round comes every H / F steps, sent tau steps before its end") {
        // H = 10, F = 2, tau = 2: rounds after steps 2, 7, 12, 17, ... alternate the fragments;
        // nothing extra at the last step (ft_streaming_diloco.cpp, TorchFT's DiLoCo).
        CHECK(dilocoTheorySends(0, 10, 2, 20, 2) == std::vector<int>{2, 12});
        CHECK(dilocoTheorySends(1, 10, 2, 20, 2) == std::vector<int>{7, 17});
        CHECK(dilocoTheorySends(0, 10, 2, 20, 0) == std::vector<int>{4, 14});
        CHECK(dilocoTheorySends(1, 10, 2, 20, 0) == std::vector<int>{9, 19});
    }
    SECTION("the theory bytes grow by one fragment's sync at each send, DDP's by a full gradient each step") {
        Scenario s = dilocoScenario();
        const DilocoBytesTheory theory = dilocoBytesTheory(s, 8);
        REQUIRE(theory.diloco.size() == 8);
        REQUIRE(theory.ddp.size() == 8);
        CHECK(theory.diloco[2] == 0.0);
        CHECK(theory.diloco[3] > 0.0);
        CHECK(theory.diloco[4] == theory.diloco[3]); // nothing sent at step 4
        CHECK(theory.ddp[7] == Approx(8.0 * theory.ddp[0]));
        CHECK(theory.ddp[7] > 2.0 * theory.diloco[7]); // H = 4: DiLoCo sends about a quarter
    }
}

TEST_CASE("The DiLoCo view reads sends, applies and progress from the events", "[gui][diloco]") {
    const RunModel model = dilocoModel();

    SECTION("mid-run, the shown rank's syncs pair each send with the apply one step later") {
        // After step 5 ended (t0 + 595 ms): fragment 0 sent at 3 and applied at 4;
        // fragment 1 sent at 5, its apply (step 6) still ahead.
        const DilocoViewState st = dilocoViewState(model, nullptr, 0, kT0 + 597 * kMs);
        CHECK(st.diloco);
        CHECK(st.current_step == 5);
        REQUIRE(st.syncs.size() == 2);
        CHECK(st.syncs[0].fragment == 0);
        CHECK(st.syncs[0].send_step == 3);
        CHECK(st.syncs[0].apply_step == 4);
        CHECK(st.syncs[0].bytes == kBytesPerSend);
        CHECK(st.syncs[1].fragment == 1);
        CHECK(st.syncs[1].send_step == 5);
        CHECK(st.frags[0].outer_steps == 1);
        CHECK(st.frags[1].outer_steps == 0);
        CHECK_FALSE(st.frags[0].in_flight);
        // Progress: fragment 0 sent after step 3 (2 steps ago; next at 7: a
        // period of 4); fragment 1 just sent (next at the last step, 7).
        CHECK(st.replicas[0].since_sync[0] == 2);
        CHECK(st.replicas[0].period[0] == 4);
        CHECK(st.replicas[0].since_sync[1] == 0);
        CHECK(st.replicas[0].period[1] == 2);
    }

    SECTION("a send whose apply has not happened yet is in flight, due sync_delay steps later") {
        const DilocoViewState st = dilocoViewState(model, nullptr, 1, kT0 + 597 * kMs);
        CHECK(st.shown_rank == 1);
        REQUIRE(st.syncs.size() == 2);
        CHECK(st.syncs[1].apply_step == -1);
        CHECK(st.frags[1].in_flight);
        CHECK(st.frags[1].next_apply_step == 6);
    }

    SECTION("before its first sync a fragment's period runs from the start") {
        const DilocoViewState st = dilocoViewState(model, nullptr, 0, kT0 + 497 * kMs);
        CHECK(st.current_step == 4);
        CHECK(st.replicas[0].since_sync[1] == 5); // steps 0..4 since the start
        CHECK(st.replicas[0].period[1] == 6);     // its first send is after step 5
    }

    SECTION("a replica that healed from a live peer starts every fragment's count again") {
        // Fault-tolerant DiLoCo: rank 1 receives a heal (unit 0 = receiving) that
        // brings it to the state after step 6.
        std::vector<Event> events = syntheticDilocoRun();
        Event heal = SyntheticRun::span(1, 6, EventKind::Heal, 0, kT0 + 650 * kMs, kT0 + 660 * kMs);
        heal.peer = 0;
        events.push_back(heal);
        std::stable_sort(events.begin(), events.end(),
                         [](const Event& a, const Event& b) { return a.t_ns < b.t_ns; });
        RunModel healed;
        healed.reset(dilocoScenario(), 2);
        healed.ingest(events.data(), events.size());
        const DilocoViewState st = dilocoViewState(healed, nullptr, 0, kT0 + 697 * kMs);
        CHECK(st.replicas[0].since_sync[0] == 3); // sent after step 3, now after step 6
        CHECK(st.replicas[1].since_sync[0] == 0);
        CHECK(st.replicas[1].since_sync[1] == 0);
        CHECK(st.replicas[1].period[0] == 1); // its next send is after step 7, the last
    }

    SECTION("the bytes plot holds the cumulative bytes the rank sent after each step") {
        const DilocoViewState st = dilocoViewState(model, nullptr, 0, model.tEnd());
        REQUIRE(st.bytes_x.size() == 8);
        CHECK(st.bytes_x.front() == 1.0);
        CHECK(st.bytes_y.back() == Approx(4.0 * kBytesPerSend));
        CHECK(st.syncs.size() == 4);
        CHECK(st.frags[1].outer_steps == 2);
    }

    SECTION("live progress gives each replica's link; a replay falls back to the scenario's") {
        std::vector<RankProgress> ranks(2);
        ranks[1].link_mbit_s = 100.0;
        ranks[1].link_latency_ms = 20.0;
        const DilocoViewState live = dilocoViewState(model, &ranks, 0, model.tEnd());
        CHECK(live.replicas[0].link_mbit_s == 0.0);
        CHECK(live.replicas[1].link_mbit_s == 100.0);
        CHECK(live.replicas[1].link_latency_ms == 20.0);
    }
}

TEST_CASE("The DiLoCo view draws its empty states and a run", "[gui][diloco]") {
    HeadlessImGui imgui;
    DilocoView view;

    SECTION("no run: the empty state") {
        ViewInputs in;
        CHECK(dilocoEmpty(in) == DilocoEmpty::NoRun);
        const auto stats = imgui.frame([&] { view.draw(in); });
        CHECK(stats.balanced);
        CHECK(stats.vertices > 0);
    }

    SECTION("a run of another strategy: its own empty state") {
        RunModel model;
        Scenario s = dilocoScenario();
        s.strategy.kind = StrategyKind::Ddp;
        model.reset(s, 2);
        ViewInputs in;
        in.model = &model;
        CHECK(dilocoEmpty(in) == DilocoEmpty::NotDiloco);
        const auto stats = imgui.frame([&] { view.draw(in); });
        CHECK(stats.balanced);
    }

    SECTION("a DiLoCo run: replicas, the fragment strip, the copies and the bytes plot") {
        const RunModel model = dilocoModel();
        ViewInputs in;
        in.model = &model;
        in.now_ns = model.tEnd();
        const auto stats = imgui.frame([&] { view.draw(in); });
        CHECK(stats.balanced);
        CHECK(stats.vertices > 1500);
        CHECK(view.lastState().syncs.size() == 4);
    }

    SECTION("a theory line far above the plot (DDP's bytes) is clipped, not walked dash by dash") {
        // A long run with a tiny DiLoCo byte count: DDP's dashed line ends
        // millions of pixels above the plot. Drawing must still finish at once.
        Scenario s = dilocoScenario();
        s.run.steps = 4000;
        s.diloco.inner_steps = 1000;
        s.diloco.fragments = 1;
        RunModel model;
        model.reset(s, 2);
        std::vector<Event> ev;
        for (int step = 0; step < 3000; ++step) {
            const int64_t t = kT0 + step * kMs;
            ev.push_back(
                SyntheticRun::counter(0, step, EventKind::BytesSent, step >= 999 ? 10.0 : 0.0, t + kMs / 2));
            ev.push_back(SyntheticRun::span(0, step, EventKind::Step, -1, t, t + kMs - 1));
        }
        model.ingest(ev.data(), ev.size());
        ViewInputs in;
        in.model = &model;
        in.now_ns = model.tEnd();
        const auto stats = imgui.frame([&] { view.draw(in); });
        CHECK(stats.balanced);
    }
}
