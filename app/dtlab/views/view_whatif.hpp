// view_whatif.hpp: "What if": change the scenario's main knobs and rerun it,
// then compare the last two runs side by side.
//
// The knobs (model/what_if.hpp, one list in what_if_knobs.def) are those that
// mean something for the strategy: ranks, strategy, DDP's bucket size and
// overlap, microbatches, pipeline stages and schedule, FSDP's prefetch, the
// modelled link, DiLoCo's H and fragments. Each edit is validated at once, as
// dtrun would (the message under the knob); Rerun starts the changed scenario
// (the current run stops). The comparison reads both runs' summaries: step
// time, bytes per step, peak memory, bubble, final loss, steps done; the
// current run's side refreshes while it runs.
#pragma once

#include "views/view.hpp"
#include "views/view_inputs.hpp"

#include <map>
#include <string>

namespace dt::app {

class WhatIfView final : public View {
  public:
    WhatIfView();
    [[nodiscard]] const char* helpText() const override;
    [[nodiscard]] LayoutPlace layoutPlace(const LayoutContext& context) const override;
    [[nodiscard]] bool isEmpty(const ViewInputs& inputs) const override;
    void drawEmptyState(const ViewInputs& inputs) override;
    void drawContent(const ViewInputs& inputs) override;

  private:
    void drawKnobs(const ViewInputs& inputs);
    void drawComparison(const ViewInputs& inputs);

    int m_serial = -1;                   // the what-if copy the text buffers belong to
    std::map<int, std::string> m_text;   // free-text knobs being typed (by Knob)
    std::map<int, std::string> m_errors; // the last refusal per knob
};

} // namespace dt::app
