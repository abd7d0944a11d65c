// test_causal_attention.cpp: the fused causal attention (model/causal_attention)
// against the ATen chain it replaces (views, matmul, masked_fill, softmax,
// matmul): outputs and the gradients with respect to qkv, at odd sizes; that a
// position never sees a later one; non-contiguous input; refused input.
#include "model/causal_attention.hpp"

#include "dtlab/errors.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <tuple>
#include <vector>

namespace {

double maxAbsDifference(const at::Tensor& a, const at::Tensor& b) {
    return (a - b).abs().max().item<double>();
}

// y and d(sum(y * w))/d(qkv) for one implementation.
std::pair<at::Tensor, at::Tensor> outputAndGradient(at::Tensor (*attention)(const at::Tensor&, int64_t),
                                                    const at::Tensor& qkv_values, int64_t heads,
                                                    const at::Tensor& weights) {
    at::Tensor qkv = qkv_values.clone().requires_grad_(true);
    at::Tensor y = attention(qkv, heads);
    at::Tensor loss = (y * weights).sum();
    at::Tensor grad = torch::autograd::grad({loss}, {qkv})[0];
    return {y.detach(), grad};
}

} // namespace

TEST_CASE("the fused causal attention computes what the ATen chain computes", "[model][attention]") {
    at::manual_seed(7);
    // (B, T, C, H): one token, odd lengths, one head, many heads, TinyGPT's shape.
    const std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>> shapes = {
        {1, 1, 8, 2}, {3, 5, 12, 3}, {2, 17, 10, 1}, {1, 9, 24, 8}, {4, 64, 128, 4}};
    for (const auto& [B, T, C, H] : shapes) {
        INFO("B " << B << " T " << T << " C " << C << " H " << H);
        const at::Tensor qkv = at::randn({B, T, 3 * C});
        const at::Tensor weights = at::randn({B, T, C});

        SECTION("Outputs and input gradients agree within float rounding at B " + std::to_string(B) + " T " +
                std::to_string(T) + " H " + std::to_string(H)) {
            const auto [y_fused, g_fused] = outputAndGradient(&dt::causalSelfAttention, qkv, H, weights);
            const auto [y_ref, g_ref] = outputAndGradient(&dt::causalSelfAttentionComposed, qkv, H, weights);
            REQUIRE(y_fused.sizes() == y_ref.sizes());
            REQUIRE(g_fused.sizes() == g_ref.sizes());
            CHECK(maxAbsDifference(y_fused, y_ref) < 1e-5);
            CHECK(maxAbsDifference(g_fused, g_ref) < 1e-4);
            // q, k and v all receive gradient (with one token the softmax is constant: q and k get none).
            for (int64_t part = T > 1 ? 0 : 2; part < 3; ++part)
                CHECK(g_fused.slice(2, part * C, (part + 1) * C).abs().max().item<double>() > 0.0);
        }
    }
}

TEST_CASE("the fused causal attention never lets a position see a later one", "[model][attention]") {
    at::manual_seed(11);
    const int64_t B = 2, T = 12, C = 16, H = 4, cut = 5;
    const at::Tensor qkv = at::randn({B, T, 3 * C});
    at::Tensor changed = qkv.clone();
    changed.slice(1, cut, T).normal_(); // every position from `cut` on is new
    const at::Tensor y = dt::causalSelfAttention(qkv, H);
    const at::Tensor y2 = dt::causalSelfAttention(changed, H);
    CHECK(at::equal(y.slice(1, 0, cut), y2.slice(1, 0, cut))); // bit for bit
    CHECK_FALSE(at::equal(y.slice(1, cut, T), y2.slice(1, cut, T)));
    // Position 0 attends to itself alone: its output is its own v.
    CHECK(maxAbsDifference(y.select(1, 0), qkv.select(1, 0).slice(1, 2 * C, 3 * C)) < 1e-6);
}

TEST_CASE("the fused causal attention takes a non-contiguous qkv and refuses what it cannot run",
          "[model][attention]") {
    at::manual_seed(3);
    const at::Tensor stored = at::randn({6, 2, 3 * 8}); // (T,B,3C)
    const at::Tensor qkv = stored.transpose(0, 1);      // (B,T,3C), not contiguous
    REQUIRE_FALSE(qkv.is_contiguous());
    CHECK(maxAbsDifference(dt::causalSelfAttention(qkv, 2), dt::causalSelfAttentionComposed(qkv, 2)) < 1e-5);

    CHECK_THROWS_WITH(dt::causalSelfAttention(at::randn({2, 3, 24}, at::kDouble), 2),
                      Catch::Contains("float32"));
    CHECK_THROWS_WITH(dt::causalSelfAttention(at::randn({2, 3, 20}), 2), Catch::Contains("(B,T,3C)"));
    CHECK_THROWS_WITH(dt::causalSelfAttention(at::randn({2, 3, 24}), 3), Catch::Contains("divide by heads"));
    CHECK_THROWS_WITH(dt::causalSelfAttention(at::randn({2, 0, 24}), 2),
                      Catch::Contains("at least one token"));
}

// Not in the suite (timings are never asserted): the fused node against the
// ATen chain at TinyGPT's shape, forward and backward, on one thread:
// build/tests/test_engine "[attention_bench]"
TEST_CASE("the fused causal attention's time against the ATen chain", "[.][attention_bench]") {
    at::set_num_threads(1);
    const int64_t B = 16, T = 64, C = 128, H = 4;
    const at::Tensor qkv = at::randn({B, T, 3 * C});
    const at::Tensor weights = at::randn({B, T, C});
    auto time_ms = [&](at::Tensor (*attention)(const at::Tensor&, int64_t)) {
        std::vector<double> ms;
        for (int i = 0; i < 60; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            (void)outputAndGradient(attention, qkv, H, weights);
            ms.push_back(
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(ms.begin(), ms.end());
        return ms[ms.size() / 2];
    };
    for (int round = 0; round < 2; ++round) {
        const double composed = time_ms(&dt::causalSelfAttentionComposed);
        const double fused = time_ms(&dt::causalSelfAttention);
        WARN("B 16, T 64, C 128, H 4, forward + backward, median of 60: ATen chain "
             << composed << " ms, fused " << fused << " ms (x" << composed / fused << ")");
    }
}
