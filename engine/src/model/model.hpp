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
// unit = block index, or -1 for the embedding and head.
struct UnitTimer {
    std::function<void(int unit, bool begin)> forward;
    std::function<void(int unit, bool begin)> backward;
};

// Calls timer.forward if it is set (an empty UnitTimer means "no telemetry").
inline void markForward(const UnitTimer& timer, int unit, bool begin) {
    if (timer.forward) timer.forward(unit, begin);
}

struct NamedParameter {
    std::string name;
    at::Tensor tensor;
};

class TrainableModel {
public:
    virtual ~TrainableModel() = default;
    [[nodiscard]] virtual std::vector<NamedParameter> trainableParameters() const = 0;
    // inputs/targets come from the data source; returns the mean loss (scalar)
    [[nodiscard]] virtual at::Tensor loss(const at::Tensor& inputs, const at::Tensor& targets,
                                          const UnitTimer& timer) = 0;
    [[nodiscard]] virtual std::string describe() const = 0;
};

// Builds the model named by config.kind with weights drawn from `seed`.
[[nodiscard]] std::unique_ptr<TrainableModel> makeModel(const ModelConfig& config, uint64_t seed);

} // namespace dt
