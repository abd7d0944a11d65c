// outer_optimizer.hpp: DiLoCo's outer step on a flat fp32 block of the global
// parameters, as torch.optim.SGD(lr, momentum = mu, nesterov, dampening = 0)
// applied to the averaged pseudo-gradient delta:
//   b = mu b + delta;  u = nesterov ? delta + mu b : b   (mu = 0: u = delta)
//   global -= lr u
// With lr 1 and mu 0 the new global model is the average of the replicas' local models.
#pragma once

#include "dtlab/scenario.hpp"

#include <ATen/ATen.h>

namespace dt {

inline void outerSgdStep(at::Tensor& global, at::Tensor& momentum, const at::Tensor& delta,
                         const DilocoConfig& config) {
    at::NoGradGuard no_grad;
    const double mu = config.outer_momentum;
    at::Tensor update = delta;
    if (mu > 0) {
        momentum.mul_(mu).add_(delta);
        update = config.nesterov ? delta + mu * momentum : momentum;
    }
    global.add_(update, -config.outer_lr);
}

} // namespace dt
