// view_timeline.hpp: every rank's spans on one shared clock.
//
// One lane per rank, four rows per lane: step (depth 0), phases (depth 1:
// data, forward embed/head, whole backward, wait, optimizer, paused, slow
// delay), per-block forward/backward (depth 2), and the rank's collectives.
//
// Level of detail, as in Tracy: a frame costs what is visible, not what was
// recorded.
//   1. Each row is a vector sorted by start, with a prefix max of the ends
//      (RankLane::*_end_max). Two binary searches give the visible range.
//   2. Consecutive spans narrower than kMinSpanPx (3 px) fold into one block
//      drawn with a zig-zag and "N spans". The fold gallops: one binary search
//      on the prefix max swallows every span ending within 3 px of the fold, so
//      a row costs about (width / 3 px) * log(n) at any zoom.
// buildRowItems() is that pass, pure (no ImGui), so tests and hit-testing use
// exactly what is drawn.
#pragma once

#include "views/view.hpp"
#include "views/view_inputs.hpp"

#include <imgui.h>

#include <optional>
#include <vector>

namespace dt::app {

inline constexpr float kMinSpanPx = 3.0f; // narrower spans fold together

// Which time is at which pixel of the lanes area (x = 0 is its left edge).
struct TimeWindow {
    double start_ns = 0.0; // Session clock at x = 0
    double ns_per_px = 1e6;
    float width = 0.0f; // px
    int64_t now_ns = 0; // open spans are drawn up to here

    [[nodiscard]] double endNs() const { return start_ns + double(width) * ns_per_px; }
    [[nodiscard]] double xOf(double t_ns) const { return (t_ns - start_ns) / ns_per_px; }
    [[nodiscard]] double timeAt(float x) const { return start_ns + double(x) * ns_per_px; }
};

// One thing to draw in a row: a span, or a folded block of small spans.
struct RowItem {
    float x0 = 0.0f, x1 = 0.0f; // px from the lanes area's left edge (clamped to the area +- 2 px)
    uint32_t first = 0;         // index of the first span in the row's vector
    uint32_t count = 0;         // 1 = one span; > 1 = folded block of `count` spans
    int64_t t0 = 0, t1 = 0;     // time covered (the fold's first start to its last end)
    [[nodiscard]] bool folded() const { return count > 1; }
};

// The level-of-detail pass for one row (pure): appends the row's visible items
// in `window` to `out`, in start order.
void buildRowItems(const std::vector<SpanRecord>& spans, const std::vector<int64_t>& end_max,
                   const TimeWindow& window, std::vector<RowItem>& out);

// Index of the item under x (px from the lanes area's left edge), or -1.
// Items narrower than kMinSpanPx are hit as if kMinSpanPx wide; when items
// overlap the last (drawn on top) wins. Pure.
[[nodiscard]] int hitTestItems(const std::vector<RowItem>& items, float x);

// Vertical geometry of the lanes: rank r's lane starts at top + r * laneHeight().
// Full lanes show all four rows; compact lanes (many ranks) show two thin
// rows, phases and comm, so that 32 ranks fit where four full lanes would.
struct LaneLayout {
    static constexpr int kRows = RankLane::kDepths + 1; // 3 compute rows + comm
    static constexpr int kPhaseRow = 1;                 // depth 1: data, forward, backward, optimizer...
    float top = 0.0f;                                   // screen y of rank 0's lane
    float row_height = 18.0f;
    float lane_gap = 6.0f;
    bool compact = false; // only the phase and comm rows

    [[nodiscard]] int shownRows() const { return compact ? 2 : kRows; }
    // The row drawn in slot `slot` (0 = top of the lane), and the slot of a row (-1: hidden).
    [[nodiscard]] int rowInSlot(int slot) const {
        return compact ? (slot == 0 ? kPhaseRow : RankLane::kCommRow) : slot;
    }
    [[nodiscard]] int slotOf(int row) const {
        if (!compact)
            return row;
        return row == kPhaseRow ? 0 : row == RankLane::kCommRow ? 1 : -1;
    }
    [[nodiscard]] float laneHeight() const { return float(shownRows()) * row_height + lane_gap; }
    // Top of `row` in rank's lane; a row hidden in compact lanes answers the lane's top.
    [[nodiscard]] float rowTop(int rank, int row) const {
        return top + float(rank) * laneHeight() + float(std::max(0, slotOf(row))) * row_height;
    }
    // Rank and row under screen y; false in the gaps, above the lanes or past `world`. Pure.
    bool rowAt(float y, int world, int& rank, int& row) const;
};

// Compact lanes for a run of `world` ranks in `visible_h` px of lanes when
// the user has not chosen: more ranks than kCompactLanesAbove whose full lanes
// do not fit. Pure.
inline constexpr int kCompactLanesAbove = 8;
[[nodiscard]] bool autoCompactLanes(int world, float full_lane_h, float visible_h);

// Compact geometry: rows as tall as lets every lane fit in `visible_h`,
// between min_row and max_row px, and a 1 px gap. Pure.
void fitCompactLanes(LaneLayout& lanes, int world, float visible_h, float min_row, float max_row);

struct TimelineHit {
    int rank = -1;
    int row = -1; // 0..2 compute depth, 3 = comm
    RowItem item; // item.count == 1: lane(rank).row(row)[item.first]
};

// The span or folded block under a point: x from the lanes area's left edge,
// y on screen. Pure: runs the same buildRowItems pass as the drawing.
[[nodiscard]] std::optional<TimelineHit> hitTest(const RunModel& model, const LaneLayout& lanes,
                                                 const TimeWindow& window, float x, float y);

struct TimelineSelection {
    int rank = -1;
    int row = -1;
    SpanRecord span; // refreshed each frame while visible (a hung collective may complete)
};

class TimelineView : public View, public TimelineNavigator {
  public:
    TimelineView();

