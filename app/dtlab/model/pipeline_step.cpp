// pipeline_step.cpp: one measured pipeline step, the schedule's prediction and
// which step a view shows (see pipeline_step.hpp).
#include "model/pipeline_step.hpp"

#include <algorithm>
#include <iterator>
#include <limits>

namespace dt::app {

namespace {

bool isPipeCompute(EventKind kind) {
    return kind == EventKind::Forward || kind == EventKind::Backward || kind == EventKind::BackwardInput ||
           kind == EventKind::BackwardWeight;
}

// A pipeline F/B/Bi/W span: a compute kind with a microbatch and a chunk.
bool isPipeSpan(const SpanRecord& s) {
    return isPipeCompute(s.kind) && s.microbatch >= 0 && s.unit >= 0;
}

// Index 0..3 of a compute kind (F, B, Bi, W).
int computeIndex(EventKind kind) {
    switch (kind) {
    case EventKind::Forward:
        return 0;
    case EventKind::Backward:
        return 1;
    case EventKind::BackwardInput:
        return 2;
    default:
        return 3;
    }
}

// The first record of `step` in a vector sorted by time. A rank runs its steps
// in order, so within one lane the step numbers never decrease with time and
// the vector is partitioned by step.
template <typename T>
typename std::vector<T>::const_iterator firstOfStep(const std::vector<T>& items, int step) {
    return std::partition_point(items.begin(), items.end(), [step](const T& x) { return x.step < step; });
}

int stagesOf(const Scenario& scenario) {
    return std::max(1, scenario.topology.stages);
}

} // namespace

PipeMeans pipelineMeans(const RunModel& model) {
    // sum[later][kind], count[later][kind]: later = 0 for step 0, 1 for the others.
    double sum[2][4] = {};
    int count[2][4] = {};
    for (int r = 0; r < model.world(); ++r)
        for (const SpanRecord& s : model.lane(r).compute[2]) {
            if (!isPipeSpan(s))
                continue;
            const int later = s.step > 0 ? 1 : 0, k = computeIndex(s.kind);
            sum[later][k] += double(s.t1 - s.t0);
            ++count[later][k];
        }
    int use = 0;
    for (int k = 0; k < 4; ++k)
        if (count[1][k] > 0)
            use = 1;
    PipeMeans m;
    double* out[4] = {&m.forward_ns, &m.backward_ns, &m.backward_input_ns, &m.backward_weight_ns};
    for (int k = 0; k < 4; ++k) {
        *out[k] = count[use][k] > 0 ? sum[use][k] / count[use][k] : 0.0;
        m.spans += count[use][k];
    }
    return m;
}

PipeTheory pipelineTheory(const Scenario& scenario, const PipeMeans& means) {
    PipeTheory t;
    const PipelineShape shape = pipelineShapeOf(scenario);
    const std::string& name = scenario.strategy.schedule;
    t.problem = pipelineShapeProblem(name, shape);
    if (!t.problem.empty())
        return t;

    // Durations: the measured means when the schedule's kinds were all seen,
    // else unit time (F = 1, B = 2 = Bi + W).
    const bool zb = splitsBackward(scenario);
    t.measured_durations =
        means.forward_ns > 0 &&
        (zb ? means.backward_input_ns > 0 && means.backward_weight_ns > 0 : means.backward_ns > 0);
    if (t.measured_durations) {
        t.durations.forward = means.forward_ns;
        t.durations.backward = means.backward_ns;
        t.durations.backward_input = means.backward_input_ns;
        t.durations.backward_weight = means.backward_weight_ns;
    }
    t.slots = simulatePipelineSchedule(makePipelineSchedule(name, shape), shape, t.durations);
    std::vector<double> busy(size_t(shape.stages), 0.0);
    for (const PredictedSlot& slot : t.slots) {
        t.makespan = std::max(t.makespan, slot.end);
        if (slot.rank >= 0 && slot.rank < shape.stages)
            busy[size_t(slot.rank)] += slot.end - slot.start;
    }
    t.simulated_bubble = simulatedBubble(t.slots, shape.stages);
    const PipeDurations& d = t.durations;
    t.formula_bubble =
        bubbleTheory(name, shape, d.forward, zb ? d.backward_input : d.backward, d.backward_weight);
    for (double b : busy)
        t.stage_bubble.push_back(t.makespan > 0 ? 1.0 - b / t.makespan : 0.0);
    return t;
}

PipeStep measurePipelineStep(const RunModel& model, int replica, int step) {
    PipeStep out;
    measurePipelineStep(model, replica, step, out);
    return out;
}

void measurePipelineStep(const RunModel& model, int replica, int step, PipeStep& out) {
    const int p = stagesOf(model.scenario());
    out.replica = replica;
    out.stages = p;
    out.step = step;
    out.complete = true;
    out.t0 = std::numeric_limits<int64_t>::max();
    out.t1 = std::numeric_limits<int64_t>::min();
    out.blocks.clear();
    out.arrows.clear();
    out.stage_busy.assign(size_t(p), 0);
    out.stage_bubble.assign(size_t(p), -1.0);
    out.bubble = -1.0;
    out.open_sends = 0;
    out.mismatched = 0;

    // Compute spans of the step, stage by stage (binary search to the step's first span).
    // stage_bubble stays -1 for a stage with no span; 0 marks "has spans" until the bubble is known.
    for (int s = 0; s < p; ++s) {
        const int rank = replica * p + s;
        if (rank >= model.world()) {
            out.complete = false;
            continue;
        }
        const RankLane& lane = model.lane(rank);
        const auto& spans = lane.compute[2];
        for (auto it = firstOfStep(spans, step); it != spans.end() && it->step == step; ++it) {
            if (!isPipeSpan(*it))
                continue;
            out.blocks.push_back(PipeBlock{s, it->kind, it->microbatch, it->unit, it->t0, it->t1});
            out.stage_busy[size_t(s)] += it->t1 - it->t0;
            out.t0 = std::min(out.t0, it->t0);
            out.t1 = std::max(out.t1, it->t1);
            out.stage_bubble[size_t(s)] = 0.0;
        }
        // Complete when the rank reported its Step span (emitted when the step ends).
        const auto& steps = lane.compute[0];
        auto st = firstOfStep(steps, step);
        if (st == steps.end() || st->step != step)
            out.complete = false;
    }
    if (out.blocks.empty()) {
        out.t0 = out.t1 = 0;
        out.complete = false;
        return;
    }

    // The bubble: idle share of the window, per stage, then the mean.
    const double window = double(std::max<int64_t>(out.t1 - out.t0, 1));
    double total = 0.0;
    int counted = 0;
    for (int s = 0; s < p; ++s) {
        if (out.stage_bubble[size_t(s)] < 0.0)
            continue; // no span from this stage
        out.stage_bubble[size_t(s)] = 1.0 - double(out.stage_busy[size_t(s)]) / window;
        total += out.stage_bubble[size_t(s)];
        ++counted;
    }
    out.bubble = counted > 0 ? total / counted : -1.0;

    // Messages: every Send of the step inside this pipeline, linked to the Recv
    // with the same (sender, receiver, seq): a rank's k-th send to j is j's
    // k-th receive from it (the communicator numbers them per direction and peer).
    for (int s = 0; s < p; ++s) {
        const int rank = replica * p + s;
        if (rank >= model.world())
            continue;
        const auto& comm = model.lane(rank).comm;
        for (auto it = firstOfStep(comm, step); it != comm.end() && it->step <= step; ++it) {
            if (it->kind != EventKind::Send || it->step != step)
                continue;
            const int peer = it->peer;
            if (peer < 0 || peer / p != replica || peer >= model.world())
                continue; // not inside this pipeline
            const SpanRecord* recv = model.findComm(peer, it->group, EventKind::Recv, rank, it->seq);
            if (!recv || recv->open() || recv->failed) {
                ++out.open_sends;
                continue;
            }
            PipeArrow a;
            a.from_stage = s;
            a.to_stage = peer % p;
            a.t_send = it->t0;
            a.t_arrived = recv->t1;
            a.microbatch = it->microbatch;
            a.chunk = it->unit;
            // An activation goes to the next chunk, a gradient to the previous one.
            a.gradient = it->unit >= 0 && recv->unit >= 0 ? recv->unit < it->unit : a.to_stage < a.from_stage;
            a.same_microbatch = recv->microbatch == it->microbatch;
            a.seq = it->seq;
            a.bytes = it->bytes;
            if (!a.same_microbatch)
                ++out.mismatched;
            out.arrows.push_back(a);
        }
    }
}

PipeStepRange pipelineStepRange(const RunModel& model, int replica) {
    PipeStepRange r;
    const int p = stagesOf(model.scenario());
    int latest = std::numeric_limits<int>::max();
    for (int s = 0; s < p; ++s) {
        const int rank = replica * p + s;
        if (rank >= model.world()) {
            latest = -1;
            break;
        }
        const RankLane& lane = model.lane(rank);
        // Depth 0 holds only Step spans, emitted when the step ends.
        latest = std::min(latest, lane.compute[0].empty() ? -1 : lane.compute[0].back().step);
        const auto& spans = lane.compute[2];
        if (spans.empty())
            continue;
        r.first = r.first < 0 ? spans.front().step : std::min(r.first, int(spans.front().step));
        r.last = std::max(r.last, int(spans.back().step));
    }
    r.latest_complete = latest == std::numeric_limits<int>::max() ? -1 : latest;
    return r;
}

int pipelineStepAt(const RunModel& model, int replica, int64_t t) {
    // Stage 0 starts every step (the first forward) and ends it (the last
    // backward), so its latest span at or before t names the step.
    const int rank = replica * stagesOf(model.scenario());
    if (rank >= model.world())
        return -1;
    const auto& spans = model.lane(rank).compute[2];
    if (spans.empty())
        return -1;
    auto it = std::upper_bound(spans.begin(), spans.end(), t,
                               [](int64_t v, const SpanRecord& s) { return v < s.t0; });
    return it == spans.begin() ? spans.front().step : std::prev(it)->step;
}

int pipelineReplicaOf(const RunModel& model, int selected_rank) {
    const int p = stagesOf(model.scenario());
    int replica = selected_rank >= 0 ? selected_rank / p : 0;
    if ((replica + 1) * p > model.world())
        replica = 0;
    return replica;
}

int pipelineShownStep(const RunModel& model, int replica, const PipeStepRange& range,
                      std::optional<int> pinned, std::optional<int64_t> cursor_ns) {
    if (pinned)
        return *pinned;
    if (cursor_ns)
        return pipelineStepAt(model, replica, *cursor_ns);
    return range.latest_complete >= 0 ? range.latest_complete : range.last;
}

} // namespace dt::app
