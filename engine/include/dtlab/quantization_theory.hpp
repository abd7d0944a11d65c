// quantization_theory.hpp: what a tiny_gpt trained with QAT ([model]
// quantize) takes when shipped with integer Linear weights, from the scenario
// alone (arithmetic, not a measurement: dtlab trains fake-quantized fp32).
//
// Per block (C = d_model, R = mlp_ratio): the Linear weights qkv 3C x C,
// proj C x C, fc1 RC x C, fc2 C x RC, (4 + 2R) C^2 values, with (5 + R) C
// output rows; the head V x C, V rows. Those weights take bits / 8 bytes
// each, plus per scale an fp32 scale and an int32 zero point (8 bytes): one
// scale per output row (quantize_weights = "channel") or per matrix
// ("tensor"). Everything else (embeddings, norms, biases) stays fp32.
#pragma once

#include <cstdint>

namespace dt {

struct ModelConfig;

struct QuantizedModelSize {
    int bits = 0;               // 8, 4; 0 = not quantized
    int64_t linear_weights = 0; // values in the Linear weight matrices
    int64_t scales = 0;         // (scale, zero point) pairs
    int64_t other = 0;          // values that stay fp32
    [[nodiscard]] int64_t fp32Bytes() const { return 4 * (linear_weights + other); }
    [[nodiscard]] int64_t linearWeightBytes() const { return (linear_weights * bits + 7) / 8; }
    [[nodiscard]] int64_t quantizedBytes() const { return linearWeightBytes() + 8 * scales + 4 * other; }
};

// tiny_gpt under [model] quantize; bits 0 (and the fp32 size) otherwise.
[[nodiscard]] QuantizedModelSize quantizedModelSize(const ModelConfig& model);

} // namespace dt