    // View: draw(inputs) draws the toolbar and legend, then the lanes, axis
    // and tooltip, or the empty state under them.
    [[nodiscard]] const char* helpText() const override;
    [[nodiscard]] ImGuiWindowFlags windowFlags() const override;
    [[nodiscard]] LayoutPlace layoutPlace(const LayoutContext& context) const override;
    [[nodiscard]] TimelineNavigator* navigator() override { return this; }
    [[nodiscard]] bool isEmpty(const ViewInputs& inputs) const override;
    void drawEmptyState(const ViewInputs& inputs) override;
    void drawContent(const ViewInputs& inputs) override;

    // TimelineNavigator: applied now if the view has been drawn, else at the next draw.
    void centerOn(int64_t t_ns, int rank = -1) override;
    void showRange(int64_t t0_ns, int64_t t1_ns) override;
    // Zoom fully out: the whole run across the width (at the next draw).
    void fit();

    [[nodiscard]] const std::optional<TimelineSelection>& selection() const { return m_selection; }
    void clearSelection() { m_selection.reset(); }
    [[nodiscard]] bool followLive() const { return m_follow_live; }
    void setFollowLive(bool follow) { m_follow_live = follow; }
    [[nodiscard]] const TimeWindow& window() const { return m_window; }    // as of the last draw
    [[nodiscard]] const LaneLayout& laneLayout() const { return m_lanes; } // as of the last draw
    [[nodiscard]] float areaLeft() const { return m_area_x0; } // screen x of the lanes area's left edge
    [[nodiscard]] size_t lastItemCount() const { return m_item_count; } // row items drawn last frame
    [[nodiscard]] size_t lastFoldCount() const { return m_fold_count; } // of which folded blocks
    // Lanes: unset = compact by itself when many ranks do not fit (autoCompactLanes).
    void setCompactLanes(std::optional<bool> compact) { m_compact_choice = compact; }

  private:
    void beginFrame(const ViewInputs& inputs); // per-frame resets, the toolbar and the legend
    void drawToolbar(const ViewInputs& inputs);
    // The legend: in full when the window is tall, else one line with the legend on hover.
    void drawLegend(const ViewInputs& inputs);
    void drawLegendItems(const ViewInputs& inputs,
                         int per_line); // the offload copies only when the run has them
    void applyPending(const ViewInputs& inputs);
    void handleInput(const ViewInputs& inputs, bool hovered, bool active, bool released, float area_x0);
    void drawAxis(const RunModel& model, ImDrawList* draw, ImVec2 min, ImVec2 max, float area_x0);
    void drawLane(const ViewInputs& inputs, ImDrawList* draw, int rank, float area_x0, float area_x1,
                  float label_x0);
    void drawItem(ImDrawList* draw, const RankLane& lane, int rank, int row, const RowItem& item,
                  float area_x0, float y0, float y1);
    void drawLinks(const ViewInputs& inputs, ImDrawList* draw, float area_x0);
    void drawTooltip(const ViewInputs& inputs);

    TimeWindow m_window;
    LaneLayout m_lanes;
    float m_area_x0 = 0.0f;
    bool m_follow_live = true;
    bool m_live = false;        // a Session is running: a young open collective is in flight, not hung
    bool m_initialized = false; // the first draw with events sets the zoom
    bool m_dragged = false;     // the current press moved: a pan, not a click
    bool m_fit_pending = false;
    std::optional<bool> m_compact_choice; // the toolbar's "Compact lanes"; unset = automatic
    std::optional<std::pair<int64_t, int64_t>> m_pending_range;
    std::optional<int64_t> m_pending_center;
    int m_pending_scroll_rank = -1;

    std::optional<TimelineSelection> m_selection;
    std::optional<TimelineHit> m_hover;     // span or fold under the mouse this frame
    const Event* m_hover_instant = nullptr; // lifecycle marker under the mouse this frame
    ImVec2 m_mouse{0, 0};
    std::vector<RowItem> m_items; // scratch for one row
    size_t m_item_count = 0;
    size_t m_fold_count = 0;
    std::vector<OpenCollective> m_open; // RunModel::openCollectiveList, for the toolbar
    std::vector<HungCollective> m_hung; // RunModel::hungCollectives: the labels name the missing ranks
    uint64_t m_hung_generation = ~uint64_t(0);
    const RunModel* m_hung_model = nullptr;
    uint64_t m_open_generation = ~uint64_t(0);
    const RunModel* m_open_model = nullptr;
};

// The toolbar's line about collectives that never completed in a run that is
// not live (pure; tests check it): "" when there is nothing to say. Red
// (`*fault` = true) only for those a fault left open (their rank's process
// died first), naming the first: "1 collective never completed: rank 1's
// all-reduce #15 (step 15), its process died"; grey for those abandoned when
// their rank left at the job's end, or still open where the run stopped.
[[nodiscard]] std::string openCollectivesSummary(const std::vector<OpenCollective>& open, bool* fault);

} // namespace dt::app
