// view_topology.hpp: every rank as a tile, with its state, and the fault buttons.
//
// A tile shows the rank's state (colour + word: starting, running, paused,
// hung, killed, failed, finished; BLOCKED for a live rank waiting in a
// collective for longer than kCollectiveStuckAfterNs), its completed steps,
// host and process id, last loss, its step time while it trains (a blocked,
// hung or dead rank's last step time is not shown as current), and an injected
// delay or what it waits in. Per-rank buttons:
//   Kill     SIGKILL: the process dies at once
//   Hang     SIGSTOP: the process freezes (its peers block in the next collective)
//   Resume   SIGCONT: a hung rank continues
//   Slow     adds a stated delay to each of its steps (0..1000 ms, Apply)
//   Restart  a dead replica of a fault-tolerant run starts again; disabled without [fault_tolerance]
// Clicking a tile selects the rank (shared with the timeline and event log);
// the details panel below the tiles shows pid, host, state, step, delay and
// the errors the rank logged. In a replay every button is disabled.
// The tiles show ViewInputs::ranks: with a time cursor, each rank as it was
// there (the app fills it from runStateAt); the buttons still act on now.
//
// Layout: ranks in a grid; replica groups of several ranks (fault tolerance)
// each start a row of their own under a header line, one failure domain each.
#pragma once

#include "dtlab/session.hpp"
#include "model/run_model.hpp"
#include "views/view.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dt::app {

// Errors and warnings the ranks and the Session logged about `rank`: the
// rank's own lines and the Session's lines that name it ("SIGKILL sent to rank 1"),
// logged by until_ns (the time cursor).
[[nodiscard]] std::vector<const LogRecord*> rankErrors(const RunModel& model, int rank,
                                                       int64_t until_ns = INT64_MAX);

// What a tile says about a rank besides its steps and loss (pure; tests check it).
struct TileStatus {
    std::string state;     // the header's word: "RUNNING", ..., "BLOCKED" or "PARTITIONED"
    bool blocked = false;  // alive, waiting in a collective for longer than kCollectiveStuckAfterNs,
                           // or partitioned from the lighthouse (waiting for a quorum it cannot get)
    std::string wait;      // "waiting in all-reduce for 9.2 s" when blocked
    std::string step_time; // "312 ms/step" while it trains (or finished); "" otherwise
};
[[nodiscard]] TileStatus tileStatus(const RunModel& model, const RankProgress& p, int64_t now_ns);

// A full tile's header: a title, long to short, and the state word at the
// right. The longest title that leaves room for the whole state word; in a
// tile too narrow for any, the shortest title with the state's first 4
// letters, or with no word (the header's colour still says the state).
// `text_width` measures a text; `padding` is kept at both ends and between.
struct TileHeader {
    std::string title;
    std::string word; // "" = none fits
};
[[nodiscard]] TileHeader fitTileHeader(const std::vector<std::string>& titles_long_to_short,
                                       const std::string& state, float width, float padding,
                                       const std::function<float(const std::string&)>& text_width);

class TopologyView final : public View {
  public:
    TopologyView() : View("topology", "Topology") {}
    [[nodiscard]] const char* helpText() const override;
    [[nodiscard]] LayoutPlace layoutPlace(const LayoutContext& context) const override;
    [[nodiscard]] bool isEmpty(const ViewInputs& inputs) const override;
    void drawEmptyState(const ViewInputs& inputs) override;
    void drawContent(const ViewInputs& inputs) override;

    // More ranks than this whose full tiles do not fit without scrolling get
    // compact tiles (rank, state, step); the fault buttons move to the details.
    static constexpr int kCompactAbove = 8;
    struct Grid {
        bool compact = false;
        int columns = 1;
        int rows = 0;
        bool fits = true;      // every tile visible without scrolling
        int group_headers = 0; // replica groups laid out apart, each under its header line
        float scroll_y = 0.0f; // the tiles' scroll position (a rank that just died scrolls into view)
    };
    [[nodiscard]] const Grid& lastGrid() const { return m_grid; } // as the last frame laid it out

  private:
    void drawGroupHeader(const ViewInputs& inputs, int group, int group_size);
    void drawTile(const ViewInputs& inputs, const RankProgress& p, float width, float height);
    void drawCompactTile(const ViewInputs& inputs, const RankProgress& p, float width, float height);
    void drawFaultButtons(const ViewInputs& inputs, const RankProgress& p);
    void drawSlowPopup(const ViewInputs& inputs, int rank);
    void drawDetails(const ViewInputs& inputs, int rank);
    [[nodiscard]] float& slowMs(int rank);

    std::vector<float> m_slow_ms; // the Slow slider value per rank
    std::vector<bool> m_was_down; // per rank, at the last frame: dead or restarting
    Grid m_grid;
};

} // namespace dt::app
