// view_swarm.hpp: SWARM parallelism as it happens ([strategy] kind = "swarm").
//
// T trainer ranks own the data and the loss; each of the S stages is served
// by K server ranks (dtlab/swarm_layout.hpp: ranks 0..T-1 are trainers, rank
// T + s K + k is server k of stage s). Drawn from the run's real events:
//   grid       the trainers as boxes in a left column, then one column per
//              stage with its K servers ("stage s / server k / rank r"): the
//              server's state (the app's per-rank state: running, hung,
//              killed, restarting, ...), forward / backward calls served,
//              inner steps, starts (SwarmJoined) and its stage's last DiLoCo
//              round (SwarmOuterSync; "led" when this server computed it)
//   routes     a line per trainer -> server route, as thick as its calls so
//              far (SwarmRoute.calls, dtlab/swarm_measure.hpp), in the
//              trainer's colour; each trainer's latest microbatch (its calls
//              up to the moment) drawn bright, its very latest call with a
//              dot, a call sent again after a re-route in red
//   re-route   a SwarmReroute in the last kRerouteWindowNs before the moment:
//              the server the call left outlined red, and one sentence
//              ("trainer 1 re-routed microbatch 2 of step 7 away from rank 3")
//   totals     microbatches done / expected, re-routes (connection lost / no
//              answer in time), outer rounds, samples/s, and per server death
//              the gradients lost with it and death -> re-routed call (ms)
//   buttons    (live runs) Kill, Hang / Resume, Slow, Restart on the selected
//              server (a click on a box selects it; rank T when no server is
//              selected), through ViewActions like the topology tiles
// With a time cursor the view shows that moment (events up to it).
//
// Cost: the measurement (measureSwarm over the SWARM events, the trainers'
// steps, the servers' inner steps and the deaths) is redone when the model,
// the cursor or the run changed, at most every kRefreshSeconds of wall time
// while a run streams in; the grid is drawn from it every frame.
#pragma once

#include "dtlab/swarm_layout.hpp"
#include "dtlab/swarm_measure.hpp"
#include "views/view.hpp"
#include "views/view_inputs.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dt::app {

// Why the view has nothing to draw (pure; tests check it).
enum class SwarmEmpty {
    None,
    NoRun,    // nothing opened
    NotSwarm, // [strategy] kind is not "swarm"
    NoEvents, // a swarm run with no SWARM event yet (no server has joined)
};
[[nodiscard]] SwarmEmpty swarmEmpty(const ViewInputs& inputs);

// A re-route is highlighted this long after it happened.
inline constexpr int64_t kSwarmRerouteWindowNs = 2'000'000'000LL;

// -----------------------------------------------------------------------------
// The grid's geometry (pure; tests check that boxes stay inside and never overlap)
// -----------------------------------------------------------------------------

struct SwarmBox {
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    [[nodiscard]] float width() const { return x1 - x0; }
    [[nodiscard]] float height() const { return y1 - y0; }
};

// Text lines a server box shows at most: title, state and starts, calls, inner steps, round.
inline constexpr int kSwarmServerLines = 5;

struct SwarmGrid {
    std::vector<SwarmBox> trainers; // index t
    std::vector<SwarmBox> servers;  // layout order: index s * K + k
    std::vector<SwarmBox> columns;  // the trainers' column, then one per stage (the stage labels above them)
    int server_lines = 0;           // text lines that fit in a server box (0..kSwarmServerLines)
    int trainer_lines = 0;          // text lines that fit in a trainer box (0..2)
};

// Boxes for T trainers and S stages of K servers inside `area`, for text
// lines `line_h` px high and a font `font_px` px (gaps and widths follow the
// font). Every box lies inside `area` and no two overlap; columns go left to
// right (trainers, stage 0, ..., stage S-1), gaps between them for the routes.
[[nodiscard]] SwarmGrid swarmGrid(int trainers, int stages, int servers_per_stage, SwarmBox area,
                                  float line_h, float font_px);

// -----------------------------------------------------------------------------
// The state at a moment (pure; tests check it)
// -----------------------------------------------------------------------------

