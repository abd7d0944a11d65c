// view_timeline.cpp: lanes of spans on one clock, Tracy-style level of detail.
//
// [SECTION] Level of detail (pure)
// [SECTION] Hit testing (pure)
// [SECTION] Names and help text
// [SECTION] Toolbar, legend, navigation
// [SECTION] Frame: child window, input, lanes, axis
// [SECTION] Drawing one lane and one item
// [SECTION] Links between the parts of a collective
// [SECTION] Tooltips
#include "views/view_timeline.hpp"

#include "dtlab/sharding_theory.hpp"

#include "widgets/elide.hpp"
#include "widgets/format.hpp"
#include "widgets/help.hpp"
#include "widgets/palette.hpp"

#include <imgui.h>
#include <imgui_internal.h> // SetItemUsingMouseWheel

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

namespace dt::app {

// In a live run a collective open for longer than this is drawn as hung.
// (Gloo's own timeout, [run] timeout_s, decides when the run fails.)
constexpr int64_t kStuckAfterNs = kCollectiveStuckAfterNs;
namespace {

int64_t clampToTime(double t) {
    constexpr double lo = double(std::numeric_limits<int64_t>::min() / 2);
    constexpr double hi = double(std::numeric_limits<int64_t>::max() / 2);
    return int64_t(std::clamp(t, lo, hi));
}

} // namespace

// -----------------------------------------------------------------------------
// [SECTION] Level of detail (pure)
// -----------------------------------------------------------------------------
//
// For one row:
//   first = the first span whose prefix-max end reaches the view's start
//           (lower_bound on end_max: no span before it can be visible),
//   last  = the first span that starts after the view's end (upper_bound on t0).
// Between them, a span at least kMinSpanPx wide becomes one item. A narrower
// one opens a fold, which then grows in jumps: every span that ends within
// kMinSpanPx of the fold's end is swallowed by one lower_bound on end_max; the
// span after that joins too if it is narrow and starts within kMinSpanPx.
// Each jump moves the fold's end by about kMinSpanPx, so a fold costs
// (its width / 3 px) binary searches, however many spans it holds.

void buildRowItems(const std::vector<SpanRecord>& spans, const std::vector<int64_t>& end_max,
                   const TimeWindow& window, std::vector<RowItem>& out) {
    if (spans.empty() || end_max.size() != spans.size() || window.width <= 0.0f || !(window.ns_per_px > 0.0))
        return;
    const double view0 = window.start_ns, view1 = window.endNs();
    const int64_t min_ns = std::max<int64_t>(1, int64_t(double(kMinSpanPx) * window.ns_per_px));
    const int64_t now = window.now_ns;
    const double x_lo = -2.0, x_hi = double(window.width) + 2.0;

    size_t i = size_t(std::lower_bound(end_max.begin(), end_max.end(), clampToTime(std::floor(view0))) -
                      end_max.begin());
    const size_t last = size_t(std::upper_bound(spans.begin(), spans.end(), clampToTime(std::ceil(view1)),
                                                [](int64_t t, const SpanRecord& s) { return t < s.t0; }) -
                               spans.begin());

    auto emit = [&](size_t first, size_t count, int64_t t0, int64_t t1) {
        RowItem item;
        item.first = uint32_t(first);
        item.count = uint32_t(count);
        item.t0 = t0;
        item.t1 = t1;
        item.x0 = float(std::clamp(window.xOf(double(t0)), x_lo, x_hi));
        item.x1 = float(std::clamp(window.xOf(double(t1)), x_lo, x_hi));
        if (count > 1)
            item.x1 = std::max(item.x1, item.x0 + kMinSpanPx);
        out.push_back(item);
    };

    while (i < last) {
        const SpanRecord& s = spans[i];
        const int64_t end = s.endOr(now);
        if (double(end) < view0) {
            ++i;
            continue;
        } // hidden behind an earlier long span's prefix max
        if (end - s.t0 >= min_ns) {
            emit(i, 1, s.t0, end);
            ++i;
            continue;
        }

        // A narrow span: fold it with its narrow neighbours.
        const size_t first = i;
        int64_t fold_end = end;
        ++i;
        while (i < last) {
            const int64_t reach = fold_end + min_ns;
            const size_t j = size_t(
                std::lower_bound(end_max.begin() + ptrdiff_t(i), end_max.begin() + ptrdiff_t(last), reach) -
                end_max.begin());
            if (j > i) { // spans [i, j) all end before `reach`: swallow them at once
                fold_end = std::max(fold_end, end_max[j - 1]);
                i = j;
                continue;
            }
            const SpanRecord& next = spans[i];
            const int64_t next_end = next.endOr(now);
            if (next_end - next.t0 >= min_ns || next.t0 - fold_end >= min_ns)
                break; // wide, or a visible gap
            fold_end = std::max(fold_end, next_end);
            ++i;
        }
        emit(first, i - first, s.t0, fold_end);
    }
}

// -----------------------------------------------------------------------------
// [SECTION] Hit testing (pure)
// -----------------------------------------------------------------------------

int hitTestItems(const std::vector<RowItem>& items, float x) {
    int hit = -1;
    for (size_t k = 0; k < items.size(); ++k) {
        const RowItem& item = items[k];
        float a = item.x0, b = item.x1;
        if (b - a < kMinSpanPx) { // narrow: hit as kMinSpanPx wide, centred
            const float mid = 0.5f * (a + b);
            a = mid - 0.5f * kMinSpanPx;
            b = mid + 0.5f * kMinSpanPx;
        }
        if (x >= a && x <= b)
            hit = int(k); // the last one is drawn on top
        else if (a > x + kMinSpanPx)
            break; // items are in start order: nothing further can match
    }
    return hit;
}

bool LaneLayout::rowAt(float y, int world, int& rank, int& row) const {
    const float rel = y - top;
    if (rel < 0.0f || laneHeight() <= 0.0f)
        return false;
    const int r = int(rel / laneHeight());
    const float within = rel - float(r) * laneHeight();
    if (r >= world || within >= float(shownRows()) * row_height)
        return false;
    rank = r;
    row = rowInSlot(std::min(shownRows() - 1, int(within / row_height)));
    return true;
}

bool autoCompactLanes(int world, float full_lane_h, float visible_h) {
    return world > kCompactLanesAbove && float(world) * full_lane_h > visible_h;
}

void fitCompactLanes(LaneLayout& lanes, int world, float visible_h, float min_row, float max_row) {
    lanes.compact = true;
    lanes.lane_gap = 1.0f;
    const float per_lane = visible_h / float(std::max(1, world));
    lanes.row_height = std::floor(std::clamp((per_lane - lanes.lane_gap) / 2.0f, min_row, max_row));
}

std::optional<TimelineHit> hitTest(const RunModel& model, const LaneLayout& lanes, const TimeWindow& window,
                                   float x, float y) {
    int rank = -1, row = -1;
    if (x < 0.0f || x > window.width || !lanes.rowAt(y, model.world(), rank, row))
        return std::nullopt;
    const RankLane& lane = model.lane(rank);
    std::vector<RowItem> items;
    buildRowItems(lane.row(row), lane.rowEndMax(row), window, items);
    const int k = hitTestItems(items, x);
    if (k < 0)
        return std::nullopt;
    return TimelineHit{rank, row, items[size_t(k)]};
}

// -----------------------------------------------------------------------------
// [SECTION] Names and help text
// -----------------------------------------------------------------------------
namespace {

const char* const kRowNames[LaneLayout::kRows] = {"steps", "phases", "blocks", "comm"};

// Short label drawn inside a span: "step 12", "forward 3", "all-reduce #17".
void spanLabel(char* out, size_t size, const SpanRecord& s) {
    const char* name = kindLabel(s.kind);
    if (s.kind == EventKind::Step)
        std::snprintf(out, size, "step %d", s.step);
    else if (s.depth == RankLane::kCommRow)
        std::snprintf(out, size, "%s #%llu", name, (unsigned long long)s.seq);
    else if (s.unit >= 0)
        std::snprintf(out, size, "%s %d", name, s.unit);
    else if (s.unit == -2)
        std::snprintf(out, size, "%s (all blocks)", name);
    else if (s.kind == EventKind::Forward || s.kind == EventKind::Backward)
        std::snprintf(out, size, "%s (embed/head)", name);
    else
        std::snprintf(out, size, "%s", name);
}

// "world", "shard group of replica 1", "replicate group of shard 0" (events.hpp's group ids).
void groupName(char* out, size_t size, uint8_t group) {
    if (group == kGroupWorld)
        std::snprintf(out, size, "world");
    else if (group >= groupIdStage(0) && group < groupIdReplicate(0))
        std::snprintf(out, size, "stage group %d (a stage's pipelines in a replica group)", int(group) - 64);
    else if (group < groupIdReplicate(0))
        std::snprintf(out, size, "shard group of replica %d", int(group) - 1);
    else
        std::snprintf(out, size, "replicate group of shard %d", int(group) - 128);
}

// Is `rank` in process group `group`? The worker's HSDP layout (engine/src/worker/worker.cpp):
// replica = rank / shards, shard = rank % shards; the shard group of replica k
// is ranks k*shards .. k*shards + shards-1, the replicate group of shard s is
// ranks s, s + shards, s + 2*shards, ...
bool inGroup(int rank, uint8_t group, int shards) {
    if (group == kGroupWorld)
        return true;
    if (group < groupIdReplicate(0))
        return rank / shards == int(group) - 1;
    return rank % shards == int(group) - 128;
}

bool isCollective(EventKind kind) {
    return eventKindCategory(kind) == EventCategory::Comm;
}
bool isPointToPoint(EventKind kind) {
    return kind == EventKind::Send || kind == EventKind::Recv;
}

// The same Work's identity, whatever its times are now.
bool sameSpan(const SpanRecord& a, const SpanRecord& b) {
    if (a.kind != b.kind)
        return false;
    if (a.depth == RankLane::kCommRow)
        return a.seq == b.seq && a.peer == b.peer && a.group == b.group;
    return a.t0 == b.t0 && a.unit == b.unit;
}

void drawHatch(ImDrawList* draw, ImVec2 a, ImVec2 b, ImU32 color) {
    draw->PushClipRect(a, b, true);
    const float h = b.y - a.y;
    for (float x = a.x - h; x < b.x; x += 8.0f)
        draw->AddLine(ImVec2(x, b.y), ImVec2(x + h, a.y), color, 2.0f);
    draw->PopClipRect();
}

void drawArrow(ImDrawList* draw, ImVec2 from, ImVec2 to, ImU32 color) {
    draw->AddLine(from, to, color, 1.5f);
    const float dx = to.x - from.x, dy = to.y - from.y;
    const float len = std::sqrt(dx * dx + dy * dy);
    if (len < 1.0f)
        return;
    const float ux = dx / len, uy = dy / len, s = 7.0f;
    draw->AddTriangleFilled(to, ImVec2(to.x - ux * s - uy * s * 0.5f, to.y - uy * s + ux * s * 0.5f),
                            ImVec2(to.x - ux * s + uy * s * 0.5f, to.y - uy * s - ux * s * 0.5f), color);
}

} // namespace

TimelineView::TimelineView() : View("timeline", "Timeline") {}

ImGuiWindowFlags TimelineView::windowFlags() const {
    return ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse;
}

LayoutPlace TimelineView::layoutPlace(const LayoutContext&) const {
    LayoutPlace place;
    place.area = LayoutArea::Timeline;
    return place;
}

const char* TimelineView::helpText() const {
    return "Every rank's work on one shared clock.\n\n"
           "Each rank has a lane with four rows: whole steps; the phases of a step (data, embedding/head "
           "forward, the whole backward, waiting for communication, optimizer, pauses); forward and backward "
           "per block; and the rank's collectives (all-reduce, all-gather, send/recv...). Colours follow the "
           "legend. With many ranks (more than 8 that do not fit) the lanes turn compact: two thin rows per "
           "rank, phases and collectives, so every rank is on screen; the Compact box switches it by "
           "hand.\n\n"
           "How to read it: a collective's span runs from when its Work started to when it completed. "
           "Spans narrower than 3 pixels are folded into one block with a zig-zag and a count: zoom in to "
           "see them. A collective that never completed (a hung rank) is hatched red and grows until now; "
           "hover it to see which ranks never joined.\n\n"
           "Mouse: wheel zooms around the cursor, drag pans (left, right or middle button), click selects a "
           "span (or zooms into a folded block), double-click zooms to a span. Hovering or selecting a "
           "collective draws arrows to its parts on the same process group's other ranks (and from a send to "
           "its recv). A click also puts the time cursor (the magenta line) there: every view then shows "
           "the run as it was at that moment (what came after is faded here), until Live or Esc. Play (in "
           "the "
           "menu bar) moves the cursor over time; Instant replay plays the last seconds again.\n\n"
           "Try: kill or hang a rank from the topology view and watch the others' all-reduce stay open; "
           "compare where backward per block and the bucket all-reduces overlap.";
}

// -----------------------------------------------------------------------------
// [SECTION] Toolbar, legend, navigation
// -----------------------------------------------------------------------------

void TimelineView::centerOn(int64_t t_ns, int rank) {
    m_pending_center = t_ns;
    m_pending_range.reset();
    m_follow_live = false;
    if (rank >= 0)
        m_pending_scroll_rank = rank;
}

void TimelineView::showRange(int64_t t0_ns, int64_t t1_ns) {
    if (t1_ns < t0_ns)
        std::swap(t0_ns, t1_ns);
    m_pending_range = std::make_pair(t0_ns, t1_ns);
    m_pending_center.reset();
    m_follow_live = false;
}

void TimelineView::fit() {
    m_fit_pending = true;
    m_pending_range.reset();
    m_pending_center.reset();
}

void TimelineView::drawToolbar(const ViewInputs& inputs) {
    helpMarker(helpText());
    ImGui::SameLine();
    ImGui::BeginDisabled(!inputs.live);
    bool follow = m_follow_live && inputs.live; // a replay has nothing to follow: shown unticked
    if (ImGui::Checkbox("Follow live", &follow))
        m_follow_live = follow;
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("Keep the newest events at the right edge (live runs only).");
    ImGui::SameLine();
    if (ImGui::Button("Fit"))
        fit();
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Zoom out to show the whole run.");
    ImGui::SameLine();
    bool compact = m_lanes.compact; // as drawn last frame
    if (ImGui::Checkbox("Compact", &compact))
        m_compact_choice = compact;
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Two thin rows per rank, phases and collectives, so that every rank fits.\n"
                          "%s",
                          m_compact_choice ? "Your choice: it stays as you set it."
                                           : "Now automatic: on when more than 8 ranks do not fit.");
    const RunModel* model = inputs.model;
    if (model && !model->empty()) {
        ImGui::SameLine();
        char width[32], events[32];
        formatDuration(width, sizeof(width), double(m_window.width) * m_window.ns_per_px);
        formatCount(events, sizeof(events), model->eventCount());
        ImGui::AlignTextToFramePadding();
        char stats[128];
        std::snprintf(stats, sizeof(stats), "%s across  |  %s events  |  %d ranks", width, events,
                      model->world());
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        textElided(stats, ImGui::GetContentRegionAvail().x);
        ImGui::PopStyleColor();
        if (const size_t open = model->openCollectives();
            open > 0) { // on this line if it fits, else the next
            if (m_open_model != model || m_open_generation != model->generation()) {
                m_open = model->openCollectiveList();
                m_open_model = model;
                m_open_generation = model->generation();
            }
            if (inputs.live) { // in a running Session an open collective is usually just in flight
                size_t stuck = 0;
                for (const OpenCollective& oc : m_open)
                    stuck += oc.fate == OpenCollectiveFate::RankAlive &&
                             inputs.now_ns - oc.span.t0 > kStuckAfterNs;
                char note[96];
                if (stuck > 0) {
                    std::snprintf(note, sizeof(note), "%zu collective%s open for over %.0f s", stuck,
                                  stuck == 1 ? "" : "s", double(kStuckAfterNs) / 1e9);
                    flowText(note, palette::kHung);
                } else {
                    std::snprintf(note, sizeof(note), "%zu collective%s in flight", open,
                                  open == 1 ? "" : "s");
                    flowTextDisabled(note);
                }
                if (ImGui::IsItemHovered())
                    ImGui::SetTooltip("Started and not completed yet. One open for more than %.0f s is drawn "
                                      "hatched red: a hung peer looks like that.",
                                      double(kStuckAfterNs) / 1e9);
            } else {
                bool fault = false;
                const std::string line = openCollectivesSummary(m_open, &fault);
                if (fault)
                    flowText(line, palette::kHung);
                else
                    flowTextDisabled(line);
                if (ImGui::IsItemHovered()) {
                    ImGui::BeginTooltip();
                    for (const OpenCollective& oc : m_open) {
                        char what[96];
                        std::snprintf(what, sizeof(what), "rank %d: %s #%llu (step %d)", oc.rank,
                                      kindLabel(oc.span.kind), (unsigned long long)oc.span.seq, oc.span.step);
                        ImGui::Text("%s, %s", what,
                                    oc.fate == OpenCollectiveFate::RankDied
                                        ? "its process died first (a fault)"
                                    : oc.fate == OpenCollectiveFate::RankLeft
                                        ? "its rank left when the job finished (not a fault)"
                                        : "still open when the run ended");
                    }
                    ImGui::EndTooltip();
                }
            }
        }
    }
}

