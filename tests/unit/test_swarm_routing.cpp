// test_swarm_routing.cpp: a trainer's choice of server (swarm_routing.hpp):
// in proportion to measured throughput, or the lowest expected finish time;
// dead servers are never chosen until a new incarnation is live.
#include "swarm/swarm_routing.hpp"

#include <catch2/catch.hpp>

using dt::swarm::Router;

TEST_CASE("Stochastic wiring sends calls in proportion to each server's throughput", "[swarm]") {
    Router router("throughput", 1, 3, 42);
    // Measured: servers 0 and 1 take 10 ms a sample, server 2 40 ms (4x slower).
    router.recordCall(0, 0, 1, 0.010);
    router.recordCall(0, 1, 1, 0.010);
    router.recordCall(0, 2, 1, 0.040);
    int count[3] = {0, 0, 0};
    const int calls = 9000;
    for (int i = 0; i < calls; ++i)
        ++count[router.choose(0, 0.0, 1)];
    // Throughputs 100, 100, 25 samples/s: shares 4/9, 4/9, 1/9.
    CHECK(count[0] == Approx(calls * 4.0 / 9).epsilon(0.05));
    CHECK(count[1] == Approx(calls * 4.0 / 9).epsilon(0.05));
    CHECK(count[2] == Approx(calls * 1.0 / 9).epsilon(0.15));
}

TEST_CASE("A server not measured yet is tried as if it were as fast as the fastest", "[swarm]") {
    Router router("throughput", 1, 2, 7);
    router.recordCall(0, 0, 1, 0.010);
    int unmeasured = 0;
    for (int i = 0; i < 1000; ++i)
        unmeasured += router.choose(0, 0.0, 1) == 1 ? 1 : 0;
    CHECK(unmeasured == Approx(500).epsilon(0.15));
}

TEST_CASE("The fastest rule picks the lowest expected finish time and spreads a burst", "[swarm]") {
    Router router("fastest", 1, 2, 1);
    router.recordCall(0, 0, 1, 0.010); // 10 ms a sample
    router.recordCall(0, 1, 1, 0.030); // 30 ms a sample
    SECTION("one call at a time: the faster server") {
        CHECK(router.choose(0, 100.0, 4) == 0); // eta 100.04 against 100.12
    }
    SECTION("calls issued at once: 3 to the fast server for each to the slow one") {
        int count[2] = {0, 0};
        for (int i = 0; i < 8; ++i)
            ++count[router.choose(0, 100.0, 1)];
        CHECK(count[0] == 6);
        CHECK(count[1] == 2);
    }
}

TEST_CASE("A dead server is not chosen until a new incarnation of it is live", "[swarm]") {
    for (const char* rule : {"throughput", "fastest"}) {
        INFO(rule);
        Router router(rule, 2, 2, 3);
        router.markDead(1, 0);
        for (int i = 0; i < 200; ++i)
            CHECK(router.choose(1, 0.0, 1) == 1);
        CHECK(router.liveCount(1) == 1);
        router.markDead(1, 1);
        CHECK(router.choose(1, 0.0, 1) == -1); // the stage has no live server
        CHECK(router.choose(0, 0.0, 1) >= 0);  // the other stage is unaffected
        router.markLive(1, 0);
        CHECK(router.choose(1, 0.0, 1) == 0);
        CHECK(router.secondsPerSample(1, 0) == 0.0); // measured afresh
    }
}

TEST_CASE("A timed-out call slows a server's estimate but does not kill it", "[swarm]") {
    Router router("throughput", 1, 2, 5);
    router.recordCall(0, 0, 1, 0.010);
    router.recordCall(0, 1, 1, 0.010);
    router.recordTimeout(0, 1, 1, 5.0);
    CHECK(router.live(0, 1));
    CHECK(router.secondsPerSample(0, 1) > 1.0);
    int slow = 0;
    for (int i = 0; i < 1000; ++i)
        slow += router.choose(0, 0.0, 1) == 1 ? 1 : 0;
    CHECK(slow < 20); // about 1% of the calls
}
