// view_topology.hpp: every rank as a tile, with its state, and the fault buttons.
//
// A tile shows the rank's state (colour + word: starting, running, paused,
// hung, killed, failed, finished), its completed steps, host and process id,
// last loss and step time, and an injected delay. Per-rank buttons:
//   Kill     SIGKILL: the process dies at once
//   Hang     SIGSTOP: the process freezes (its peers block in the next collective)
//   Resume   SIGCONT: a hung rank continues
//   Slow     adds a stated delay to each of its steps (0..1000 ms, Apply)
//   Restart  disabled: needs a fault-tolerant strategy (quorum), not plain DDP
// Clicking a tile selects the rank (shared with the timeline and event log);
// the details panel below the tiles shows pid, host, state, step, delay and
// the errors the rank logged. In a replay every button is disabled.
// The tiles show ViewInputs::ranks: with a time cursor, each rank as it was
// there (the app fills it from runStateAt); the buttons still act on now.
//
// Layout: for now the topology is ranks only, laid out in a grid.
#pragma once

#include "dtlab/session.hpp"
#include "model/run_model.hpp"
#include "views/view.hpp"

#include <cstdint>
#include <vector>

namespace dt::app {

// Errors and warnings the ranks and the Session logged about `rank`: the
// rank's own lines and the Session's lines that name it ("SIGKILL sent to rank 1"),
// logged by until_ns (the time cursor).
[[nodiscard]] std::vector<const LogRecord*> rankErrors(const RunModel& model, int rank,
                                                       int64_t until_ns = INT64_MAX);

class TopologyView final : public View {
  public:
    TopologyView() : View("topology", "Topology") {}
    [[nodiscard]] const char* helpText() const override;
    [[nodiscard]] LayoutPlace layoutPlace(const LayoutContext& context) const override;
    [[nodiscard]] bool isEmpty(const ViewInputs& inputs) const override;
    void drawEmptyState(const ViewInputs& inputs) override;
    void drawContent(const ViewInputs& inputs) override;

  private:
    void drawTile(const ViewInputs& inputs, const RankProgress& p, float width, float height);
    void drawFaultButtons(const ViewInputs& inputs, const RankProgress& p);
    void drawSlowPopup(const ViewInputs& inputs, int rank);
    void drawDetails(const ViewInputs& inputs, int rank);
    [[nodiscard]] float& slowMs(int rank);

    std::vector<float> m_slow_ms; // the Slow slider value per rank
};

} // namespace dt::app
