// view_fsdp_flow.hpp: FSDP's units in a row, as one rank sees them at one moment.
//
// FSDP splits the model into units (TinyGPT: the root unit -1 = embeddings,
// final norm and head, then blocks 0..L-1). Each rank keeps 1/N of every
// unit's parameters (its shard). Around each use a unit is made whole and
// dropped again:
//   forward   all-gather -> materialized -> forward compute -> freed
//   backward  all-gather -> materialized -> backward compute -> reduce-scatter
//             of its gradients -> freed
// The root unit stays materialized from its forward to its backward.
//
// The view draws one tile per unit for the selected rank (or rank 0) at the
// view's moment: the shared time cursor if set (a click in the timeline, the
// view's slider), else now (live) or the end of the run (replay). A tile's
// residency comes from the latest UnitMaterialized / UnitFreed event at or
// before that moment; its lit phases from spans that contain the moment
// (all-gather / reduce-scatter Works, forward / backward / recompute spans).
// Everything is measured; the bytes of a unit that has no event yet, and the
// peak line, come from sharding_theory.hpp and say "theory".
//
// Cost per frame: a binary search per row plus a short walk back (the spans
// that still cover the moment), and a walk back over the unit events until
// every unit is resolved (about one step's worth).
#pragma once

#include "views/view.hpp"
#include "views/view_inputs.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dt::app {

// True for the strategies that shard parameters (and so have units to gather).
[[nodiscard]] bool shardsParameters(StrategyKind strategy_kind);

// Why the view has nothing to draw (pure; tests check it).
enum class FlowEmpty { None, NoRun, NotSharded };
[[nodiscard]] FlowEmpty fsdpFlowEmpty(const ViewInputs& inputs);

// Where a unit's parameters are on this rank at the moment.
enum class Residency : uint8_t {
    Sharded,      // only this rank's 1/N (no unit event yet)
    Materialized, // full parameters alive (the latest event is UnitMaterialized)
    Freed,        // back to the shard (the latest event is UnitFreed)
};

struct FlowTile {
    int unit = -1; // -1 root, 0.. blocks
    Residency residency = Residency::Sharded;
    int gathered_for = -1;         // Materialized: 0 forward, 1 backward (the event's value)
    int64_t full_bytes = 0;        // unsharded bytes from the latest unit event (measured); 0 = none yet
    int64_t theory_full_bytes = 0; // 4 B x padded numel (sharding_theory.hpp), shown as theory
    int64_t since_ns = 0;          // time of the latest unit event
    // Phases in progress at the moment (from spans that contain it).
    bool all_gather = false;        // a Work started and not completed
    bool all_gather_queued = false; // issued (prefetch) and waiting for the communicator
    bool reduce_scatter = false;
    bool reduce_scatter_queued = false;
    bool forward = false;
    bool backward = false;
    bool recompute = false;
    uint64_t all_gather_seq = 0, reduce_scatter_seq = 0;
    int64_t all_gather_t0 = 0, reduce_scatter_t0 = 0;

    [[nodiscard]] bool computing() const { return forward || backward || recompute; }
};

struct FlowState {
    int rank = 0;
    int shards = 1;                 // N: ranks one unit is sharded over
    int64_t t_ns = 0;               // the moment shown
    int step = -1;                  // the step span containing the moment, else the latest unit event's
    int microbatch = -1;            // from the latest unit event of that step
    std::vector<FlowTile> tiles;    // root first (when the model has one), then units 0..
    double materialized_bytes = -1; // MemParamsMaterialized counter at the moment; -1 = none
    bool any_unit_events = false;   // the rank reported at least one unit event by the moment
    [[nodiscard]] const FlowTile* tile(int unit) const;
};

// The units of one rank at time t_ns, from the run's events (pure; tests check it).
[[nodiscard]] FlowState fsdpFlowState(const RunModel& model, int rank, int64_t t_ns);

class FsdpFlowView : public View {
  public:
    FsdpFlowView();

    [[nodiscard]] const char* helpText() const override;
    // Open for the strategies that shard parameters (shardsParameters).
    [[nodiscard]] std::optional<bool> relevantTo(const Scenario& scenario) const override;
    // The band under the timeline, as tall as preferredHeight() (at most 40 % of the body).
    [[nodiscard]] LayoutPlace layoutPlace(const LayoutContext& context) const override;
    [[nodiscard]] bool isEmpty(const ViewInputs& inputs) const override;
    void drawEmptyState(const ViewInputs& inputs) override;
    void drawContent(const ViewInputs& inputs) override;

    // Window height that shows the header, the tiles and the footer at the current font (the layout uses it).
    [[nodiscard]] static float preferredHeight();
    // The state drawn by the last draw() (for tests and the script).
    [[nodiscard]] const FlowState& lastState() const { return m_state; }
    [[nodiscard]] FlowEmpty lastEmpty() const { return m_empty; }

  private:
    void drawHeader(const ViewInputs& inputs);
    void drawTiles(const ViewInputs& inputs);

    FlowState m_state;
    FlowEmpty m_empty = FlowEmpty::NoRun;
};

} // namespace dt::app
