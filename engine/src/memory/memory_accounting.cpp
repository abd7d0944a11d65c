// memory_accounting.cpp: see the header for the categories and the rule.
#include "memory/memory_accounting.hpp"

#include "memory/tracking_allocator.hpp"

#include <torch/optim/adamw.h>

#include <algorithm>
#include <fstream>
#include <unistd.h>
#include <unordered_set>

namespace dt {

int64_t storageBytes(const std::vector<at::Tensor>& tensors) {
    std::unordered_set<const void*> seen;
    int64_t total = 0;
    for (const auto& t : tensors) {
        if (!t.defined())
            continue;
        const auto& storage = t.storage();
        if (seen.insert(storage.unsafeGetStorageImpl()).second)
            total += int64_t(storage.nbytes());
    }
    return total;
}

int64_t adamStateBytes(const torch::optim::AdamW& optimizer) {
    std::vector<at::Tensor> tensors;
    for (const auto& [key, state] : optimizer.state()) {
        const auto& s = static_cast<const torch::optim::AdamWParamState&>(*state);
        tensors.push_back(s.exp_avg());
        tensors.push_back(s.exp_avg_sq());
        if (s.max_exp_avg_sq().defined())
            tensors.push_back(s.max_exp_avg_sq());
    }
    return storageBytes(tensors);
}

int64_t residentSetBytes() {
    std::ifstream in("/proc/self/statm");
    int64_t size_pages = 0, resident_pages = 0;
    if (!(in >> size_pages >> resident_pages))
        return 0;
    return resident_pages * int64_t(sysconf(_SC_PAGESIZE));
}

MeasuredMemory measureMemory() {
    MeasuredMemory m;
    for (int k = 0; k < kMemoryOwners; ++k) {
        m.by_owner[size_t(k)] = trackedLiveBytes(MemoryOwner(k));
        m.peak_by_owner[size_t(k)] = trackedPeakBytes(MemoryOwner(k));
    }
    m.step_peak = trackedPeakBytes();
    m.startup_peak = trackedStartupPeakBytes();
    m.rss = residentSetBytes();
    return m;
}

bool retagStorage(const at::Tensor& tensor, MemoryOwner owner) {
    return tensor.defined() && tensor.has_storage() && retagAllocation(tensor.storage().data_ptr(), owner);
}

MemorySample sampleMemory(int64_t parameters, int64_t gradients, int64_t optimizer_state,
                          int64_t comm_buffers) {
    MemorySample s;
    s.parameters = parameters;
    s.gradients = gradients;
    s.optimizer_state = optimizer_state;
    s.comm_buffers = comm_buffers;
    s.live = trackedLiveBytes();
    s.peak = trackedPeakBytes();
    s.activations = std::max<int64_t>(0, s.live - (parameters + gradients + optimizer_state + comm_buffers));
    s.measured = measureMemory();
    return s;
}

} // namespace dt
