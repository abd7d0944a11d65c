// interleaved.cpp: Megatron-LM's interleaved 1F1B (Narayanan et al. 2021).
// Each rank holds v >= 2 model chunks (chunk g on rank g % p); the k-th
// forward item of a rank is microbatch (k / (p v)) p + k % p on local chunk
// (k / p) % v, backward items take the local chunks in reverse; m must be a
// multiple of p. Bubble: (p-1) / (v m + p - 1) (Megatron: bubble / ideal =
// (p-1) / (v m)); it sends v times as many activations as 1F1B.
#include "core/schedules/schedule_emitter.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace dt::schedules {
namespace {

// Megatron-LM's interleaved 1F1B: the k-th forward item of a rank is microbatch
// (k / (p v)) p + k % p on local chunk (k / p) % v; backward items take the
// local chunks in reverse.
PipelineSchedule interleaved(const PipelineShape& s) {
    const int p = s.stages, v = s.chunks_per_rank, m = s.microbatches, n = m * v;
    PipelineSchedule sched(static_cast<size_t>(p), std::vector<PipeAction>{});
    for (int r = 0; r < p; ++r) {
        Emitter e{s, r, sched[size_t(r)]};
        const auto item = [&](int k, bool forward) {
            const int in_group = k % (p * v);
            int local = in_group / p;
            if (!forward)
                local = v - 1 - local;
            const int mb = (k / (p * v)) * p + k % p;
            return std::make_pair(mb, local * p + r);
        };
        const int warmup = m == p ? n : std::min(n, (p - r - 1) * 2 + (v - 1) * p);
        for (int k = 0; k < warmup; ++k) {
            auto [mb, g] = item(k, true);
            e.forward(mb, g);
        }
        for (int k = 0; k < n - warmup; ++k) {
            auto [fmb, fg] = item(k + warmup, true);
            e.forward(fmb, fg);
            auto [bmb, bg] = item(k, false);
            e.backward(bmb, bg, PipeOp::Backward);
        }
        for (int k = n - warmup; k < n; ++k) {
            auto [mb, g] = item(k, false);
            e.backward(mb, g, PipeOp::Backward);
        }
        sched[size_t(r)].push_back({PipeOp::Optimizer, -1, -1, -1});
    }
    return sched;
}

double interleavedBubble(const PipelineShape& s, double, double, double) {
    const double p = s.stages, m = s.microbatches, v = s.chunks_per_rank;
    return (p - 1) / (v * m + p - 1);
}

// Megatron's order needs whole groups of p microbatches.
std::string interleavedShapeProblem(const PipelineShape& s) {
    if (s.microbatches % s.stages != 0)
        return "interleaved needs microbatches (" + std::to_string(s.microbatches) +
               ") to be a multiple of the stages (" + std::to_string(s.stages) + ")";
    return "";
}

} // namespace

extern const PipelineScheduleSpec kInterleavedSchedule{"interleaved",
                                                       "1f1b over v chunks per rank, in Megatron's order",
                                                       false,
                                                       true,
                                                       "(p-1)/(v m+p-1)",
                                                       interleaved,
                                                       interleavedBubble,
                                                       interleavedShapeProblem};

} // namespace dt::schedules
