// causal_attention.cpp: the attention of causal_attention.hpp as one autograd
// node whose matrix products are BLAS calls on each (batch, head) block.
//
// Why not the ATen chain: LibTorch 1.13 runs q @ k^T on (B,H,T,D) tensors as a
// bmm that loops over the B*H blocks with a tensor select, a dispatch and an
// addmm per block, after copying the permuted q, k and v to contiguous memory;
// the mask is a separate masked_fill pass and the scale a separate multiply.
// Here each block's q, k and v are read in place inside qkv (row stride 3C),
// the scale rides in the GEMM's alpha, the mask is written into the rows, and
// y is written straight into its (B,T,C) columns: no copies, no dispatch per
// block. Softmax and its backward stay ATen's vectorized kernels.
//
// Steps, per batch b and head h (all blocks row-major, T x D or T x T):
//   forward   S = alpha q k^T (alpha = 1/sqrt(D)); S[i][j>i] = -inf
//             P = softmax(S)                       (ATen, all blocks at once)
//             y = P v
//   backward  dP = dy v^T
//             dS = P * (dP - rowsum(dP * P))       (ATen's softmax backward)
//             dq = alpha dS k,  dk = alpha dS^T q,  dv = P^T dy
//             written into dqkv (B,T,3C) where q, k and v were read
// Saved for backward: qkv (B,T,3C) and P (B,H,T,T).
// FLOPs per block: forward 4 T^2 D, backward 8 T^2 D.
#include "model/causal_attention.hpp"

#include "dtlab/errors.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <limits>

// The Fortran BLAS entry LibTorch itself calls (libblas.so.3: OpenBLAS on a
// set-up machine, tools/setup.sh checks it). Column-major, arguments by address.
extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                       const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
                       const float* beta, float* c, const int* ldc);

