// optimizer_factory.hpp: the step optimizer named by [optimizer] kind.
//   adamw  AdamW(lr, betas, eps, weight_decay): 8 bytes of state per parameter
//   sgd    SGD(lr, weight_decay), no momentum: no state (ddp and diloco only;
//          DiLoCo with H = 1, outer lr 1 and no momentum is then exactly DDP)
#pragma once

#include <ATen/Tensor.h>

#include <memory>
#include <vector>

namespace torch::optim {
class Optimizer;
}

namespace dt {

struct OptimizerConfig;

[[nodiscard]] std::unique_ptr<torch::optim::Optimizer> makeOptimizer(const std::vector<at::Tensor>& params,
                                                                     const OptimizerConfig& config);
// Bytes of the optimizer's state tensors (AdamW's moments; 0 for sgd).
[[nodiscard]] int64_t optimizerStateBytes(const torch::optim::Optimizer& optimizer);

} // namespace dt
