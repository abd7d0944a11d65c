// tracking_allocator.cpp: see the header.
//
// Layout of one block: [0..63 bytes of alignment][64-byte header: size_t size, uint8 owner,
// the block's start][payload of size bytes]. The payload is 64-byte aligned, as
// c10's own CPU allocator aligns it.
// Counters: live bytes per owner plus the total (relaxed atomics: each is a sum
// of independent increments), and a peak for each (raised with a
// compare-exchange loop, lowered to live by resetTrackedPeak).
#include "memory/tracking_allocator.hpp"

#include <atomic>
#include <c10/core/Allocator.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <cstdlib>
#include <malloc.h>

namespace dt {
namespace {

constexpr size_t kHeader = 64;
constexpr size_t kAlignment = 64; // c10's gAlignment: the payload is 64-byte aligned
struct Header {
    size_t size;
    std::atomic<uint8_t> owner;
    void* block; // what malloc returned (the payload sits up to 63 bytes further in)
};
static_assert(sizeof(Header) <= kHeader);

std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_live_by_owner[kMemoryOwners] = {};
std::atomic<int64_t> g_peak_by_owner[kMemoryOwners] = {};
std::atomic<int64_t> g_peak{0};
std::atomic<int64_t> g_startup_peak{0};
std::atomic<bool> g_installed{false};
thread_local MemoryOwner t_owner = MemoryOwner::Temporaries;

void notePeak(std::atomic<int64_t>& peak_counter, int64_t live) {
    int64_t peak = peak_counter.load(std::memory_order_relaxed);
    while (live > peak && !peak_counter.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
    }
}

void add(uint8_t owner, int64_t bytes) {
    notePeak(g_peak_by_owner[owner],
             g_live_by_owner[owner].fetch_add(bytes, std::memory_order_relaxed) + bytes);
}

Header* headerOf(void* payload) {
    return reinterpret_cast<Header*>(static_cast<char*>(payload) - kHeader);
}

void trackedDelete(void* payload) {
    if (!payload)
        return;
    Header* h = headerOf(payload);
    const auto size = int64_t(h->size);
    g_live_by_owner[h->owner.load(std::memory_order_relaxed)].fetch_sub(size, std::memory_order_relaxed);
    g_live.fetch_sub(size, std::memory_order_relaxed);
    void* block = h->block;
    h->~Header();
    std::free(block);
}

void noDelete(void*) {}

struct TrackingCpuAllocator final : c10::Allocator {
    c10::DataPtr allocate(size_t nbytes) const override {
        if (nbytes == 0)
            return {nullptr, nullptr, &noDelete, c10::Device(c10::DeviceType::CPU)};
        // malloc with the alignment done here, not posix_memalign (c10::alloc_cpu): memalign asks
        // glibc for more than the block it keeps, so a freed block never fits the next request of
        // the same size and the heap grows past it; here the same tensor size is the same request,
        // and a step reuses the blocks the step before freed, exactly.
        TORCH_CHECK(nbytes < SIZE_MAX / 2, "DefaultCPUAllocator: cannot allocate ", nbytes, " bytes.");
        void* block = std::malloc(nbytes + kHeader + kAlignment - 1); // room to align any start
        TORCH_CHECK(block, "DefaultCPUAllocator: not enough memory: you tried to allocate ", nbytes,
                    " bytes.");
        const auto start = reinterpret_cast<uintptr_t>(block) + kHeader;
        char* payload = reinterpret_cast<char*>((start + kAlignment - 1) & ~uintptr_t(kAlignment - 1));
        const auto owner = uint8_t(t_owner);
        new (payload - kHeader) Header{nbytes, owner, block};
        add(owner, int64_t(nbytes));
        notePeak(g_peak, g_live.fetch_add(int64_t(nbytes), std::memory_order_relaxed) + int64_t(nbytes));
        return {payload, payload, &trackedDelete, c10::Device(c10::DeviceType::CPU)};
    }
    c10::DeleterFnPtr raw_deleter() const override { return &trackedDelete; }
};

TrackingCpuAllocator g_allocator;

} // namespace

const char* memoryOwnerName(MemoryOwner owner) {
    switch (owner) {
    case MemoryOwner::Parameters:
        return "parameters";
    case MemoryOwner::Gradients:
        return "gradients";
    case MemoryOwner::OptimizerState:
        return "optimizer_state";
    case MemoryOwner::CommBuffers:
        return "comm_buffers";
    case MemoryOwner::Activations:
        return "activations";
    case MemoryOwner::Temporaries:
        return "temporaries";
    }
    return "?";
}

AllocationOwnerScope::AllocationOwnerScope(MemoryOwner owner) : m_previous(t_owner) {
    t_owner = owner;
}
AllocationOwnerScope::~AllocationOwnerScope() {
    t_owner = m_previous;
}
MemoryOwner currentAllocationOwner() {
    return t_owner;
}

void installTrackingAllocator() {
    if (g_installed.exchange(true))
        return;
    keepFreedMemoryForReuse();
    c10::SetAllocator(c10::DeviceType::CPU, &g_allocator, /*priority=*/100);
}

// glibc's defaults hand the heap's free top back to the kernel once it passes
// the trim threshold (twice the largest block freed so far): at the end of
// every step, when the activations go. The next forward then faults the same
// memory back in page by page, each page zeroed by the kernel, inside
// whichever kernel first writes it (gelu, a GEMM's output): about 7 ms of an
// 80 ms TinyGPT step on one core. Here the heap keeps up to 512 MiB of free
// top, and blocks up to 32 MiB (glibc's own ceiling for its moving threshold)
// come from the heap, so a step reuses the pages of the one before, as
// PyTorch's caching allocator does on a GPU. A larger block (a 100 MB
// model's heal buffer) is still mapped and unmapped on its own. The counts
// above are the allocator's, so nothing measured changes; the process's
// resident set stays at its peak between steps.
void keepFreedMemoryForReuse() {
    (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
    (void)mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

bool trackingAllocatorInstalled() {
    return g_installed.load();
}
int64_t trackedLiveBytes() {
    return g_live.load(std::memory_order_relaxed);
}
int64_t trackedLiveBytes(MemoryOwner owner) {
    return g_live_by_owner[size_t(owner)].load(std::memory_order_relaxed);
}
int64_t trackedPeakBytes(MemoryOwner owner) {
    return g_peak_by_owner[size_t(owner)].load(std::memory_order_relaxed);
}
int64_t trackedPeakBytes() {
    return g_peak.load(std::memory_order_relaxed);
}
int64_t trackedStartupPeakBytes() {
    return g_startup_peak.load(std::memory_order_relaxed);
}
void resetTrackedPeak() {
    g_peak.store(g_live.load());
    for (int k = 0; k < kMemoryOwners; ++k)
        g_peak_by_owner[k].store(g_live_by_owner[k].load());
}
void markStartupEnd() {
    g_startup_peak.store(g_peak.load());
    resetTrackedPeak();
}

bool retagAllocation(const c10::DataPtr& data, MemoryOwner owner) {
    if (!data.get() || data.get_deleter() != &trackedDelete)
        return false;
    Header* h = headerOf(data.get());
    const auto size = int64_t(h->size);
    const uint8_t previous = h->owner.exchange(uint8_t(owner), std::memory_order_relaxed);
    g_live_by_owner[previous].fetch_sub(size, std::memory_order_relaxed);
    add(uint8_t(owner), size);
    return true;
}

} // namespace dt
