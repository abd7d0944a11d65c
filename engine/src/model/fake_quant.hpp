// fake_quant.hpp: fake quantization for quantization-aware training (QAT),
// as torch.ao.quantization's FakeQuantize does it, with ATen's own kernels
// (at::fake_quantize_per_tensor_affine / _per_channel_affine).
//
// A fake-quantized value is rounded to the grid a real int kernel would use
// and turned back into fp32, so training sees the rounding error:
//   x_q = (clamp(round(x / s) + z, qmin, qmax) - z) * s
// Backward is the straight-through estimator: the gradient passes unchanged
// where qmin <= round(x / s) + z <= qmax, and is 0 outside (clipped values).
//
// Weights (W (out, in) of every Linear): symmetric, zero point 0, the range
// of qint8 [-128, 127] (int4: [-8, 7]); s = max|W| / ((qmax - qmin) / 2),
// per output channel (row; as PyTorch's default QAT weight qconfig) or per
// tensor, from the current weights' max |W| at every forward (PyTorch's
// default QAT qconfig smooths that max with a moving average; dtlab takes
// it as it is, as the per-channel MinMaxObserver does).
// Activations (the input x (..., in) of every Linear): affine, the range of
// quint8 [0, 255] (int4: [0, 15]); min and max from a moving average of each
// batch's min and max (averaging constant 0.01, the first batch taken as is:
// MovingAverageMinMaxObserver), widened to include 0;
// s = (max - min) / (qmax - qmin), z = qmin - round(min / s).
// A model with QAT trains with both on; switched off (setEnabled(false)) the
// same weights run in plain fp32, which is how the eval compares the two.
#pragma once

#include <ATen/Tensor.h>

#include <string>

namespace dt {

struct QuantSpec {
    int bits = 0;            // 8 or 4; 0 = off
    bool per_channel = true; // weights: one scale per output row, else one per tensor
    [[nodiscard]] bool on() const { return bits > 0; }
    [[nodiscard]] int64_t weightMin() const { return -(int64_t(1) << (bits - 1)); }    // -128, -8
    [[nodiscard]] int64_t weightMax() const { return (int64_t(1) << (bits - 1)) - 1; } // 127, 7
    [[nodiscard]] int64_t activationMax() const { return (int64_t(1) << bits) - 1; }   // 255, 15
};

// From [model] quantize ("none", "int8", "int4") and quantize_weights ("channel", "tensor").
[[nodiscard]] QuantSpec quantSpecOf(const std::string& quantize, const std::string& quantize_weights);

// W (out, in) fake-quantized symmetrically (per row or per tensor).
[[nodiscard]] at::Tensor fakeQuantizeWeight(const at::Tensor& weight, const QuantSpec& spec);

// The scale and zero point an affine observer with this min and max gives
// (PyTorch's _calculate_qparams: the range widened to include 0).
struct AffineParams {
    double scale = 1.0;
    int64_t zero_point = 0;
};
[[nodiscard]] AffineParams affineParams(double min, double max, int64_t qmin, int64_t qmax);

// One Linear input's observer and fake quantizer.
class ActivationFakeQuant {
  public:
    static constexpr double kAveragingConstant = 0.01;
    // Updates the moving min/max with x (training only), then fake-quantizes x.
    [[nodiscard]] at::Tensor operator()(const at::Tensor& x, const QuantSpec& spec, bool observe);
    [[nodiscard]] bool observed() const { return m_observed; }
    [[nodiscard]] double min() const { return m_min; }
    [[nodiscard]] double max() const { return m_max; }

  private:
    bool m_observed = false;
    double m_min = 0.0, m_max = 0.0;
};

} // namespace dt