std::string openCollectivesSummary(const std::vector<OpenCollective>& open, bool* fault) {
    std::vector<const OpenCollective*> died;
    size_t left = 0, alive = 0;
    for (const OpenCollective& oc : open) {
        if (oc.fate == OpenCollectiveFate::RankDied)
            died.push_back(&oc);
        left += oc.fate == OpenCollectiveFate::RankLeft ? 1 : 0;
        alive += oc.fate == OpenCollectiveFate::RankAlive ? 1 : 0;
    }
    if (fault)
        *fault = !died.empty();
    char buf[200];
    if (!died.empty()) { // a fault left them open: say which
        const OpenCollective& first = *died.front();
        std::snprintf(buf, sizeof(buf), "%zu collective%s never completed: rank %d's %s #%llu (step %d), %s",
                      died.size(), died.size() == 1 ? "" : "s", first.rank, kindLabel(first.span.kind),
                      (unsigned long long)first.span.seq, first.span.step,
                      died.size() == 1 ? "its process died" : "... (hover): their processes died");
        return buf;
    }
    if (alive > 0) {
        std::snprintf(buf, sizeof(buf), "%zu collective%s still open where the run stopped", alive,
                      alive == 1 ? "" : "s");
        return buf;
    }
    if (left > 0) {
        std::snprintf(buf, sizeof(buf), "%zu collective%s abandoned when the job finished (not a fault)",
                      left, left == 1 ? "" : "s");
        return buf;
    }
    return "";
}

