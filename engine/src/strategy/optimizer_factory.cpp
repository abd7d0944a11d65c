// optimizer_factory.cpp: see optimizer_factory.hpp.
#include "strategy/optimizer_factory.hpp"

#include "dtlab/scenario.hpp"
#include "memory/memory_accounting.hpp"

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

namespace dt {

std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const std::vector<at::Tensor>& params,
                                                       const OptimizerConfig& o) {
    if (o.kind == "sgd")
        return std::make_unique<torch::optim::SGD>(
            params, torch::optim::SGDOptions(o.lr).weight_decay(o.weight_decay));
    return std::make_unique<torch::optim::AdamW>(
        params,
        torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay));
}

int64_t optimizerStateBytes(const torch::optim::Optimizer& optimizer) {
    if (const auto* adamw = dynamic_cast<const torch::optim::AdamW*>(&optimizer))
        return adamStateBytes(*adamw);
    return 0;
}

} // namespace dt
