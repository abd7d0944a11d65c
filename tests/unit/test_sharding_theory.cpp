// test_sharding_theory.cpp: the ZeRO / FSDP formulas of sharding_theory.hpp
// against the papers' own statements (../shared/reference/papers.md).
#include "dtlab/sharding_theory.hpp"

#include <catch2/catch.hpp>

namespace {

dt::Scenario scenario(const std::string& kind, int ranks, int replicas = 1) {
    dt::Scenario s;
    s.topology.ranks = ranks;
    s.topology.replicas = replicas;
    REQUIRE(dt::parseStrategyKind(kind, s.strategy.kind));
    s.model.layers = 4;
    return s;
}

} // namespace

TEST_CASE("Model states per rank follow the ZeRO ladder", "[sharding]") {
    const int N = GENERATE(1, 2, 4, 8);
    CAPTURE(N);
    const double psi = double(dt::unitLayout(scenario("ddp", N).model).total());
    const auto states = [&](const std::string& kind) {
        return double(dt::modelStateTheory(scenario(kind, N)).modelStates());
    };
    // fp32 weights and gradients, two fp32 AdamW moments: DDP holds 16 bytes per parameter.
    CHECK(states("ddp") == 16 * psi);
    // Padding adds fewer than N elements per unit (5 units).
    const double pad = 5.0 * N * 16;
    CHECK(states("zero1") == Approx(8 * psi + 8 * psi / N).margin(pad));
    CHECK(states("zero2") == Approx(4 * psi + 12 * psi / N).margin(pad));
    CHECK(states("fsdp") == Approx(16 * psi / N).margin(pad));
    SECTION("fsdp adds the root unit and the largest unit materialized, twice that with prefetch") {
        dt::Scenario s = scenario("fsdp", N);
        const auto layout = dt::unitLayout(s.model);
        s.strategy.forward_prefetch = s.strategy.backward_prefetch = false;
        const int64_t one = dt::modelStateTheory(s).materialized_peak;
        s.strategy.backward_prefetch = true;
        const int64_t two = dt::modelStateTheory(s).materialized_peak;
        CHECK(one == 4 * (dt::paddedNumel(layout.root_numel, N) + dt::paddedNumel(layout.unit_numel[0], N)));
        CHECK(two - one == 4 * dt::paddedNumel(layout.unit_numel[0], N));
    }
}

TEST_CASE("Bytes per step: DDP and ZeRO-1/2 move 2(N-1)/N of the model, FSDP about 3(N-1)/N", "[sharding]") {
    const int N = GENERATE(2, 4, 8);
    CAPTURE(N);
    const double model_bytes = 4.0 * double(dt::unitLayout(scenario("ddp", N).model).total());
    const double ring = double(N - 1) / N * model_bytes;
    CHECK(double(dt::bytesPerStepTheory(scenario("ddp", N))) == Approx(2 * ring).epsilon(1e-3));
    CHECK(double(dt::bytesPerStepTheory(scenario("zero1", N))) == Approx(2 * ring).epsilon(1e-3));
    CHECK(double(dt::bytesPerStepTheory(scenario("zero2", N))) == Approx(2 * ring).epsilon(1e-3));
    // The root unit (5% of this model) is gathered once, not twice: a little under 3.
    const double fsdp = double(dt::bytesPerStepTheory(scenario("fsdp", N))) / ring;
    CHECK(fsdp > 2.9);
    CHECK(fsdp < 3.0);
    SECTION("hsdp adds an all-reduce of one shard across the replicas") {
        const dt::Scenario h = scenario("hsdp", N, 2);
        const int S = N / 2; // ranks per replica group
        const dt::Scenario inner = scenario("fsdp", S);
        const double across =
            2.0 * (2 - 1) / 2 * model_bytes / S; // ring all-reduce of 1/S of the model, R = 2
        CHECK(double(dt::bytesPerStepTheory(h)) ==
              Approx(double(dt::bytesPerStepTheory(inner)) + across).epsilon(1e-3));
    }
}