void TimelineView::drawLegend(const ViewInputs& inputs) {
    // A short window keeps its height for the lanes: the legend is one line, in full on hover.
    if (ImGui::GetContentRegionAvail().y < ImGui::GetTextLineHeightWithSpacing() * 12.0f) {
        ImGui::TextDisabled("colours: hover here for the legend");
        if (ImGui::IsItemHovered()) {
            ImGui::BeginTooltip();
            drawLegendItems(inputs, 4);
            ImGui::EndTooltip();
        }
        return;
    }
    drawLegendItems(inputs, 0);
}

void TimelineView::drawLegendItems(const ViewInputs& inputs, int per_line) {
    static constexpr EventKind kinds[] = {
        EventKind::Step,      EventKind::Data,      EventKind::Forward,   EventKind::Backward,
        EventKind::Recompute, EventKind::Optimizer, EventKind::Wait,      EventKind::Paused,
        EventKind::SlowDelay, EventKind::AllReduce, EventKind::AllGather, EventKind::ReduceScatter,
        EventKind::Broadcast, EventKind::Send,      EventKind::Recv,      EventKind::Barrier,
    };
    int n = 0; // per_line > 0: a new line every per_line items; else wrap at the window's edge
    auto item = [&](ImU32 color, const char* label) {
        legendItem(color, label, per_line > 0 ? n % per_line == 0 : n == 0);
        ++n;
    };
    for (EventKind kind : kinds)
        item(palette::kindColor(kind), kindLabel(kind));
    if (inputs.model && inputs.model->scenario().strategy.offload_optimizer)
        for (EventKind kind : {EventKind::GradsToHost, EventKind::ParamsToDevice})
            item(palette::kindColor(kind), kindLabel(kind));
    item(palette::kHung, "never completed");
}

