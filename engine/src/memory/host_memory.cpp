// host_memory.cpp: see the header.
#include "memory/host_memory.hpp"

#include "dtlab/errors.hpp"

#include <ATen/ATen.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

namespace dt {

namespace {

std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};

void count(int64_t bytes) {
    const int64_t live = g_live.fetch_add(bytes) + bytes;
    int64_t peak = g_peak.load();
    while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
    }
}

} // namespace

at::Tensor hostZeros(int64_t numel) {
    DT_ENFORCE(numel >= 0, "hostZeros: negative size");
    const int64_t bytes = numel * int64_t(sizeof(float));
    const size_t rounded = size_t((bytes + 63) / 64 * 64); // aligned_alloc wants a multiple of the alignment
    void* block = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (block == nullptr)
        throw std::bad_alloc();
    std::memset(block, 0, rounded == 0 ? 64 : rounded);
    count(bytes);
    return at::from_blob(
        block, {numel},
        [bytes](void* p) {
            std::free(p);
            g_live.fetch_sub(bytes);
        },
        at::TensorOptions().dtype(at::kFloat));
}

int64_t hostLiveBytes() {
    return g_live.load();
}
int64_t hostPeakBytes() {
    return g_peak.load();
}

} // namespace dt