// A stage's last DiLoCo round among its servers (SwarmOuterSync).
struct SwarmStageRound {
    int64_t round = -1;   // -1 = none yet
    int averaged = 0;     // servers averaged (0: no result came)
    int leader = -1;      // the rank that led it (seq 1), -1 = none seen
    bool waiting = false; // a trainer found no live server for the stage and waits (SwarmStageEmpty)
};

// One call of a trainer's latest microbatch (the bright route).
struct SwarmLiveCall {
    int trainer = -1;
    int server_rank = -1;
    int stage = -1;
    bool backward = false;
    bool latest = false;   // the trainer's latest call
    bool rerouted = false; // it was sent again after failing on another server, within kSwarmRerouteWindowNs
};

struct SwarmViewState {
    SwarmLayout layout;
    int64_t t_ns = 0;     // the moment shown
    SwarmMeasure measure; // up to the moment
    std::vector<SwarmStageRound> stages;
    // per server (layout order): the round of its last SwarmOuterSync (-1 = none), and whether it led it
    std::vector<int64_t> last_round;
    std::vector<bool> led_last;
    std::vector<SwarmLiveCall> live;   // each trainer's latest microbatch's calls
    std::vector<bool> rerouted_from;   // per server: a call left it within kSwarmRerouteWindowNs
    std::optional<Event> reroute;      // the latest SwarmReroute within that window
    int recent_reroutes = 0;           // how many in that window
    int64_t expected_microbatches = 0; // T x [run] steps x [strategy] microbatches
    int64_t max_route_calls = 0;       // the busiest route's calls (thickness scale)
};

// Every event measureSwarm reads, up to t_ns, in time order: the SWARM events
// (a span once it ended), the trainers' Step spans, the servers' Optimizer
// spans (inner steps), ProcessExited and FaultInjected.
[[nodiscard]] std::vector<Event> swarmMeasureEvents(const RunModel& model, int64_t t_ns);
[[nodiscard]] SwarmViewState swarmViewState(const RunModel& model, int64_t t_ns);

class SwarmView : public View {
  public:
    SwarmView();

    [[nodiscard]] const char* helpText() const override;
    // Open for SWARM runs ([strategy] kind = "swarm").
    [[nodiscard]] std::optional<bool> relevantTo(const Scenario& scenario) const override;
    // The lower band, as tall as preferredHeight() for the scenario's trainers and servers.
    [[nodiscard]] LayoutPlace layoutPlace(const LayoutContext& context) const override;
    [[nodiscard]] bool isEmpty(const ViewInputs& inputs) const override;
    void drawEmptyState(const ViewInputs& inputs) override;
    void drawContent(const ViewInputs& inputs) override;

    // Height that shows the grid with full server boxes at the current font.
    [[nodiscard]] static float preferredHeight(int trainers, int servers_per_stage);
    [[nodiscard]] const SwarmViewState& lastState() const { return m_state; }
    [[nodiscard]] const SwarmGrid& lastGrid() const { return m_grid; }
    [[nodiscard]] int measureCount() const { return m_measure_count; }

    static constexpr double kRefreshSeconds = 0.2;

  private:
    void refresh(const ViewInputs& inputs);
    void drawHeader(const ViewInputs& inputs);
    void drawFaultButtons(const ViewInputs& inputs, int server_rank);
    void drawSlowPopup(const ViewInputs& inputs, int server_rank);
    void drawGrid(const ViewInputs& inputs, int selected_server, float height);
    void drawReroute();
    void drawTotals(const ViewInputs& inputs);

    SwarmViewState m_state;
    SwarmGrid m_grid;
    // the cache key: model, run, its start, its generation, the cursor, the moment
    const RunModel* m_model = nullptr;
    int m_run_serial = -1;
    int64_t m_t_begin = -1;
    uint64_t m_generation = ~uint64_t(0);
    std::optional<int64_t> m_cursor;
    int64_t m_t = -1;
    double m_refreshed_at = -1e9; // ImGui::GetTime() of the last measurement
    int m_measure_count = 0;
    float m_slow_ms = 200.0f; // the Slow popup's value
};

} // namespace dt::app
