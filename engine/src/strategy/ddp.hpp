// ddp.hpp: data-parallel gradient synchronisation (PyTorch DDP's Reducer, small).
//
// Buckets follow PyTorch 1.13's rule (dtlab/ddp_buckets.hpp): step 0 runs with
// one bucket holding every gradient; its backward records the order in which
// the gradients became ready, and the next step rebuilds the buckets from that
// order (first bucket 1 MiB, then [strategy] bucket_mb), rank 0's order
// broadcast so that every rank builds the same ones.
//
// Steps per training step:
//   1. beginStep: rebuild the buckets once the ready order is known; zero the
//      buckets (the gradients are views into them).
//   2. backward: autograd accumulates each parameter's gradient into its slot;
//      a post-hook on the parameter's AccumulateGrad node divides the slot by
//      the world size N (PyTorch divides before the all-reduce, so the all-
//      reduce's sum is the mean) and counts it ready. When a bucket is ready
//      and every bucket before it has been launched, its all-reduce is
//      launched at once (buckets launch in index order only), while backward
//      goes on.
//   3. finishBackward: launch the buckets not launched yet (all of them when
//      overlap is off), in order, and wait for all (a Wait span).
// Bytes on the wire per rank and step (ring all-reduce): 2 (N-1)/N x 4 x params.
// Every rank ends with bit-identical averaged gradients (each all-reduce hands
// every rank the same sum), so the same AdamW update keeps replicas identical.
#pragma once

#include "comm/communicator.hpp"
#include "dtlab/ddp_buckets.hpp"

#include <ATen/Tensor.h>

#include <memory>
#include <vector>

namespace torch::autograd {
struct Node;
}

namespace dt {

class EventSink;

class DdpGradientSync {
  public:
    // first_bucket_bytes: PyTorch's _DEFAULT_FIRST_BUCKET_BYTES; tests pass a small one for a small model.
    DdpGradientSync(std::vector<at::Tensor> params, Communicator& comm, double bucket_mb, bool overlap,
                    EventSink* sink, int64_t first_bucket_bytes = kDefaultFirstBucketBytes);
    ~DdpGradientSync();

    void beginStep(int step); // rebuilds the buckets once, then zeroes them
    // Before each microbatch's backward. communicate = false: gradients only
    // accumulate in the buckets (PyTorch's no_sync); true: the buckets are
    // divided by N and all-reduced during / after this backward. All-reducing
    // the accumulated buckets every microbatch is also exact: the earlier part
    // is already the same average on every rank.
    void beginMicrobatch(int microbatch, bool communicate);
    void finishBackward(); // throws CommError if a peer failed; no-op when not communicating

    [[nodiscard]] const std::vector<BucketPlan>& plan() const { return m_plan; }
    [[nodiscard]] bool rebuilt() const { return m_rebuilt; }
    // Parameter indices in the order their gradients became ready in the first synchronised backward.
    [[nodiscard]] const std::vector<int>& readyOrder() const { return m_ready_order; }
    [[nodiscard]] std::vector<at::Tensor> bucketBuffers() const { return m_buffers; }
    [[nodiscard]] int bucketsLaunchedDuringBackward() const { return m_launched_in_backward; }

  private:
    void install(std::vector<BucketPlan> plan); // allocates the buffers, points every .grad into them
    void rebuild();
    void onGradientReady(int param_index);
    void launchReadyInOrder(); // from m_next_bucket while buckets are ready
    void launch(size_t bucket);

    std::vector<at::Tensor> m_params;
    std::vector<int64_t> m_numel;
    Communicator& m_comm;
    bool m_overlap;
    EventSink* m_sink;
    int64_t m_cap_bytes;
    int64_t m_first_bucket_bytes;
    std::vector<BucketPlan> m_plan;
    std::vector<at::Tensor> m_buffers;
    std::vector<int> m_bucket_of_param;
    std::vector<int> m_pending;                                         // gradients still missing per bucket
    std::vector<CommWorkPtr> m_works;                                   // per bucket, this step
    std::vector<std::shared_ptr<torch::autograd::Node>> m_accumulators; // kept alive: they own the hooks
    std::vector<int> m_ready_order;                                     // recorded until the rebuild
    bool m_rebuilt = false;
    size_t m_next_bucket = 0; // the next bucket to launch (index order)
    bool m_in_backward = false;
    bool m_communicate = true;
    int m_step = -1;
    int m_microbatch = -1;
    int m_launched_in_backward = 0;
};

} // namespace dt
