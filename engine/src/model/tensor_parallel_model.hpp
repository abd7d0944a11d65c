// tensor_parallel_model.hpp: TinyGPT split Megatron-style over a group of N
// ranks (tiny_gpt_tensor_parallel.cpp): each rank holds 1/N of every block's
// attention heads and MLP columns; embeddings, norms and the head are whole
// on every rank. The strategy (strategy/tensor_parallel_strategy.cpp) owns the
// optimizer; the all-reduces live inside the model's forward and backward.
#pragma once

#include "model/model.hpp"

#include <cstdint>
#include <memory>

namespace dt {

class Communicator;

class TensorParallelModel : public TrainableModel {
  public:
    // The whole model in TinyGPT's parameter order and shapes, gathered from
    // every rank's shards (a collective: every rank of the group calls it).
    [[nodiscard]] virtual std::vector<NamedParameter> gatherFullParameters() = 0;
    // The step stamped on the model's all-reduces (telemetry).
    virtual void setStep(int step) = 0;
    // Elements this rank holds: of split weights (1/N each) and of whole ones.
    [[nodiscard]] virtual int64_t shardedNumel() const = 0;
    [[nodiscard]] virtual int64_t replicatedNumel() const = 0;
};

// Builds TinyGPT from `seed` exactly as makeModel does, then keeps this
// rank's shards of it: the same initial model as a one-process run.
// Requires heads and mlp_ratio * d_model divisible by the group size.
[[nodiscard]] std::unique_ptr<TensorParallelModel> makeTensorParallelGpt(const ModelConfig& config,
                                                                         uint64_t seed, Communicator& group);

} // namespace dt
