// view_diloco.hpp: DiLoCo and Streaming DiLoCo as they happen ([strategy] kind = "diloco").
//
// Every rank is a replica that trains its own copy of the model for H inner
// steps ([diloco] inner_steps) without communicating; then each fragment (a
// group of blocks; Streaming DiLoCo staggers them H / F steps apart) sends its
// pseudo-gradient (global - local), the replicas average them, and an outer
// Nesterov SGD step moves the global copy, which is mixed back into the local
// one `sync_delay` (tau) steps after the send.
//
// Drawn from the run's real events:
//   replicas   one row per rank: its last completed step (Step spans) and,
//              per fragment, the inner steps since that fragment's last
//              PseudoGradient send out of the steps between two of its syncs
//              (a progress bar); its modelled link (RankProgress: link_mbit_s,
//              link_latency_ms; a replay shows the scenario's [network])
//   schedule   a strip over steps, one lane per fragment (its own colour): the
//              shown rank's real PseudoGradient sends (triangles) and OuterStep
//              applies (dots), joined by a bar: the sync delay; above each
//              lane, faintly and labelled "theory", the schedule of
//              diloco_schedule.hpp (sendsAfterStep), applied tau steps later
//   two copies the global (outer) parameters and the local (inner) ones per
//              fragment: 4 bytes x fragment_numel each (dilocoTheory), the
//              outer momentum (same size), the outer steps taken (OuterStep
//              spans: the latest one's value), the bytes one sync sends (theory) and
//              whether an exchange is in flight
//   bytes      cumulative BytesSent of the shown rank against steps done,
//              with two dashed theory lines: DiLoCo's schedule x
//              bytes_per_sync, and DDP (ddp_bytes_per_step x steps; tens of
//              times steeper, so it does not set the y scale and leaves the
//              plot at the top; the line above the plot gives its total)
//   link       (live runs) presets uncapped / 1 Gbit/s / 100 Mbit/s / 10 Mbit/s,
//              a bandwidth slider and a latency input; they call
//              ViewActions::setLink(-1, ...). A run that is not DiLoCo but has a
//              modelled link (scenarios/ddp_slow_link.toml) opens the view for
//              this control alone, over the empty state, so the room can watch
//              DDP stall on a slow link.
// The shown rank is the selected one, else rank 0. With a time cursor the
// view shows that moment.
//
// The state comes from model/diloco_state.hpp. Cost per frame: it is rebuilt
// only when the model, the moment or the shown rank changed; it walks each
// rank's phase spans (a few per step) once.
#pragma once

#include "model/diloco_state.hpp"
#include "views/view.hpp"
#include "views/view_inputs.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dt::app {

// Why the view has nothing to draw (pure; tests check it).
enum class DilocoEmpty {
    None,
    NoRun,     // nothing opened
    NotDiloco, // [strategy] kind is not "diloco"
};
[[nodiscard]] DilocoEmpty dilocoEmpty(const ViewInputs& inputs);

// A link the user asked for with the link control.
struct LinkRequest {
    double bandwidth_mbit_s = 0.0; // 0 = uncapped
    double latency_ms = 0.0;
};

class DilocoView : public View {
  public:
    DilocoView();

    [[nodiscard]] const char* helpText() const override;
    // Open for DiLoCo runs and for runs on a modelled link (its control is here).
    [[nodiscard]] std::optional<bool> relevantTo(const Scenario& scenario) const override;
    // The lower band, under the quorum view: a DiLoCo run as tall as
    // preferredHeight(), at most 52 % of the body (38 % when crowded); another
    // run only a compact strip for the link control.
    [[nodiscard]] LayoutPlace layoutPlace(const LayoutContext& context) const override;
    [[nodiscard]] bool isEmpty(const ViewInputs& inputs) const override;
    void drawEmptyState(const ViewInputs& inputs) override;
    void drawContent(const ViewInputs& inputs) override;

    [[nodiscard]] const DilocoViewState& lastState() const { return m_state; }
    [[nodiscard]] static float preferredHeight(int ranks, int fragments);
    // The schedule's fragment lanes, and how many of them the last draw showed whole.
    [[nodiscard]] std::optional<ShownContent> shownContent() const override { return m_shown_content; }

  private:
    // The link presets, bandwidth slider and latency input of a live run; a
    // choice calls setLink(-1, ...) for every rank.
    void drawLinkControl(const ViewInputs& inputs);
    void drawReplicas(const ViewInputs& inputs);
    void drawSchedule(const ViewInputs& inputs);
    void drawCopies();
    void drawBytes();

    DilocoViewState m_state;
    const RunModel* m_model = nullptr; // the cache key: model, generation, moment, shown rank
    uint64_t m_generation = ~uint64_t(0);
    int64_t m_t = -1;
    int m_shown = -1;
    std::optional<ShownContent> m_shown_content;
    // link control
    float m_mbit = 0.0f; // slider value (0 = uncapped)
    float m_latency = 0.0f;
    bool m_link_editing = false;
};

} // namespace dt::app
