// tiny_gpt.cpp: a character-level GPT, small enough to train on a laptop CPU.
//
// Shapes (B = batch, T = context, C = d_model, H = heads, D = C / H, V = vocab):
//   tokens (B,T) int64
//   x = tok_emb[tokens] + pos_emb[0..T)                       (B,T,C)
//   per block (pre-norm):
//     qkv = Linear(C, 3C)(ln1(x))  -> q,k,v each (B,H,T,D)
//     att = softmax(q k^T / sqrt(D) + causal mask)           (B,H,T,T)
//     x  += proj(att v merged back to (B,T,C))
//     (the attention is one fused node, causal_attention.hpp: same math)
//     x  += fc2(gelu(fc1(ln2(x))))          fc1: C -> ratio*C, fc2: ratio*C -> C
//   logits = head(ln_f(x))                                    (B,T,V)
//   loss = cross_entropy(logits (B*T,V), targets (B*T))
// Parameters ~ V*C + T*C + L*(12*C^2 + 13*C) + 2*C + C*V  (ratio 4, with biases)
//
// Telemetry: a Forward span per block (unit = block) and for the embedding and
// head (unit = -1); Backward spans per block come from autograd hooks on each
// block's output (gradient arrives = backward starts) and input (gradient
// leaves = backward ends). With activation checkpointing each block runs as a
// CheckpointedBlock: its forward is recomputed inside backward (a Recompute span).
//
// Quantization-aware training ([model] quantize, fake_quant.hpp): every Linear
// (qkv, proj, fc1, fc2 and the head) runs on its fake-quantized input and
// weight, y = fq(x) fq(W)^T + b; the embeddings, norms and attention stay fp32.
#include "model/causal_attention.hpp"
#include "model/fake_quant.hpp"
#include "model/model.hpp"

#include "dtlab/errors.hpp"
#include "dtlab/scenario.hpp"

#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>

namespace dt {
namespace {

namespace nn = torch::nn;

// The model's QAT switch, shared by its layers.
struct QuantState {
    QuantSpec spec;
    bool enabled = true; // off: the same weights in plain fp32 (the eval's comparison)
    [[nodiscard]] bool active() const { return spec.on() && enabled; }
};

// y = fq(x) fq(W)^T + b when QAT is active, else x W^T + b. The observer
// moves only in a forward that records a graph (training).
// at::linear, not layer->forward: the C++ frontend's Linear runs a (B,T,C)
// input as matmul, then a separate pass adding the bias; ATen's linear (what
// Python's torch.nn.functional.linear calls) folds a contiguous (B,T,C) input
// to (B*T,C) and runs one addmm with the bias inside the GEMM.
at::Tensor quantizedLinear(nn::Linear& layer, ActivationFakeQuant& act, const QuantState* quant,
                           const at::Tensor& x, at::Tensor* input_used) {
    if (!quant || !quant->active()) {
        *input_used = x;
        return at::linear(x, layer->weight, layer->bias);
    }
    *input_used = act(x, quant->spec, /*observe=*/at::GradMode::is_enabled());
    return at::linear(*input_used, fakeQuantizeWeight(layer->weight, quant->spec), layer->bias);
}

struct BlockImpl : nn::Module {
    BlockImpl(int d_model, int heads, int mlp_ratio) : heads(heads) {
        ln1 = register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({d_model})));
        qkv = register_module("qkv", nn::Linear(d_model, 3 * d_model));
        proj = register_module("proj", nn::Linear(d_model, d_model));
        ln2 = register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({d_model})));
        fc1 = register_module("fc1", nn::Linear(d_model, mlp_ratio * d_model));
        fc2 = register_module("fc2", nn::Linear(mlp_ratio * d_model, d_model));
    }

    // x (B,T,C)
    at::Tensor forward(const at::Tensor& x) {
        auto qkv_out = lin(qkv, act_qkv, norm(ln1, x)); // (B,T,3C)
        auto y = causalSelfAttention(qkv_out, heads);   // (B,T,C), causal_attention.hpp
        auto h = x + lin(proj, act_proj, y);
        return h + lin(fc2, act_fc2, at::gelu(lin(fc1, act_fc1, norm(ln2, h))));
    }

    // The layers, recording into the zero-bubble tape when one is set (with
    // QAT the input the layer used: dW = dy^T fq(x), straight through fq(W)).
    at::Tensor lin(nn::Linear& layer, ActivationFakeQuant& act, const at::Tensor& x) {
        at::Tensor input;
        at::Tensor y = quantizedLinear(layer, act, quant, x, &input);
        if (tape)
            tape->entries.push_back(
                {WeightGradTape::Kind::Linear, layer->weight, layer->bias, input, y, 0.0});
        return y;
    }
    at::Tensor norm(nn::LayerNorm& layer, const at::Tensor& x) {
        at::Tensor y = layer->forward(x);
        if (tape)
            tape->entries.push_back(
                {WeightGradTape::Kind::LayerNorm, layer->weight, layer->bias, x, y, layer->options.eps()});
        return y;
    }

    WeightGradTape* tape = nullptr;
    const QuantState* quant = nullptr; // the model's (QAT), or none
    ActivationFakeQuant act_qkv, act_proj, act_fc1, act_fc2;

    int heads;
    nn::LayerNorm ln1{nullptr}, ln2{nullptr};
    nn::Linear qkv{nullptr}, proj{nullptr}, fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Block);

