// zero_bubble_h1.cpp: ZB-H1 (Zero Bubble Pipeline Parallelism, Qi et al. 2024).
// The backward is split in Bi (the input gradient, which the previous stage
// waits for) and W (the weight gradient, free to move): 1F1B's order of F and
// Bi, each W placed greedily where the rank would otherwise wait, never more
// than p microbatches holding activations on a rank. One chunk per rank.
// Bubble (Table 2; t_b = input gradient only):
//   (p-1)(t_f + t_b - t_w) / (m (t_f + t_b + t_w) + (p-1)(t_f + t_b - t_w))
#include "core/schedules/schedule_emitter.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace dt::schedules {
namespace {

// ZB-H1 (Zero Bubble, Qi et al.): 1f1b's order of F and Bi (the input
// gradient, which the previous stage waits for), with each W (weight gradient)
// placed greedily where the rank would otherwise wait, assuming F = Bi = W in
// time, and never more than p microbatches holding activations on a rank
// (1f1b's peak, reached on its first stage). Built by executing the ranks in time order: the rank with the
// smallest clock decides next, so "its input has not arrived yet" is final.
PipelineSchedule zeroBubbleH1(const PipelineShape& s) {
    const int p = s.stages, m = s.microbatches;
    PipelineSchedule sched(static_cast<size_t>(p), std::vector<PipeAction>{});
    std::vector<std::vector<PipeAction>> order(static_cast<size_t>(p), std::vector<PipeAction>{});
    for (int r = 0; r < p; ++r)
        order[size_t(r)] = oneForwardOneBackwardOrder(s, r, PipeOp::BackwardInput);
    std::vector<size_t> next(size_t(p), 0);
    std::vector<double> clock(size_t(p), 0.0);
    std::vector<int> next_w(size_t(p), 0), bi_done(size_t(p), 0), f_done(size_t(p), 0);
    std::map<std::pair<int, int>, double> fwd_end, bwd_end;     // (mb, chunk) -> time
    const auto inputTime = [&](const PipeAction& a) -> double { // -1: not produced yet
        const auto& table = a.op == PipeOp::Forward ? fwd_end : bwd_end;
        const int from = a.op == PipeOp::Forward ? a.chunk - 1 : a.chunk + 1;
        if (from < 0 || from >= p)
            return 0.0;
        auto it = table.find({a.microbatch, from});
        return it == table.end() ? -1.0 : it->second;
    };
    for (;;) {
        int r = -1; // the unfinished rank with the smallest clock
        for (int k = 0; k < p; ++k) {
            const bool unfinished = next[size_t(k)] < order[size_t(k)].size() || next_w[size_t(k)] < m;
            if (unfinished && (r < 0 || clock[size_t(k)] < clock[size_t(r)]))
                r = k;
        }
        if (r < 0)
            break;
        Emitter e{s, r, sched[size_t(r)]};
        double& now = clock[size_t(r)];
        const bool main_left = next[size_t(r)] < order[size_t(r)].size();
        const PipeAction a = main_left ? order[size_t(r)][next[size_t(r)]] : PipeAction{};
        const double ready = main_left ? inputTime(a) : -1.0;
        const bool w_possible = next_w[size_t(r)] < bi_done[size_t(r)];
        const bool memory_full =
            main_left && a.op == PipeOp::Forward && f_done[size_t(r)] - next_w[size_t(r)] >= p;
        if (main_left && !memory_full && ready >= 0.0 && ready <= now) {
            if (a.op == PipeOp::Forward) {
                e.forward(a.microbatch, r);
                fwd_end[{a.microbatch, r}] = now += 1.0;
                ++f_done[size_t(r)];
            } else {
                e.backward(a.microbatch, r, PipeOp::BackwardInput);
                bwd_end[{a.microbatch, r}] = now += 1.0;
                ++bi_done[size_t(r)];
            }
            ++next[size_t(r)];
        } else if (w_possible) {
            e.weight(next_w[size_t(r)]++, r); // fill the wait with a weight gradient
            now += 1.0;
        } else {
            // Nothing to fill with: wait for the input. If its producer has not
            // run yet, every other rank's clock is later than ours; jump to the
            // earliest of them so that one can run.
            double later = -1.0;
            for (int k = 0; k < p; ++k)
                if (k != r && (later < 0 || clock[size_t(k)] < later) && clock[size_t(k)] > now)
                    later = clock[size_t(k)];
            now = ready > now ? ready : (later > now ? later : now + 1.0);
        }
    }
    for (auto& list : sched)
        list.push_back({PipeOp::Optimizer, -1, -1, -1});
    return sched;
}

double zeroBubbleH1Bubble(const PipelineShape& s, double t_f, double t_b, double t_w) {
    const double p = s.stages, m = s.microbatches;
    const double bubble = (p - 1) * std::max(0.0, t_f + t_b - t_w);
    return bubble / (m * (t_f + t_b + t_w) + bubble);
}

} // namespace

extern const PipelineScheduleSpec kZeroBubbleH1Schedule{
    "zb-h1",
    "1f1b with the backward split; weight gradients fill the waits",
    true,
    false,
    "(p-1)(F+Bi-W) / (m(F+Bi+W) + (p-1)(F+Bi-W))",
    zeroBubbleH1,
    zeroBubbleH1Bubble,
    nullptr};

} // namespace dt::schedules