void TimelineView::applyPending(const ViewInputs& inputs) {
    const RunModel& model = *inputs.model;
    const double width = std::max(1.0f, m_window.width);
    // Open spans reach "now"; live, "now" stays where the ranks stopped while paused
    // (heartbeats keep arriving, so the last event would scroll into empty time).
    const int64_t t_end = inputs.live ? inputs.now_ns : std::max(model.tEnd(), inputs.now_ns);
    constexpr double kMinNsPerPx = 0.05, kMaxNsPerPx = 1e12;
    if (!m_initialized) {
        m_initialized = true;
        if (inputs.live) { // show the last 2 s and follow
            m_window.ns_per_px = 2e9 / width;
        } else {
            m_fit_pending = true;
        }
    }
    if (m_fit_pending) {
        m_fit_pending = false;
        const double span = std::max<double>(double(t_end - model.tBegin()), 1000.0);
        m_window.ns_per_px = std::clamp(span * 1.04 / width, kMinNsPerPx, kMaxNsPerPx);
        m_window.start_ns = double(model.tBegin()) - span * 0.02;
    }
    if (m_pending_range) {
        const double span = std::max<double>(double(m_pending_range->second - m_pending_range->first), 10.0);
        m_window.ns_per_px = std::clamp(span / width, kMinNsPerPx, kMaxNsPerPx);
        m_window.start_ns = double(m_pending_range->first);
        m_pending_range.reset();
    }
    if (m_pending_center) {
        m_window.start_ns = double(*m_pending_center) - 0.5 * width * m_window.ns_per_px;
        m_pending_center.reset();
    }
    if (inputs.playback.playing && inputs.cursor()) // a playing cursor stays in view, at 60 % of the width
        m_window.start_ns = std::max(double(*inputs.cursor()) - 0.6 * width * m_window.ns_per_px,
                                     double(model.tBegin()) - 0.02 * width * m_window.ns_per_px);
    else if (m_follow_live && inputs.live && !inputs.cursor())
        m_window.start_ns = double(t_end) - 0.97 * width * m_window.ns_per_px;
}

void TimelineView::handleInput(const ViewInputs& inputs, bool hovered, bool active, bool released,
                               float area_x0) {
    ImGuiIO& io = ImGui::GetIO();
    const float width = m_window.width;
    if (ImGui::IsItemActivated())
        m_dragged = false;

    // Wheel: zoom around the cursor (around the right edge while following live).
    if (hovered && io.MouseWheel != 0.0f) {
        float mx = std::clamp(m_mouse.x - area_x0, 0.0f, width);
        if (m_follow_live && inputs.live)
            mx = 0.97f * width;
        const double t = m_window.timeAt(mx);
        m_window.ns_per_px =
            std::clamp(m_window.ns_per_px * std::pow(1.25, -double(io.MouseWheel)), 0.05, 1e12);
        m_window.start_ns = t - double(mx) * m_window.ns_per_px;
    }
    // Drag with any button: pan in time (and scroll the lanes vertically).
    if (active &&
        (ImGui::IsMouseDragging(ImGuiMouseButton_Left) || ImGui::IsMouseDragging(ImGuiMouseButton_Right) ||
         ImGui::IsMouseDragging(ImGuiMouseButton_Middle))) {
        m_dragged = true;
        if (io.MouseDelta.x != 0.0f) {
            m_window.start_ns -= double(io.MouseDelta.x) * m_window.ns_per_px;
            m_follow_live = false;
        }
        if (io.MouseDelta.y != 0.0f)
            ImGui::SetScrollY(ImGui::GetScrollY() - io.MouseDelta.y);
    }
    const RunModel& model = *inputs.model;
    // Double-click: zoom to the span under the cursor.
    if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
        if (auto hit = hitTest(model, m_lanes, m_window, m_mouse.x - area_x0, m_mouse.y)) {
            const double pad = std::max<double>(double(hit->item.t1 - hit->item.t0) * 0.1, 1000.0);
            showRange(clampToTime(double(hit->item.t0) - pad), clampToTime(double(hit->item.t1) + pad));
        }
        return;
    }
    // Click (press and release without dragging): select.
    if (released && !m_dragged && ImGui::IsMouseReleased(ImGuiMouseButton_Left)) {
        int rank = -1, row = -1;
        if (m_mouse.x < area_x0) { // the label column selects the rank
            if (inputs.selected_rank && m_lanes.rowAt(m_mouse.y, model.world(), rank, row))
                *inputs.selected_rank = rank;
            return;
        }
        // A click in the lanes also puts the shared time cursor there (the FSDP flow view shows that moment).
        if (inputs.cursor_ns)
            *inputs.cursor_ns = clampToTime(m_window.timeAt(m_mouse.x - area_x0));
        auto hit = hitTest(model, m_lanes, m_window, m_mouse.x - area_x0, m_mouse.y);
        if (!hit) {
            m_selection.reset();
        } else if (hit->item.folded()) { // a folded block: zoom into it
            showRange(hit->item.t0, std::max(hit->item.t1, hit->item.t0 + 1000));
        } else {
            const SpanRecord& s = model.lane(hit->rank).row(hit->row)[hit->item.first];
            m_selection = TimelineSelection{hit->rank, hit->row, s};
            if (inputs.selected_rank)
                *inputs.selected_rank = hit->rank;
        }
    }
}

// -----------------------------------------------------------------------------
// [SECTION] Frame: child window, input, lanes, axis
// -----------------------------------------------------------------------------

bool TimelineView::isEmpty(const ViewInputs& inputs) const {
    return !inputs.model || inputs.model->empty() || inputs.model->world() == 0;
}

void TimelineView::beginFrame(const ViewInputs& inputs) {
    m_hover.reset();
    m_hover_instant = nullptr;
    m_item_count = m_fold_count = 0;
    drawToolbar(inputs);
    drawLegend(inputs);
}

void TimelineView::drawEmptyState(const ViewInputs& inputs) {
    beginFrame(inputs);
    m_initialized = false;
    emptyState("No events yet: start a run or open a recording",
               "Each rank gets a lane here: its steps, forward and backward per block and every collective, "
               "all on one clock.");
}

