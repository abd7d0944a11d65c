// test_diloco_state.cpp: model/diloco_state.hpp without ImGui, on a classic
// DiLoCo run placed by hand: 2 replicas, H = 3 inner steps, one fragment, no
// sync delay, 6 steps of 100 ms. Each replica sends its pseudo-gradient after
// steps 2 and 5 and applies the outer step at once. Replica 1 is healed
// (it takes a live peer's state) at step 4. Every expected value below is
// worked out by hand from that description, not by the code under test.
#include "gui/views_fixture.hpp"

#include "model/diloco_state.hpp"

#include <catch2/catch.hpp>

#include <limits>

using namespace dt;
using namespace dt::app;
using dt::test::SyntheticRun;

namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT0 = 1000 * kMs;
constexpr int64_t kBytesPerSend = 500;

Scenario classicDiloco() {
    Scenario s;
    s.topology.ranks = 2;
    s.strategy.kind = StrategyKind::Diloco;
    s.diloco.inner_steps = 3;
    s.diloco.fragments = 1;
    s.diloco.sync_delay = 0;
    s.run.steps = 6;
    s.network.bandwidth_mbit_s = 100.0;
    s.network.latency_ms = 20.0;
    return s;
}

int64_t stepStart(int step) {
    return kT0 + int64_t(step) * 100 * kMs;
}

RunModel classicModel() {
    std::vector<Event> ev;
    for (int r = 0; r < 2; ++r) {
        double sent = 0.0;
        for (int step = 0; step < 6; ++step) {
            const int64_t t = stepStart(step);
            if (step == 2 || step == 5) {
                Event send =
                    SyntheticRun::span(r, step, EventKind::PseudoGradient, 0, t + 70 * kMs, t + 80 * kMs);
                send.bytes = kBytesPerSend;
                ev.push_back(send);
                ev.push_back(
                    SyntheticRun::span(r, step, EventKind::OuterStep, 0, t + 82 * kMs, t + 84 * kMs));
                sent += double(kBytesPerSend);
            }
            if (r == 1 && step == 4)
                ev.push_back(SyntheticRun::span(r, step, EventKind::Heal, 0, t + 5 * kMs, t + 9 * kMs));
            ev.push_back(SyntheticRun::counter(r, step, EventKind::BytesSent, sent, t + 90 * kMs));
            ev.push_back(SyntheticRun::span(r, step, EventKind::Step, -1, t, t + 95 * kMs));
        }
    }
    RunModel model;
    model.reset(classicDiloco(), 2);
    model.ingest(ev.data(), ev.size());
    return model;
}

} // namespace

TEST_CASE("The DiLoCo state counts each replica's inner steps since its last sync", "[gui][diloco][model]") {
    const RunModel model = classicModel();

    SECTION("after step 4, replica 0 is 2 steps past its sync at step 2, out of the 3 until the next one") {
        const DilocoViewState st = dilocoViewState(model, nullptr, 0, stepStart(4) + 96 * kMs);
        REQUIRE(st.replicas.size() == 2);
        const DilocoReplica& r0 = st.replicas[0];
        CHECK(r0.last_step == 4);
        CHECK(r0.since_sync == std::vector<int>{4 - 2});
        CHECK(r0.period == std::vector<int>{5 - 2});
        CHECK(st.current_step == 4);
    }
    SECTION("a heal at step 4 is a fresh start: replica 1 has no inner step since") {
        const DilocoViewState st = dilocoViewState(model, nullptr, 0, stepStart(4) + 96 * kMs);
        CHECK(st.replicas[1].last_step == 4);
        CHECK(st.replicas[1].since_sync == std::vector<int>{0});
    }
    SECTION("before any send, the period is the steps to the first send, counted from before step 0") {
        const DilocoViewState st = dilocoViewState(model, nullptr, 0, stepStart(1) + 96 * kMs);
        CHECK(st.replicas[0].since_sync == std::vector<int>{1 - (-1)});
        CHECK(st.replicas[0].period == std::vector<int>{2 - (-1)});
    }
    SECTION("the shown rank's syncs pair each send with its outer step") {
        const DilocoViewState st = dilocoViewState(model, nullptr, 1, std::numeric_limits<int64_t>::max());
        CHECK(st.shown_rank == 1);
        REQUIRE(st.syncs.size() == 2);
        CHECK(st.syncs[0].send_step == 2);
        CHECK(st.syncs[0].apply_step == 2);
        CHECK(st.syncs[0].send_t == stepStart(2) + 80 * kMs);
        CHECK(st.syncs[0].apply_t == stepStart(2) + 84 * kMs);
        CHECK(st.syncs[1].send_step == 5);
        CHECK(st.syncs[0].bytes == kBytesPerSend);
        REQUIRE(st.frags.size() == 1);
        CHECK(st.frags[0].outer_steps == 2);
        CHECK_FALSE(st.frags[0].in_flight);
    }
    SECTION("the bytes curve is the shown rank's BytesSent against the steps done") {
        const DilocoViewState st = dilocoViewState(model, nullptr, 0, stepStart(3) + 96 * kMs);
        CHECK(st.bytes_x == std::vector<double>{1, 2, 3, 4});
        CHECK(st.bytes_y == std::vector<double>{0, 0, double(kBytesPerSend), double(kBytesPerSend)});
    }
    SECTION("in a replay the links are the scenario's [network]") {
        const DilocoViewState st = dilocoViewState(model, nullptr, 0, std::numeric_limits<int64_t>::max());
        CHECK(st.replicas[1].link_mbit_s == 100.0);
        CHECK(st.replicas[1].link_latency_ms == 20.0);
    }
}

TEST_CASE("The DiLoCo view's moment, shown rank and live links", "[gui][diloco][model]") {
    SECTION("the moment is the time cursor, else everything so far") {
        CHECK(dilocoMoment(std::nullopt) == std::numeric_limits<int64_t>::max());
        CHECK(dilocoMoment(int64_t(1234)) == 1234);
    }
    SECTION("the shown rank is the selected one, else rank 0") {
        CHECK(dilocoShownRank(-1) == 0);
        CHECK(dilocoShownRank(1) == 1);
    }
    SECTION("live links replace each replica's link; replicas without a live rank keep theirs") {
        DilocoViewState st = dilocoViewState(classicModel(), nullptr, 0, std::numeric_limits<int64_t>::max());
        std::vector<RankProgress> ranks(1);
        ranks[0].link_mbit_s = 10.0;
        ranks[0].link_latency_ms = 5.0;
        applyLiveLinks(st, ranks);
        CHECK(st.replicas[0].link_mbit_s == 10.0);
        CHECK(st.replicas[0].link_latency_ms == 5.0);
        CHECK(st.replicas[1].link_mbit_s == 100.0);
        CHECK(st.replicas[1].link_latency_ms == 20.0);
    }
}
