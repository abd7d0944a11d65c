// view_pipeline.hpp: one pipeline step, predicted (theory) above measured, on one time scale.
//
// Pipeline parallelism cuts the model into p stages (one per rank of a
// pipeline; world rank = replica * p + stage) and each step's batch into m
// microbatches. A stage computes F (forward) and B (backward; zero bubble
// splits it into Bi, the input gradient, and W, the weight gradient) per
// microbatch and chunk; activations travel stage s -> s+1 and gradients
// s+1 -> s as point-to-point Send / Recv messages.
//
// The view draws, for one step of one pipeline (the selected rank's replica,
// else replica 0):
//   theory    the scenario's schedule (pipeline_schedule.hpp) executed by the
//             unit-time simulator with the run's MEASURED mean F, B, Bi, W
//             durations (unit times F = 1, B = 2, Bi = W = 1 before any step
//             was measured), its simulated bubble and the paper's formula
//   measured  the step's real F / B / Bi / W spans per stage, an arrow from
//             each Send's start to the end of the matching Recv on the other
//             stage (matched by sender, receiver and per-direction seq), and
//             the measured bubble:
//               window   = earliest F/B/Bi/W start .. latest end of the step
//                          over the pipeline's stages
//               bubble_s = 1 - busy_s / window   (busy = the stage's spans)
//               bubble   = mean over the stages
// Both rows share one horizontal scale (ns from the start of each), so the
// measured step is as much longer than the theory as communication and
// waiting make it.
//
// Cost per frame: nothing when the model did not change (the step's blocks,
// arrows and the theory are cached); after new events, a binary search per
// stage for the step's spans and one hash lookup per Send. The run-wide mean
// durations are recomputed only when a new step completes.
#pragma once

#include "dtlab/pipeline_schedule.hpp"
#include "views/view.hpp"
#include "views/view_inputs.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dt::app {

// Why the view has nothing to draw (pure; tests check it).
enum class PipeEmpty {
    None,
    NoRun,        // nothing opened
    NotPipeline,  // [strategy] kind is not "pipeline", or [topology] stages < 2
};
[[nodiscard]] PipeEmpty pipelineEmpty(const ViewInputs& inputs);

// The run's shape as the schedule generators take it.
[[nodiscard]] PipelineShape pipelineShapeOf(const Scenario& scenario);

// Mean measured span per (microbatch, chunk), in ns; 0 = none seen. Step 0 (a
// warm-up) is left out once a later step has spans, as the summary does.
struct PipeMeans {
    double forward_ns = 0, backward_ns = 0, backward_input_ns = 0, backward_weight_ns = 0;
    int spans = 0;
};
[[nodiscard]] PipeMeans pipelineMeans(const RunModel& model);

// The predicted picture of one step (theory).
struct PipeTheory {
    std::string problem;                // why the schedule cannot run this shape; "" = fine
    bool measured_durations = false;    // true: durations in ns from PipeMeans; false: unit time
    PipeDurations durations;            // what the simulator ran with
    std::vector<PredictedSlot> slots;   // start/end in ns (measured_durations) or units
    double makespan = 0;                // same unit as the slots
    double simulated_bubble = 0;        // 1 - busy / (p x makespan)
    double formula_bubble = 0;          // bubbleTheory(schedule, shape, t_f, t_b, t_w)
    std::vector<double> stage_bubble;   // 1 - busy_s / makespan, per stage
};
[[nodiscard]] PipeTheory pipelineTheory(const Scenario& scenario, const PipeMeans& means);

// One measured compute span of the step.
struct PipeBlock {
    int stage = 0;
    EventKind kind = EventKind::Forward;  // Forward, Backward, BackwardInput, BackwardWeight
    int microbatch = -1;
    int chunk = -1;                       // global chunk id g (the span's unit)
    int64_t t0 = 0, t1 = 0;
};

// One message of the step: a Send on `from_stage` and its Recv on `to_stage`.
struct PipeArrow {
    int from_stage = 0, to_stage = 0;
    int64_t t_send = 0;       // the Send's start (posted, right after the compute that produced it)
    int64_t t_arrived = 0;    // the matching Recv's end (the data is there)
    int microbatch = -1;      // the Send's
    int chunk = -1;           // the sending chunk (the Send's unit)
    bool gradient = false;    // false: an activation to the next chunk; true: a gradient to the previous one
    bool same_microbatch = true; // the Recv matched by seq carries the same microbatch (a sanity check)
    uint64_t seq = 0;
    int64_t bytes = 0;
};

struct PipeStep {
    int replica = 0;
    int stages = 0;
    int step = -1;
    bool complete = false;           // every stage reported its Step span for this step
    int64_t t0 = 0, t1 = 0;          // the window: earliest F/B/Bi/W start .. latest end
    std::vector<PipeBlock> blocks;   // stage by stage, each in time order
    std::vector<PipeArrow> arrows;   // completed messages inside the pipeline
    std::vector<int64_t> stage_busy; // per stage: sum of F/B/Bi/W
    std::vector<double> stage_bubble;// per stage: 1 - busy / window; -1 = no span from this stage
    double bubble = -1;              // mean of stage_bubble over the stages with spans; -1 = nothing
    int open_sends = 0;              // Sends whose Recv has not completed (or not reported) yet
    int mismatched = 0;              // arrows whose two ends carry different microbatches
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

class PipelineView : public View {
public:
    PipelineView();

    [[nodiscard]] const char* helpText() const override;
    [[nodiscard]] bool isEmpty(const AppContext& context) const override;
    void drawEmptyState(AppContext& context) override;
    void drawContent(AppContext& context) override;

    void draw(const ViewInputs& inputs);
    // Window height that shows both grids of `stages` rows at the current font (the layout uses it).
    [[nodiscard]] static float preferredHeight(int stages);

    // What the last draw() showed (for tests and the script).
    [[nodiscard]] PipeEmpty lastEmpty() const { return m_empty; }
    [[nodiscard]] const PipeStep& lastStep() const { return m_step; }
    [[nodiscard]] const PipeTheory& lastTheory() const { return m_theory; }
    // Show one step (false: follow the cursor's step, else the latest completed one).
    void pinStep(int step) { m_pinned = step; m_follow = false; }
    void followLatest() { m_follow = true; }
    // How often the step was measured and the theory simulated (tests check the caches).
    [[nodiscard]] int measureCount() const { return m_measure_count; }
    [[nodiscard]] int theoryCount() const { return m_theory_count; }

private:
    void refresh(const ViewInputs& inputs);
    void drawHeader(const ViewInputs& inputs);
    void drawGrids(const ViewInputs& inputs);

    PipeEmpty m_empty = PipeEmpty::NoRun;
    // Selection
    bool m_follow = true;
    int m_pinned = 0;
    int m_replica = 0;
    int m_shown_step = -1;
    PipeStepRange m_range;
    // Caches (see the cost note at the top)
    const RunModel* m_model = nullptr;
    uint64_t m_step_generation = ~0ull;
    int m_step_key = -2, m_replica_key = -1;
    int64_t m_means_begin = -1;
    int m_means_step = -2;
    bool m_means_done = false;
    PipeMeans m_means;
    bool m_theory_valid = false;
    std::string m_theory_schedule;
    PipelineShape m_theory_shape;
    PipeMeans m_theory_means;
    PipeTheory m_theory;
    PipeStep m_step;
    int m_measure_count = 0, m_theory_count = 0;
};

} // namespace dt::app
