// test_swarm_measure.cpp: what a SWARM run did, from events written by hand
// (swarm_measure.hpp): calls per server and route, reroutes, deaths.
#include "dtlab/swarm_measure.hpp"

#include <catch2/catch.hpp>

#include <csignal>

using namespace dt;

namespace {

constexpr int64_t kMs = 1'000'000;

// 2 trainers, 2 stages x 2 servers: ranks 2, 3 serve stage 0; 4, 5 stage 1.
Scenario swarmScenario() {
    Scenario s;
    s.strategy.kind = StrategyKind::Swarm;
    s.topology.stages = 2;
    s.topology.ranks = 6;
    s.swarm.trainers = 2;
    s.swarm.servers_per_stage = 2;
    s.data.batch_per_rank = 8;
    return s;
}

Event span(int rank, EventKind kind, int64_t ms, int64_t dur_ms, int stage, int peer, double value) {
    Event e;
    e.rank = rank;
    e.kind = kind;
    e.phase = EventPhase::Span;
    e.t_ns = ms * kMs;
    e.dur_ns = dur_ms * kMs;
    e.unit = int16_t(stage);
    e.peer = int16_t(peer);
    e.value = value;
    e.bytes = 100;
    return e;
}

Event instant(int rank, EventKind kind, int64_t ms, double value = 0, int stage = -1, int peer = -1) {
    Event e;
    e.rank = rank;
    e.kind = kind;
    e.phase = EventPhase::Instant;
    e.t_ns = ms * kMs;
    e.value = value;
    e.unit = int16_t(stage);
    e.peer = int16_t(peer);
    return e;
}

} // namespace

TEST_CASE("A swarm's calls are counted per server, per route and per stage", "[swarm]") {
    const Scenario s = swarmScenario();
    std::vector<Event> ev = {
        span(0, EventKind::SwarmCall, 0, 10, 0, 2, 0.0), // trainer 0 forward on stage 0, server rank 2
        span(2, EventKind::SwarmServe, 1, 8, 0, 0, 0.0),
        span(0, EventKind::SwarmCall, 10, 10, 1, 5, 0.0), // forward on stage 1, rank 5
        span(5, EventKind::SwarmServe, 11, 8, 1, 0, 0.0),
        span(0, EventKind::SwarmCall, 20, 10, 1, 5, 1.0), // backward on stage 1
        span(5, EventKind::SwarmServe, 21, 8, 1, 0, 1.0),
        span(0, EventKind::SwarmCall, 30, 10, 0, 3, 1.0), // backward on stage 0, rank 3: the microbatch ends
        span(3, EventKind::SwarmServe, 31, 8, 0, 0, 1.0),
    };
    Event dropped = span(3, EventKind::SwarmServe, 40, 1, 0, 1, 1.0);
    dropped.seq = 2; // answered "dropped": stale
    ev.push_back(dropped);
    const SwarmMeasure m = measureSwarm(s, ev);
    SECTION("each answered backward call on stage 0 is one microbatch") {
        CHECK(m.microbatches == 1);
        CHECK(m.backward_by_stage == std::vector<int64_t>{1, 1});
    }
    SECTION("servers count forward, backward and dropped calls") {
        REQUIRE(m.servers.size() == 4);
        CHECK(m.servers[0].rank == 2);
        CHECK(m.servers[0].forward_calls == 1);
        CHECK(m.servers[1].backward_calls == 1);
        CHECK(m.servers[1].dropped_calls == 1);
        CHECK(m.servers[3].forward_calls == 1);
        CHECK(m.servers[3].backward_calls == 1);
    }
    SECTION("routes count each trainer's calls to each server") {
        REQUIRE(m.routes.size() == 8); // 2 trainers x 4 servers
        CHECK(m.routes[0].trainer == 0);
        CHECK(m.routes[0].server_rank == 2);
        CHECK(m.routes[0].calls == 1);
        CHECK(m.routes[3].calls == 2); // trainer 0 -> rank 5
        CHECK(m.routes[4].calls == 0); // trainer 1 called nobody
    }
}

TEST_CASE("A dead server's lost gradients and the time to the first re-routed call are measured", "[swarm]") {
    const Scenario s = swarmScenario();
    std::vector<Event> ev = {
        span(3, EventKind::SwarmServe, 0, 5, 0, 0, 1.0),
        span(3, EventKind::Optimizer, 6, 1, 0, -1, 0.0), // an inner step: nothing pending
        span(3, EventKind::SwarmServe, 10, 5, 0, 0, 1.0),
        span(3, EventKind::SwarmServe, 20, 5, 0, 1, 1.0), // 2 backward calls accumulated, not stepped
        instant(3, EventKind::FaultInjected, 100, SIGKILL),
        instant(3, EventKind::ProcessExited, 103, -SIGKILL),
        instant(1, EventKind::SwarmReroute, 104, 1.0, 0, 3), // trainer 1's call to rank 3 failed
        span(1, EventKind::SwarmCall, 105, 15, 0, 2, 0.0),   // and went to rank 2: ends at 120
        instant(3, EventKind::SwarmJoined, 900, 1.0, 0),
    };
    const SwarmMeasure m = measureSwarm(s, ev);
    REQUIRE(m.deaths.size() == 1);
    CHECK(m.deaths[0].rank == 3);
    CHECK(m.deaths[0].t_ns == 100 * kMs); // from the kill, not from the reaping
    CHECK(m.deaths[0].gradients_lost == 2);
    CHECK(m.deaths[0].reroute_ms == Approx(20.0));
    CHECK(m.deaths[0].back_ns == 900 * kMs);
    CHECK(m.reroutes_connection == 1);
    CHECK(m.reroutes_timeout == 0);
    CHECK(m.servers[1].starts == 1);
}

TEST_CASE("Samples per second come from the trainers' steps", "[swarm]") {
    const Scenario s = swarmScenario();
    std::vector<Event> ev = {
        span(0, EventKind::Step, 0, 500, -1, -1, 0.0),   span(1, EventKind::Step, 0, 500, -1, -1, 0.0),
        span(0, EventKind::Step, 500, 500, -1, -1, 0.0), span(1, EventKind::Step, 500, 500, -1, -1, 0.0),
        span(4, EventKind::Step, 0, 5000, -1, -1, 0.0), // not a trainer: ignored
    };
    const SwarmMeasure m = measureSwarm(s, ev);
    CHECK(m.samples_per_s == Approx(4 * 8 / 1.0)); // 4 trainer steps of 8 samples in 1 s
}
