// test_quantization_theory.cpp: a QAT tiny_gpt's shipped size
// (dtlab/quantization_theory.hpp) against the model's own parameter count.
#include "dtlab/quantization_theory.hpp"
#include "dtlab/scenario.hpp"
#include "dtlab/sharding_theory.hpp"

#include <catch2/catch.hpp>

TEST_CASE("A QAT model's shipped size counts its Linear weights at the grid's bits and the rest in fp32",
          "[qat]") {
    dt::ModelConfig m; // tiny_gpt: V 128, C 128, 4 layers, R 4: 834,304 parameters
    const int64_t P = dt::unitLayout(m).total();
    SECTION("not quantized: everything fp32") {
        const dt::QuantizedModelSize q = dt::quantizedModelSize(m);
        CHECK(q.bits == 0);
        CHECK(q.fp32Bytes() == 4 * P);
    }
    SECTION("int8 per channel: 12 C^2 per block + V C weights, one scale per output row") {
        m.quantize = "int8";
        const dt::QuantizedModelSize q = dt::quantizedModelSize(m);
        CHECK(q.linear_weights == 4 * 12 * 128 * 128 + 128 * 128);
        CHECK(q.scales == 4 * 9 * 128 + 128);
        CHECK(q.linear_weights + q.other == P);
        CHECK(q.linearWeightBytes() == q.linear_weights);
        CHECK(q.quantizedBytes() == q.linear_weights + 8 * q.scales + 4 * q.other);
        CHECK(q.quantizedBytes() < q.fp32Bytes() / 3);
    }
    SECTION("int4 per tensor: half a byte per weight, one scale per matrix") {
        m.quantize = "int4";
        m.quantize_weights = "tensor";
        const dt::QuantizedModelSize q = dt::quantizedModelSize(m);
        CHECK(q.scales == 4 * 4 + 1);
        CHECK(q.linearWeightBytes() == q.linear_weights / 2);
    }
}