// Activation checkpointing of one block (the "reentrant" form of
// torch.utils.checkpoint): forward runs the block without recording a graph
// and keeps only its input x (B,T,C); backward runs the block's forward again
// with grad on, then backpropagates the incoming gradient through that fresh
// graph. The parameter gradients reach the parameters' AccumulateGrad nodes
// inside that inner backward (so DDP / FSDP gradient hooks fire as usual);
// the gradient w.r.t. x is returned to the outer graph.
// Memory: one (B,T,C) input per block instead of every intermediate.
struct CheckpointedBlock : torch::autograd::Function<CheckpointedBlock> {
    static at::Tensor forward(torch::autograd::AutogradContext* ctx, at::Tensor x, BlockImpl* block, int unit,
                              const UnitTimer* timer) {
        ctx->save_for_backward({x});
        ctx->saved_data["block"] = reinterpret_cast<int64_t>(block);
        ctx->saved_data["unit"] = int64_t(unit);
        ctx->saved_data["timer"] = reinterpret_cast<int64_t>(timer);
        return block->forward(x);
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grad_outputs) {
        auto saved = ctx->get_saved_variables();
        auto* block = reinterpret_cast<BlockImpl*>(ctx->saved_data["block"].toInt());
        const int unit = int(ctx->saved_data["unit"].toInt());
        const auto* timer = reinterpret_cast<const UnitTimer*>(ctx->saved_data["timer"].toInt());
        at::Tensor x = saved[0].detach().requires_grad_(true);
        at::Tensor output;
        {
            at::AutoGradMode grad_on(true);
            if (timer && timer->recompute)
                timer->recompute(unit, true);
            output = block->forward(x);
            if (timer && timer->recompute)
                timer->recompute(unit, false);
        }
        torch::autograd::backward({output}, {grad_outputs[0]});
        return {x.grad(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
};

class TinyGpt final : public TrainableModel, public StagedModel, public nn::Module {
  public:
    explicit TinyGpt(const ModelConfig& c) : m_config(c) {
        DT_ENFORCE(c.d_model % c.heads == 0,
                   "d_model must be divisible by heads (the scenario check allows no other)");
        tok_emb = register_module("tok_emb", nn::Embedding(c.vocab, c.d_model));
        pos_emb = register_module("pos_emb", nn::Embedding(c.context, c.d_model));
        for (int i = 0; i < c.layers; ++i)
            blocks.push_back(
                register_module("block" + std::to_string(i), Block(c.d_model, c.heads, c.mlp_ratio)));
        ln_f = register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({c.d_model})));
        head = register_module("head", nn::Linear(nn::LinearOptions(c.d_model, c.vocab).bias(false)));
        m_quant.spec = quantSpecOf(c.quantize, c.quantize_weights);
        for (auto& block : blocks)
            block->quant = &m_quant;
    }

    std::vector<NamedParameter> trainableParameters() const override {
        std::vector<NamedParameter> out;
        for (const auto& item : named_parameters(true))
            out.push_back({item.key(), item.value()});
        return out;
    }

    at::Tensor loss(const at::Tensor& tokens, const at::Tensor& targets, const UnitTimer& timer) override {
        const int64_t T = tokens.size(1);
        m_timer_copy = timer; // the checkpointed blocks' backward runs after loss() returns
        markForward(timer, -1, true);
        auto positions = at::arange(T, at::kLong);
        // Two statements: C++ leaves the order of `a + b`'s operands open, and the order the embeddings
        // run in forward decides the order their gradients become ready in backward (DDP's buckets).
        // tok_emb first, as in PyTorch's Python model.
        auto tok = tok_emb->forward(tokens);
        auto x = tok + pos_emb->forward(positions); // (B,T,C)
        markForward(timer, -1, false);

        for (size_t i = 0; i < blocks.size(); ++i) {
            const int unit = int(i);
            markForward(timer, unit, true);
            auto input = x;
            auto output = m_checkpointing && input.requires_grad()
                              ? CheckpointedBlock::apply(input, blocks[i].get(), unit, &m_timer_copy)
                              : blocks[i]->forward(input);
            markForward(timer, unit, false);
            markBackwardWithHooks(timer, unit, input, output);
            x = output;
        }

        markForward(timer, -1, true);
        at::Tensor head_input;
        auto logits = quantizedLinear(head, m_act_head, &m_quant, ln_f->forward(x), &head_input); // (B,T,V)
        auto loss = at::cross_entropy_loss(logits.reshape({-1, m_config.vocab}), targets.reshape({-1}));
        markForward(timer, -1, false);
        markRootBackwardBegins(timer, loss);
        return loss;
    }

    std::vector<int> parameterUnits() const override {
        std::vector<int> units;
        for (const auto& item : named_parameters(true)) {
            const std::string& name =
                item.key(); // "block<i>.qkv.weight", or root: "tok_emb.weight", "head.weight", ...
            units.push_back(name.rfind("block", 0) == 0 ? std::stoi(name.substr(5)) : -1);
        }
        return units;
    }

    void setActivationCheckpointing(bool on) override { m_checkpointing = on; }
    bool fakeQuantized() const override { return m_quant.spec.on(); }
    void setFakeQuantization(bool on) override { m_quant.enabled = on; }

    // ---- pipeline stages (StagedModel) ----
    StagedModel* staged() override { return this; }
    int blockCount() const override { return int(blocks.size()); }

    at::Tensor embed(const at::Tensor& tokens) override {
        const int64_t T = tokens.size(1);
        const at::Tensor positions = at::arange(T, at::kLong);
        at::Tensor tok = tok_emb->forward(tokens), pos = pos_emb->forward(positions);
        if (m_tape) {
            m_tape->entries.push_back(
                {WeightGradTape::Kind::Embedding, tok_emb->weight, {}, tokens, tok, 0.0});
            m_tape->entries.push_back(
                {WeightGradTape::Kind::Embedding, pos_emb->weight, {}, positions, pos, 0.0});
        }
        return tok + pos; // (B,T,C)
    }

    at::Tensor runBlocks(const at::Tensor& x, int first, int last) override {
        at::Tensor h = x;
        for (int i = first; i < last; ++i) {
            blocks[size_t(i)]->tape = m_tape;
            h = blocks[size_t(i)]->forward(h);
            blocks[size_t(i)]->tape = nullptr;
        }
        return h;
    }

    at::Tensor headLogits(const at::Tensor& x) override {
        at::Tensor head_input;
        return quantizedLinear(head, m_act_head, &m_quant, ln_f->forward(x), &head_input); // (B,T,V)
    }

    at::Tensor headLoss(const at::Tensor& x, const at::Tensor& targets) override {
        at::Tensor normed = ln_f->forward(x);
        at::Tensor head_input;
        at::Tensor logits = quantizedLinear(head, m_act_head, &m_quant, normed, &head_input); // (B,T,V)
        if (m_tape) {
            m_tape->entries.push_back(
                {WeightGradTape::Kind::LayerNorm, ln_f->weight, ln_f->bias, x, normed, ln_f->options.eps()});
            m_tape->entries.push_back(
                {WeightGradTape::Kind::Linear, head->weight, {}, head_input, logits, 0.0});
        }
        return at::cross_entropy_loss(logits.reshape({-1, m_config.vocab}), targets.reshape({-1}));
    }

    void recordWeightInputs(WeightGradTape* tape) override { m_tape = tape; }

    std::vector<int> parameterChunks(int chunks) const override {
        const int per_chunk = int(blocks.size()) / chunks;
        std::vector<int> out;
        for (const auto& item : named_parameters(true)) {
            const std::string& name = item.key();
            if (name.rfind("block", 0) == 0)
                out.push_back(std::stoi(name.substr(5)) / per_chunk);
            else if (name.rfind("tok_emb", 0) == 0 || name.rfind("pos_emb", 0) == 0)
                out.push_back(0);
            else
                out.push_back(chunks - 1); // ln_f, head
        }
        return out;
    }

    std::string describe() const override {
        int64_t n = 0;
        for (const auto& p : trainableParameters())
            n += p.tensor.numel();
        return "TinyGPT vocab " + std::to_string(m_config.vocab) + ", context " +
               std::to_string(m_config.context) + ", d_model " + std::to_string(m_config.d_model) + ", " +
               std::to_string(m_config.layers) + " layers, " + std::to_string(m_config.heads) +
               " heads: " + std::to_string(n) + " parameters" +
               (m_quant.spec.on() ? ", QAT " + m_config.quantize + " (weights per " +
                                        m_config.quantize_weights + ", activations per tensor)"
                                  : std::string());
    }

  private:
    ModelConfig m_config;
    nn::Embedding tok_emb{nullptr}, pos_emb{nullptr};
    std::vector<Block> blocks;
    nn::LayerNorm ln_f{nullptr};
    nn::Linear head{nullptr};
    bool m_checkpointing = false;
    UnitTimer m_timer_copy;
    WeightGradTape* m_tape = nullptr;
    QuantState m_quant;             // [model] quantize; the blocks point to it
    ActivationFakeQuant m_act_head; // the head's input observer
};

} // namespace

