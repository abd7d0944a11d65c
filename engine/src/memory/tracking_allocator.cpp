// tracking_allocator.cpp: see the header.
//
// Layout of one block: [64-byte header: size_t size][payload of size bytes]
// The payload stays 64-byte aligned (c10::alloc_cpu aligns the block to 64).
#include "memory/tracking_allocator.hpp"

#include <atomic>
#include <c10/core/Allocator.h>
#include <c10/core/impl/alloc_cpu.h>

namespace dt {
namespace {

constexpr size_t kHeader = 64;
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};
std::atomic<bool> g_installed{false};

void notePeak(int64_t live) {
    int64_t peak = g_peak.load(std::memory_order_relaxed);
    while (live > peak && !g_peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
    }
}

void trackedDelete(void* payload) {
    if (!payload)
        return;
    char* block = static_cast<char*>(payload) - kHeader;
    const size_t size = *reinterpret_cast<size_t*>(block);
    g_live.fetch_sub(int64_t(size), std::memory_order_relaxed);
    c10::free_cpu(block);
}

void noDelete(void*) {}

struct TrackingCpuAllocator final : c10::Allocator {
    c10::DataPtr allocate(size_t nbytes) const override {
        if (nbytes == 0)
            return {nullptr, nullptr, &noDelete, c10::Device(c10::DeviceType::CPU)};
        char* block = static_cast<char*>(c10::alloc_cpu(nbytes + kHeader));
        *reinterpret_cast<size_t*>(block) = nbytes;
        notePeak(g_live.fetch_add(int64_t(nbytes), std::memory_order_relaxed) + int64_t(nbytes));
        void* payload = block + kHeader;
        return {payload, payload, &trackedDelete, c10::Device(c10::DeviceType::CPU)};
    }
    c10::DeleterFnPtr raw_deleter() const override { return &trackedDelete; }
};

TrackingCpuAllocator g_allocator;

} // namespace

void installTrackingAllocator() {
    if (g_installed.exchange(true))
        return;
    c10::SetAllocator(c10::DeviceType::CPU, &g_allocator, /*priority=*/100);
}

bool trackingAllocatorInstalled() {
    return g_installed.load();
}
int64_t trackedLiveBytes() {
    return g_live.load(std::memory_order_relaxed);
}
int64_t trackedPeakBytes() {
    return g_peak.load(std::memory_order_relaxed);
}
void resetTrackedPeak() {
    g_peak.store(g_live.load());
}

} // namespace dt
