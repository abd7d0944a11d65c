// pipeline_step.hpp: one step of a pipeline run, measured from the run's events,
// and the schedule's prediction for it (the pipeline view draws both).
//
// Pipeline parallelism cuts the model into p stages (one per rank of a
// pipeline; world rank = replica * p + stage) and each step's batch into m
// microbatches; a stage computes F, B (or Bi and W, zero bubble) per
// microbatch and chunk, and activations / gradients travel between stages as
// Send / Recv messages. From a RunModel and the scenario this computes:
//   measured   one step's F / B / Bi / W spans per stage, the messages between
//              them (each Send matched to its Recv by sender, receiver and
//              per-direction seq) and the bubble:
//                window   = earliest F/B/Bi/W start .. latest end of the step
//                bubble_s = 1 - busy_s / window, bubble = mean over the stages
//   theory     the schedule (pipeline_schedule.hpp) run by the unit-time
//              simulator with the run's measured mean durations
//   selection  which pipeline (the selected rank's) and which step (pinned,
//              the time cursor's, else the latest completed) a view shows
// Plain functions, no ImGui: tests call them on synthetic runs.
#pragma once

#include "dtlab/pipeline_schedule.hpp"
#include "model/run_model.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dt::app {

// The run's shape as the schedule generators take it.

// Mean measured span per (microbatch, chunk), in ns; 0 = none seen. Step 0 (a
// warm-up) is left out once a later step has spans, as the summary does.
struct PipeMeans {
    double forward_ns = 0, backward_ns = 0, backward_input_ns = 0, backward_weight_ns = 0;
    int spans = 0;
};
[[nodiscard]] PipeMeans pipelineMeans(const RunModel& model);

// The predicted picture of one step (theory).
struct PipeTheory {
    std::string problem;              // why the schedule cannot run this shape; "" = fine
    bool measured_durations = false;  // true: durations in ns from PipeMeans; false: unit time
    PipeDurations durations;          // what the simulator ran with
    std::vector<PredictedSlot> slots; // start/end in ns (measured_durations) or units
    double makespan = 0;              // same unit as the slots
    double simulated_bubble = 0;      // 1 - busy / (p x makespan)
    double formula_bubble = 0;        // bubbleTheory(schedule, shape, t_f, t_b, t_w)
    std::vector<double> stage_bubble; // 1 - busy_s / makespan, per stage
};
[[nodiscard]] PipeTheory pipelineTheory(const Scenario& scenario, const PipeMeans& means);

// One measured compute span of the step.
struct PipeBlock {
    int stage = 0;
    EventKind kind = EventKind::Forward; // Forward, Backward, BackwardInput, BackwardWeight
    int microbatch = -1;
    int chunk = -1; // global chunk id g (the span's unit)
    int64_t t0 = 0, t1 = 0;
};

// One message of the step: a Send on `from_stage` and its Recv on `to_stage`.
struct PipeArrow {
    int from_stage = 0, to_stage = 0;
    int64_t t_send = 0;    // the Send's start (posted, right after the compute that produced it)
    int64_t t_arrived = 0; // the matching Recv's end (the data is there)
    int microbatch = -1;   // the Send's
    int chunk = -1;        // the sending chunk (the Send's unit)
    bool gradient = false; // false: an activation to the next chunk; true: a gradient to the previous one
    bool same_microbatch = true; // the Recv matched by seq carries the same microbatch (a sanity check)
    uint64_t seq = 0;
    int64_t bytes = 0;
};

struct PipeStep {
    int replica = 0;
    int stages = 0;
    int step = -1;
    bool complete = false;            // every stage reported its Step span for this step
    int64_t t0 = 0, t1 = 0;           // the window: earliest F/B/Bi/W start .. latest end
    std::vector<PipeBlock> blocks;    // stage by stage, each in time order
    std::vector<PipeArrow> arrows;    // completed messages inside the pipeline
    std::vector<int64_t> stage_busy;  // per stage: sum of F/B/Bi/W
    std::vector<double> stage_bubble; // per stage: 1 - busy / window; -1 = no span from this stage
    double bubble = -1;               // mean of stage_bubble over the stages with spans; -1 = nothing
    int open_sends = 0;               // Sends whose Recv has not completed (or not reported) yet
    int mismatched = 0;               // arrows whose two ends carry different microbatches
};
// The step's spans and messages on replica `replica`'s stages (pure; tests check it).
[[nodiscard]] PipeStep measurePipelineStep(const RunModel& model, int replica, int step);
// Same, reusing `out`'s vectors (no allocation once they are big enough).
void measurePipelineStep(const RunModel& model, int replica, int step, PipeStep& out);

// Steps of a replica: the latest step every stage completed (-1 = none), the
// first and last step with any F/B span on stage 0, and the step a time falls in.
struct PipeStepRange {
    int first = -1, last = -1, latest_complete = -1;
};
[[nodiscard]] PipeStepRange pipelineStepRange(const RunModel& model, int replica);
[[nodiscard]] int pipelineStepAt(const RunModel& model, int replica, int64_t t_ns);

// The pipeline shown for a selected rank (-1 = none): that rank's replica,
// else replica 0 (also when that replica's stages are not all in the world).
[[nodiscard]] int pipelineReplicaOf(const RunModel& model, int selected_rank);

// The step shown: `pinned` when set, else the step at the time cursor, else
// the latest step every stage completed, else the last one in progress (-1 = none).
[[nodiscard]] int pipelineShownStep(const RunModel& model, int replica, const PipeStepRange& range,
                                    std::optional<int> pinned, std::optional<int64_t> cursor_ns);

} // namespace dt::app
