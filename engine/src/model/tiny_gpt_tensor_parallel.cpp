// tiny_gpt_tensor_parallel.cpp: TinyGPT with Megatron-style tensor
// parallelism (Shoeybi et al., 2019) over a group of N ranks.
//
// Every rank reads the same batch and computes the same residual stream
// x (B,T,C). Inside each block, with H heads of D = C/H and the MLP width
// F = mlp_ratio * C, rank r holds:
//   qkv   column-parallel: the rows of heads [r H/N, (r+1) H/N) of q, k and v
//         weight (3 C/N, C), bias (3 C/N)
//   proj  row-parallel: the matching input columns, weight (C, C/N); bias whole
//   fc1   column-parallel: rows [r F/N, (r+1) F/N), weight (F/N, C), bias (F/N)
//   fc2   row-parallel: the matching columns, weight (C, F/N); bias whole
// ln1, ln2, the embeddings, ln_f and the head are whole on every rank.
//
// One block, as computed here (f and g are Megatron's conjugate operators):
//   a = f(ln1(x))                 f: identity forward, all-reduce of the gradient backward
//   y = attention of the local heads on linear(a, Wqkv_r)        (B,T,C/N)
//   x = x + g(linear(y, Wproj_r)) + b_proj   g: all-reduce forward, identity backward
//   m = f(ln2(x))
//   x = x + g(linear(gelu(linear(m, Wfc1_r)), Wfc2_r)) + b_fc2
// Each all-reduce carries B x T x C fp32 values: 2 per block in forward, 2 in
// backward, so 4 x 2 (N-1)/N x 4 B T C bytes sent per block and step per rank.
// The gradients of the whole parameters come out equal on every rank (f sums
// the partial input gradients), so no gradient all-reduce is needed.
#include "model/tensor_parallel_model.hpp"

#include "model/causal_attention.hpp"

#include "comm/communicator.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/scenario.hpp"

#include <torch/csrc/autograd/custom_function.h>

#include <map>

