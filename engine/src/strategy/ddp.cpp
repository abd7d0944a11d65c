// ddp.cpp: bucketed, overlapped gradient all-reduce (steps in ddp.hpp).
#include "strategy/ddp.hpp"

#include "strategy/gradient_ready_hook.hpp"
#include "telemetry/event_sink.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

namespace dt {

DdpGradientSync::DdpGradientSync(std::vector<at::Tensor> params, Communicator& comm, double bucket_mb,
                                 bool overlap, EventSink* sink, int64_t first_bucket_bytes)
    : m_params(std::move(params)), m_comm(comm), m_overlap(overlap), m_sink(sink),
      m_cap_bytes(std::max<int64_t>(1, int64_t(bucket_mb * 1024.0 * 1024.0))),
      m_first_bucket_bytes(first_bucket_bytes) {
    for (const auto& p : m_params) {
        DT_ENFORCE(p.scalar_type() == at::kFloat && p.is_contiguous(),
                   "DDP expects contiguous float32 parameters");
        m_numel.push_back(p.numel());
    }
    install(firstIterationBuckets(m_numel));
    for (size_t i = 0; i < m_params.size(); ++i) {
        auto accumulator = torch::autograd::impl::grad_accumulator(m_params[i]);
        accumulator->add_post_hook(
            std::make_unique<GradientReadyHook>([this, i] { onGradientReady(int(i)); }));
        m_accumulators.push_back(std::move(accumulator));
    }
}

DdpGradientSync::~DdpGradientSync() = default;

void DdpGradientSync::install(std::vector<BucketPlan> plan) {
    m_plan = std::move(plan);
    m_buffers.clear();
    m_bucket_of_param.assign(m_params.size(), -1);
    for (size_t b = 0; b < m_plan.size(); ++b) {
        auto buffer = at::zeros({m_plan[b].numel}, at::kFloat);
        for (const auto& slot : m_plan[b].slots) {
            auto& p = m_params[size_t(slot.param_index)];
            p.mutable_grad() = buffer.narrow(0, slot.offset, slot.numel).view(p.sizes());
            m_bucket_of_param[size_t(slot.param_index)] = int(b);
        }
        m_buffers.push_back(buffer);
    }
    m_pending.assign(m_plan.size(), 0);
    m_works.assign(m_plan.size(), nullptr);
}

// PyTorch's Reducer::rebuild_buckets + sync_bucket_indices: every rank builds
// the buckets from rank 0's ready order. The indices travel as float32 (exact
// below 2^24, and the MPI backend moves float32 only).
void DdpGradientSync::rebuild() {
    auto order = at::empty({int64_t(m_ready_order.size())}, at::kFloat);
    for (size_t i = 0; i < m_ready_order.size(); ++i)
        order[int64_t(i)] = float(m_ready_order[i]);
    m_comm.broadcastNow(order, 0, CommTag{m_step, -1, -1});
    std::vector<int> rank0_order;
    const auto* values = order.data_ptr<float>();
    for (int64_t i = 0; i < order.numel(); ++i)
        rank0_order.push_back(int(values[i]));
    install(rebuiltBuckets(rank0_order, m_numel, 4, m_cap_bytes, m_first_bucket_bytes));
    m_rebuilt = true;
}

void DdpGradientSync::beginStep(int step) {
    m_step = step;
    // The order is complete after the first synchronised backward (a model
    // whose parameters do not all get gradients keeps the single bucket).
    if (!m_rebuilt && !m_ready_order.empty() && m_ready_order.size() == m_params.size())
        rebuild();
    for (auto& buffer : m_buffers)
        buffer.zero_();
    beginMicrobatch(-1, true);
}

void DdpGradientSync::beginMicrobatch(int microbatch, bool communicate) {
    m_microbatch = microbatch;
    m_communicate = communicate;
    for (size_t b = 0; b < m_plan.size(); ++b) {
        m_pending[b] = int(m_plan[b].slots.size());
        m_works[b] = nullptr;
    }
    m_next_bucket = 0;
    m_launched_in_backward = 0;
    m_in_backward = communicate;
}

void DdpGradientSync::onGradientReady(int param_index) {
    if (!m_in_backward)
        return;
    if (!m_rebuilt && m_ready_order.size() < m_params.size())
        m_ready_order.push_back(param_index);
    const int b = m_bucket_of_param[size_t(param_index)];
    if (m_sink) { // the moment this gradient is ready: the autograd view marks it on the graph
        Event e;
        e.kind = EventKind::GradReady;
        e.phase = EventPhase::Instant;
        e.t_ns = m_sink->now();
        e.step = m_step;
        e.microbatch = int16_t(m_microbatch);
        e.unit = int16_t(param_index);
        e.value = double(b);
        e.bytes = m_numel[size_t(param_index)] * 4;
        e.rank = m_comm.rank();
        m_sink->emit(e);
    }
    // Divide before the all-reduce, as PyTorch's Reducer does (bucket_view.div_(div_factor_)).
    m_params[size_t(param_index)].mutable_grad().div_(double(m_comm.size()));
    if (--m_pending[size_t(b)] == 0 && m_overlap) {
        const size_t before = m_next_bucket;
        launchReadyInOrder();
        m_launched_in_backward += int(m_next_bucket - before);
    }
}

void DdpGradientSync::launchReadyInOrder() {
    while (m_next_bucket < m_plan.size() && m_pending[m_next_bucket] == 0)
        launch(m_next_bucket++);
}

void DdpGradientSync::launch(size_t bucket) {
    m_works[bucket] = m_comm.allReduce(m_buffers[bucket], CommTag{m_step, int(bucket), m_microbatch});
}

void DdpGradientSync::finishBackward() {
    m_in_backward = false;
    if (!m_communicate)
        return;
    // Buckets whose gradients never arrived (a parameter unused this step) or
    // that overlap = false held back: launched now, still in index order.
    while (m_next_bucket < m_plan.size())
        launch(m_next_bucket++);
    const int64_t wait_start = m_sink ? m_sink->now() : 0;
    for (auto& work : m_works)
        work->wait();
    if (m_sink) {
        Event e;
        e.kind = EventKind::Wait;
        e.phase = EventPhase::Span;
        e.t_ns = wait_start;
        e.dur_ns = m_sink->now() - wait_start;
        e.step = m_step;
        e.rank = m_comm.rank();
        m_sink->emit(e);
    }
}

} // namespace dt
