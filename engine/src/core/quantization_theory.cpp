// quantization_theory.cpp: a QAT model's shipped size (formulas in the header).
#include "dtlab/quantization_theory.hpp"

#include "dtlab/scenario.hpp"
#include "dtlab/sharding_theory.hpp"

namespace dt {

QuantizedModelSize quantizedModelSize(const ModelConfig& m) {
    QuantizedModelSize q;
    const int64_t total = unitLayout(m).total();
    q.other = total;
    if (m.kind != "tiny_gpt" || (m.quantize != "int8" && m.quantize != "int4"))
        return q;
    q.bits = m.quantize == "int8" ? 8 : 4;
    const int64_t C = m.d_model, R = m.mlp_ratio, L = m.layers, V = m.vocab;
    q.linear_weights = L * (4 + 2 * R) * C * C + V * C;
    q.scales = m.quantize_weights == "tensor" ? L * 4 + 1 : L * (5 + R) * C + V;
    q.other = total - q.linear_weights;
    return q;
}

} // namespace dt