namespace dt {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Megatron's f: identity in forward; the gradient is all-reduced in backward
// (each rank's column-parallel layer contributed part of it).
struct CopyToTensorParallel : torch::autograd::Function<CopyToTensorParallel> {
    static at::Tensor forward(AutogradContext* ctx, at::Tensor x, Communicator* group, int64_t step,
                              int64_t unit) {
        ctx->saved_data["group"] = reinterpret_cast<int64_t>(group);
        ctx->saved_data["step"] = step;
        ctx->saved_data["unit"] = unit;
        return x.clone();
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        auto* group = reinterpret_cast<Communicator*>(ctx->saved_data["group"].toInt());
        at::Tensor g = grads[0].contiguous().clone();
        group->allReduceNow(
            g, CommTag{int(ctx->saved_data["step"].toInt()), int(ctx->saved_data["unit"].toInt())});
        return {g, at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

// Megatron's g: the partial outputs of a row-parallel layer are all-reduced
// in forward; the gradient passes through unchanged in backward.
struct ReduceFromTensorParallel : torch::autograd::Function<ReduceFromTensorParallel> {
    static at::Tensor forward(AutogradContext*, at::Tensor x, Communicator* group, int64_t step,
                              int64_t unit) {
        at::Tensor out = x.contiguous().clone();
        group->allReduceNow(out, CommTag{int(step), int(unit)});
        return out;
    }
    static variable_list backward(AutogradContext*, variable_list grads) {
        return {grads[0], at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

// How a TinyGPT parameter is split over the group.
enum class Split {
    Whole,    // every rank holds all of it
    Rows,     // dim 0 in N contiguous parts (fc1 weight and bias)
    Columns,  // dim 1 in N contiguous parts (proj and fc2 weights)
    HeadRows, // qkv: dim 0 is [q; k; v], each split in N parts by heads
};

Split splitOf(const std::string& name) {
    if (name.rfind("block", 0) != 0)
        return Split::Whole;
    const auto dot = name.find('.');
    const std::string rest = name.substr(dot + 1); // "qkv.weight", "proj.bias", ...
    if (rest == "qkv.weight" || rest == "qkv.bias")
        return Split::HeadRows;
    if (rest == "fc1.weight" || rest == "fc1.bias")
        return Split::Rows;
    if (rest == "proj.weight" || rest == "fc2.weight")
        return Split::Columns;
    return Split::Whole; // ln1, ln2, proj.bias, fc2.bias
}

// This rank's part of a whole tensor.
at::Tensor shardOf(const at::Tensor& full, Split split, int rank, int n) {
    switch (split) {
    case Split::Whole:
        return full.clone();
    case Split::Rows:
        return full.chunk(n, 0)[size_t(rank)].clone();
    case Split::Columns:
        return full.chunk(n, 1)[size_t(rank)].contiguous();
    case Split::HeadRows: {
        std::vector<at::Tensor> parts;
        for (const at::Tensor& qkv : full.chunk(3, 0))
            parts.push_back(qkv.chunk(n, 0)[size_t(rank)]);
        return at::cat(parts, 0).contiguous();
    }
    }
    return full;
}

class TensorParallelGpt final : public TensorParallelModel {
  public:
    TensorParallelGpt(const ModelConfig& c, uint64_t seed, Communicator& group)
        : m_config(c), m_group(group) {
        const int n = group.size();
        DT_ENFORCE(c.heads % n == 0 && (c.mlp_ratio * c.d_model) % n == 0,
                   "tensor parallel needs heads and mlp_ratio * d_model divisible by the ranks (validated)");
        // The whole model from the same seed as a one-process run, then this rank's shards.
        const auto full = makeModel(c, seed);
        for (const NamedParameter& p : full->trainableParameters()) {
            Param param;
            param.name = p.name;
            param.split = splitOf(p.name);
            param.full_shape = p.tensor.sizes().vec();
            at::NoGradGuard no_grad;
            param.tensor = shardOf(p.tensor.detach(), param.split, group.rank(), n).requires_grad_(true);
            m_index[p.name] = m_params.size();
            m_params.push_back(param);
        }
    }

    std::vector<NamedParameter> trainableParameters() const override {
        std::vector<NamedParameter> out;
        for (const Param& p : m_params)
            out.push_back({p.name, p.tensor});
        return out;
    }

    at::Tensor loss(const at::Tensor& tokens, const at::Tensor& targets, const UnitTimer& timer) override {
        const int64_t T = tokens.size(1);

        markForward(timer, -1, true);
        at::Tensor x = at::embedding(p("tok_emb.weight"), tokens) +
                       at::embedding(p("pos_emb.weight"), at::arange(T, at::kLong));
        markForward(timer, -1, false);

        for (int i = 0; i < m_config.layers; ++i) {
            markForward(timer, i, true);
            const at::Tensor input = x;
            const at::Tensor output = block(i, input);
            markForward(timer, i, false);
            markBackwardWithHooks(timer, i, input, output);
            x = output;
        }

        markForward(timer, -1, true);
        const int64_t C = m_config.d_model;
        const at::Tensor logits =
            at::linear(at::layer_norm(x, {C}, p("ln_f.weight"), p("ln_f.bias")), p("head.weight"));
        at::Tensor loss = at::cross_entropy_loss(logits.reshape({-1, m_config.vocab}), targets.reshape({-1}));
        markForward(timer, -1, false);
        return loss;
    }

    std::vector<NamedParameter> gatherFullParameters() override {
        at::NoGradGuard no_grad;
        const int n = m_group.size();
        std::vector<NamedParameter> out;
        for (const Param& param : m_params) {
            const at::Tensor local = param.tensor.detach().contiguous();
            if (param.split == Split::Whole) {
                out.push_back({param.name, local.clone()});
                continue;
            }
            at::Tensor gathered = at::empty({n * local.numel()}, local.options());
            m_group.allGatherNow(gathered, local, CommTag{m_step, -1});
            std::vector<int64_t> shape{n};
            for (int64_t s : local.sizes())
                shape.push_back(s);
            gathered = gathered.view(shape); // (N, local shape...)
            at::Tensor full;
            if (param.split == Split::Rows) {
                full = gathered.reshape(param.full_shape);
            } else if (param.split == Split::Columns) {
                full = gathered.permute({1, 0, 2}).reshape(param.full_shape); // (C, N, k) -> (C, N k)
            } else { // HeadRows: (N, 3, rows/N, ...) -> (3, N, rows/N, ...) -> [q; k; v]
                std::vector<int64_t> split_shape{n, 3, local.size(0) / 3};
                for (int64_t d = 1; d < local.dim(); ++d)
                    split_shape.push_back(local.size(d));
                std::vector<int64_t> order{1, 0};
                for (int64_t d = 2; d < int64_t(split_shape.size()); ++d)
                    order.push_back(d);
                full = gathered.view(split_shape).permute(order).reshape(param.full_shape);
            }
            out.push_back({param.name, full.contiguous()});
        }
        return out;
    }

    void setStep(int step) override { m_step = step; }

    int64_t shardedNumel() const override {
        int64_t total = 0;
        for (const Param& p : m_params)
            if (p.split != Split::Whole)
                total += p.tensor.numel();
        return total;
    }
    int64_t replicatedNumel() const override {
        int64_t total = 0;
        for (const Param& p : m_params)
            if (p.split == Split::Whole)
                total += p.tensor.numel();
        return total;
    }

    std::string describe() const override {
        return "TinyGPT (tensor parallel over " + std::to_string(m_group.size()) + " ranks) d_model " +
               std::to_string(m_config.d_model) + ", " + std::to_string(m_config.layers) + " layers, " +
               std::to_string(m_config.heads) + " heads: " + std::to_string(shardedNumel()) + " split + " +
               std::to_string(replicatedNumel()) + " whole parameters per rank";
    }

    std::vector<int> parameterUnits() const override {
        std::vector<int> units;
        for (const Param& p : m_params)
            units.push_back(p.name.rfind("block", 0) == 0 ? std::stoi(p.name.substr(5)) : -1);
        return units;
    }

    void setActivationCheckpointing(bool on) override {
        if (on)
            throw UsageError("tensor_parallel does not support activation checkpointing yet");
    }

  private:
    struct Param {
        std::string name;
        Split split = Split::Whole;
        std::vector<int64_t> full_shape;
        at::Tensor tensor;
    };

    const at::Tensor& p(const std::string& name) const { return m_params[m_index.at(name)].tensor; }

    at::Tensor block(int i, const at::Tensor& x) {
        const std::string b = "block" + std::to_string(i) + ".";
        const int64_t C = x.size(2);
        const int64_t local_heads = m_config.heads / m_group.size();
        Communicator* group = &m_group;

        // Attention: column-parallel qkv over this rank's heads, row-parallel proj.
        const at::Tensor a =
            CopyToTensorParallel::apply(at::layer_norm(x, {C}, p(b + "ln1.weight"), p(b + "ln1.bias")), group,
                                        int64_t(m_step), int64_t(i));
        const at::Tensor qkv = at::linear(a, p(b + "qkv.weight"), p(b + "qkv.bias")); // (B,T,3 C/N)
        const at::Tensor y = causalSelfAttention(qkv, local_heads); // (B,T,C/N), causal_attention.hpp
        const at::Tensor h = x +
                             ReduceFromTensorParallel::apply(at::linear(y, p(b + "proj.weight")), group,
                                                             int64_t(m_step), int64_t(i)) +
                             p(b + "proj.bias");

        // MLP: column-parallel fc1, row-parallel fc2.
        const at::Tensor m =
            CopyToTensorParallel::apply(at::layer_norm(h, {C}, p(b + "ln2.weight"), p(b + "ln2.bias")), group,
                                        int64_t(m_step), int64_t(i));
        const at::Tensor u = at::gelu(at::linear(m, p(b + "fc1.weight"), p(b + "fc1.bias"))); // (B,T,F/N)
        return h +
               ReduceFromTensorParallel::apply(at::linear(u, p(b + "fc2.weight")), group, int64_t(m_step),
                                               int64_t(i)) +
               p(b + "fc2.bias");
    }

    ModelConfig m_config;
    Communicator& m_group;
    std::vector<Param> m_params;
    std::map<std::string, size_t> m_index;
    int m_step = -1;
};

} // namespace

std::unique_ptr<TensorParallelModel> makeTensorParallelGpt(const ModelConfig& config, uint64_t seed,
                                                           Communicator& group) {
    if (config.kind != "tiny_gpt")
        throw UsageError("tensor_parallel splits tiny_gpt only, not '" + config.kind + "'");
    return std::make_unique<TensorParallelGpt>(config, seed, group);
}

} // namespace dt
