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
//   link       (drawn by drawLinkControl, from the app: view_glue.cpp) presets
//              uncapped / 1 Gbit/s / 100 Mbit/s / 10 Mbit/s, a bandwidth
//              slider and a latency input; they call Session::setLink(-1, ...)
// The shown rank is the selected one, else rank 0. With a time cursor the
// view shows that moment.
//
// Cost per frame: the state is rebuilt only when the model, the moment or the
// shown rank changed; it walks each rank's phase spans (a few per step) once.
#pragma once

#include "views/view.hpp"
#include "views/view_inputs.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dt::app {

// Why the view has nothing to draw (pure; tests check it).
enum class DilocoEmpty {
    None,
    NoRun,      // nothing opened
    NotDiloco,  // [strategy] kind is not "diloco"
};
[[nodiscard]] DilocoEmpty dilocoEmpty(const ViewInputs& inputs);

// The steps after which fragment f sends, in [0, steps) (diloco_schedule.hpp's
// sendsAfterStep), plus the run's last step for every fragment that trained
// since its previous send (the strategy syncs everything at the end).
[[nodiscard]] std::vector<int> dilocoTheorySends(int fragment, int inner_steps, int fragments, int steps);

// Cumulative bytes one rank has sent after step s (index s = 0 .. steps-1)
// under the DiLoCo schedule (bytes_per_sync per fragment send) and under DDP.
struct DilocoBytesTheory {
    std::vector<double> diloco;   // index = step
    std::vector<double> ddp;      // index = step
};
[[nodiscard]] DilocoBytesTheory dilocoBytesTheory(const Scenario& scenario, int steps);

// One replica row.
struct DilocoReplica {
    int rank = 0;
    int last_step = -1;                 // last completed step (-1 = none yet)
    std::vector<int> since_sync;        // per fragment: inner steps since its last send
    std::vector<int> period;            // per fragment: steps between its last send (or the start) and its next one
    double link_mbit_s = 0.0;           // 0 = uncapped
    double link_latency_ms = 0.0;
};

// One fragment's send (PseudoGradient) and its apply (OuterStep) on the shown rank.
struct DilocoSync {
    int fragment = 0;
    int send_step = -1;
    int apply_step = -1;                // -1 = not applied yet (in flight)
    int64_t send_t = 0;                 // ns: end of the PseudoGradient span
    int64_t apply_t = 0;                // ns: end of the OuterStep span
    int64_t bytes = 0;                  // encoded bytes of the pseudo-gradient
};

struct DilocoFragment {
    int fragment = 0;
    int64_t numel = 0;                  // parameters (dilocoTheory)
    int64_t bytes_per_sync = 0;         // bytes one rank sends per sync (theory)
    int outer_steps = 0;                // OuterStep spans of this fragment on the shown rank (= the latest one's value)
    bool in_flight = false;             // sent, not applied yet
    int next_apply_step = -1;           // in flight: send step + tau
};

struct DilocoViewState {
    bool diloco = false;
    bool fault_tolerant = false;        // [fault_tolerance] enabled: heals add to the bytes sent
    int inner_steps = 1, fragments = 1, sync_delay = 0, steps = 0;
    int shown_rank = 0;
    int current_step = -1;              // the shown rank's last completed step
    std::vector<DilocoReplica> replicas;
    std::vector<DilocoFragment> frags;
    std::vector<DilocoSync> syncs;      // the shown rank's, in time order
    std::vector<double> bytes_x, bytes_y; // the shown rank's cumulative BytesSent against steps done (step + 1)
    int64_t ddp_bytes_per_step = 0;
};

// The state at time t_ns from the run (pure; tests check it). `ranks` may be
// null (a replay: links then come from the scenario's [network]).
[[nodiscard]] DilocoViewState dilocoViewState(const RunModel& model, const std::vector<RankProgress>* ranks,
                                              int shown_rank, int64_t t_ns);

// A link the user asked for with the link control.
struct LinkRequest {
    double bandwidth_mbit_s = 0.0;      // 0 = uncapped
    double latency_ms = 0.0;
};

class DilocoView : public View {
public:
    DilocoView();

    [[nodiscard]] const char* helpText() const override;
    [[nodiscard]] bool isEmpty(const AppContext&) const override { return false; }
    void drawEmptyState(AppContext& context) override;   // view_glue.cpp
    void drawContent(AppContext& context) override;      // view_glue.cpp: the link control, then draw()

    // `controls` (may be empty) is drawn under the header line: the app's link control.
    void draw(const ViewInputs& inputs, const std::function<void()>& controls = {});
    // The link presets, bandwidth slider and latency input (live runs). `button`
    // draws a button and says whether it was pressed (the app's button, so a
    // script can press it). Returns the link the user asked for, if any.
    std::optional<LinkRequest> drawLinkControl(const std::vector<RankProgress>& ranks,
                                               const std::function<bool(const char*)>& button);
    [[nodiscard]] const DilocoViewState& lastState() const { return m_state; }
    [[nodiscard]] static float preferredHeight(int ranks, int fragments);

private:
    void drawReplicas(const ViewInputs& inputs);
    void drawSchedule(const ViewInputs& inputs);
    void drawCopies();
    void drawBytes();

    DilocoViewState m_state;
    const RunModel* m_model = nullptr;  // the cache key: model, generation, moment, shown rank
    uint64_t m_generation = ~uint64_t(0);
    int64_t m_t = -1;
    int m_shown = -1;
    // link control
    float m_mbit = 0.0f;                // slider value (0 = uncapped)
    float m_latency = 0.0f;
    bool m_link_editing = false;
};

} // namespace dt::app
