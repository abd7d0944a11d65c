// pipeline_measure.cpp: see pipeline_measure.hpp for the definitions.
#include "dtlab/pipeline_measure.hpp"

#include "dtlab/pipeline_schedule.hpp"

#include <algorithm>
#include <map>

namespace dt {

PipelineMeasure measurePipeline(const std::vector<Event>& events, const Scenario& s) {
    PipelineMeasure out;
    if (!strategyTraits(s.strategy.kind).uses_stages)
        return out;
    const int p = s.topology.stages, world = s.topology.ranks;
    struct Window {
        int64_t begin = INT64_MAX, end = INT64_MIN;
    };
    std::map<std::pair<int, int>, Window> windows;         // (step, replica)
    std::map<std::pair<int, int>, int64_t> busy;           // (step, rank)
    std::map<EventKind, std::pair<double, int>> durations; // kind -> (sum ns, count)
    for (const Event& e : events) {
        if (e.phase != EventPhase::Span || e.microbatch < 0 || e.unit < 0 || e.rank < 0 || e.rank >= world)
            continue;
        if (e.kind != EventKind::Forward && e.kind != EventKind::Backward &&
            e.kind != EventKind::BackwardInput && e.kind != EventKind::BackwardWeight)
            continue;
        Window& w = windows[{e.step, e.rank / p}];
        w.begin = std::min(w.begin, e.t_ns);
        w.end = std::max(w.end, e.t_ns + e.dur_ns);
        busy[{e.step, e.rank}] += e.dur_ns;
        auto& d = durations[e.kind];
        d.first += double(e.dur_ns);
        ++d.second;
    }
    std::vector<int> steps;
    for (const auto& [key, _] : windows)
        if (key.second == 0)
            steps.push_back(key.first);
    if (steps.size() > 1)
        steps.erase(steps.begin()); // warm-up
    if (steps.empty())
        return out;

    std::vector<double> sum(size_t(world), 0.0);
    std::vector<int> count(size_t(world), 0);
    double total = 0.0;
    int n = 0;
    for (int step : steps)
        for (int r = 0; r < world; ++r) {
            auto w = windows.find({step, r / p});
            auto b = busy.find({step, r});
            if (w == windows.end() || b == busy.end() || w->second.end <= w->second.begin)
                continue;
            const double bubble = 1.0 - double(b->second) / double(w->second.end - w->second.begin);
            sum[size_t(r)] += bubble;
            ++count[size_t(r)];
            total += bubble;
            ++n;
        }
    if (n == 0)
        return out;
    out.valid = true;
    out.steps_measured = int(steps.size());
    out.bubble = total / n;
    for (int r = 0; r < world; ++r)
        out.bubble_per_rank.push_back(count[size_t(r)] ? sum[size_t(r)] / count[size_t(r)] : 0.0);
    const auto mean_ms = [&](EventKind k) {
        auto it = durations.find(k);
        return it == durations.end() || it->second.second == 0 ? 0.0
                                                               : it->second.first / it->second.second / 1e6;
    };
    const bool zb = splitsBackward(s);
    out.t_forward_ms = mean_ms(EventKind::Forward);
    out.t_backward_ms = mean_ms(zb ? EventKind::BackwardInput : EventKind::Backward);
    out.t_weight_ms = zb ? mean_ms(EventKind::BackwardWeight) : 0.0;

    const PipelineShape shape = pipelineShapeOf(s);
    out.bubble_theory =
        bubbleTheory(s.strategy.schedule, shape, out.t_forward_ms, out.t_backward_ms, out.t_weight_ms);
    PipeDurations d;
    d.forward = out.t_forward_ms;
    d.backward = out.t_backward_ms;
    d.backward_input = out.t_backward_ms;
    d.backward_weight = out.t_weight_ms;
    if (pipelineShapeProblem(s.strategy.schedule, shape).empty())
        out.bubble_simulated = simulatedBubble(
            simulatePipelineSchedule(makePipelineSchedule(s.strategy.schedule, shape), shape, d), p);
    return out;
}

} // namespace dt