void TimelineView::drawContent(const ViewInputs& inputs) {
    beginFrame(inputs);
    const RunModel* model = inputs.model;

    const float line_h = ImGui::GetTextLineHeight();
    m_lanes.compact = false;
    m_lanes.row_height = std::floor(line_h + 5.0f);
    m_lanes.lane_gap = std::floor(line_h * 0.5f);
    const float axis_h = std::floor(line_h + 10.0f);
    const float pad = ImGui::GetStyle().ItemInnerSpacing.x;
    const float label_w = std::floor(ImGui::CalcTextSize("rank 000").x + 2.0f * pad + 4.0f);
    const int world = model->world();

    ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(0.0f, 0.0f));
    ImGui::BeginChild("##timeline_lanes", ImVec2(0.0f, 0.0f), true, ImGuiWindowFlags_NoMove);
    ImGui::PopStyleVar();
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImVec2 win_pos = ImGui::GetWindowPos();
    const ImVec2 win_size = ImGui::GetWindowSize();
    const ImVec2 origin = ImGui::GetCursorScreenPos(); // moves with the vertical scroll
    const float content_w = ImGui::GetContentRegionAvail().x;
    const float area_x0 = origin.x + label_w;
    const float area_x1 = origin.x + content_w;
    // Many ranks: two thin rows each, as tall as lets every rank fit (at least 4 px).
    const float top_pad = origin.y + ImGui::GetScrollY() - win_pos.y; // the border, whatever the scroll
    const float visible_h = win_size.y - top_pad - axis_h - 2.0f;
    if (m_compact_choice.value_or(autoCompactLanes(world, m_lanes.laneHeight(), visible_h)))
        fitCompactLanes(m_lanes, world, visible_h, 4.0f, std::floor(line_h * 0.6f));

    m_window.width = std::max(1.0f, content_w - label_w);
    m_window.now_ns =
        inputs.live ? inputs.now_ns : std::max(inputs.now_ns, model->tEnd()); // live: frozen while paused
    m_live = inputs.live;
    // The hang diagnosis for the labels: again with each new event, and each frame while a
    // live collective is open (it becomes hung with time alone).
    if (inputs.model && (inputs.model != m_hung_model || inputs.model->generation() != m_hung_generation ||
                         (m_live && inputs.model->openCollectives() > 0))) {
        m_hung = inputs.model->hungCollectives(inputs.now_ns, !m_live);
        m_hung_model = inputs.model;
        m_hung_generation = inputs.model->generation();
    }
    m_lanes.top = origin.y + axis_h;
    m_area_x0 = area_x0;
    applyPending(inputs);
    if (m_pending_scroll_rank >= 0) {
        ImGui::SetScrollY(
            std::max(0.0f, float(std::min(m_pending_scroll_rank, world - 1)) * m_lanes.laneHeight() -
                               m_lanes.laneHeight()));
        m_pending_scroll_rank = -1;
    }

    // One invisible button over everything receives clicks, drags and the wheel.
    const float lanes_h = float(world) * m_lanes.laneHeight();
    // `released` is true when a button is let go over it (a click, or the end of a drag).
    const bool released =
        ImGui::InvisibleButton("##lanes", ImVec2(std::max(1.0f, content_w), axis_h + lanes_h),
                               ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight |
                                   ImGuiButtonFlags_MouseButtonMiddle);
    ImGui::SetItemUsingMouseWheel(); // the wheel zooms instead of scrolling the window
    const bool hovered = ImGui::IsItemHovered();
    const bool active = ImGui::IsItemActive();
    m_mouse = ImGui::GetIO().MousePos;
    handleInput(inputs, hovered, active, released, area_x0);

    // Lanes inside the visible part of the child (below the sticky axis).
    const float clip_y0 = win_pos.y + axis_h, clip_y1 = win_pos.y + win_size.y;
    const int first_rank = std::max(0, int(std::floor((clip_y0 - m_lanes.top) / m_lanes.laneHeight())));
    const int last_rank =
        std::min(world - 1, int(std::floor((clip_y1 - m_lanes.top) / m_lanes.laneHeight())));
    draw->PushClipRect(ImVec2(win_pos.x, clip_y0), ImVec2(win_pos.x + win_size.x, clip_y1), true);
    for (int rank = first_rank; rank <= last_rank; ++rank)
        drawLane(inputs, draw, rank, area_x0, area_x1, origin.x);
    draw->AddLine(ImVec2(area_x0 - 1.0f, clip_y0), ImVec2(area_x0 - 1.0f, clip_y1),
                  ImGui::GetColorU32(ImGuiCol_Border));
    draw->PushClipRect(ImVec2(area_x0, clip_y0), ImVec2(area_x1, clip_y1), true);
    if (inputs.live) { // "now"
        const float x = area_x0 + float(m_window.xOf(double(inputs.now_ns)));
        draw->AddLine(ImVec2(x, clip_y0), ImVec2(x, clip_y1),
                      palette::withAlpha(ImGui::GetColorU32(ImGuiCol_Text), 0.5f));
    }
    if (const std::optional<int64_t> cursor = inputs.cursor()) { // the shared time cursor, not "now"
        const float x = area_x0 + float(std::clamp(m_window.xOf(double(*cursor)), -1e5, 1e5));
        // What happened after the cursor is faded: the views show the moment at the line.
        if (x < area_x1)
            draw->AddRectFilled(ImVec2(std::max(x, area_x0), clip_y0), ImVec2(area_x1, clip_y1),
                                palette::withAlpha(ImGui::GetColorU32(ImGuiCol_WindowBg), 0.45f));
        draw->AddLine(ImVec2(x, clip_y0), ImVec2(x, clip_y1), palette::kCursor, 2.5f);
    }
    drawLinks(inputs, draw, area_x0);
    draw->PopClipRect();
    draw->PopClipRect();

    drawAxis(*model, draw, win_pos, ImVec2(win_pos.x + win_size.x, win_pos.y + axis_h), area_x0);
    if (const std::optional<int64_t> cursor = inputs.cursor()) { // its tag on the axis
        const float x = area_x0 + float(std::clamp(m_window.xOf(double(*cursor)), -1e5, 1e5));
        char tag[48];
        std::snprintf(tag, sizeof(tag), "cursor %+.2f s", double(*cursor - model->tBegin()) / 1e9);
        const ImVec2 ts = ImGui::CalcTextSize(tag);
        const float x0 =
            std::clamp(x - ts.x * 0.5f - 4.0f, area_x0, std::max(area_x0, area_x1 - ts.x - 8.0f));
        if (x >= area_x0 && x <= area_x1) {
            draw->AddRectFilled(ImVec2(x0, win_pos.y + 1.0f),
                                ImVec2(x0 + ts.x + 8.0f, win_pos.y + axis_h - 1.0f), palette::kCursor, 3.0f);
            draw->AddText(ImVec2(x0 + 4.0f, win_pos.y + (axis_h - ts.y) * 0.5f),
                          palette::textOn(palette::kCursor), tag);
        }
    }
    if (hovered && !(active && m_dragged))
        drawTooltip(inputs);
    ImGui::EndChild();
}

