// test_run_state_at.cpp: the state of a run at a moment, from synthetic
// events (model/run_state_at.hpp), and the cursor's playback driven by a fake
// clock (playback.hpp).
#include "gui/synthetic_kill.hpp"

#include "model/run_state_at.hpp"
#include "playback.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using namespace dt;
using namespace dt::app;
using F = dt::test::SyntheticFaults;

namespace {

RunModel modelOf(const Scenario& scenario, const std::vector<Event>& events) {
    RunModel model;
    model.reset(scenario, 3);
    model.ingest(events.data(), events.size());
    return model;
}

} // namespace

TEST_CASE("The state at a moment follows a rank through a kill, a hang, a pause and the end",
          "[gui][state_at]") {
    const RunModel model = modelOf(F::ddpScenario(), F::killRun());

    SECTION("before the kill every rank runs, at its last completed step") {
        const RunStateAt st = runStateAt(model, F::at(300));
        for (const RankProgress& p : st.ranks) {
            CAPTURE(p.rank);
            CHECK(p.state == RankState::Running);
            CHECK(p.step == 2); // steps 0, 1, 2 ended at +80, +180, +280 ms
            CHECK(p.last_loss == Approx(2.8));
            CHECK(p.last_step_ms == Approx(70.0));
            CHECK(p.pid == 100 + p.rank);
        }
        CHECK(st.memory[0].now[3] == 120); // activations of step 2
        CHECK(st.memory[0].peak[3] == 120);
        CHECK(st.bytes_sent[0] == 1500.0);
    }
    SECTION("at the kill the rank is killed and stays at its last step; the others run on") {
        const RunStateAt st = runStateAt(model, F::at(460));
        CHECK(st.ranks[1].state == RankState::Killed);
        CHECK(st.ranks[1].step == 3);
        CHECK(st.ranks[0].state == RankState::Running);
        CHECK(st.ranks[0].step == 3);
        CHECK(st.memory[1].now[3] == 130);
        // Between the fault and the process exit it is not dead yet.
        CHECK(runStateAt(model, F::at(455)).ranks[1].state == RankState::Running);
    }
    SECTION("SIGSTOP hangs a rank and SIGCONT resumes it") {
        CHECK(runStateAt(model, F::at(720)).ranks[2].state == RankState::Hung);
        CHECK(runStateAt(model, F::at(800)).ranks[2].state == RankState::Running);
    }
    SECTION("a rank held at a step gate is paused there") {
        CHECK(runStateAt(model, F::at(890)).ranks[0].state == RankState::Paused);
        CHECK(runStateAt(model, F::at(906)).ranks[0].state == RankState::Running);
    }
    SECTION("a slowed step shows its delay") {
        CHECK(runStateAt(model, F::at(700)).ranks[0].delay_ms == Approx(15.0));
        CHECK(runStateAt(model, F::at(800)).ranks[0].delay_ms == 0.0);
    }
    SECTION("at the end the survivors finished and the killed rank stays killed") {
        const RunStateAt st = runStateAt(model, F::at(2000));
        CHECK(st.ranks[0].state == RankState::Finished);
        CHECK(st.ranks[2].state == RankState::Finished);
        CHECK(st.ranks[1].state == RankState::Killed);
        CHECK(st.ranks[0].step == 9);
        CHECK(st.memory[0].now[3] == 190);
        CHECK(st.memory[1].now[3] == 130); // its last report
    }
    SECTION("before any event every rank is pending with nothing reported") {
        const RunStateAt st = runStateAt(model, F::at(-10));
        for (size_t r = 0; r < 3; ++r) {
            CHECK(st.ranks[r].state == RankState::Pending);
            CHECK(st.ranks[r].step == -1);
            CHECK_FALSE(st.memory[r].any);
            CHECK(st.bytes_sent[r] == -1.0);
        }
    }
}

