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
// waiting make it. Both are computed by model/pipeline_step.hpp; this view
// chooses when to recompute them (below) and draws them.
//
// Cost per frame: nothing when the model did not change (the step's blocks,
// arrows and the theory are cached); after new events, a binary search per
// stage for the step's spans and one hash lookup per Send. The run-wide mean
// durations are recomputed only when a new step completes.
#pragma once

#include "model/pipeline_step.hpp"
#include "views/short_pane.hpp"
#include "views/view.hpp"
#include "views/view_inputs.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dt::app {

// Why the view has nothing to draw (pure; tests check it).
enum class PipeEmpty {
    None,
    NoRun,       // nothing opened
    NotPipeline, // [strategy] kind is not "pipeline", or [topology] stages < 2
};
[[nodiscard]] PipeEmpty pipelineEmpty(const ViewInputs& inputs);

class PipelineView : public View {
  public:
    PipelineView();

    [[nodiscard]] const char* helpText() const override;
    // Open for pipeline runs ([strategy] kind = "pipeline").
    [[nodiscard]] std::optional<bool> relevantTo(const Scenario& scenario) const override;
    // The lower band, as tall as preferredHeight() for the scenario's stages (at most half the body).
    [[nodiscard]] LayoutPlace layoutPlace(const LayoutContext& context) const override;
    [[nodiscard]] bool isEmpty(const ViewInputs& inputs) const override;
    void drawEmptyState(const ViewInputs& inputs) override;
    void drawContent(const ViewInputs& inputs) override;

    // Window height that shows both grids of `stages` rows at the current font (the layout uses it).
    [[nodiscard]] static float preferredHeight(int stages);

    // The measured grid's stage rows with blocks, and how many of them the last draw showed.
    [[nodiscard]] std::optional<ShownContent> shownContent() const override { return m_shown; }
    // A pane shorter than its content: short legend and titles (the rest on hover), the
    // grids' rows as tall as the height left allows.
    [[nodiscard]] float heightSavedByCompacting() const override { return m_pane.savedPx(); }

    // What the last draw() showed (for tests and the script).
    [[nodiscard]] PipeEmpty lastEmpty() const { return m_empty; }
    [[nodiscard]] const PipeStep& lastStep() const { return m_step; }
    [[nodiscard]] const PipeTheory& lastTheory() const { return m_theory; }
    // Show one step (false: follow the cursor's step, else the latest completed one).
    void pinStep(int step) {
        m_pinned = step;
        m_follow = false;
    }
    void followLatest() { m_follow = true; }
    // How often the step was measured and the theory simulated (tests check the caches).
    [[nodiscard]] int measureCount() const { return m_measure_count; }
    [[nodiscard]] int theoryCount() const { return m_theory_count; }

  private:
    void refresh(const ViewInputs& inputs);
    void drawHeader(const ViewInputs& inputs);
    void drawGrids(const ViewInputs& inputs);

    PipeEmpty m_empty = PipeEmpty::NoRun;
    std::optional<ShownContent> m_shown;
    ShortPane m_pane;
    bool m_compact = false; // this frame draws the short pane (m_pane.begin())
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
