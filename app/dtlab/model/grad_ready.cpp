// grad_ready.cpp: see grad_ready.hpp.
#include "model/grad_ready.hpp"

#include <algorithm>

namespace dt::app {

bool GradReadyPicture::complete() const {
    return step >= 0 && !ready_ms.empty() &&
           std::all_of(ready_ms.begin(), ready_ms.end(), [](double t) { return t >= 0.0; });
}

GradReadyPicture gradReadyPicture(const RunModel& model, int rank, std::optional<int64_t> at_ns,
                                  size_t param_count) {
    GradReadyPicture pic;
    pic.rank = rank;
    if (rank < 0 || rank >= model.world() || param_count == 0)
        return pic;
    const RankLane& lane = model.lane(rank);
    if (lane.grad_ready.empty())
        return pic;
    // 1. The latest ended whole-backward span at or before the moment.
    const std::vector<SpanRecord>& phases = lane.compute[1];
    for (auto it = phases.rbegin(); it != phases.rend(); ++it) {
        if (it->kind != EventKind::Backward || it->unit != -2 || it->open())
            continue;
        if (at_ns && it->t1 > *at_ns)
            continue;
        // 2. Its readiness reports.
        std::vector<double> ready(param_count, -1.0);
        std::vector<int> group(param_count, 0);
        const auto first = std::lower_bound(lane.grad_ready.begin(), lane.grad_ready.end(), it->t0,
                                            [](const Event& e, int64_t t) { return e.t_ns < t; });
        bool any = false;
        for (auto e = first; e != lane.grad_ready.end() && e->t_ns <= it->t1; ++e) {
            if (e->step != it->step || e->unit < 0 || size_t(e->unit) >= param_count)
                continue;
            ready[size_t(e->unit)] = double(e->t_ns - it->t0) / 1e6; // 3.
            group[size_t(e->unit)] = int(e->value);
            any = true;
        }
        if (!any)
            continue; // a backward with no reports (telemetry of another strategy): look further back
        pic.step = it->step;
        pic.microbatch = it->microbatch;
        pic.backward_ms = double(it->t1 - it->t0) / 1e6;
        pic.ready_ms = std::move(ready);
        pic.group_of = std::move(group);
        return pic;
    }
    return pic;
}

} // namespace dt::app
