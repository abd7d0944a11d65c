// ddp_buckets.cpp: greedy reverse-order bucket packing (rule in the header).
#include "strategy/ddp_buckets.hpp"

#include "dtlab/errors.hpp"

namespace dt {

std::vector<BucketPlan> planBuckets(const std::vector<int64_t>& param_numel, int64_t element_bytes,
                                    int64_t cap_bytes) {
    DT_ENFORCE(element_bytes > 0 && cap_bytes > 0, "bucket cap and element size must be positive");
    std::vector<BucketPlan> buckets;
    BucketPlan current;
    for (int i = int(param_numel.size()) - 1; i >= 0; --i) {
        const int64_t numel = param_numel[size_t(i)];
        if (!current.slots.empty() && (current.numel + numel) * element_bytes > cap_bytes) {
            buckets.push_back(std::move(current));
            current = BucketPlan{};
        }
        current.slots.push_back(BucketSlot{i, current.numel, numel});
        current.numel += numel;
    }
    if (!current.slots.empty()) buckets.push_back(std::move(current));
    return buckets;
}

} // namespace dt
