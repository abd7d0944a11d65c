// fake_quant.cpp: fake quantization for QAT (the formulas are in the header).
#include "model/fake_quant.hpp"

#include "dtlab/errors.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace dt {

namespace {
constexpr double kEps = std::numeric_limits<float>::epsilon(); // torch.finfo(torch.float32).eps
}

QuantSpec quantSpecOf(const std::string& quantize, const std::string& quantize_weights) {
    QuantSpec spec;
    spec.bits = quantize == "int8" ? 8 : quantize == "int4" ? 4 : 0;
    spec.per_channel = quantize_weights != "tensor";
    return spec;
}

at::Tensor fakeQuantizeWeight(const at::Tensor& weight, const QuantSpec& spec) {
    const int64_t qmin = spec.weightMin(), qmax = spec.weightMax();
    const double half_range = double(qmax - qmin) / 2.0; // 127.5 for int8
    const at::Tensor w = weight.detach();
    if (spec.per_channel) { // one scale per output row (axis 0)
        const at::Tensor scale = (w.abs().amax({1}) / half_range).clamp_min(kEps).to(at::kFloat);
        const at::Tensor zero = at::zeros({weight.size(0)}, at::kInt);
        return at::fake_quantize_per_channel_affine(weight, scale, zero, 0, qmin, qmax);
    }
    const double scale = std::max(w.abs().max().item<double>() / half_range, kEps);
    return at::fake_quantize_per_tensor_affine(weight, scale, 0, qmin, qmax);
}

AffineParams affineParams(double min, double max, int64_t qmin, int64_t qmax) {
    min = std::min(min, 0.0);
    max = std::max(max, 0.0);
    AffineParams p;
    p.scale = std::max((max - min) / double(qmax - qmin), kEps);
    p.zero_point = std::clamp(qmin - int64_t(std::nearbyint(min / p.scale)), qmin, qmax);
    return p;
}

at::Tensor ActivationFakeQuant::operator()(const at::Tensor& x, const QuantSpec& spec, bool observe) {
    if (observe) {
        const at::Tensor d = x.detach();
        const double lo = d.min().item<double>(), hi = d.max().item<double>();
        if (!m_observed) {
            m_min = lo;
            m_max = hi;
            m_observed = true;
        } else {
            m_min += kAveragingConstant * (lo - m_min);
            m_max += kAveragingConstant * (hi - m_max);
        }
    }
    DT_ENFORCE(m_observed, "an activation fake quantizer ran before it observed any batch");
    const AffineParams p = affineParams(m_min, m_max, 0, spec.activationMax());
    return at::fake_quantize_per_tensor_affine(x, p.scale, p.zero_point, 0, spec.activationMax());
}

} // namespace dt
