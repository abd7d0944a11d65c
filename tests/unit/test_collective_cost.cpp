// test_collective_cost.cpp: ring factors, bus bandwidth and the alpha-beta fit
// (dtlab/collective_cost.hpp) against hand-computed values.
#include "dtlab/collective_cost.hpp"

#include <catch2/catch.hpp>

using dt::AlphaBetaFit;

TEST_CASE("The collective cost model gives ring factors, bus bandwidth and a fitted alpha and B",
          "[backends]") {
    SECTION("ring factors are 2(N-1)/N for all-reduce and (N-1)/N for all-gather and reduce-scatter") {
        CHECK(dt::ringFactor("all_reduce", 2) == Approx(1.0));
        CHECK(dt::ringFactor("all_reduce", 4) == Approx(1.5));
        CHECK(dt::ringFactor("all_gather", 4) == Approx(0.75));
        CHECK(dt::ringFactor("reduce_scatter", 8) == Approx(0.875));
        CHECK(dt::ringFactor("all_reduce", 1) == 0.0);
    }
    SECTION("bus bandwidth is the ring factor times size over time") {
        // 4 MB all-reduce on 4 ranks in 2 ms: 1.5 x 4e6 / 2e-3 = 3 GB/s
        CHECK(dt::busBandwidthGBs("all_reduce", 4e6, 4, 2e-3) == Approx(3.0));
        CHECK(dt::busBandwidthGBs("all_gather", 4e6, 2, 1e-3) == Approx(2.0));
        CHECK(dt::busBandwidthGBs("all_reduce", 4e6, 2, 0.0) == 0.0);
    }
    SECTION("the fit recovers alpha and B from exact model points") {
        const double alpha = 25e-6, bandwidth = 3e9;
        std::vector<double> wire, seconds;
        for (double size : {4e3, 64e3, 1e6, 16e6}) {
            wire.push_back(size);
            seconds.push_back(alpha + size / bandwidth);
        }
        const AlphaBetaFit fit = dt::fitAlphaBeta(wire, seconds);
        REQUIRE(fit.ok);
        CHECK(fit.alpha_s == Approx(alpha).epsilon(1e-6));
        CHECK(fit.bandwidth_bytes_s == Approx(bandwidth).epsilon(1e-6));
        CHECK(fit.seconds(1e6) == Approx(alpha + 1e6 / bandwidth));
    }
    SECTION("a 10% error on one point moves the fit by less than that") {
        const double alpha = 100e-6, bandwidth = 1e9;
        std::vector<double> wire = {4e3, 64e3, 1e6, 16e6}, seconds;
        for (double w : wire)
            seconds.push_back(alpha + w / bandwidth);
        seconds[3] *= 1.1;
        const AlphaBetaFit fit = dt::fitAlphaBeta(wire, seconds);
        REQUIRE(fit.ok);
        CHECK(fit.bandwidth_bytes_s > 0.9 * bandwidth);
        CHECK(fit.bandwidth_bytes_s < bandwidth);
    }
    SECTION("one size alone, or times that fall with size, give no fit") {
        CHECK_FALSE(dt::fitAlphaBeta({1e6, 1e6}, {1e-3, 1e-3}).ok);
        CHECK_FALSE(dt::fitAlphaBeta({1e3, 1e6}, {1e-3, 1e-4}).ok);
        CHECK_FALSE(dt::fitAlphaBeta({}, {}).ok);
    }
}

TEST_CASE("The backend comparison's points are averaged over ranks and fitted per backend and op",
          "[backends]") {
    // Two ranks time an all-reduce of 1 MB and 4 MB on Gloo; rank 1 is 10% slower.
    auto counter = [](int rank, dt::CommBackend backend, int64_t size, double seconds) {
        dt::Event e;
        e.kind = dt::EventKind::BusBandwidth;
        e.phase = dt::EventPhase::Counter;
        e.rank = rank;
        e.unit = 0; // all_reduce
        e.backend = backend;
        e.bytes = size;
        e.dur_ns = int64_t(seconds * 1e9);
        e.value = dt::busBandwidthGBs("all_reduce", double(size), 2, seconds);
        e.group_size = 2;
        return e;
    };
    const double alpha = 100e-6, bandwidth = 1e9; // 2 ranks: factor 1, so t = alpha + S / B
    std::vector<dt::Event> events;
    for (int64_t size : {1'000'000, 4'000'000}) {
        events.push_back(counter(0, dt::CommBackend::Gloo, size, alpha + double(size) / bandwidth));
        events.push_back(counter(1, dt::CommBackend::Gloo, size, 1.1 * (alpha + double(size) / bandwidth)));
    }
    const dt::BusBandwidthMeasure m = dt::measureBusBandwidth(events);
    CHECK(m.ranks == 2);
    REQUIRE(m.points.size() == 2);
    CHECK(m.points[0].size_bytes == 1'000'000);
    CHECK(m.points[0].seconds == Approx(1.05 * (alpha + 1e-3)));
    CHECK(m.points[1].op == "all_reduce");
    REQUIRE(m.models.size() == 1);
    CHECK(m.models[0].backend == dt::CommBackend::Gloo);
    CHECK(m.models[0].fit.alpha_s == Approx(1.05 * alpha).epsilon(1e-6));
    CHECK(m.models[0].fit.bandwidth_bytes_s == Approx(bandwidth / 1.05).epsilon(1e-6));
}
