// test_diloco_theory.cpp: the Streaming DiLoCo schedule (diloco_schedule.hpp),
// the pseudo-gradient sizes (pseudo_gradient_format.hpp) and the bytes per
// sync (diloco_theory.hpp), against hand computations.
#include "dtlab/diloco_schedule.hpp"
#include "dtlab/diloco_theory.hpp"
#include "dtlab/pseudo_gradient_format.hpp"
#include "dtlab/sharding_theory.hpp"

#include <catch2/catch.hpp>

#include <vector>

namespace {

std::vector<int> sendSteps(int fragment, int inner_steps, int fragments, int steps) {
    std::vector<int> out;
    for (int s = 0; s < steps; ++s)
        if (dt::diloco::sendsAfterStep(s, fragment, inner_steps, fragments))
            out.push_back(s);
    return out;
}

} // namespace

TEST_CASE("Streaming DiLoCo fragments sync at staggered steps", "[diloco]") {
    SECTION("classic DiLoCo syncs after every H-th step") {
        CHECK(sendSteps(0, 5, 1, 16) == std::vector<int>{4, 9, 14});
    }
    SECTION("two fragments with H = 100 sync after steps 99, 199 and 149, 249 as in the paper") {
        CHECK(sendSteps(0, 100, 2, 300) == std::vector<int>{99, 199, 299});
        CHECK(sendSteps(1, 100, 2, 300) == std::vector<int>{149, 249});
    }
    SECTION("blocks are strided over fragments and the root unit is in fragment 0") {
        CHECK(dt::diloco::fragmentOfUnit(-1, 4) == 0);
        CHECK(dt::diloco::fragmentOfUnit(0, 4) == 0);
        CHECK(dt::diloco::fragmentOfUnit(5, 4) == 1);
        CHECK(dt::diloco::fragmentOfUnit(7, 4) == 3);
    }
}

TEST_CASE("Pseudo-gradient formats have the documented sizes", "[diloco]") {
    using dt::PseudoGradientFormat;
    SECTION("fp32 and bf16 take 4 and 2 bytes per value") {
        CHECK(dt::encodedBytes(1000, PseudoGradientFormat::Fp32) == 4000);
        CHECK(dt::encodedBytes(1000, PseudoGradientFormat::Bf16) == 2000);
    }
    SECTION("int8 takes a byte per value and a 4-byte scale per block of 256") {
        CHECK(dt::encodedBytes(256, PseudoGradientFormat::Int8) == 256 + 4);
        CHECK(dt::encodedBytes(1000, PseudoGradientFormat::Int8) == 1000 + 4 * 4);
    }
    SECTION("int4 packs two values per byte, an odd block rounds up") {
        CHECK(dt::encodedBytes(512, PseudoGradientFormat::Int4) == 256 + 8);
        CHECK(dt::encodedBytes(257, PseudoGradientFormat::Int4) == 128 + 1 + 8);
    }
    SECTION("names round trip and an unknown one is refused") {
        for (auto f : {PseudoGradientFormat::Fp32, PseudoGradientFormat::Bf16, PseudoGradientFormat::Int8,
                       PseudoGradientFormat::Int4})
            CHECK(dt::parsePseudoGradientFormat(dt::pseudoGradientFormatName(f)) == f);
        CHECK_THROWS_AS(dt::parsePseudoGradientFormat("fp8"), dt::UsageError);
    }
}

TEST_CASE("DiLoCo's bytes per sync follow the cost model", "[diloco]") {
    dt::Scenario s;
    s.topology.ranks = 4;
    s.model.layers = 4;
    s.strategy.kind = dt::StrategyKind::Diloco;
    const int64_t total = dt::unitLayout(s.model).total();

    SECTION("one fp32 fragment sends DDP's bytes of one step") {
        const dt::DilocoTheory t = dt::dilocoTheory(s);
        REQUIRE(t.bytes_per_sync.size() == 1);
        CHECK(t.fragment_numel[0] == total);
        CHECK(t.bytes_per_sync[0] == t.ddp_bytes_per_step);
        CHECK(t.ddp_bytes_per_step == 2 * 3 * 4 * total / 4);
    }
    SECTION("fragments partition the model and each sends its own part") {
        s.diloco.fragments = 2;
        s.diloco.inner_steps = 10;
        const dt::DilocoTheory t = dt::dilocoTheory(s);
        REQUIRE(t.fragment_numel.size() == 2);
        CHECK(t.fragment_numel[0] + t.fragment_numel[1] == total);
        CHECK(t.fragment_numel[1] == 2 * dt::unitLayout(s.model).unit_numel[1]); // blocks 1 and 3
        CHECK(t.bytes_per_sync[1] == 2 * 3 * 4 * t.fragment_numel[1] / 4);
        CHECK(t.averageBytesPerStep(10) == Approx(double(t.bytes_per_period) / 10));
    }
    SECTION("int8 fragments are all-gathered: (N-1) x encoded bytes, in whole fp32 words") {
        s.diloco.pseudo_gradient = "int8";
        const dt::DilocoTheory t = dt::dilocoTheory(s);
        const int64_t encoded = dt::encodedBytes(total, dt::PseudoGradientFormat::Int8);
        CHECK(t.bytes_per_sync[0] == 3 * ((encoded + 3) / 4 * 4));
    }
}
