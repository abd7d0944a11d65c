// ddp_buckets.hpp: how DDP groups gradients into all-reduce buckets, by
// PyTorch 1.13's rule (torch/csrc/distributed/c10d/reducer.cpp,
// compute_bucket_assignment_by_size, and DistributedDataParallel in
// torch/nn/parallel/distributed.py), the torch that Debian packages and the
// benchmark compares with.
//
// The rule, for float32 parameters on one device:
//   1. Take the parameters in a given order. Add each to the open bucket;
//      when the bucket's bytes reach the current limit (>=, the parameter
//      that crosses it is inside), close the bucket and move to the next
//      limit; the last limit repeats. The bucket still open at the end is
//      the last one, however small.
//   2. First iteration (find_unused_parameters = False, the default): the
//      limits are [sys.maxsize], so every parameter is in ONE bucket, in
//      registration order, all-reduced once every gradient is ready.
//   3. After the first backward the Reducer rebuilds the buckets from the
//      order the gradients actually arrived (the AccumulateGrad hooks' order)
//      with limits [_DEFAULT_FIRST_BUCKET_BYTES = 1 MiB, bucket_cap_mb], so
//      the first bucket (the first gradients ready) is small and launches
//      early; rank 0's order is broadcast so every rank builds the same
//      buckets. The order is not re-sorted.
//   4. Buckets are launched in index order only: a ready bucket waits until
//      every bucket before it has been launched (Reducer::mark_bucket_ready).
// Each bucket is one flat buffer; a parameter's gradient is a view at its
// offset (gradient_as_bucket_view), so the all-reduce runs on the gradients
// themselves with no copy.
//
// Later versions: since torch 2.0 the first-bucket limit is used in step 1's
// initial assignment only when bucket_cap_mb is left at its default, and the
// environment variable DDP_SET_LAST_BUCKET_CAP=1 puts the small bucket last
// (docs/concepts/data_parallel.md).
#pragma once

#include "dtlab/scenario.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dt {

// torch.distributed._DEFAULT_FIRST_BUCKET_BYTES
inline constexpr int64_t kDefaultFirstBucketBytes = int64_t(1024) * 1024;

struct BucketSlot {
    int param_index = 0; // index into the model's parameter list
    int64_t offset = 0;  // element offset inside the bucket
    int64_t numel = 0;
};

struct BucketPlan {
    std::vector<BucketSlot> slots;
    int64_t numel = 0;
};

// Step 1 of the rule: the parameters taken in `order` (indices into
// param_numel), bucket limits in bytes, element_bytes = 4 for float32.
[[nodiscard]] std::vector<BucketPlan> assignBucketsBySize(const std::vector<int>& order,
                                                          const std::vector<int64_t>& param_numel,
                                                          int64_t element_bytes,
                                                          const std::vector<int64_t>& limits_bytes);

// Step 2: the first iteration's single bucket, registration order.
[[nodiscard]] std::vector<BucketPlan> firstIterationBuckets(const std::vector<int64_t>& param_numel);

// Step 3: the buckets rebuilt from the gradient-ready order.
[[nodiscard]] std::vector<BucketPlan> rebuiltBuckets(const std::vector<int>& ready_order,
                                                     const std::vector<int64_t>& param_numel,
                                                     int64_t element_bytes, int64_t cap_bytes,
                                                     int64_t first_bucket_bytes = kDefaultFirstBucketBytes);

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

// The order the model's gradients become ready in backward, predicted
// without LibTorch: reverse registration order (the head first, the token
// embedding last; a Linear's bias before its weight), except that a
// LayerNorm's weight comes before its bias: autograd's LayerNorm backward
// hands both gradients over at once and the engine accumulates the weight's
// first. tests/unit/test_ddp_buckets.cpp checks it against the order the
// engine measures and the one PyTorch's own DDP reports.
[[nodiscard]] std::vector<int> expectedGradientReadyOrder(const ModelConfig& model);

// The buckets DDP runs with from step 1 on, predicted without LibTorch: the
// rebuild (step 3) from expectedGradientReadyOrder.
[[nodiscard]] std::vector<BucketPlan> ddpBucketPlan(const Scenario& scenario);

// [strategy] bucket_mb in bytes.
[[nodiscard]] int64_t bucketCapBytes(const Scenario& scenario);

} // namespace dt
