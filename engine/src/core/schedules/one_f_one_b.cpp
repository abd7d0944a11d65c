// one_f_one_b.cpp: 1F1B (PipeDream-Flush, Narayanan et al. 2021). Rank r runs
// p-1-r warm-up forwards, then one forward / one backward, then the remaining
// backwards; it holds at most p - r microbatches' activations. One chunk per
// rank (v = 1). Bubble: (p-1) / (m + p - 1), as GPipe's.
#include "core/schedules/schedule_emitter.hpp"

#include <algorithm>

namespace dt::schedules {
namespace {

PipelineSchedule oneForwardOneBackward(const PipelineShape& s) {
    PipelineSchedule sched(static_cast<size_t>(s.stages), std::vector<PipeAction>{});
    for (int r = 0; r < s.stages; ++r) {
        Emitter e{s, r, sched[size_t(r)]};
        for (const PipeAction& a : oneForwardOneBackwardOrder(s, r, PipeOp::Backward)) {
            if (a.op == PipeOp::Forward)
                e.forward(a.microbatch, r);
            else
                e.backward(a.microbatch, r, PipeOp::Backward);
        }
        sched[size_t(r)].push_back({PipeOp::Optimizer, -1, -1, -1});
    }
    return sched;
}

} // namespace

std::vector<PipeAction> oneForwardOneBackwardOrder(const PipelineShape& s, int r, PipeOp backward) {
    std::vector<PipeAction> order; // compute actions only
    const int m = s.microbatches;
    const int warmup = std::min(s.stages - 1 - r, m);
    for (int mb = 0; mb < warmup; ++mb)
        order.push_back({PipeOp::Forward, mb, r, -1});
    for (int i = 0; i < m - warmup; ++i) {
        order.push_back({PipeOp::Forward, warmup + i, r, -1});
        order.push_back({backward, i, r, -1});
    }
    for (int mb = m - warmup; mb < m; ++mb)
        order.push_back({backward, mb, r, -1});
    return order;
}

extern const PipelineScheduleSpec kOneForwardOneBackwardSchedule{
    "1f1b",          "p-1-r warm-up forwards, then one forward / one backward",
    false,           false,
    "(p-1)/(m+p-1)", oneForwardOneBackward,
    oneChunkBubble,  nullptr};

} // namespace dt::schedules
