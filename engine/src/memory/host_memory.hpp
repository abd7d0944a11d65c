// host_memory.hpp: "host" memory for offloading, kept apart from the counted
// device memory.
//
// dtlab runs on CPUs, so its "device" memory is the RAM that the tracking
// allocator counts (tracking_allocator.hpp). ZeRO-Offload moves the optimizer
// state from the accelerator to the host; to show that move on a CPU-only
// machine, offloaded tensors are allocated here, with plain malloc, outside
// the tracking allocator: they are real bytes, really read and written by
// the optimizer, but they do not count towards the device's live and peak.
// This pool counts them instead (live and peak per process).
//
// The tensors are ordinary CPU tensors (at::from_blob with a deleter that
// frees the block and uncounts it); in-place ops on them keep their storage.
// An op that returns a new tensor (x + y) allocates it through the tracking
// allocator, as device memory: keep host-side math in place.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>

namespace dt {

[[nodiscard]] at::Tensor hostZeros(int64_t numel); // fp32, zero-filled, 64-byte aligned
[[nodiscard]] int64_t hostLiveBytes();
[[nodiscard]] int64_t hostPeakBytes();

} // namespace dt