namespace dt {
namespace {

// Row-major C (m x n) = alpha op(A) op(B) + beta C, op(X) = X or X^T, each
// matrix with its own row stride. BLAS is column-major, and a row-major matrix
// read column-major is its transpose, so this asks BLAS for
// C^T = op(B)^T op(A)^T.
void gemmRowMajor(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a,
                  int lda, const float* b, int ldb, float beta, float* c, int ldc) {
    const char op_b = transpose_b ? 'T' : 'N', op_a = transpose_a ? 'T' : 'N';
    sgemm_(&op_b, &op_a, &n, &m, &k, &alpha, b, &ldb, a, &lda, &beta, c, &ldc);
}

struct Shape {
    int64_t B, T, C, H, D;
    explicit Shape(const at::Tensor& qkv, int64_t heads)
        : B(qkv.size(0)), T(qkv.size(1)), C(qkv.size(2) / 3), H(heads), D(C / heads) {}
    // Row 0 of block (b, h) of q (part 0), k (part 1) or v (part 2) in qkv.
    [[nodiscard]] int64_t qkvOffset(int64_t b, int64_t part, int64_t h) const {
        return b * T * 3 * C + part * C + h * D;
    }
    [[nodiscard]] int64_t squareOffset(int64_t b, int64_t h) const { return (b * H + h) * T * T; }
    [[nodiscard]] int64_t outOffset(int64_t b, int64_t h) const { return b * T * C + h * D; }
};

void checkInput(const at::Tensor& qkv, int64_t heads) {
    DT_ENFORCE(qkv.dim() == 3 && qkv.size(2) % 3 == 0, "causal attention: qkv must be (B,T,3C)");
    DT_ENFORCE(heads > 0 && qkv.size(2) >= 3 * heads && (qkv.size(2) / 3) % heads == 0,
               "causal attention: C must divide by heads");
    DT_ENFORCE(qkv.size(0) >= 1 && qkv.size(1) >= 1, "causal attention: qkv must hold at least one token");
    DT_ENFORCE(qkv.scalar_type() == at::kFloat && qkv.device().is_cpu(),
               "causal attention: the fused kernel takes float32 CPU tensors");
    // BLAS takes int sizes; a model anywhere near that is far beyond a teaching run.
    DT_ENFORCE(qkv.size(1) < (int64_t(1) << 20) && qkv.size(2) < (int64_t(1) << 20),
               "causal attention: T or 3C too large for BLAS's int sizes");
}

} // namespace

// The autograd node (outside the anonymous namespace: the Autograd view shows
// its type's name, "dt::FusedCausalAttention").
struct FusedCausalAttention : torch::autograd::Function<FusedCausalAttention> {
    static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& qkv_in,
                              int64_t heads) {
        checkInput(qkv_in, heads);
        const at::Tensor qkv = qkv_in.contiguous();
        const Shape s(qkv, heads);
        const int T = int(s.T), D = int(s.D), ld_qkv = int(3 * s.C), ld_out = int(s.C);
        const float alpha = float(1.0 / std::sqrt(double(s.D)));
        const float* q = qkv.data_ptr<float>();

        at::Tensor scores = at::empty({s.B, s.H, s.T, s.T}, qkv.options()); // S (B,H,T,T)
        float* S = scores.data_ptr<float>();
        for (int64_t b = 0; b < s.B; ++b)
            for (int64_t h = 0; h < s.H; ++h) {
                float* block = S + s.squareOffset(b, h);
                gemmRowMajor(false, true, T, T, D, alpha, q + s.qkvOffset(b, 0, h), ld_qkv,
                             q + s.qkvOffset(b, 1, h), ld_qkv, 0.0f, block, T); // alpha q k^T
                for (int i = 0; i + 1 < T; ++i) // the causal mask: row i sees columns 0..i
                    std::fill(block + int64_t(i) * T + i + 1, block + int64_t(i + 1) * T,
                              -std::numeric_limits<float>::infinity());
            }
        at::Tensor probs = at::_softmax(scores, -1, false); // P (B,H,T,T)
        scores.reset();

        at::Tensor y = at::empty({s.B, s.T, s.C}, qkv.options());
        const float* P = probs.data_ptr<float>();
        float* out = y.data_ptr<float>();
        for (int64_t b = 0; b < s.B; ++b)
            for (int64_t h = 0; h < s.H; ++h)
                gemmRowMajor(false, false, T, D, T, 1.0f, P + s.squareOffset(b, h), T,
                             q + s.qkvOffset(b, 2, h), ld_qkv, 0.0f, out + s.outOffset(b, h), ld_out); // P v

        ctx->save_for_backward({qkv, probs});
        ctx->saved_data["heads"] = heads;
        return y;
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grad_outputs) {
        const auto saved = ctx->get_saved_variables();
        const at::Tensor& qkv = saved[0];
        const at::Tensor& probs = saved[1];
        const at::Tensor dy_tensor = grad_outputs[0].contiguous(); // (B,T,C)
        const Shape s(qkv, ctx->saved_data["heads"].toInt());
        const int T = int(s.T), D = int(s.D), ld_qkv = int(3 * s.C), ld_out = int(s.C);
        const float alpha = float(1.0 / std::sqrt(double(s.D)));
        const float* q = qkv.data_ptr<float>();
        const float* P = probs.data_ptr<float>();
        const float* dy = dy_tensor.data_ptr<float>();

        at::Tensor dprobs = at::empty({s.B, s.H, s.T, s.T}, qkv.options()); // dP (B,H,T,T)
        float* dP = dprobs.data_ptr<float>();
        for (int64_t b = 0; b < s.B; ++b)
            for (int64_t h = 0; h < s.H; ++h)
                gemmRowMajor(false, true, T, T, D, 1.0f, dy + s.outOffset(b, h), ld_out,
                             q + s.qkvOffset(b, 2, h), ld_qkv, 0.0f, dP + s.squareOffset(b, h), T); // dy v^T
        const at::Tensor dscores = at::_softmax_backward_data(dprobs, probs, -1, at::kFloat);       // dS
        dprobs.reset();

        at::Tensor dqkv = at::empty({s.B, s.T, 3 * s.C}, qkv.options()); // every element written below
        const float* dS = dscores.data_ptr<float>();
        float* dq = dqkv.data_ptr<float>();
        for (int64_t b = 0; b < s.B; ++b)
            for (int64_t h = 0; h < s.H; ++h) {
                const float* dS_bh = dS + s.squareOffset(b, h);
                gemmRowMajor(false, false, T, D, T, alpha, dS_bh, T, q + s.qkvOffset(b, 1, h), ld_qkv, 0.0f,
                             dq + s.qkvOffset(b, 0, h), ld_qkv); // dq = alpha dS k
                gemmRowMajor(true, false, T, D, T, alpha, dS_bh, T, q + s.qkvOffset(b, 0, h), ld_qkv, 0.0f,
                             dq + s.qkvOffset(b, 1, h), ld_qkv); // dk = alpha dS^T q
                gemmRowMajor(true, false, T, D, T, 1.0f, P + s.squareOffset(b, h), T, dy + s.outOffset(b, h),
                             ld_out, 0.0f, dq + s.qkvOffset(b, 2, h), ld_qkv); // dv = P^T dy
            }
        return {dqkv, at::Tensor()};
    }
};

at::Tensor causalSelfAttention(const at::Tensor& qkv, int64_t heads) {
    return FusedCausalAttention::apply(qkv, heads);
}

at::Tensor causalSelfAttentionComposed(const at::Tensor& qkv, int64_t heads) {
    const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, D = C / heads;
    const at::Tensor parts = qkv.view({B, T, 3, heads, D}).permute({2, 0, 3, 1, 4}); // (3,B,H,T,D)
    const at::Tensor mask = at::ones({T, T}, at::kBool).triu(1); // true above the diagonal
    at::Tensor att = at::matmul(parts[0], parts[1].transpose(-2, -1)) * (1.0 / std::sqrt(double(D)));
    att = at::softmax(att.masked_fill(mask, -std::numeric_limits<float>::infinity()), -1); // (B,H,T,T)
    return at::matmul(att, parts[2]).transpose(1, 2).reshape({B, T, C});                   // (B,T,C)
}

} // namespace dt
