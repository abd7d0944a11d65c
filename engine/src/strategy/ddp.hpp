// ddp.hpp: data-parallel gradient synchronisation (PyTorch DDP's Reducer, small).
//
// Steps per training step:
//   1. beginStep: zero the buckets (the gradients are views into them).
//   2. backward: autograd accumulates each parameter's gradient into its slot;
//      a post-hook on the parameter's AccumulateGrad node counts it ready.
//      When a bucket's last gradient is ready and overlap is on, its
//      all-reduce is launched at once, while backward goes on.
//   3. finishBackward: launch any bucket not yet launched (all of them when
//      overlap is off), wait for all (a Wait span), divide by world size.
// Bytes on the wire per rank and step (ring all-reduce): 2 (N-1)/N x 4 x params.
// After the step every rank holds bit-identical averaged gradients, so the
// same AdamW update keeps the replicas bit-identical.
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
    DdpGradientSync(std::vector<at::Tensor> params, Communicator& comm, double bucket_mb, bool overlap,
                    EventSink* sink);
    ~DdpGradientSync();

    void beginStep(int step); // zeroes the gradient buckets
    // Before each microbatch's backward. communicate = false: gradients only
    // accumulate in the buckets (PyTorch's no_sync); true: the buckets are
    // all-reduced during / after this backward. All-reducing the accumulated
    // buckets every microbatch is also exact: the earlier part is already the
    // same average on every rank.
    void beginMicrobatch(int microbatch, bool communicate);
    void finishBackward(); // throws CommError if a peer failed; no-op when not communicating

    [[nodiscard]] const std::vector<BucketPlan>& plan() const { return m_plan; }
    [[nodiscard]] std::vector<at::Tensor> bucketBuffers() const { return m_buffers; }
    [[nodiscard]] int bucketsLaunchedDuringBackward() const { return m_launched_in_backward; }

  private:
    void onGradientReady(int param_index);
    void launch(size_t bucket);

    std::vector<at::Tensor> m_params;
    Communicator& m_comm;
    bool m_overlap;
    EventSink* m_sink;
    std::vector<BucketPlan> m_plan;
    std::vector<at::Tensor> m_buffers;
    std::vector<int> m_bucket_of_param;
    std::vector<int> m_pending;                                         // gradients still missing per bucket
    std::vector<CommWorkPtr> m_works;                                   // per bucket, this step
    std::vector<std::shared_ptr<torch::autograd::Node>> m_accumulators; // kept alive: they own the hooks
    bool m_in_backward = false;
    bool m_communicate = true;
    int m_step = -1;
    int m_microbatch = -1;
    int m_launched_in_backward = 0;
};

} // namespace dt
