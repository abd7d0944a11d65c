// pseudo_gradient_codec.hpp: how a DiLoCo pseudo-gradient travels on the wire
// (Streaming DiLoCo sends its outer gradients in low precision). A flat fp32
// tensor of n values is encoded into bytes, exchanged, decoded and summed in
// fp32. Sizes and error bounds per format: dtlab/pseudo_gradient_format.hpp.
//
// int8 and int4 are symmetric absmax quantization per block of 256 values:
// scale = max|x| / Q (Q = 127 or 7), q = round(x / scale) in [-Q, Q], one fp32
// scale per block in front of the block's codes; int4 packs two codes per byte
// (low nibble first, two's complement). A block of zeros has scale 0.
#pragma once

#include "dtlab/pseudo_gradient_format.hpp"

#include <ATen/Tensor.h>

#include <cstdint>

namespace dt {

// values: contiguous fp32, n = values.numel(); out: encodedBytes(n) bytes.
void encodePseudoGradient(const at::Tensor& values, PseudoGradientFormat format, uint8_t* out);

// sum (contiguous fp32, n values) += decode(in).
void decodeAddPseudoGradient(const uint8_t* in, PseudoGradientFormat format, at::Tensor& sum);

} // namespace dt
