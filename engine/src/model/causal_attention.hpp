// causal_attention.hpp: causal multi-head self-attention straight from the
// qkv projection's output, as one autograd node (TinyGPT's and the tensor-
// parallel TinyGPT's attention).
//
//   qkv (B,T,3C) = [q | k | v], head h of each in columns h*D .. h*D+D (D = C/H)
//   S  = q k^T / sqrt(D), causal: S[i][j] = -inf for j > i      (B,H,T,T)
//   P  = softmax(S) along the last dimension                    (B,H,T,T)
//   y  = P v, heads merged back side by side                    (B,T,C)
//
// The math is PyTorch's (torch.nn.functional.scaled_dot_product_attention with
// is_causal, or the matmul / masked_fill / softmax / matmul chain the
// reference model writes). causalSelfAttentionComposed() is that chain, kept
// as the reference the tests compare with.
#pragma once

#include <ATen/Tensor.h>

namespace dt {

// The fused kernel (causal_attention.cpp): float32, any B, T, H with C % H == 0.
[[nodiscard]] at::Tensor causalSelfAttention(const at::Tensor& qkv, int64_t heads);

// The same math as ATen ops (views, matmul, masked_fill, softmax, matmul).
[[nodiscard]] at::Tensor causalSelfAttentionComposed(const at::Tensor& qkv, int64_t heads);

} // namespace dt
