// model.hpp: the models a rank trains, behind one small interface that the
// strategies and the executor use.
//
// A model is a list of parameters in a fixed order (the same order on every
// rank, which is what DDP buckets and checksums rely on) and a loss function
// that emits a Forward span per unit and hooks Backward spans per unit.
#pragma once

#include <ATen/Tensor.h>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dt {

struct ModelConfig;

// Called by models to mark the start and end of a unit's forward / backward.
// unit = block index, or -1 for the embedding and head. The worker composes
// telemetry spans and the strategy's unit hooks (FSDP gathers a unit's
// parameters at `begin`, frees them after forward) into one UnitTimer.
//   forward(unit, true/false)   around the unit's forward
//   backward(unit, true)        the gradient w.r.t. the unit's output has arrived:
//                               its backward is about to run
//   backward(unit, false)       the gradient w.r.t. its input has left
//   recompute(unit, true/false) around the re-run of the unit's forward inside
//                               backward (activation checkpointing)
struct UnitTimer {
    std::function<void(int unit, bool begin)> forward;
    std::function<void(int unit, bool begin)> backward;
    std::function<void(int unit, bool begin)> recompute;
};

// Calls timer.forward if it is set (an empty UnitTimer means "no telemetry").
inline void markForward(const UnitTimer& timer, int unit, bool begin) {
    if (timer.forward)
        timer.forward(unit, begin);
}

// Marks a unit's backward with autograd hooks (when timer.backward is set and
// the output needs a gradient): the gradient w.r.t. the unit's output arrives
// first (its backward begins), the gradient w.r.t. its input leaves last (it
// ends; the first layer's input needs none, so it has no end mark).
inline void markBackwardWithHooks(const UnitTimer& timer, int unit, const at::Tensor& input,
                                  const at::Tensor& output) {
    if (!timer.backward || !output.requires_grad())
        return;
    auto mark = timer.backward; // copied: the hooks run after loss() returns
    output.register_hook([mark, unit](const at::Tensor&) { mark(unit, true); });
    if (input.requires_grad())
        input.register_hook([mark, unit](const at::Tensor&) { mark(unit, false); });
}

// Marks the start of the whole backward on the loss (the root unit -1's
// pre-backward, as FSDP hooks the root module's outputs): its gradient is the
// first one autograd computes. No end mark: the root's parameters are used at
// both ends of the model.
inline void markRootBackwardBegins(const UnitTimer& timer, const at::Tensor& loss) {
    if (!timer.backward || !loss.requires_grad())
        return;
    auto mark = timer.backward;
    loss.register_hook([mark](const at::Tensor&) { mark(-1, true); });
}

struct NamedParameter {
    std::string name;
    at::Tensor tensor;
};

// Zero-bubble pipelines split a backward in two: Bi, the gradient w.r.t. the
// chunk's input (what the previous stage waits for), and W, the weight
// gradients (nobody waits for them). While a tape is set, the model records
// each weight-carrying layer's (input, output) in forward; Bi asks autograd
// for the gradients w.r.t. those outputs (dy) along with the input, without
// computing any weight gradient; W then forms the weight gradients from the
// tape directly:
//   Linear     dW += dy^T x, db += sum dy        (x (N,in), dy (N,out) flattened)
//   LayerNorm  dgamma += sum dy * xhat, dbeta += sum dy   (xhat recomputed from x)
//   Embedding  dE[idx] += dy                      (index_add over the indices)
struct WeightGradTape {
    enum class Kind { Linear, LayerNorm, Embedding };
    struct Entry {
        Kind kind;
        at::Tensor weight, bias; // bias undefined when the layer has none
        at::Tensor input;        // Linear / LayerNorm input; Embedding indices
        at::Tensor output;       // the layer's output (dy is its gradient)
        double eps = 0.0;        // LayerNorm
    };
    std::vector<Entry> entries;
};
// Adds the weight gradients of every taped layer to the parameters' .grad.
// output_grads[i] is dy of tape.entries[i] (undefined: the layer got no gradient).
void accumulateWeightGradients(const WeightGradTape& tape, const std::vector<at::Tensor>& output_grads);

// Pipeline parallelism: the model cut into C chunks of L / C contiguous
// blocks. Chunk 0 starts with the embeddings, chunk C-1 ends with the final
// norm, the head and the loss. Shapes: tokens (B,T) -> x (B,T,C) -> loss ().
class StagedModel {
  public:
    virtual ~StagedModel() = default;
    [[nodiscard]] virtual int blockCount() const = 0;
    [[nodiscard]] virtual at::Tensor embed(const at::Tensor& tokens) = 0;
    [[nodiscard]] virtual at::Tensor runBlocks(const at::Tensor& x, int first,
                                               int last) = 0; // blocks [first, last)
    [[nodiscard]] virtual at::Tensor headLoss(const at::Tensor& x, const at::Tensor& targets) = 0;
    // The final norm and the head without the loss: x (B,T,C) -> logits (B,T,V)
    // (a SWARM trainer computes the loss itself).
    [[nodiscard]] virtual at::Tensor headLogits(const at::Tensor& x) = 0;
    // For each trainable parameter (model order), the chunk that owns it.
    [[nodiscard]] virtual std::vector<int> parameterChunks(int chunks) const = 0;
    // Record weight-layer inputs/outputs into `tape` (nullptr = stop recording).
    virtual void recordWeightInputs(WeightGradTape* tape) = 0;
};

class TrainableModel {
  public:
    virtual ~TrainableModel() = default;
    [[nodiscard]] virtual std::vector<NamedParameter> trainableParameters() const = 0;
    // inputs/targets come from the data source; returns the mean loss (scalar)
    [[nodiscard]] virtual at::Tensor loss(const at::Tensor& inputs, const at::Tensor& targets,
                                          const UnitTimer& timer) = 0;
    [[nodiscard]] virtual std::string describe() const = 0;
    // For each trainable parameter (same order), the unit it belongs to:
    // a block / layer index, or -1 for the root unit (embeddings, final norm, head).
    [[nodiscard]] virtual std::vector<int> parameterUnits() const = 0;
    // Keep only each unit's input in forward and recompute the unit in
    // backward. Models without checkpointable units refuse (UsageError).
    virtual void setActivationCheckpointing(bool on) = 0;
    // Quantization-aware training ([model] quantize): true when the model
    // fake-quantizes; setFakeQuantization(false) runs the same weights in fp32.
    [[nodiscard]] virtual bool fakeQuantized() const { return false; }
    virtual void setFakeQuantization(bool /*on*/) {}
    // The pipeline interface, or nullptr for a model that cannot be cut into stages.
    [[nodiscard]] virtual StagedModel* staged() { return nullptr; }
};

// Builds the model named by config.kind with weights drawn from `seed`.
[[nodiscard]] std::unique_ptr<TrainableModel> makeModel(const ModelConfig& config, uint64_t seed);

} // namespace dt
