// schedule_emitter.hpp: what every schedule generator (one file each in this
// folder) shares: the Emitter, which writes a compute action with the receive
// before it and the send after it whenever the neighbouring chunk lives on
// another rank, and 1F1B's order of forwards and backwards (also ZB-H1's).
#pragma once

#include "dtlab/pipeline_schedule.hpp"

#include <vector>

namespace dt::schedules {

struct Emitter {
    const PipelineShape& s;
    int rank;
    std::vector<PipeAction>& out;

    void forward(int mb, int g) {
        if (g > 0 && s.rankOfChunk(g - 1) != rank)
            out.push_back({PipeOp::RecvAct, mb, g, s.rankOfChunk(g - 1)});
        out.push_back({PipeOp::Forward, mb, g, -1});
        if (g + 1 < s.chunks() && s.rankOfChunk(g + 1) != rank)
            out.push_back({PipeOp::SendAct, mb, g, s.rankOfChunk(g + 1)});
    }
    void backward(int mb, int g, PipeOp op) {
        if (g + 1 < s.chunks() && s.rankOfChunk(g + 1) != rank)
            out.push_back({PipeOp::RecvGrad, mb, g, s.rankOfChunk(g + 1)});
        out.push_back({op, mb, g, -1});
        if (g > 0 && s.rankOfChunk(g - 1) != rank)
            out.push_back({PipeOp::SendGrad, mb, g, s.rankOfChunk(g - 1)});
    }
    void weight(int mb, int g) { out.push_back({PipeOp::BackwardWeight, mb, g, -1}); }
};

// 1F1B's compute actions on rank r, in order (no sends or receives): p-1-r
// warm-up forwards, then one forward / one backward, then the cool-down
// backwards. `backward` is B (1f1b) or Bi (zb-h1).
[[nodiscard]] std::vector<PipeAction> oneForwardOneBackwardOrder(const PipelineShape& s, int r,
                                                                 PipeOp backward);

// The bubble of GPipe and 1F1B (one chunk per rank): (p-1) / (m + p - 1).
inline double oneChunkBubble(const PipelineShape& s, double /*t_f*/, double /*t_b*/, double /*t_w*/) {
    const double p = s.stages, m = s.microbatches;
    return (p - 1) / (m + p - 1);
}

} // namespace dt::schedules
