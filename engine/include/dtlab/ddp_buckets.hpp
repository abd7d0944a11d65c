// ddp_buckets.hpp: how DDP groups gradients into all-reduce buckets.
//
// Parameters are taken in reverse registration order (backward produces the
// last layer's gradients first) and packed greedily into buckets of at most
// cap_bytes; a parameter larger than the cap gets a bucket of its own. Each
// bucket is one flat buffer; a parameter's gradient is a view at its offset,
// so the all-reduce runs on the gradients themselves with no copy.
#pragma once

#include "dtlab/scenario.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dt {

struct BucketSlot {
    int param_index = 0; // index into the model's parameter list
    int64_t offset = 0;  // element offset inside the bucket
    int64_t numel = 0;
};

struct BucketPlan {
    std::vector<BucketSlot> slots;
    int64_t numel = 0;
};

// param_numel[i] = elements of parameter i; element_bytes = 4 for float32.
[[nodiscard]] std::vector<BucketPlan> planBuckets(const std::vector<int64_t>& param_numel,
                                                  int64_t element_bytes, int64_t cap_bytes);

// One trainable parameter as the model registers it (the order DDP buckets
// and checksums use), computed from the config alone so the GUI can draw the
// buckets without LibTorch. tests/unit/test_models.cpp checks it against the
// real models.
struct ParameterShape {
    std::string name; // "block0.qkv.weight", "tok_emb.weight", "fc0.bias", ...
    int64_t numel = 0;
    int unit = -1; // block / layer index, -1 = root (embeddings, final norm, head)
};
[[nodiscard]] std::vector<ParameterShape> parameterLayout(const ModelConfig& model);

// The buckets DDP builds for this scenario ([strategy] bucket_mb over parameterLayout).
[[nodiscard]] std::vector<BucketPlan> ddpBucketPlan(const Scenario& scenario);

} // namespace dt
