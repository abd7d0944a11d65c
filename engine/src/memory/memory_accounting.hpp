// memory_accounting.hpp: a rank's bytes by category, twice.
//
// Theory side (the strategy's bookkeeping): parameters, gradients, optimizer
// state and communication buffers summed from the tensors the strategy says
// it owns (their storage bytes, each storage counted once); activations are
// the rest of live: live - (the four), floored at zero.
// Measured side (MeasuredMemory): the tracking allocator's own live bytes per
// owner tag (tracking_allocator.hpp: each block is tagged when it is made),
// its step peak and start-up peak, and the process's resident set (RSS, from
// /proc/self/statm: everything, LibTorch's code and Gloo's buffers included).
// The two sides agree only if the strategies allocate what they say they hold.
// Sampled at phase boundaries (after forward = activation peak, after the
// optimizer step).
#pragma once

#include "memory/tracking_allocator.hpp"

#include <ATen/Tensor.h>

#include <array>

#include <cstdint>
#include <vector>

namespace torch::optim {
class AdamW;
}

namespace dt {

// What the allocator measured (bytes), one entry per MemoryOwner.
struct MeasuredMemory {
    std::array<int64_t, kMemoryOwners> by_owner{}; // live now
    std::array<int64_t, kMemoryOwners>
        peak_by_owner{};      // each owner's peak since set-up ended (exact, not sampled)
    int64_t step_peak = 0;    // peak since set-up ended
    int64_t startup_peak = 0; // peak during set-up (0 until it ends)
    int64_t rss = 0;          // resident set of the process
    [[nodiscard]] int64_t of(MemoryOwner owner) const { return by_owner[size_t(owner)]; }
};

[[nodiscard]] MeasuredMemory measureMemory();
[[nodiscard]] int64_t residentSetBytes(); // /proc/self/statm; 0 if unreadable

// The tensor's storage now belongs to `owner` (tracking_allocator.hpp retagAllocation).
bool retagStorage(const at::Tensor& tensor, MemoryOwner owner);

struct MemorySample {
    // theory: the strategy's bookkeeping
    int64_t parameters = 0;
    int64_t gradients = 0;
    int64_t optimizer_state = 0;
    int64_t comm_buffers = 0;
    int64_t activations = 0;
    int64_t live = 0;
    int64_t peak = 0;
    MeasuredMemory measured;
};

// Bytes of the distinct storages behind `tensors` (views of one buffer count once).
[[nodiscard]] int64_t storageBytes(const std::vector<at::Tensor>& tensors);

// Bytes of AdamW's moment buffers (exp_avg, exp_avg_sq, and max_exp_avg_sq with amsgrad).
[[nodiscard]] int64_t adamStateBytes(const torch::optim::AdamW& optimizer);

[[nodiscard]] MemorySample sampleMemory(int64_t parameters, int64_t gradients, int64_t optimizer_state,
                                        int64_t comm_buffers);

} // namespace dt
