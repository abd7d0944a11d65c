// view_metrics.hpp: training curves per rank over steps.
//
// Four plots, each one line per rank:
//   loss                 the LossValue counter
//   step time (ms)       the StepTimeMs counter
//   throughput           tokens/s for tiny_gpt (batch_per_rank * context * ranks
//                        / step time), samples/s for mlp (batch_per_rank * ranks
//                        / step time): the whole job's rate as seen from that rank
//   bytes on the wire    per step: differences of the cumulative BytesSent counter
// With [run] eval_every the loss plot adds rank 0's eval loss (EvalLoss) and,
// under QAT, the same weights in fp32 (EvalLossFp32).
// A line breaks where the rank has no data: across steps it never reported (it
// was dead, hung, or healed straight to a later step) and between two of its
// incarnations (a restarted replica); a step done twice keeps its latest value.
// The series are rebuilt only when the model or the time cursor changes
// (RunModel::generation). With a cursor the lines stop at it (the x axis keeps
// the whole run's scale), a line in the cursor's colour marks its step, and
// a line above the plots gives every rank's values there.
#pragma once

#include "views/view.hpp"
#include "views/view_inputs.hpp"
#include "widgets/plot.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dt::app {

struct MetricsSeries {
    std::vector<PlotSeries> loss, step_ms, throughput, wire_bytes;
    std::vector<PlotSeries> eval; // [run] eval_every: rank 0's eval loss (and, under QAT, in fp32)
    bool tokens = true;           // throughput unit: tokens/s (tiny_gpt) or samples/s (mlp)
};
// The four plots' series from a model (pure; tests check it).
// Sorts one rank's series by step, keeps each step's latest point, and puts a
// NaN (a break in the line) between two points more than one step apart or of
// different incarnations (incarnation[i]: point i's, in time order).
void breakAtGaps(PlotSeries& series, const std::vector<int>& incarnation);
// The four plots' series from a model, with the points reported by until_ns (pure; tests check it).
[[nodiscard]] MetricsSeries buildMetricsSeries(const RunModel& model, int64_t until_ns = INT64_MAX);
// "at the cursor: rank 0 loss 2.310, 45 ms/step | rank 1 killed | ...": each rank's state and values
// at the views' moment (ViewInputs::ranks); "" without a cursor (pure).
[[nodiscard]] std::string metricsAtCursorLine(const ViewInputs& inputs);

class MetricsView : public View {
  public:
    MetricsView();

    [[nodiscard]] const char* helpText() const override;
    [[nodiscard]] LayoutPlace layoutPlace(const LayoutContext& context) const override;
    [[nodiscard]] bool isEmpty(const ViewInputs& inputs) const override;
    void drawEmptyState(const ViewInputs& inputs) override;
    void drawContent(const ViewInputs& inputs) override;

    [[nodiscard]] static bool hasData(const ViewInputs& inputs);

  private:
    void drawHeader(); // the help marker and the hint line

    MetricsSeries m_series;
    const RunModel* m_model = nullptr;
    uint64_t m_generation = ~uint64_t(0);
    int64_t m_until = INT64_MAX; // the cursor m_series was cut at
    double m_last_step = NAN;    // the whole run's last step (the x scale while cut)
};

} // namespace dt::app