TEST_CASE("The state at a moment is the same function live and in a replay", "[gui][state_at]") {
    const std::vector<Event> events = F::killRun();
    const RunModel replay = modelOf(F::ddpScenario(), events);
    // Live: the events arrive in small batches, each rank's in order but interleaved differently.
    std::vector<Event> sorted = events;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const Event& a, const Event& b) { return a.t_ns < b.t_ns; });
    RunModel live;
    live.reset(F::ddpScenario(), 3);
    for (size_t i = 0; i < sorted.size(); i += 7)
        live.ingest(sorted.data() + i, std::min<size_t>(7, sorted.size() - i));
    for (int64_t ms : {0, 150, 456, 460, 720, 890, 1000, 1500}) {
        CAPTURE(ms);
        const RunStateAt a = runStateAt(live, F::at(ms)), b = runStateAt(replay, F::at(ms));
        for (size_t r = 0; r < 3; ++r) {
            CAPTURE(r);
            CHECK(a.ranks[r].state == b.ranks[r].state);
            CHECK(a.ranks[r].step == b.ranks[r].step);
            CHECK(a.memory[r].now == b.memory[r].now);
        }
    }
}

TEST_CASE("The state at a moment follows a replica through its death, restart and heal", "[gui][state_at]") {
    RunModel model = modelOf(F::ftScenario(), F::ftRun());
    const LogRecord healed = F::partitionHealed();
    model.ingestLogs(&healed, 1);

    SECTION("killed with restart = auto: restarting, its commits counted up to then") {
        const RunStateAt st = runStateAt(model, F::at(460));
        CHECK(st.ranks[1].state == RankState::Restarting);
        CHECK(st.ranks[1].committed == 4);
        CHECK(st.ranks[1].step == 3);
        CHECK(st.ranks[0].aborted == 1);
        CHECK(st.ranks[0].state == RankState::Running);
    }
    SECTION("killed with restart = manual: killed") {
        Scenario manual = F::ftScenario();
        manual.fault_tolerance.restart = "manual";
        const RunModel m = modelOf(manual, F::ftRun());
        CHECK(runStateAt(m, F::at(460)).ranks[1].state == RankState::Killed);
    }
    SECTION("restarted: starting, then healing until its first commit, then running") {
        const RunStateAt restarted = runStateAt(model, F::at(1005));
        CHECK(restarted.ranks[1].state == RankState::Starting);
        CHECK(restarted.ranks[1].incarnation == 1);
        CHECK(runStateAt(model, F::at(1050)).ranks[1].state == RankState::Healing);
        const RunStateAt back = runStateAt(model, F::at(1200));
        CHECK(back.ranks[1].state == RankState::Running);
        CHECK(back.ranks[1].committed == 12);
        CHECK(back.ranks[1].pid == 201);
    }
    SECTION("a partition lasts until the Session logs its end") {
        CHECK(runStateAt(model, F::at(550)).ranks[2].partitioned);
        CHECK_FALSE(runStateAt(model, F::at(650)).ranks[2].partitioned);
    }
    SECTION("the lighthouse is down between its down and up events") {
        CHECK_FALSE(runStateAt(model, F::at(1250)).lighthouse_down);
        CHECK(runStateAt(model, F::at(1350)).lighthouse_down);
        CHECK_FALSE(runStateAt(model, F::at(1450)).lighthouse_down);
    }
    SECTION("host and link come from the live progress") {
        RunStateAt st = runStateAt(model, F::at(460));
        std::vector<RankProgress> live(3);
        live[1].host = "node-b";
        live[1].link_mbit_s = 100.0;
        st.withHostsFrom(live);
        CHECK(st.ranks[1].host == "node-b");
        CHECK(st.ranks[1].link_mbit_s == 100.0);
        CHECK(st.ranks[1].state == RankState::Restarting); // the state stays the cursor's
    }
}

// -----------------------------------------------------------------------------
// Playback with a fake clock: frames of uneven length, as a real frame loop has.
// -----------------------------------------------------------------------------

namespace {

// Advances frames from wall time `wall` until the playback stops; returns the wall time it took.
// Checks on the way that the cursor never goes back and never passes `end`.
double playToTheEnd(Playback& playback, double wall, int64_t newest_ns, int64_t end_ns,
                    double (*newest_rate)(double) = nullptr) {
    const double start = wall;
    int64_t last = INT64_MIN;
    for (int frame = 0; frame < 1'000'000 && playback.playing(); ++frame) {
        wall += frame % 3 == 0 ? 0.031 : 0.012; // 12, 12, 31 ms
        const int64_t newest = newest_rate ? newest_ns + int64_t(newest_rate(wall - start) * 1e9) : newest_ns;
        const Playback::Tick tick = playback.advance(wall, newest);
        if (tick.cursor) {
            CHECK(*tick.cursor >= last);
            CHECK(*tick.cursor <= std::max(end_ns, newest));
            last = *tick.cursor;
        }
    }
    return wall - start;
}

} // namespace

