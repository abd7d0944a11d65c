// pseudo_gradient_format.hpp: the wire formats of DiLoCo pseudo-gradients and
// their sizes and error bounds (no LibTorch: the GUI's theory uses it too).
// The encoder and decoder are in strategy/pseudo_gradient_codec.hpp.
//
//   format  bytes for n values            round-trip error per value
//   fp32    4 n                           0 (exact)
//   bf16    2 n                           <= 2^-8 |x|  (8 significant bits, round to nearest even)
//   int8    n + 4 ceil(n / 256)           <= max|x| of its block / 254
//   int4    ceil(n / 2) + 4 ceil(n / 256) <= max|x| of its block / 14
#pragma once

#include <cstdint>
#include <string>

namespace dt {

enum class PseudoGradientFormat { Fp32, Bf16, Int8, Int4 };

inline constexpr int64_t kQuantBlock = 256;

// "fp32", "bf16", "int8", "int4" (the scenario's [diloco] pseudo_gradient); throws UsageError otherwise.
[[nodiscard]] PseudoGradientFormat parsePseudoGradientFormat(const std::string& name);
[[nodiscard]] const char* pseudoGradientFormatName(PseudoGradientFormat format);

// Bytes that encode n values.
[[nodiscard]] int64_t encodedBytes(int64_t n, PseudoGradientFormat format);

// The bound in the table above for one value x whose block's max |x| is block_max.
[[nodiscard]] double roundTripErrorBound(double x, double block_max, PseudoGradientFormat format);

} // namespace dt
