// view_event_log.hpp: faults, errors and lifecycle events in time order.
//
// Merges the Session's and the ranks' log lines (RunModel::logs) with the
// notable events (RunModel::notable: rank started / ready / finished / failed,
// fault injected, process exited, failed collectives) and the hung
// collectives (RunModel::hungCollectives) into one table. A level
// filter and a text filter narrow it; clicking a row centres the timeline on
// that moment (through ViewInputs::navigator) and selects the rank. With a
// time cursor it lists what happened up to the cursor, scrolled to it, and
// says how many later rows it hides.
#pragma once

#include "views/view.hpp"
#include "views/view_inputs.hpp"

#include <imgui.h>

#include <string>
#include <vector>

namespace dt::app {

struct EventLogRow {
    int64_t t_ns = 0;
    int rank = -1; // -1 = the Session
    LogLevel level = LogLevel::Info;
    std::string text;
};
// All rows in time order (pure; tests check it), with one error row per hung
// collective (RunModel::hungCollectives) at the time it started.
[[nodiscard]] std::vector<EventLogRow> buildEventLogRows(const RunModel& model,
                                                         const std::vector<HungCollective>& hung = {});
// "hung: all-reduce bucket 2 of step 14: ranks {0,2,3} waiting, rank 1 never joined",
// on the rank that never joined (else the first that started).
[[nodiscard]] EventLogRow describeHung(const HungCollective& h);
// The sentence for one notable event ("process killed by signal 9 (SIGKILL)").
// RankFailed reads its step as the last step the rank completed (-1: "failed
// before its first step"); buildEventLogRows takes it from the model.
[[nodiscard]] EventLogRow describeNotable(const Event& e);

class EventLogView : public View {
  public:
    EventLogView();

    [[nodiscard]] const char* helpText() const override;
    [[nodiscard]] LayoutPlace layoutPlace(const LayoutContext& context) const override;
    [[nodiscard]] bool isEmpty(const ViewInputs& inputs) const override;
    void drawEmptyState(const ViewInputs& inputs) override;
    void drawContent(const ViewInputs& inputs) override;

    [[nodiscard]] static bool hasData(const ViewInputs& inputs);
    [[nodiscard]] size_t visibleRowCount() const { return m_visible.size(); } // after filtering, last frame
    [[nodiscard]] size_t hiddenAfterCursor() const {
        return m_after_cursor;
    } // rows after the cursor, last frame
    // The last row shown (after filtering and the cursor), or nullptr.
    [[nodiscard]] const EventLogRow* lastVisibleRow() const {
        return m_visible.empty() ? nullptr : &m_rows[m_visible.back()];
    }

  private:
    void drawFilters(); // the help marker, the level check boxes and the text filter
    void refresh(const RunModel& model, int64_t until_ns, int64_t now_ns, bool live);

    std::vector<EventLogRow> m_rows;
    std::vector<HungCollective> m_hung; // the diagnosis the rows were built with
    std::vector<size_t> m_visible;      // indices into m_rows that pass the filters
    const RunModel* m_model = nullptr;
    uint64_t m_generation = ~uint64_t(0);
    bool m_show[3] = {true, true, true}; // Info, Warning, Error
    bool m_filter_dirty = true;
    int64_t m_until = INT64_MAX; // the cursor the rows were cut at (INT64_MAX = none)
    size_t m_after_cursor = 0;
    int m_scroll_to_cursor = 0; // frames left to scroll to the cursor's row (content sizes settle in two)
    bool m_auto_scroll = true;
    size_t m_last_count = 0;
    int m_selected = -1; // index into m_rows
    ImGuiTextFilter m_filter;
};

} // namespace dt::app
