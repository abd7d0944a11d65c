// test_pseudo_gradient_codec.cpp: encode then decode every format on random
// and awkward data; each value's error stays within the documented bound
// (pseudo_gradient_format.hpp), and decoding adds into the sum.
#include "strategy/pseudo_gradient_codec.hpp"

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

namespace {

using dt::PseudoGradientFormat;

at::Tensor roundTrip(const at::Tensor& x, PseudoGradientFormat format) {
    std::vector<uint8_t> bytes(size_t(dt::encodedBytes(x.numel(), format)));
    dt::encodePseudoGradient(x, format, bytes.data());
    at::Tensor sum = at::zeros_like(x);
    dt::decodeAddPseudoGradient(bytes.data(), format, sum);
    return sum;
}

// The largest (error / bound) over all values; <= 1 means every value is within its bound.
double worstErrorOverBound(const at::Tensor& x, const at::Tensor& y, PseudoGradientFormat format) {
    const float* a = x.data_ptr<float>();
    const float* b = y.data_ptr<float>();
    double worst = 0.0;
    for (int64_t begin = 0; begin < x.numel(); begin += dt::kQuantBlock) {
        const int64_t end = std::min(x.numel(), begin + dt::kQuantBlock);
        double block_max = 0.0;
        for (int64_t i = begin; i < end; ++i)
            block_max = std::max(block_max, double(std::fabs(a[i])));
        for (int64_t i = begin; i < end; ++i) {
            const double error = std::fabs(double(a[i]) - double(b[i]));
            const double bound = dt::roundTripErrorBound(a[i], block_max, format) * (1 + 1e-6) + 1e-12;
            worst = std::max(worst, error / bound);
        }
    }
    return worst;
}

} // namespace

TEST_CASE("Pseudo-gradients survive the wire within the documented error", "[diloco]") {
    at::manual_seed(7);
    // 1001 values: three full blocks and a partial one (odd, for int4's packing),
    // scaled differently per block; one block of zeros.
    at::Tensor x = at::randn({1001}) * 1e-3;
    x.narrow(0, 256, 256).mul_(100.0);
    x.narrow(0, 512, 256).zero_();

    SECTION("fp32 is exact") {
        CHECK(at::equal(roundTrip(x, PseudoGradientFormat::Fp32), x));
    }
    SECTION("bf16 is within 2^-8 of each value") {
        CHECK(worstErrorOverBound(x, roundTrip(x, PseudoGradientFormat::Bf16), PseudoGradientFormat::Bf16) <=
              1.0);
    }
    SECTION("int8 is within max|block| / 254, and a zero block stays zero") {
        const at::Tensor y = roundTrip(x, PseudoGradientFormat::Int8);
        CHECK(worstErrorOverBound(x, y, PseudoGradientFormat::Int8) <= 1.0);
        CHECK(y.narrow(0, 512, 256).abs().max().item<float>() == 0.0f);
    }
    SECTION("int4 is within max|block| / 14") {
        CHECK(worstErrorOverBound(x, roundTrip(x, PseudoGradientFormat::Int4), PseudoGradientFormat::Int4) <=
              1.0);
    }
    SECTION("the bounds are tight enough to mean something: int8's real error is well below int4's") {
        const double e8 = (roundTrip(x, PseudoGradientFormat::Int8) - x).abs().max().item<double>();
        const double e4 = (roundTrip(x, PseudoGradientFormat::Int4) - x).abs().max().item<double>();
        CHECK(e8 > 0.0);
        CHECK(e8 * 8 < e4);
    }
    SECTION("decoding adds into the sum: two ranks' codes decode to their sum") {
        const at::Tensor y = at::randn({1001}) * 1e-3;
        std::vector<uint8_t> bx(size_t(dt::encodedBytes(1001, PseudoGradientFormat::Int8)));
        std::vector<uint8_t> by(bx.size());
        dt::encodePseudoGradient(x, PseudoGradientFormat::Int8, bx.data());
        dt::encodePseudoGradient(y, PseudoGradientFormat::Int8, by.data());
        at::Tensor sum = at::zeros({1001});
        dt::decodeAddPseudoGradient(bx.data(), PseudoGradientFormat::Int8, sum);
        dt::decodeAddPseudoGradient(by.data(), PseudoGradientFormat::Int8, sum);
        CHECK(at::allclose(sum, roundTrip(x, PseudoGradientFormat::Int8) +
                                    roundTrip(y, PseudoGradientFormat::Int8)));
    }
}

TEST_CASE("A NaN or Inf in a pseudo-gradient reaches the receiver in every format", "[diloco]") {
    // Under the quorum a non-finite average must abort the round on every
    // replica: quantizing must not turn it into zeros or a clamped code.
    for (const auto format : {PseudoGradientFormat::Fp32, PseudoGradientFormat::Bf16,
                              PseudoGradientFormat::Int8, PseudoGradientFormat::Int4}) {
        CAPTURE(int(format));
        at::Tensor x = at::linspace(-1.0, 1.0, 600, at::kFloat);
        x[300] = std::nanf("");
        const at::Tensor y = roundTrip(x, format);
        CHECK_FALSE(at::isfinite(y).all().item<bool>());
        CHECK(std::isnan(y[300].item<float>()));
        // The other blocks are untouched (int8/int4 scale per block of 256: values 0..255, 512..599).
        CHECK(at::isfinite(y.narrow(0, 0, 256)).all().item<bool>());
        CHECK(at::isfinite(y.narrow(0, 512, 88)).all().item<bool>());
        at::Tensor inf = at::zeros({10}, at::kFloat);
        inf[3] = std::numeric_limits<float>::infinity();
        CHECK_FALSE(at::isfinite(roundTrip(inf, format)).all().item<bool>());
    }
}
