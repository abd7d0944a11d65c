// gradient_ready_hook.hpp: a post-hook on a parameter's AccumulateGrad node.
// It runs after autograd has added the parameter's gradient into .grad, which
// is the moment DDP counts a bucket and the sharded strategies a unit ready.
#pragma once

#include <torch/csrc/autograd/function.h>

#include <functional>

namespace dt {

struct GradientReadyHook final : torch::autograd::FunctionPostHook {
    explicit GradientReadyHook(std::function<void()> ready) : ready(std::move(ready)) {}
    torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                              const torch::autograd::variable_list&) override {
        ready();
        return outputs;
    }
    std::function<void()> ready;
};

} // namespace dt