TEST_CASE("A replay played at a speed takes its duration divided by the speed", "[gui][playback]") {
    const int64_t begin = 5'000'000'000, end = begin + 12'340'000'000; // a 12.34 s run
    const double duration_s = 12.34;
    for (double speed : Playback::kSpeeds) {
        CAPTURE(speed);
        Playback playback;
        playback.start(begin, end, speed, 100.0, false, false);
        const double took = playToTheEnd(playback, 100.0, end, end);
        CHECK(std::fabs(took - duration_s / speed) <= 0.10 * duration_s / speed);
        // It stopped at the end and the cursor stays there.
        CHECK_FALSE(playback.playing());
        CHECK(playback.advance(1000.0, end).cursor == std::nullopt); // nothing more to play
    }
    SECTION("at 1x the last tick puts the cursor at the end") {
        Playback playback;
        playback.start(begin, end, 1.0, 0.0, false, false);
        const Playback::Tick tick = playback.advance(13.0, end);
        CHECK(tick.ended);
        REQUIRE(tick.cursor);
        CHECK(*tick.cursor == end);
    }
    SECTION("a new speed mid-way keeps the cursor where it is") {
        Playback playback;
        playback.start(begin, end, 1.0, 0.0, false, false);
        const int64_t before = *playback.advance(2.0, end).cursor;
        playback.setSpeed(2.0, 2.0);
        const int64_t after = *playback.advance(2.0, end).cursor;
        CHECK(after == before);
        CHECK(*playback.advance(3.0, end).cursor == before + 2'000'000'000);
    }
    SECTION("a seek goes on from the new position") {
        Playback playback;
        playback.start(begin, end, 1.0, 0.0, false, false);
        playback.seek(begin + 10'000'000'000, 1.0);
        CHECK(*playback.advance(2.0, end).cursor == begin + 11'000'000'000);
    }
}

TEST_CASE("Instant replay plays the last seconds as a moving cursor, then returns to live",
          "[gui][playback]") {
    const int64_t now = 60'000'000'000;
    for (double speed : {0.25, 0.5, 1.0}) {
        CAPTURE(speed);
        Playback playback;
        playback.start(now - 10'000'000'000, now, speed, 0.0, false, true, true);
        CHECK(playback.state().instant_replay);
        // The run goes on meanwhile (now moves at 1 s per second): the window stays the one asked for.
        double wall = 0.0;
        Playback::Tick tick;
        while (playback.playing()) {
            wall += 0.016;
            tick = playback.advance(wall, now + int64_t(wall * 1e9));
            if (tick.cursor)
                CHECK(*tick.cursor < now);
        }
        CHECK(tick.ended);
        CHECK_FALSE(tick.cursor.has_value()); // back to live
        CHECK(wall == Approx(10.0 / speed).epsilon(0.01));
    }
    SECTION("live play faster than the run catches up with now and returns to live") {
        Playback playback;
        playback.start(now - 10'000'000'000, now, 2.0, 0.0, /*follow_now=*/true, /*to_live=*/true);
        const double took = playToTheEnd(playback, 0.0, now, now, [](double s) { return s; });
        CHECK(took ==
              Approx(10.0).epsilon(0.01)); // 2 s of run per second against 1: 10 s behind closes in 10 s
    }
}

TEST_CASE("Playback speeds are labelled as the controls show them", "[gui][playback]") {
    CHECK(std::string(Playback::speedLabel(0.25)) == "1/4x");
    CHECK(std::string(Playback::speedLabel(0.5)) == "1/2x");
    CHECK(std::string(Playback::speedLabel(1.0)) == "1x");
    CHECK(std::string(Playback::speedLabel(2.0)) == "2x");
    CHECK(std::string(Playback::speedLabel(4.0)) == "4x");
}
