// view_autograd.hpp: "why does the all-reduce happen during backprop",
// answered by the model itself: its real autograd graph (dtlab/autograd_graph.hpp)
// in the order LibTorch ran it, with the moment each gradient is ready.
//
// The strip shows every backward node as a cell, left to right and row by
// row in the measured execution order: backward functions in grey, each
// parameter's AccumulateGrad leaf in its bucket's colour (DDP) or its unit's
// (ZeRO / FSDP). Where a bucket's (or unit's) last gradient becomes ready a
// marker says that its hook launches the collective there, and how much of
// backward is still to run. Under the strip, per bucket, the same from the
// run itself: when its all-reduce was launched, measured (the DDP buckets
// view's numbers). Hover a cell for its node.
#pragma once

#include "views/view.hpp"
#include "views/view_inputs.hpp"

#include <string>
#include <vector>

namespace dt::app {

// A bucket (DDP) or a unit (ZeRO / FSDP) of parameters whose collective one
// hook launches, and where in the measured execution order it can launch.
struct AutogradGroup {
    std::string label;     // "bucket 0", "block 3", "root"
    int launch_order = -1; // execution position of its last leaf (DDP: and of every earlier bucket's)
    std::vector<int> params;
};
// Step 1-2 of the view (pure; tests check it). Empty for the other strategies.
[[nodiscard]] std::vector<AutogradGroup> autogradGroups(const AutogradGraph& graph, const Scenario& scenario);

class AutogradView final : public View {
  public:
    AutogradView();
    [[nodiscard]] const char* helpText() const override;
    [[nodiscard]] LayoutPlace layoutPlace(const LayoutContext& context) const override;
    [[nodiscard]] bool isEmpty(const ViewInputs& inputs) const override;
    void drawEmptyState(const ViewInputs& inputs) override;
    void drawContent(const ViewInputs& inputs) override;
};

} // namespace dt::app