void TimelineView::drawAxis(const RunModel& model, ImDrawList* draw, ImVec2 min, ImVec2 max, float area_x0) {
    // Drawn last and opaque so the lanes scroll underneath it.
    draw->AddRectFilled(min, max, ImGui::GetColorU32(ImGuiCol_WindowBg));
    draw->AddLine(ImVec2(min.x, max.y - 1.0f), ImVec2(max.x, max.y - 1.0f),
                  ImGui::GetColorU32(ImGuiCol_Border));
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
    const ImU32 dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    draw->AddText(ImVec2(min.x + 6.0f, min.y + 4.0f), dim, "time");

    // Labels are relative to the run's first event, every >= 110 px; minor ticks at a fifth.
    const double origin_ns = double(model.tBegin());
    const double step = niceStep(m_window.ns_per_px * 110.0);
    const double rel0 = m_window.start_ns - origin_ns;
    const double rel1 = m_window.endNs() - origin_ns;
    draw->PushClipRect(ImVec2(area_x0, min.y), max, true);
    const double minor = step / 5.0;
    if (minor / m_window.ns_per_px >= 6.0)
        for (double r = std::ceil(rel0 / minor) * minor; r <= rel1; r += minor) {
            const float x = area_x0 + float(m_window.xOf(origin_ns + r));
            draw->AddLine(ImVec2(x, max.y - 4.0f), ImVec2(x, max.y - 1.0f), dim);
        }
    char label[48];
    for (double r = std::ceil(rel0 / step) * step; r <= rel1 + step; r += step) {
        const float x = area_x0 + float(m_window.xOf(origin_ns + r));
        draw->AddLine(ImVec2(x, max.y - 8.0f), ImVec2(x, max.y - 1.0f), text);
        formatTimeTick(label, sizeof(label), std::fabs(r) < step * 1e-6 ? 0.0 : r, step);
        draw->AddText(ImVec2(x + 3.0f, min.y + 3.0f), text, label);
    }
    draw->PopClipRect();
}

// -----------------------------------------------------------------------------
// [SECTION] Drawing one lane and one item
// -----------------------------------------------------------------------------

void TimelineView::drawLane(const ViewInputs& inputs, ImDrawList* draw, int rank, float area_x0,
                            float area_x1, float label_x0) {
    const RunModel& model = *inputs.model;
    const RankLane& lane = model.lane(rank);
    const float top = m_lanes.rowTop(rank, m_lanes.rowInSlot(0));
    const float bottom = top + float(m_lanes.shownRows()) * m_lanes.row_height;
    const bool selected = inputs.selected_rank && *inputs.selected_rank == rank;
    if (selected)
        draw->AddRectFilled(ImVec2(label_x0, top), ImVec2(area_x1, bottom),
                            palette::withAlpha(ImGui::GetColorU32(ImGuiCol_Header), 0.45f));
    else if (rank % 2 == 1)
        draw->AddRectFilled(ImVec2(label_x0, top), ImVec2(area_x1, bottom),
                            ImGui::GetColorU32(ImGuiCol_TableRowBgAlt));

    // Label column: the rank, then the row names. Compact lanes: the rank only,
    // centred on its lane, on every k-th lane when a label is taller than a lane.
    const float pad = ImGui::GetStyle().ItemInnerSpacing.x + 2.0f;
    const float text_h = ImGui::GetTextLineHeight();
    char label[32];
    std::snprintf(label, sizeof(label), "rank %d", rank);
    if (!m_lanes.compact) {
        const float text_dy = std::floor((m_lanes.row_height - text_h) * 0.5f);
        draw->AddText(ImVec2(label_x0 + pad, top + text_dy), ImGui::GetColorU32(ImGuiCol_Text), label);
        for (int row = 1; row < LaneLayout::kRows; ++row)
            draw->AddText(ImVec2(label_x0 + pad + 8.0f, m_lanes.rowTop(rank, row) + text_dy),
                          ImGui::GetColorU32(ImGuiCol_TextDisabled), kRowNames[row]);
    } else {
        const int every = std::max(1, int(std::ceil(text_h / m_lanes.laneHeight())));
        if (rank % every == 0 || selected)
            draw->AddText(ImVec2(label_x0 + pad, std::floor((top + bottom - text_h) * 0.5f)),
                          ImGui::GetColorU32(selected ? ImGuiCol_Text : ImGuiCol_TextDisabled), label);
    }

    // Which row is under the mouse (for the tooltip)?
    int hover_rank = -1, hover_row = -1;
    const float mx = m_mouse.x - area_x0;
    const bool mouse_in_area = ImGui::IsItemHovered() && mx >= 0.0f && mx <= m_window.width &&
                               m_lanes.rowAt(m_mouse.y, model.world(), hover_rank, hover_row) &&
                               hover_rank == rank;

    draw->PushClipRect(ImVec2(area_x0, top), ImVec2(area_x1, bottom), true);
    for (int slot = 0; slot < m_lanes.shownRows(); ++slot) {
        const int row = m_lanes.rowInSlot(slot);
        m_items.clear();
        buildRowItems(lane.row(row), lane.rowEndMax(row), m_window, m_items);
        m_item_count += m_items.size();
        const float inset = m_lanes.compact ? 0.0f : 1.0f;
        const float y0 = m_lanes.rowTop(rank, row) + inset;
        const float y1 = y0 + m_lanes.row_height - 2.0f * inset;
        for (const RowItem& item : m_items)
            drawItem(draw, lane, rank, row, item, area_x0, y0, y1);
        if (mouse_in_area && hover_row == row) {
            const int k = hitTestItems(m_items, mx);
            if (k >= 0)
                m_hover = TimelineHit{rank, row, m_items[size_t(k)]};
        }
    }

    // Lifecycle markers: a triangle at the top of the lane; failures also get a line through it.
    const auto& instants = lane.instants;
    const float tri_h = std::min(7.0f, std::floor(0.8f * (bottom - top)));
    auto it = std::lower_bound(instants.begin(), instants.end(),
                               clampToTime(m_window.start_ns - 8.0 * m_window.ns_per_px),
                               [](const Event& e, int64_t t) { return e.t_ns < t; });
    for (; it != instants.end() && double(it->t_ns) <= m_window.endNs() + 8.0 * m_window.ns_per_px; ++it) {
        const float x = area_x0 + float(m_window.xOf(double(it->t_ns)));
        const ImU32 color = palette::kindColor(it->kind);
        if (it->kind == EventKind::RankFailed || it->kind == EventKind::ProcessExited ||
            it->kind == EventKind::FaultInjected)
            draw->AddLine(ImVec2(x, top), ImVec2(x, bottom), color, 2.0f);
        draw->AddTriangleFilled(ImVec2(x - 5.0f, top), ImVec2(x + 5.0f, top), ImVec2(x, top + tri_h), color);
        if (mouse_in_area && m_lanes.slotOf(hover_row) == 0 && std::fabs(m_mouse.x - x) <= 5.0f &&
            m_mouse.y <= top + tri_h + 2.0f)
            m_hover_instant = &*it;
    }
    draw->PopClipRect();
}

