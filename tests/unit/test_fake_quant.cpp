// test_fake_quant.cpp: QAT's fake quantization (model/fake_quant.hpp) against
// a reference quantize-dequantize written out here, its straight-through
// gradient, and the observer's moving average.
#include "model/fake_quant.hpp"

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using dt::QuantSpec;

namespace {

// x_q = (clamp(round(x / s) + z, qmin, qmax) - z) * s, element by element,
// in fp32 as ATen's kernels compute it (x times 1 / s, round half to even).
float unclamped(float x, double scale, int64_t zero) {
    const float inv_scale = 1.0f / float(scale);
    return std::nearbyint(x * inv_scale) + float(zero);
}
float reference(float x, double scale, int64_t zero, int64_t qmin, int64_t qmax) {
    const float q = std::clamp(unclamped(x, scale, zero), float(qmin), float(qmax));
    return (q - float(zero)) * float(scale);
}

} // namespace

TEST_CASE("Fake quantization equals a reference quantize-dequantize and passes gradients straight through",
          "[qat]") {
    at::manual_seed(3);
    const at::Tensor w = at::randn({6, 10});

    SECTION("int8 weights per output channel: scale max|row| / 127.5, zero point 0, range [-128, 127]") {
        const QuantSpec spec = dt::quantSpecOf("int8", "channel");
        const at::Tensor q = dt::fakeQuantizeWeight(w, spec);
        for (int64_t r = 0; r < w.size(0); ++r) {
            const double scale = w[r].abs().max().item<double>() / 127.5;
            for (int64_t c = 0; c < w.size(1); ++c)
                CHECK(q[r][c].item<float>() ==
                      Approx(reference(w[r][c].item<float>(), scale, 0, -128, 127)).margin(1e-7));
        }
        // At most half a step from the original value (nothing is clipped).
        CHECK(((q - w).abs() - (w.abs().amax({1}, true) / 127.5 / 2.0)).max().item<float>() <= 1e-6f);
    }
    SECTION("int4 weights per tensor: one scale max|W| / 7.5, 16 levels") {
        const QuantSpec spec = dt::quantSpecOf("int4", "tensor");
        const at::Tensor q = dt::fakeQuantizeWeight(w, spec);
        const double scale = w.abs().max().item<double>() / 7.5;
        const at::Tensor flat_w = w.reshape({-1}), flat_q = q.reshape({-1});
        for (int64_t i = 0; i < flat_w.numel(); ++i)
            CHECK(flat_q[i].item<float>() ==
                  Approx(reference(flat_w[i].item<float>(), scale, 0, -8, 7)).margin(1e-7));
        CHECK(std::get<0>(at::_unique(q)).numel() <= 16);
    }
    SECTION("the gradient passes straight through the rounding, and is 0 where a value was clipped") {
        // A row's largest positive value sits at +127.5 steps and rounds to 128,
        // one past int8's 127: clipped, so (as in PyTorch) its gradient is 0.
        const at::Tensor x = w.clone().requires_grad_(true);
        const at::Tensor q = dt::fakeQuantizeWeight(x, dt::quantSpecOf("int8", "channel"));
        (q * 3.0).sum().backward();
        int clipped = 0;
        for (int64_t r = 0; r < w.size(0); ++r) {
            const double scale = w[r].abs().max().item<double>() / 127.5;
            for (int64_t c = 0; c < w.size(1); ++c) {
                const float u = unclamped(w[r][c].item<float>(), scale, 0);
                const bool inside = u >= -128.0f && u <= 127.0f;
                clipped += !inside;
                CHECK(x.grad()[r][c].item<float>() == (inside ? 3.0f : 0.0f));
            }
        }
        CHECK(clipped <= w.size(0)); // at most each row's positive extreme
    }
    SECTION("activations: an affine grid over the observed range widened to 0, a moving average") {
        const QuantSpec spec = dt::quantSpecOf("int8", "channel");
        dt::ActivationFakeQuant act;
        const at::Tensor a = at::rand({4, 8}) * 3.0 + 1.0; // all positive: the range widens to 0
        const at::Tensor q = act(a, spec, /*observe=*/true);
        CHECK(act.min() == Approx(a.min().item<double>()));
        const dt::AffineParams p = dt::affineParams(act.min(), act.max(), 0, 255);
        CHECK(p.zero_point == 0);
        CHECK(p.scale == Approx(a.max().item<double>() / 255.0));
        const at::Tensor flat_a = a.reshape({-1}), flat_q = q.reshape({-1});
        for (int64_t i = 0; i < flat_a.numel(); ++i)
            CHECK(flat_q[i].item<float>() ==
                  Approx(reference(flat_a[i].item<float>(), p.scale, p.zero_point, 0, 255)).margin(1e-6));
        // The next batch moves min and max 1% of the way (averaging constant 0.01).
        const double max_before = act.max();
        (void)act(a * 2.0, spec, true);
        CHECK(act.max() == Approx(max_before + 0.01 * (2.0 * a.max().item<double>() - max_before)));
        // Evaluating leaves the observer as it is.
        (void)act(a * 100.0, spec, false);
        CHECK(act.max() == Approx(max_before + 0.01 * (2.0 * a.max().item<double>() - max_before)));
        // A value below the observed range is clipped, and its gradient is 0 there.
        const at::Tensor x = at::tensor({-50.0f, 1.0f}).requires_grad_(true);
        act(x, spec, false).sum().backward();
        CHECK(x.grad()[0].item<float>() == 0.0f);
        CHECK(x.grad()[1].item<float>() == 1.0f);
    }
    SECTION("an affine range with negative values gets a zero point inside the grid") {
        const dt::AffineParams p = dt::affineParams(-1.0, 3.0, 0, 255);
        CHECK(p.scale == Approx(4.0 / 255.0));
        CHECK(p.zero_point == 64); // 0 - round(-1 / (4 / 255)) = round(63.75)
    }
}
