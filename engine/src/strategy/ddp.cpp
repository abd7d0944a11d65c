// ddp.cpp: bucketed, overlapped gradient all-reduce (steps in ddp.hpp).
#include "strategy/ddp.hpp"

#include "strategy/gradient_ready_hook.hpp"
#include "telemetry/event_sink.hpp"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

namespace dt {

DdpGradientSync::DdpGradientSync(std::vector<at::Tensor> params, Communicator& comm, double bucket_mb,
                                 bool overlap, EventSink* sink)
    : m_params(std::move(params)), m_comm(comm), m_overlap(overlap), m_sink(sink) {
    std::vector<int64_t> numel;
    for (const auto& p : m_params) {
        DT_ENFORCE(p.scalar_type() == at::kFloat && p.is_contiguous(),
                   "DDP expects contiguous float32 parameters");
        numel.push_back(p.numel());
    }
    m_plan = planBuckets(numel, 4, int64_t(bucket_mb * 1024 * 1024));
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
    for (size_t i = 0; i < m_params.size(); ++i) {
        auto accumulator = torch::autograd::impl::grad_accumulator(m_params[i]);
        accumulator->add_post_hook(
            std::make_unique<GradientReadyHook>([this, i] { onGradientReady(int(i)); }));
        m_accumulators.push_back(std::move(accumulator));
    }
    m_pending.assign(m_plan.size(), 0);
    m_works.assign(m_plan.size(), nullptr);
}

DdpGradientSync::~DdpGradientSync() = default;

void DdpGradientSync::beginStep(int step) {
    m_step = step;
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
    m_launched_in_backward = 0;
    m_in_backward = communicate;
}

void DdpGradientSync::onGradientReady(int param_index) {
    if (!m_in_backward)
        return;
    const int b = m_bucket_of_param[size_t(param_index)];
    if (--m_pending[size_t(b)] == 0 && m_overlap) {
        launch(size_t(b));
        ++m_launched_in_backward;
    }
}

void DdpGradientSync::launch(size_t bucket) {
    m_works[bucket] = m_comm.allReduce(m_buffers[bucket], CommTag{m_step, int(bucket), m_microbatch});
}

void DdpGradientSync::finishBackward() {
    m_in_backward = false;
    if (!m_communicate)
        return;
    for (size_t b = 0; b < m_plan.size(); ++b)
        if (!m_works[b])
            launch(b);
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
    const double scale = 1.0 / double(m_comm.size());
    for (auto& buffer : m_buffers)
        buffer.mul_(scale);
}

} // namespace dt