void TimelineView::drawItem(ImDrawList* draw, const RankLane& lane, int rank, int row, const RowItem& item,
                            float area_x0, float y0, float y1) {
    const auto& spans = lane.row(row);
    const float xa = area_x0 + item.x0;
    const float xb = std::max(area_x0 + item.x1, xa + 1.0f);
    const ImVec2 a(xa, y0), b(xb, y1);
    char label[160];
    const bool text_fits = y1 - y0 >= ImGui::GetTextLineHeight() - 2.0f; // compact rows go without labels

    if (item.folded()) {
        ++m_fold_count;
        // A folded block: the first span's colour, darker, with a zig-zag and the count.
        const ImU32 fill = palette::shade(palette::kindColor(spans[item.first].kind), 0.8f);
        draw->AddRectFilled(a, b, fill);
        const float w = xb - xa;
        if (w >= 6.0f) {
            ImVec2 points[65];
            const int n = std::min(64, int(w / 6.0f));
            for (int k = 0; k <= n; ++k)
                points[k] = ImVec2(xa + w * float(k) / float(n), (k % 2) ? y0 + 2.0f : y1 - 2.0f);
            draw->AddPolyline(points, n + 1, palette::withAlpha(palette::textOn(fill), 0.35f), 0, 1.0f);
        }
        if (w >= 48.0f && text_fits) {
            char count[24];
            formatCount(count, sizeof(count), item.count);
            std::snprintf(label, sizeof(label), "%s spans", count);
            const ImVec4 clip(xa + 2.0f, y0, xb - 2.0f, y1);
            draw->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(xa + 3.0f, y0 + 1.0f),
                          palette::textOn(fill), label, nullptr, 0.0f, &clip);
        }
        return;
    }

    const SpanRecord& s = spans[item.first];
    const ImU32 color = palette::kindColor(s.kind);
    if (!s.started) {
        // Queued: scheduled, waiting for the communicator thread (behind the
        // running Work). A thin outlined strip at the bottom of the row, so
        // the Work running above it stays readable.
        const ImVec2 qa(xa, y1 - 5.0f);
        draw->AddRectFilled(qa, b, palette::withAlpha(color, 0.35f));
        draw->AddRect(qa, b, color);
        return;
    }
    draw->AddRectFilled(a, b, color);
    // Open for long in a live run, or open at the end of a finished run or a replay.
    const bool hung = s.open() && (!m_live || m_window.now_ns - s.t0 > kStuckAfterNs);
    if (hung) { // never completed: red hatching and border, a thick red edge at "now"
        drawHatch(draw, a, b, palette::kHung);
        draw->AddRect(a, b, palette::kHung, 0.0f, 0, 2.0f);
        draw->AddLine(ImVec2(xb - 2.0f, y0 - 1.0f), ImVec2(xb - 2.0f, y1 + 1.0f), palette::kHung, 4.0f);
    }
    if (s.failed) {
        drawHatch(draw, a, b, palette::withAlpha(palette::kFailed, 0.6f));
        draw->AddRect(a, b, palette::kFailed, 0.0f, 0, 2.0f);
    }
    if (xb - xa >= 40.0f && text_fits) {
        spanLabel(label, sizeof(label), s);
        const HungCollective* diagnosis = hung || s.failed ? findHungFor(m_hung, rank, s) : nullptr;
        if (hung)
            std::snprintf(label + std::strlen(label), sizeof(label) - std::strlen(label),
                          ", never completed");
        if (diagnosis && !diagnosis->missing_ranks.empty())
            std::snprintf(label + std::strlen(label), sizeof(label) - std::strlen(label), ": %s",
                          missingRanksNote(*diagnosis).c_str());
        if (s.failed)
            std::snprintf(label + std::strlen(label), sizeof(label) - std::strlen(label), ", FAILED");
        // Shortened with "..." to the visible part of the span, never cut mid-word (hover shows it whole).
        const float text_x = std::max(xa, area_x0) + 3.0f;
        const std::string shown = elideToWidth(label, std::min(xb, draw->GetClipRectMax().x) - 2.0f - text_x);
        const ImVec4 clip(xa + 2.0f, y0, xb - 2.0f, y1);
        draw->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(text_x, y0 + 1.0f),
                      palette::textOn(color), shown.c_str(), nullptr, 0.0f, &clip);
    }
    if (m_selection && m_selection->rank == rank && m_selection->row == row &&
        sameSpan(m_selection->span, s)) {
        m_selection->span = s; // keep it fresh (a hung collective may have completed since)
        draw->AddRect(ImVec2(xa - 1.0f, y0 - 1.0f), ImVec2(xb + 1.0f, y1 + 1.0f),
                      ImGui::GetColorU32(ImGuiCol_Text), 0.0f, 0, 2.0f);
    }
}

// -----------------------------------------------------------------------------
// [SECTION] Links between the parts of a collective
// -----------------------------------------------------------------------------
//
// The hovered collective (or else the selected one) is linked to its parts on
// the other ranks: same process group, kind and seq (collectives number their
// Works in issue order per group, identically on every rank of the group; a
// rank in two groups, as under HSDP, has two independent numberings). A send is
// linked to the recv with the same seq on its peer (numbered per direction and
// peer).

void TimelineView::drawLinks(const ViewInputs& inputs, ImDrawList* draw, float area_x0) {
    const RunModel& model = *inputs.model;
    int rank = -1;
    const SpanRecord* s = nullptr;
    if (m_hover && !m_hover->item.folded() && m_hover->row == RankLane::kCommRow) {
        rank = m_hover->rank;
        s = &model.lane(rank).comm[m_hover->item.first];
    } else if (m_selection && m_selection->row == RankLane::kCommRow) {
        rank = m_selection->rank;
        s = model.findPart(rank, m_selection->span);
    }
    if (!s || !isCollective(s->kind))
        return;

    const float half = 0.5f * m_lanes.row_height;
    const ImU32 color = ImGui::GetColorU32(ImGuiCol_Text);
    auto at = [&](int r, int64_t t) {
        return ImVec2(area_x0 + float(std::clamp(m_window.xOf(double(t)), -1e5, 1e5)),
                      m_lanes.rowTop(r, RankLane::kCommRow) + half);
    };
    auto outline = [&](int r, const SpanRecord& part) {
        const float y0 = m_lanes.rowTop(r, RankLane::kCommRow);
        draw->AddRect(ImVec2(at(r, part.t0).x - 1.0f, y0),
                      ImVec2(std::max(at(r, part.endOr(m_window.now_ns)).x, at(r, part.t0).x + 1.0f) + 1.0f,
                             y0 + m_lanes.row_height),
                      color, 0.0f, 0, 2.0f);
    };
    outline(rank, *s);
    if (isPointToPoint(s->kind)) {
        const bool is_send = s->kind == EventKind::Send;
        const SpanRecord* other =
            model.findComm(s->peer, s->group, is_send ? EventKind::Recv : EventKind::Send, rank, s->seq);
        if (!other)
            return;
        outline(s->peer, *other);
        // Data flows from the send's start to the recv's end.
        if (is_send)
            drawArrow(draw, at(rank, s->t0), at(s->peer, other->endOr(m_window.now_ns)), color);
        else
            drawArrow(draw, at(s->peer, other->t0), at(rank, s->endOr(m_window.now_ns)), color);
        return;
    }
    for (int r = 0; r < model.world(); ++r) {
        if (r == rank)
            continue;
        const SpanRecord* part = model.findPart(r, *s);
        if (!part)
            continue;
        outline(r, *part);
        drawArrow(draw, at(rank, s->t0), at(r, part->t0), color);
    }
}

