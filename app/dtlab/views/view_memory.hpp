// view_memory.hpp: per-rank memory by category, now and at its peak.
//
// Each rank reports five memory categories at phase boundaries (parameters,
// gradients, optimizer state, activations, communication buffers), measured by
// the tracking allocator: every block is tagged with its owner where it is
// allocated (memory/tracking_allocator.hpp). Older recordings carry only the
// strategy's bookkeeping (the bytes of the tensors it says it holds); the bars
// then show that and the legend says so. A text row per rank gives the
// allocator's temporaries, step peak, start-up peak and the process's RSS.
// The view stacks them
// into one bar per rank for the latest values ("now") and one for each
// category's largest value so far ("peak"), all on one shared byte scale so
// ranks compare at a glance. A theory hook (ViewInputs::memory_theory) may add
// a third, outlined bar labelled "theory" with the expected bytes. A rank that
// offloads its optimizer (ZeRO-Offload) gets a fourth row, "host": the bytes
// it keeps in host memory, outside the device bars.
// The values are those at the views' moment (ViewInputs::state: the time
// cursor, else now): the latest sample up to it and the peak up to it.
#pragma once

#include "views/short_pane.hpp"
#include "views/view.hpp"
#include "views/view_inputs.hpp"

#include <array>
#include <optional>

namespace dt::app {

// What the bars of one rank show (pure; tests check it).
struct MemoryBars {
    std::array<int64_t, 5> now{};  // latest value per category (kMemoryCategories order)
    std::array<int64_t, 5> peak{}; // largest value per category
    std::optional<std::array<int64_t, 5>> theory;
    bool any = false;             // the rank reported at least one category
    double allocator_live = -1.0; // MemLive / MemPeak counters, -1 when not reported
    double allocator_peak = -1.0;
    int64_t host_now = -1; // MemHost (offload_optimizer): bytes in host memory, -1 when not reported
    int64_t host_peak = -1;
    bool measured = false;         // now/peak come from the allocator's owner tags
    double temporaries_now = -1.0; // the allocator's sixth tag, -1 when not reported
    double temporaries_peak = -1.0;
    double startup_peak = -1.0; // the allocator's peak during set-up, -1 when not reported
    double rss = -1.0;          // the process's resident set, -1 when not reported
    // The rank's state at the views' moment (ViewInputs::ranks): a killed,
    // failed or restarting rank's bars are its last report, drawn faded.
    std::optional<RankState> state;
    [[nodiscard]] bool gone() const {
        return state && (*state == RankState::Killed || *state == RankState::Failed ||
                         *state == RankState::Restarting);
    }

    [[nodiscard]] static int64_t total(const std::array<int64_t, 5>& parts);
};
[[nodiscard]] MemoryBars memoryBars(const ViewInputs& inputs, int rank);

class MemoryView : public View {
  public:
    MemoryView();

    [[nodiscard]] const char* helpText() const override;
    [[nodiscard]] LayoutPlace layoutPlace(const LayoutContext& context) const override;
    [[nodiscard]] bool isEmpty(const ViewInputs& inputs) const override;
    void drawEmptyState(const ViewInputs& inputs) override;
    void drawContent(const ViewInputs& inputs) override;
    // Every rank's "now" bar, and how many of them the last draw showed whole.
    [[nodiscard]] std::optional<ShownContent> shownContent() const override { return m_shown; }
    // Its bars scroll inside a child region as tall as the window: what its content
    // needs in full, past that, for the layout (and the rows a short pane left out).
    [[nodiscard]] float heightSavedByCompacting() const override { return m_pane.savedPx(); }

    [[nodiscard]] static bool hasData(const ViewInputs& inputs);

  private:
    void drawLegend(const ViewInputs& inputs); // the help marker and the category swatches
    // [model] quantize: the model's size shipped with integer Linear weights (theory).
    void drawQuantizedSize(const Scenario& scenario);
    // ZeRO / FSDP runs: one rank's parameters, gradients and optimizer state as
    // large bars, each on its own scale (full width = one DDP replica), the
    // formula's target marked on each, activations beside them, and the ZeRO
    // ladder for the same model (theory).
    void drawModelState(const ViewInputs& inputs, const ModelStateReference& ref, const MemoryBars& bars,
                        int rank);

    std::optional<ShownContent> m_shown;
    ShortPane m_pane;
    bool m_compact = false; // a short pane: one "now" bar per rank (peak, theory, alloc on hover)
};

} // namespace dt::app
