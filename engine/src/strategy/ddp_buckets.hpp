// ddp_buckets.hpp: how DDP groups gradients into all-reduce buckets.
//
// Parameters are taken in reverse registration order (backward produces the
// last layer's gradients first) and packed greedily into buckets of at most
// cap_bytes; a parameter larger than the cap gets a bucket of its own. Each
// bucket is one flat buffer; a parameter's gradient is a view at its offset,
// so the all-reduce runs on the gradients themselves with no copy.
#pragma once

#include <cstdint>
#include <vector>

namespace dt {

struct BucketSlot {
    int param_index = 0;     // index into the model's parameter list
    int64_t offset = 0;      // element offset inside the bucket
    int64_t numel = 0;
};

struct BucketPlan {
    std::vector<BucketSlot> slots;
    int64_t numel = 0;
};

// param_numel[i] = elements of parameter i; element_bytes = 4 for float32.
[[nodiscard]] std::vector<BucketPlan> planBuckets(const std::vector<int64_t>& param_numel, int64_t element_bytes,
                                                  int64_t cap_bytes);

} // namespace dt
