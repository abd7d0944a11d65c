// tracking_allocator.hpp: a CPU allocator that counts live and peak bytes.
//
// Installed through c10's allocator hook (c10::SetAllocator) before the model
// is built, so every CPU tensor LibTorch allocates in a rank passes through
// it. Each block carries a 64-byte header holding its size, so frees are
// counted exactly without a lookup table.
#pragma once

#include <cstdint>

namespace dt {

void installTrackingAllocator(); // idempotent
[[nodiscard]] bool trackingAllocatorInstalled();
[[nodiscard]] int64_t trackedLiveBytes();
[[nodiscard]] int64_t trackedPeakBytes();
void resetTrackedPeak(); // peak := live

} // namespace dt
