// gpipe.cpp: GPipe (Huang et al. 2019). Every rank runs all m forwards, then
// all m backwards, then the optimizer; it holds m microbatches' activations at
// its peak. One chunk per rank (v = 1). Bubble: (p-1) / (m + p - 1).
#include "core/schedules/schedule_emitter.hpp"

namespace dt::schedules {
namespace {

PipelineSchedule gpipe(const PipelineShape& s) {
    PipelineSchedule sched(static_cast<size_t>(s.stages), std::vector<PipeAction>{});
    for (int r = 0; r < s.stages; ++r) {
        Emitter e{s, r, sched[size_t(r)]};
        for (int mb = 0; mb < s.microbatches; ++mb)
            e.forward(mb, r);
        for (int mb = 0; mb < s.microbatches; ++mb)
            e.backward(mb, r, PipeOp::Backward);
        sched[size_t(r)].push_back({PipeOp::Optimizer, -1, -1, -1});
    }
    return sched;
}

} // namespace

extern const PipelineScheduleSpec kGpipeSchedule{
    "gpipe", "all forwards, then all backwards", false, false, "(p-1)/(m+p-1)", gpipe, oneChunkBubble,
    nullptr};

} // namespace dt::schedules
