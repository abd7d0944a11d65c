// view_bandwidth.hpp: the backend comparison ([strategy] kind = "collectives",
// scenarios/backends_compare.toml) as a plot: bus bandwidth per message size,
// one line per (backend, op), measured, beside the cost model fitted to the
// same points and drawn dashed, labelled theory.
//
// Bus bandwidth = factor x S / t (collective_cost.hpp): what each rank's link
// carried; the fitted model t = alpha + factor x S / B gives the curve
// factor x S / (alpha + factor x S / B), which rises from alpha-bound small
// messages to B for large ones. The points come from the ranks' BusBandwidth
// counters as they arrive (measureBusBandwidth, the same code as the
// summary), recomputed only when new events came in.
#pragma once

#include "dtlab/collective_cost.hpp"
#include "views/view.hpp"
#include "views/view_inputs.hpp"

#include <cstdint>
#include <optional>

namespace dt::app {

enum class BandwidthEmpty { None, NoRun, NotComparison, NoPointYet };
[[nodiscard]] BandwidthEmpty bandwidthEmpty(const ViewInputs& inputs);

class BandwidthView final : public View {
  public:
    BandwidthView() : View("bandwidth", "Bandwidth") { open = false; }
    [[nodiscard]] const char* helpText() const override;
    // Open for the backend comparison ([strategy] kind = "collectives").
    [[nodiscard]] std::optional<bool> relevantTo(const Scenario& scenario) const override;
    // The band under the timeline, 42 % of the body.
    [[nodiscard]] LayoutPlace layoutPlace(const LayoutContext& context) const override;
    [[nodiscard]] bool isEmpty(const ViewInputs& inputs) const override;
    void drawEmptyState(const ViewInputs& inputs) override;
    void drawContent(const ViewInputs& inputs) override;

    [[nodiscard]] const BusBandwidthMeasure& lastMeasure() const { return m_measure; }

  private:
    BusBandwidthMeasure m_measure;
    uint64_t m_generation = ~uint64_t(0);
};

} // namespace dt::app
