// memory_accounting.hpp: a rank's bytes by category.
//
// parameters, gradients, optimizer state and communication buffers are summed
// from the tensors the engine owns (their storage bytes, each storage counted
// once); live and peak come from the tracking allocator; activations are the
// rest of live: live - (parameters + gradients + optimizer + comm buffers),
// floored at zero. Sampled at phase boundaries (after forward = activation
// peak, after the optimizer step).
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <vector>

namespace torch::optim {
class AdamW;
}

namespace dt {

struct MemorySample {
    int64_t parameters = 0;
    int64_t gradients = 0;
    int64_t optimizer_state = 0;
    int64_t comm_buffers = 0;
    int64_t activations = 0;
    int64_t live = 0;
    int64_t peak = 0;
};

// Bytes of the distinct storages behind `tensors` (views of one buffer count once).
[[nodiscard]] int64_t storageBytes(const std::vector<at::Tensor>& tensors);

// Bytes of AdamW's moment buffers (exp_avg, exp_avg_sq, and max_exp_avg_sq with amsgrad).
[[nodiscard]] int64_t adamStateBytes(const torch::optim::AdamW& optimizer);

[[nodiscard]] MemorySample sampleMemory(int64_t parameters, int64_t gradients, int64_t optimizer_state,
                                        int64_t comm_buffers);

} // namespace dt
