// view_event_log.cpp: the run's story as a filterable, clickable table (see view_event_log.hpp).
//
// [SECTION] Rows (pure)
// [SECTION] Drawing
#include "views/view_event_log.hpp"

#include "dtlab/fault_action.hpp"

#include "widgets/elide.hpp"
#include "widgets/format.hpp"
#include "widgets/help.hpp"
#include "widgets/palette.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>

namespace dt::app {

// -----------------------------------------------------------------------------
// [SECTION] Rows (pure)
// -----------------------------------------------------------------------------
namespace {

const char* signalName(int signo) {
    switch (signo) {
    case SIGKILL:
        return "SIGKILL";
    case SIGSTOP:
        return "SIGSTOP";
    case SIGCONT:
        return "SIGCONT";
    case SIGTERM:
        return "SIGTERM";
    case SIGINT:
        return "SIGINT";
    case SIGABRT:
        return "SIGABRT";
    case SIGSEGV:
        return "SIGSEGV";
    case SIGBUS:
        return "SIGBUS";
    default:
        return "signal";
    }
}

} // namespace

EventLogRow describeNotable(const Event& e) {
    EventLogRow row;
    row.t_ns = e.t_ns;
    row.rank = e.rank;
    char buf[160];
    const int value = int(std::lround(e.value));
    if (e.phase == EventPhase::WorkFailed) {
        row.level = LogLevel::Error;
        std::snprintf(buf, sizeof(buf), "%s #%llu failed (step %d, %s)", kindLabel(e.kind),
                      (unsigned long long)e.seq, e.step, formatBytes(double(e.bytes)).c_str());
        row.text = buf;
        return row;
    }
    switch (e.kind) {
    case EventKind::RankStarted:
        std::snprintf(buf, sizeof(buf), "rank started (pid %d)", value);
        break;
    case EventKind::RankReady:
        std::snprintf(buf, sizeof(buf), "rank ready: process group formed");
        break;
    case EventKind::RankFinished:
        if (e.step >= 0)
            std::snprintf(buf, sizeof(buf), "rank finished (last step %d)", e.step);
        else
            std::snprintf(buf, sizeof(buf), "rank finished before its first step");
        break;
    case EventKind::RankFailed: // step: the last step it completed (buildEventLogRows fills it in)
        row.level = LogLevel::Error;
        if (e.step >= 0)
            std::snprintf(buf, sizeof(buf), "rank failed after step %d", e.step);
        else
            std::snprintf(buf, sizeof(buf), "rank failed before its first step");
        break;
    case EventKind::ParamsChecksum:
        std::snprintf(buf, sizeof(buf), "parameters checksum %016llx", (unsigned long long)e.seq);
        break;
    case EventKind::FaultInjected: {
        row.level = LogLevel::Warning;
        // value: a signal (kill, hang, resume), or a fault action's negative code (fault_actions.def)
        FaultAction action = FaultAction::Kill;
        if (value > 0)
            std::snprintf(buf, sizeof(buf), "fault injected: %s (signal %d)", signalName(value), value);
        else if (faultActionFromEventCode(value, action))
            std::snprintf(buf, sizeof(buf), "fault injected: %s", faultActionName(action));
        else
            std::snprintf(buf, sizeof(buf), "fault injected (code %d)", value);
        break;
    }
    case EventKind::ProcessExited:
        if (value < 0) {
            row.level = LogLevel::Error;
            std::snprintf(buf, sizeof(buf), "process killed by signal %d (%s)", -value, signalName(-value));
        } else {
            row.level = value == 0 ? LogLevel::Info : LogLevel::Error;
            std::snprintf(buf, sizeof(buf), "process exited with status %d", value);
        }
        break;
    default:
        std::snprintf(buf, sizeof(buf), "%s", kindLabel(e.kind));
        break;
    }
    row.text = buf;
    return row;
}

EventLogRow describeHung(const HungCollective& h) {
    EventLogRow row;
    row.t_ns = h.open_since_ns;
    // The row selects the rank to look at: the one that never joined, else one that waits.
    row.rank = !h.missing_ranks.empty()   ? h.missing_ranks.front()
               : !h.started_ranks.empty() ? h.started_ranks.front()
                                          : -1;
    row.level = LogLevel::Error;
    row.text = "hung: " + h.diagnosis;
    return row;
}

std::vector<EventLogRow> buildEventLogRows(const RunModel& model, const std::vector<HungCollective>& hung) {
    std::vector<EventLogRow> rows;
    rows.reserve(model.logs().size() + model.notable().size());
    for (const LogRecord& log : model.logs())
        rows.push_back({log.t_ns, log.rank, log.level, log.text});
    for (const Event& e : model.notable()) {
        if (e.kind != EventKind::RankFailed) {
            rows.push_back(describeNotable(e));
            continue;
        }
        // A rank does not know its step when it fails: the model does.
        Event failed = e;
        failed.step = model.lastStepBefore(e.rank, e.t_ns);
        rows.push_back(describeNotable(failed));
    }
    // Both sources are sorted: one merge puts them in time order (logs first on ties).
    const auto earlier = [](const EventLogRow& a, const EventLogRow& b) { return a.t_ns < b.t_ns; };
    std::inplace_merge(rows.begin(), rows.begin() + ptrdiff_t(model.logs().size()), rows.end(), earlier);
    // Hung collectives (sorted by when they started) merge in the same way.
    const size_t before = rows.size();
    for (const HungCollective& h : hung)
        rows.push_back(describeHung(h));
    std::inplace_merge(rows.begin(), rows.begin() + ptrdiff_t(before), rows.end(), earlier);
    return rows;
}

// -----------------------------------------------------------------------------
// [SECTION] Drawing
// -----------------------------------------------------------------------------

EventLogView::EventLogView() : View("events", "Event log") {}

LayoutPlace EventLogView::layoutPlace(const LayoutContext&) const {
    LayoutPlace place;
    place.area = LayoutArea::Bottom; // the rest of the row
    return place;
}

const char* EventLogView::helpText() const {
    return "What happened to the run, in time order: ranks starting, forming their process group and "
           "finishing; faults injected (kill, hang, resume); processes exiting and how; failed collectives; "
           "hung collectives (\"hung: all-reduce bucket 2 of step 14: ranks {0,2,3} waiting, rank 1 never "
           "joined\": open over 2 s live, or never completed in a run that ended); "
           "and every warning or error a rank or the Session logged.\n\n"
           "With a time cursor the log ends at the cursor: what had happened by then.\n\n"
           "Filter by level with the check boxes or by text in the filter box. Click a row to centre the "
           "timeline on that moment and select its rank.\n\n"
           "Try: kill a rank and follow the chain here: fault injected, process killed by SIGKILL, then the "
           "other ranks' collectives failing.";
}

bool EventLogView::hasData(const ViewInputs& inputs) {
    return inputs.model && (!inputs.model->logs().empty() || !inputs.model->notable().empty());
}

void EventLogView::refresh(const RunModel& model, int64_t until_ns, int64_t now_ns, bool live) {
    // A hang appears with time, not with an event: live, while a collective is open,
    // the diagnosis is taken again each frame and the rows rebuilt when it changes.
    const bool same_model = &model == m_model && model.generation() == m_generation;
    if (!same_model || (live && model.openCollectives() > 0)) {
        std::vector<HungCollective> hung = model.hungCollectives(now_ns, !live);
        if (!same_model || hung.size() != m_hung.size()) {
            m_hung = std::move(hung);
            m_generation = ~uint64_t(0); // rebuild the rows below
        }
    }
    if (&model == m_model && model.generation() == m_generation && !m_filter_dirty && until_ns == m_until)
        return;
    if (until_ns != m_until)
        m_scroll_to_cursor = until_ns != INT64_MAX ? 2 : 0;
    m_until = until_ns;
    m_after_cursor = 0;
    if (&model != m_model || model.generation() != m_generation) {
        m_rows = buildEventLogRows(model, m_hung);
        m_model = &model;
        m_generation = model.generation();
        if (m_selected >= int(m_rows.size()))
            m_selected = -1;
    }
    m_visible.clear();
    for (size_t i = 0; i < m_rows.size(); ++i) {
        const EventLogRow& row = m_rows[i];
        if (!m_show[size_t(row.level)])
            continue;
        if (m_filter.IsActive() && !m_filter.PassFilter(row.text.c_str()))
            continue;
        if (row.t_ns > until_ns) { // after the time cursor
            ++m_after_cursor;
            continue;
        }
        m_visible.push_back(i);
    }
    m_filter_dirty = false;
}

bool EventLogView::isEmpty(const ViewInputs& inputs) const {
    return !hasData(inputs);
}

void EventLogView::drawFilters() {
    helpMarker(helpText());
    // Each checkbox on this line if it fits, else the next (a narrow log at large text).
    const auto checkboxWidth = [](const char* label) {
        return ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(label).x;
    };
    sameLineOrWrap(checkboxWidth("Info"));
    m_filter_dirty |= ImGui::Checkbox("Info", &m_show[0]);
    sameLineOrWrap(checkboxWidth("Warnings"));
    ImGui::PushStyleColor(ImGuiCol_Text, palette::kWarning);
    m_filter_dirty |= ImGui::Checkbox("Warnings", &m_show[1]);
    ImGui::PopStyleColor();
    sameLineOrWrap(checkboxWidth("Errors"));
    ImGui::PushStyleColor(ImGuiCol_Text, palette::kFailed);
    m_filter_dirty |= ImGui::Checkbox("Errors", &m_show[2]);
    ImGui::PopStyleColor();
    sameLineOrWrap(checkboxWidth("Auto-scroll"));
    ImGui::Checkbox("Auto-scroll", &m_auto_scroll);
    sameLineOrWrap(ImGui::GetFontSize() * 5.0f); // the filter: the rest of the line, or a line of its own
    m_filter_dirty |=
        m_filter.Draw("##filter", std::max(ImGui::GetFontSize() * 5.0f, ImGui::GetContentRegionAvail().x));
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Filter by text (\"-word\" excludes, commas separate terms)");
}

void EventLogView::drawEmptyState(const ViewInputs&) {
    drawFilters();
    m_visible.clear();
    emptyState("No events yet: start a run or open a recording",
               "Ranks starting and finishing, injected faults, process exits and errors are listed here.");
}

void EventLogView::drawContent(const ViewInputs& inputs) {
    drawFilters();
    const RunModel& model = *inputs.model;
    refresh(model, inputs.cursor().value_or(INT64_MAX), inputs.now_ns, inputs.live);
    if (m_after_cursor > 0) {
        ImGui::PushStyleColor(ImGuiCol_Text, palette::kCursor);
        ImGui::Text("up to the time cursor: %zu later row%s hidden (Live or Esc shows them)", m_after_cursor,
                    m_after_cursor == 1 ? "" : "s");
        ImGui::PopStyleColor();
    }

    const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY |
                                  ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable |
                                  ImGuiTableFlags_SizingFixedFit;
    if (!ImGui::BeginTable("##event_log", 4, flags, ImVec2(0.0f, 0.0f)))
        return;
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("time", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("+0000.000 s").x);
    ImGui::TableSetupColumn("rank", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("session").x);
    ImGui::TableSetupColumn("level", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("warning").x);
    ImGui::TableSetupColumn("message", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableHeadersRow();

    const double origin = double(model.tBegin());
    ImGuiListClipper clipper;
    clipper.Begin(int(m_visible.size()));
    while (clipper.Step()) {
        for (int v = clipper.DisplayStart; v < clipper.DisplayEnd; ++v) {
            const size_t i = m_visible[size_t(v)];
            const EventLogRow& row = m_rows[i];
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            char time[32];
            // Signed: a line the Session logged before the run's first event reads "-0.013 s", never "+-".
            std::snprintf(time, sizeof(time), "%+.3f s", (double(row.t_ns) - origin) / 1e9);
            ImGui::PushID(int(i));
            if (ImGui::Selectable(time, m_selected == int(i), ImGuiSelectableFlags_SpanAllColumns)) {
                m_selected = int(i);
                if (inputs.navigator)
                    inputs.navigator->centerOn(row.t_ns, row.rank);
                if (inputs.selected_rank && row.rank >= 0)
                    *inputs.selected_rank = row.rank;
            }
            if (ImGui::IsItemHovered())
                ImGui::SetTooltip("Click to show this moment in the timeline");
            ImGui::PopID();
            ImGui::TableNextColumn();
            if (row.rank >= 0)
                ImGui::Text("%d", row.rank);
            else
                ImGui::TextDisabled("session");
            ImGui::TableNextColumn();
            static const char* const level_names[] = {"info", "warning", "error"};
            const ImU32 color = palette::levelColor(row.level);
            ImGui::PushStyleColor(ImGuiCol_Text, color);
            ImGui::TextUnformatted(level_names[size_t(row.level)]);
            ImGui::TableNextColumn();
            textElided(row.text, ImGui::GetContentRegionAvail().x); // the whole message on hover
            ImGui::PopStyleColor();
        }
    }
    // At a new cursor: scroll to the last row before it.
    if (m_scroll_to_cursor > 0) {
        ImGui::SetScrollY(1e9f); // clamped to the end of the rows
        --m_scroll_to_cursor;
    } else if (m_auto_scroll && m_visible.size() != m_last_count &&
               ImGui::GetScrollY() >= ImGui::GetScrollMaxY() - 4.0f)
        ImGui::SetScrollHereY(1.0f);
    m_last_count = m_visible.size();
    ImGui::EndTable();
}

} // namespace dt::app