void accumulateWeightGradients(const WeightGradTape& tape, const std::vector<at::Tensor>& output_grads) {
    at::NoGradGuard no_grad;
    const auto add = [](const at::Tensor& param, const at::Tensor& grad) {
        if (!param.grad().defined())
            param.mutable_grad() = grad.clone();
        else
            param.mutable_grad().add_(grad);
    };
    for (size_t i = 0; i < tape.entries.size(); ++i) {
        const auto& e = tape.entries[i];
        const at::Tensor& dy = output_grads[i];
        if (!dy.defined())
            continue;
        const int64_t out = dy.size(-1);
        const at::Tensor dy2 = dy.reshape({-1, out});
        switch (e.kind) {
        case WeightGradTape::Kind::Linear:
            add(e.weight, at::matmul(dy2.t(), e.input.reshape({-1, e.input.size(-1)}))); // (out, in)
            if (e.bias.defined())
                add(e.bias, dy2.sum(0));
            break;
        case WeightGradTape::Kind::LayerNorm: {
            const at::Tensor xhat = at::layer_norm(e.input, {out}, {}, {}, e.eps).reshape({-1, out});
            add(e.weight, (dy2 * xhat).sum(0));
            add(e.bias, dy2.sum(0));
            break;
        }
        case WeightGradTape::Kind::Embedding:
            add(e.weight, at::zeros_like(e.weight).index_add_(0, e.input.reshape({-1}), dy2));
            break;
        }
    }
}

std::unique_ptr<TrainableModel> makeMlpClassifier(const ModelConfig& config);

std::unique_ptr<TrainableModel> makeModel(const ModelConfig& config, uint64_t seed) {
    at::manual_seed(seed);
    if (config.kind == "tiny_gpt")
        return std::make_unique<TinyGpt>(config);
    if (config.kind == "mlp")
        return makeMlpClassifier(config);
    throw UsageError("unknown model kind '" + config.kind + "'");
}

} // namespace dt