// -----------------------------------------------------------------------------
// [SECTION] Tooltips
// -----------------------------------------------------------------------------

void TimelineView::drawTooltip(const ViewInputs& inputs) {
    const RunModel& model = *inputs.model;
    const double origin = double(model.tBegin());
    char a[48], b[48];
    if (m_hover_instant) {
        const Event& e = *m_hover_instant;
        ImGui::BeginTooltip();
        colorSwatch(palette::kindColor(e.kind));
        ImGui::SameLine();
        ImGui::Text("%s", kindLabel(e.kind));
        formatDuration(a, sizeof(a), double(e.t_ns) - origin);
        ImGui::TextDisabled("rank %d  at +%s", e.rank, a);
        if (e.kind == EventKind::RankStarted)
            ImGui::Text("pid %.0f", e.value);
        if (e.kind == EventKind::ProcessExited)
            ImGui::Text(e.value < 0 ? "killed by signal %.0f" : "exit status %.0f", std::fabs(e.value));
        if (e.kind == EventKind::FaultInjected)
            ImGui::Text("signal %.0f", e.value);
        ImGui::EndTooltip();
        return;
    }
    if (!m_hover)
        return;
    const RowItem& item = m_hover->item;
    ImGui::BeginTooltip();
    if (item.folded()) {
        char count[24];
        formatCount(count, sizeof(count), item.count);
        ImGui::Text("%s spans folded together", count);
        formatDuration(a, sizeof(a), double(item.t0) - origin);
        formatDuration(b, sizeof(b), double(item.t1 - item.t0));
        ImGui::TextDisabled("each narrower than %.0f px at this zoom", double(kMinSpanPx));
        ImGui::Text("from +%s, lasting %s", a, b);
        ImGui::TextDisabled("click to zoom in");
        ImGui::EndTooltip();
        return;
    }
    const int rank = m_hover->rank;
    const SpanRecord& s = model.lane(rank).row(m_hover->row)[item.first];
    spanLabel(a, sizeof(a), s);
    colorSwatch(palette::kindColor(s.kind));
    ImGui::SameLine();
    ImGui::TextUnformatted(a);
    ImGui::Separator();
    ImGui::Text("rank %d", rank);
    if (s.step >= 0) {
        ImGui::SameLine();
        ImGui::Text("  step %d", s.step);
    }
    if (s.microbatch >= 0) {
        ImGui::SameLine();
        ImGui::Text("  microbatch %d", s.microbatch);
    }
    const bool unit_collective = s.kind == EventKind::AllGather || s.kind == EventKind::ReduceScatter;
    if (unit_collective && s.unit >= 0)
        ImGui::Text("FSDP unit %d (block %d)", s.unit, s.unit);
    else if (unit_collective && model.scenario().strategy.kind != dt::StrategyKind::Ddp)
        ImGui::Text("FSDP unit root (embeddings, final norm, head)");
    else if (s.unit >= 0 && model.scenario().strategy.kind == dt::StrategyKind::Pipeline)
        ImGui::Text("pipeline chunk %d", s.unit);
    else if (s.unit >= 0)
        ImGui::Text("%s %d", s.depth == RankLane::kCommRow ? "bucket" : "block", s.unit);
    formatDuration(a, sizeof(a), double(s.t0) - origin);
    ImGui::Text("start     +%s", a);
    if (s.open()) {
        formatDuration(b, sizeof(b), double(s.endOr(m_window.now_ns) - s.t0));
        ImGui::PushStyleColor(ImGuiCol_Text, palette::kHung);
        if (s.started)
            ImGui::Text("%s: open for %s", m_live ? "in flight" : "never completed", b);
        else
            ImGui::Text("queued, not started yet (%s)", b);
        ImGui::PopStyleColor();
    } else {
        formatDuration(b, sizeof(b), double(s.t1 - s.t0));
        ImGui::Text("duration  %s", b);
    }
    if (s.depth == RankLane::kCommRow) {
        if (s.failed) {
            ImGui::PushStyleColor(ImGuiCol_Text, palette::kFailed);
            ImGui::TextUnformatted("FAILED (the communicator reported an error)");
            ImGui::PopStyleColor();
        }
        if (const HungCollective* h = findHungFor(m_hung, rank, s)) {
            ImGui::PushStyleColor(ImGuiCol_Text, palette::kHung);
            ImGui::Text("hung: %s", missingRanksNote(*h).c_str());
            ImGui::PopStyleColor();
            ImGui::Text("group ranks %s, started %s", rankSetText(h->group_ranks).c_str(),
                        rankSetText(h->started_ranks).c_str());
        }
        ImGui::Text("bytes     %s (%s)", formatBytes(double(s.bytes)).c_str(),
                    formatBytesExact(s.bytes).c_str());
        if (s.kind == EventKind::Send)
            ImGui::Text("to rank %d", s.peer);
        else if (s.kind == EventKind::Recv)
            ImGui::Text("from rank %d", s.peer);
        else if (s.kind == EventKind::Broadcast)
            ImGui::Text("root rank %d, group of %d", s.peer, s.group_size);
        else
            ImGui::Text("group of %d ranks", s.group_size);
        char group[96];
        groupName(group, sizeof(group), s.group);
        ImGui::Text("group     %s", group);
        ImGui::Text("seq       %llu", (unsigned long long)s.seq);
        if (s.t_scheduled != 0 && s.started) {
            formatDuration(a, sizeof(a), double(s.t0 - s.t_scheduled));
            ImGui::Text("queued    %s before it started", a);
        }
        if (!isPointToPoint(s.kind) && s.group_size > 1) {
            // Which ranks of the group have this Work at all? A missing part is a rank that never got there.
            int seen = 0;
            std::string missing;
            const int shards = std::max(1, shardCount(model.scenario()));
            for (int r = 0; r < model.world(); ++r) {
                if (!inGroup(r, s.group, shards))
                    continue;
                if (model.findPart(r, s))
                    ++seen;
                else
                    missing += (missing.empty() ? "" : ", ") + std::to_string(r);
            }
            if (missing.empty())
                ImGui::TextDisabled("parts on all %d ranks of the group (arrows)", seen);
            else
                ImGui::Text("parts on %d of %d ranks; missing on rank %s", seen, int(s.group_size),
                            missing.c_str());
        }
    }
    ImGui::EndTooltip();
}

} // namespace dt::app
