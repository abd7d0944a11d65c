// view_fsdp_flow.cpp: FSDP's units, sharded or gathered, for one rank at one moment
// (see view_fsdp_flow.hpp).
//
// [SECTION] Data (pure): the units' state at a moment
// [SECTION] Help and empty states
// [SECTION] Drawing: header, tiles, footer
#include "views/view_fsdp_flow.hpp"

#include "dtlab/sharding_theory.hpp"
#include "widgets/format.hpp"
#include "widgets/help.hpp"
#include "widgets/palette.hpp"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dt::app {

// -----------------------------------------------------------------------------
// [SECTION] Data (pure): the units' state at a moment
// -----------------------------------------------------------------------------

bool shardsParameters(StrategyKind kind) {
    return strategyTraits(kind).shards_parameters;
}

FlowEmpty fsdpFlowEmpty(const ViewInputs& inputs) {
    if (!inputs.model)
        return FlowEmpty::NoRun;
    if (!shardsParameters(inputs.model->scenario().strategy.kind))
        return FlowEmpty::NotSharded;
    return FlowEmpty::None;
}

const FlowTile* FlowState::tile(int unit) const {
    for (const FlowTile& t : tiles)
        if (t.unit == unit)
            return &t;
    return nullptr;
}

namespace {

// Calls fn(span) for every span of a row that contains t (t0 <= t < end; an
// open span contains every t after its start). Spans are sorted by t0 and
// end_max[i] is the largest end among spans [0, i], so walking back from the
// last span starting at or before t can stop at the first i whose end_max is
// already <= t: nothing before it reaches t.
template <typename Fn>
void forEachSpanAt(const std::vector<SpanRecord>& spans, const std::vector<int64_t>& end_max, int64_t t,
                   Fn&& fn) {
    size_t i = size_t(std::upper_bound(spans.begin(), spans.end(), t,
                                       [](int64_t value, const SpanRecord& s) { return value < s.t0; }) -
                      spans.begin());
    while (i > 0 && end_max[i - 1] > t) {
        --i;
        if (spans[i].t1 > t)
            fn(spans[i]);
    }
}

// Index of a unit's tile: the root (-1) first when the model has one.
int tileIndex(const FlowState& state, int unit) {
    const bool has_root = !state.tiles.empty() && state.tiles.front().unit == -1;
    const int index = unit + (has_root ? 1 : 0);
    if (unit < -1 || (unit == -1 && !has_root) || index >= int(state.tiles.size()))
        return -1;
    return index;
}

} // namespace

FlowState fsdpFlowState(const RunModel& model, int rank, int64_t t) {
    FlowState state;
    state.rank = rank;
    state.t_ns = t;
    const Scenario& scenario = model.scenario();
    state.shards = std::max(1, shardCount(scenario));

    // One tile per unit, sized by the theory until an event says the real size.
    const UnitLayout layout = unitLayout(scenario.model);
    if (layout.root_numel > 0) {
        FlowTile root;
        root.unit = -1;
        root.theory_full_bytes = 4 * paddedNumel(layout.root_numel, state.shards);
        state.tiles.push_back(root);
    }
    for (size_t u = 0; u < layout.unit_numel.size(); ++u) {
        FlowTile tile;
        tile.unit = int(u);
        tile.theory_full_bytes = 4 * paddedNumel(layout.unit_numel[u], state.shards);
        state.tiles.push_back(tile);
    }
    if (rank < 0 || rank >= model.world())
        return state;
    const RankLane& lane = model.lane(rank);

    // Residency: the latest UnitMaterialized / UnitFreed per unit at or before t.
    const auto& events = lane.unit_events;
    size_t i = size_t(std::upper_bound(events.begin(), events.end(), t,
                                       [](int64_t value, const Event& e) { return value < e.t_ns; }) -
                      events.begin());
    std::vector<bool> resolved(state.tiles.size(), false);
    size_t left = state.tiles.size();
    const Event* latest = nullptr;
    while (i > 0 && left > 0) {
        const Event& e = events[--i];
        if (!latest)
            latest = &e;
        const int k = tileIndex(state, e.unit);
        if (k < 0 || resolved[size_t(k)])
            continue;
        resolved[size_t(k)] = true;
        --left;
        FlowTile& tile = state.tiles[size_t(k)];
        tile.full_bytes = e.bytes;
        tile.since_ns = e.t_ns;
        if (e.kind == EventKind::UnitMaterialized) {
            tile.residency = Residency::Materialized;
            tile.gathered_for = int(e.value);
        } else {
            tile.residency = Residency::Freed;
        }
    }
    state.any_unit_events = latest != nullptr;

    // Compute in progress: per-block spans (depth 2) and the root's forward/backward (depth 1, unit -1).
    for (int depth : {1, 2}) {
        forEachSpanAt(lane.compute[size_t(depth)], lane.compute_end_max[size_t(depth)], t,
                      [&](const SpanRecord& s) {
                          const int k = tileIndex(state, s.unit);
                          if (k < 0)
                              return; // unit -2 = the whole backward, or not a unit span
                          FlowTile& tile = state.tiles[size_t(k)];
                          if (s.kind == EventKind::Forward)
                              tile.forward = true;
                          else if (s.kind == EventKind::Backward)
                              tile.backward = true;
                          else if (s.kind == EventKind::Recompute)
                              tile.recompute = true;
                      });
    }

    // Collectives in flight: started at or before t and not completed by t.
    auto unitCollective = [&](const SpanRecord& s, bool queued) {
        if (s.kind != EventKind::AllGather && s.kind != EventKind::ReduceScatter)
            return;
        const int k = tileIndex(state, s.unit);
        if (k < 0)
            return;
        FlowTile& tile = state.tiles[size_t(k)];
        if (s.kind == EventKind::AllGather) {
            (queued ? tile.all_gather_queued : tile.all_gather) = true;
            tile.all_gather_seq = s.seq;
            tile.all_gather_t0 = queued ? s.t_scheduled : s.t0;
        } else {
            (queued ? tile.reduce_scatter_queued : tile.reduce_scatter) = true;
            tile.reduce_scatter_seq = s.seq;
            tile.reduce_scatter_t0 = queued ? s.t_scheduled : s.t0;
        }
    };
    forEachSpanAt(lane.comm, lane.comm_end_max, t,
                  [&](const SpanRecord& s) { unitCollective(s, !s.started); });
    // Queued at t but started later: the record sits after t (sorted by start). A
    // prefetched all-gather waits at most a few Works, so a short look ahead finds it.
    const auto& comm = lane.comm;
    size_t j = size_t(std::upper_bound(comm.begin(), comm.end(), t,
                                       [](int64_t value, const SpanRecord& s) { return value < s.t0; }) -
                      comm.begin());
    for (size_t n = 0; j < comm.size() && n < 16; ++j, ++n)
        if (comm[j].t_scheduled != 0 && comm[j].t_scheduled <= t)
            unitCollective(comm[j], true);

    // Step and microbatch: the step span around t, else the latest unit event's step.
    forEachSpanAt(lane.compute[0], lane.compute_end_max[0], t, [&](const SpanRecord& s) {
        if (s.kind == EventKind::Step)
            state.step = std::max(state.step, s.step);
    });
    if (latest && (state.step < 0 || latest->step == state.step)) {
        state.step = latest->step;
        state.microbatch = latest->microbatch;
    }

    // Unsharded bytes alive, as the rank's counter said at or before t.
    const auto& points = lane.counters[size_t(EventKind::MemParamsMaterialized)];
    auto p = std::upper_bound(points.begin(), points.end(), t,
                              [](int64_t value, const CounterPoint& c) { return value < c.t; });
    if (p != points.begin())
        state.materialized_bytes = std::prev(p)->value;
    return state;
}

// -----------------------------------------------------------------------------
// [SECTION] Help and empty states
// -----------------------------------------------------------------------------

FsdpFlowView::FsdpFlowView() : View("fsdp", "FSDP flow") {}

std::optional<bool> FsdpFlowView::relevantTo(const Scenario& scenario) const {
    return shardsParameters(scenario.strategy.kind);
}

LayoutPlace FsdpFlowView::layoutPlace(const LayoutContext& context) const {
    LayoutPlace place;
    place.area = LayoutArea::Band;
    place.height = std::round(preferredHeight());
    (void)context;
    return place;
}

const char* FsdpFlowView::helpText() const {
    return "How FSDP moves each unit's parameters, for one rank (the selected one, else rank 0).\n\n"
           "FSDP cuts the model into units: the root (embeddings, final norm and head) and one unit per "
           "transformer block. Every rank keeps only its 1/N shard of each unit (a thin bar). To run a unit, "
           "the ranks all-gather its shards into the full parameters (materialized: a full bar), compute, "
           "and free the full copy again:\n"
           "  forward:  sharded -> all-gather -> forward -> freed\n"
           "  backward: all-gather again -> backward (and recompute, with activation checkpointing) -> "
           "reduce-scatter of the gradients, each rank keeping the sum for its shard -> freed\n"
           "The root unit stays materialized from its forward to the end of backward (it is needed first and "
           "last). Prefetch overlaps the next unit's all-gather with this unit's compute: two tiles light up "
           "at once, one gathering while the other computes.\n\n"
           "Tiles light up with the phase in progress at the view's moment: all-gather or reduce-scatter in "
           "flight (started, not completed; \"queued\" = issued, waiting for the communicator), forward, "
           "backward, recompute. The moment is now (live), the end of a replay, or the time cursor: click "
           "the timeline or drag the slider; End/Now goes back.\n\n"
           "Everything comes from the rank's events (unit materialized / freed, collectives, compute spans, "
           "the mem params materialized counter); sizes of units not reported yet and the peak line are "
           "labelled theory.";
}

bool FsdpFlowView::isEmpty(const ViewInputs& inputs) const {
    return fsdpFlowEmpty(inputs) != FlowEmpty::None;
}

// -----------------------------------------------------------------------------
// [SECTION] Drawing: header, tiles, footer
// -----------------------------------------------------------------------------

namespace {

struct Chip {
    const char* label;
    EventKind kind;
    bool queued;
};

const char* unitName(char* out, size_t size, int unit, const std::string& model_kind) {
    if (unit < 0)
        std::snprintf(out, size, "root");
    else
        std::snprintf(out, size, "%s %d", model_kind == "mlp" ? "layer" : "block", unit);
    return out;
}

} // namespace

void FsdpFlowView::drawEmptyState(const ViewInputs& inputs) {
    m_empty = fsdpFlowEmpty(inputs);
    if (m_empty == FlowEmpty::NoRun) {
        helpMarker(helpText());
        emptyState("No run open: start a scenario or open a recording",
                   "With [strategy] kind = \"fsdp\" or \"hsdp\" this view shows each FSDP unit of one rank: "
                   "sharded, all-gathered for forward and backward, reduce-scattered and freed.");
        return;
    }
    if (m_empty == FlowEmpty::NotSharded) {
        helpMarker(helpText());
        const std::string kind = strategyKindName(inputs.model->scenario().strategy.kind);
        char title[96];
        std::snprintf(title, sizeof(title),
                      "The \"%s\" strategy does not shard parameters: no units to gather", kind.c_str());
        emptyState(
            title,
            "This view shows FSDP's units (root and blocks) going from a 1/N shard to full parameters and "
            "back: all-gather, compute, reduce-scatter, free. It needs [strategy] kind = \"fsdp\" or "
            "\"hsdp\" in the scenario. Under ddp every rank keeps all parameters; zero1 and zero2 shard "
            "only the optimizer state (and the gradients): compare them in the Memory view.");
    }
}

void FsdpFlowView::drawContent(const ViewInputs& inputs) {
    m_empty = FlowEmpty::None;
    drawHeader(inputs);
    drawTiles(inputs);
}

void FsdpFlowView::drawHeader(const ViewInputs& inputs) {
    const RunModel& model = *inputs.model;
    int rank = inputs.selected_rank && *inputs.selected_rank >= 0 ? *inputs.selected_rank : 0;
    if (rank >= model.world())
        rank = 0;

    // The moment shown: the cursor, else now (live) or the end (replay).
    const bool has_cursor = inputs.cursor_ns && inputs.cursor_ns->has_value();
    const int64_t t_end = std::max(model.tEnd(), inputs.now_ns);
    const int64_t t = has_cursor ? **inputs.cursor_ns : t_end;
    m_state = fsdpFlowState(model, rank, t);

    helpMarker(helpText());
    ImGui::SameLine();
    ImGui::AlignTextToFramePadding();
    ImGui::Text("rank %d", rank);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Select another rank in the Topology view or the timeline.");
    ImGui::SameLine();
    if (m_state.step >= 0 && m_state.microbatch >= 0)
        ImGui::Text("|  step %d, microbatch %d", m_state.step, m_state.microbatch);
    else if (m_state.step >= 0)
        ImGui::Text("|  step %d", m_state.step);
    else
        ImGui::TextDisabled("|  no step yet");
    ImGui::SameLine();
    ImGui::TextDisabled("|  %s, N = %d shard%s per unit", strategyKindName(model.scenario().strategy.kind),
                        m_state.shards, m_state.shards == 1 ? "" : "s");

    // The moment, on the same row: a slider over the run (sets the shared
    // cursor) and a button back to now / the end. No legend: every lit phase
    // is a chip that names itself.
    ImGui::SameLine();
    if (model.empty()) { // no clock to slide over yet
        ImGui::TextDisabled("|  waiting for the first events");
        return;
    }
    ImGui::TextUnformatted(has_cursor ? "|  cursor" : (inputs.live ? "|  now" : "|  end"));
    ImGui::SameLine();
    const double span_s = std::max(0.0, double(t_end - model.tBegin()) * 1e-9);
    double at_s = double(t - model.tBegin()) * 1e-9;
    const double zero = 0.0;
    const char* back = inputs.live ? "Now" : "End";
    const ImGuiStyle& style = ImGui::GetStyle();
    ImGui::SetNextItemWidth(
        std::max(ImGui::GetFontSize() * 6.0f, ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize(back).x -
                                                  style.FramePadding.x * 2.0f - style.ItemSpacing.x));
    if (ImGui::SliderScalar("##moment", ImGuiDataType_Double, &at_s, &zero, &span_s, "+%.4f s") &&
        inputs.cursor_ns)
        *inputs.cursor_ns = model.tBegin() + int64_t(std::llround(std::clamp(at_s, 0.0, span_s) * 1e9));
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("The moment shown, from the run's first event. Drag it, or click in the timeline.");
    ImGui::SameLine();
    ImGui::BeginDisabled(!has_cursor);
    if (ImGui::Button(back) && inputs.cursor_ns)
        inputs.cursor_ns->reset();
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip(inputs.live ? "Clear the cursor: show what happens now."
                                      : "Clear the cursor: show the end of the run.");
}

namespace {

// Tile geometry from the current font (the layout and drawTiles agree on it).
struct TileMetrics {
    float line_h, pad, gap, chip_h, bar_h, tile_h;
};
TileMetrics tileMetrics() {
    TileMetrics m;
    m.line_h = ImGui::GetTextLineHeight();
    m.pad = std::floor(m.line_h * 0.4f);
    m.gap = std::floor(m.line_h * 0.6f);
    m.chip_h = std::floor(m.line_h + 4.0f);
    m.bar_h = std::floor(m.line_h * 0.6f);
    // name and bytes | bar | residency | one row of phase chips (a second one if they do not fit)
    m.tile_h = m.pad * 2.0f + m.line_h * 2.0f + m.bar_h + 8.0f + m.chip_h * 2.0f + 2.0f;
    return m;
}

} // namespace

float FsdpFlowView::preferredHeight() {
    const ImGuiStyle& style = ImGui::GetStyle();
    const TileMetrics m = tileMetrics();
    // title bar, header row, tiles (+ a horizontal scrollbar), footer row, paddings
    return ImGui::GetFrameHeight() * 2.0f + m.tile_h + 8.0f + style.ScrollbarSize + m.line_h +
           style.ItemSpacing.y * 3.0f + style.WindowPadding.y * 2.0f + 4.0f;
}

void FsdpFlowView::drawTiles(const ViewInputs& inputs) {
    const RunModel& model = *inputs.model;
    const FlowState& state = m_state;
    const std::string& model_kind = model.scenario().model.kind;
    const ImGuiStyle& style = ImGui::GetStyle();
    const TileMetrics m = tileMetrics();
    const float line_h = m.line_h, pad = m.pad, gap = m.gap, chip_h = m.chip_h, bar_h = m.bar_h,
                tile_h = m.tile_h;
    const int n = int(state.tiles.size());
    const float min_w = std::floor(ImGui::CalcTextSize("reduce-scatter").x + pad * 4.0f);
    const float avail_w = ImGui::GetContentRegionAvail().x;
    const float tile_w =
        n > 0 ? std::max(min_w, std::floor((avail_w - gap * float(n - 1)) / float(n))) : min_w;
    const float row_w = float(n) * tile_w + float(std::max(n - 1, 0)) * gap;
    const float scroll_h = row_w > avail_w ? style.ScrollbarSize : 0.0f;

    // The tiles keep their height (the window scrolls when it is shorter); only
    // a row wider than the window scrolls sideways.
    ImGui::BeginChild("##fsdp_tiles", ImVec2(0.0f, tile_h + 8.0f + scroll_h), false,
                      ImGuiWindowFlags_HorizontalScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    const ImU32 frame = ImGui::GetColorU32(ImGuiCol_FrameBg), border = ImGui::GetColorU32(ImGuiCol_Border);
    const ImU32 held = palette::kindColor(EventKind::MemParameters);
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const bool window_hovered = ImGui::IsWindowHovered();
    const int shard_index = state.shards > 0 ? state.rank % state.shards : 0;
    int hovered = -1;
    char buf[96], bytes[32];

    for (int k = 0; k < n; ++k) {
        const FlowTile& tile = state.tiles[size_t(k)];
        const ImVec2 a(origin.x + float(k) * (tile_w + gap), origin.y + 4.0f);
        const ImVec2 b(a.x + tile_w, a.y + tile_h);
        // The phase that lights the border: compute first, then the collectives.
        ImU32 lit = 0;
        if (tile.recompute)
            lit = palette::kindColor(EventKind::Recompute);
        else if (tile.backward)
            lit = palette::kindColor(EventKind::Backward);
        else if (tile.forward)
            lit = palette::kindColor(EventKind::Forward);
        else if (tile.all_gather)
            lit = palette::kindColor(EventKind::AllGather);
        else if (tile.reduce_scatter)
            lit = palette::kindColor(EventKind::ReduceScatter);
        draw->AddRectFilled(a, b, lit ? palette::withAlpha(lit, 0.18f) : frame, 4.0f);
        draw->AddRect(a, b, lit ? lit : border, 4.0f, 0, lit ? 3.0f : 1.0f);

        float y = a.y + pad;
        const float x0 = a.x + pad, x1 = b.x - pad;
        const bool whole = tile.residency == Residency::Materialized || state.shards == 1;
        draw->AddText(ImVec2(x0, y), text, unitName(buf, sizeof(buf), tile.unit, model_kind));
        // Bytes held now, right-aligned: the full unit, or 1/N of it (measured from
        // the latest unit event, else theory).
        const int64_t full = tile.full_bytes > 0 ? tile.full_bytes : tile.theory_full_bytes;
        formatBytes(bytes, sizeof(bytes), double(whole ? full : full / state.shards));
        if (tile.full_bytes > 0)
            std::snprintf(buf, sizeof(buf), "%s", bytes);
        else
            std::snprintf(buf, sizeof(buf), "%s theory", bytes);
        const float bytes_w = ImGui::CalcTextSize(buf).x;
        const float name_w = ImGui::CalcTextSize(unitName(bytes, sizeof(bytes), tile.unit, model_kind)).x;
        if (x1 - bytes_w > x0 + name_w + 6.0f)
            draw->AddText(ImVec2(x1 - bytes_w, y), dim, buf);
        y += line_h + 3.0f;

        // The parameters this rank holds: the whole unit (materialized) or its 1/N slice.
        draw->AddRect(ImVec2(x0, y), ImVec2(x1, y + bar_h), dim, 2.0f);
        if (whole) {
            draw->AddRectFilled(ImVec2(x0, y), ImVec2(x1, y + bar_h), held, 2.0f);
        } else {
            const float w = (x1 - x0) / float(state.shards);
            const float s0 = x0 + w * float(shard_index);
            draw->AddRectFilled(ImVec2(s0, y), ImVec2(std::max(s0 + w, s0 + 2.0f), y + bar_h), held, 2.0f);
        }
        y += bar_h + 3.0f;

        char residency[48];
        if (tile.residency == Residency::Materialized)
            std::snprintf(residency, sizeof(residency), "materialized (%s)",
                          tile.gathered_for == 1 ? "bwd" : "fwd");
        else if (tile.residency == Residency::Freed)
            std::snprintf(residency, sizeof(residency), "freed: 1/%d shard", state.shards);
        else
            std::snprintf(residency, sizeof(residency), "sharded: 1/%d", state.shards);
        draw->AddText(ImVec2(x0, y), tile.residency == Residency::Materialized ? text : dim, residency);
        y += line_h + 3.0f;

        // Phase chips, wrapping to a second row.
        Chip chips[7];
        int count = 0;
        if (tile.all_gather)
            chips[count++] = {"all-gather", EventKind::AllGather, false};
        if (tile.all_gather_queued && !tile.all_gather)
            chips[count++] = {"all-gather queued", EventKind::AllGather, true};
        if (tile.forward)
            chips[count++] = {"forward", EventKind::Forward, false};
        if (tile.recompute)
            chips[count++] = {"recompute", EventKind::Recompute, false};
        if (tile.backward)
            chips[count++] = {"backward", EventKind::Backward, false};
        if (tile.reduce_scatter)
            chips[count++] = {"reduce-scatter", EventKind::ReduceScatter, false};
        if (tile.reduce_scatter_queued && !tile.reduce_scatter)
            chips[count++] = {"reduce-scatter queued", EventKind::ReduceScatter, true};
        float cx = x0;
        for (int c = 0; c < count; ++c) {
            const float w = std::min(ImGui::CalcTextSize(chips[c].label).x + 8.0f, x1 - x0);
            if (cx + w > x1 && cx > x0) {
                cx = x0;
                y += chip_h + 2.0f;
            }
            const ImU32 color = palette::kindColor(chips[c].kind);
            const ImVec2 ca(cx, y), cb(cx + w, y + chip_h);
            if (chips[c].queued)
                draw->AddRect(ca, cb, color, 3.0f, 0, 1.5f);
            else
                draw->AddRectFilled(ca, cb, color, 3.0f);
            const ImVec4 clip(ca.x, ca.y, cb.x, cb.y);
            draw->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(cx + 4.0f, y + 2.0f),
                          chips[c].queued ? text : palette::textOn(color), chips[c].label, nullptr, 0.0f,
                          &clip);
            cx += w + 4.0f;
        }
        if (count == 0)
            draw->AddText(ImVec2(x0, y + 2.0f), dim, "idle");

        if (window_hovered && mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y)
            hovered = k;
    }
    ImGui::Dummy(ImVec2(row_w, tile_h + 8.0f));

    if (hovered >= 0) {
        const FlowTile& tile = state.tiles[size_t(hovered)];
        const double origin_ns = double(model.tBegin());
        ImGui::BeginTooltip();
        ImGui::Text("%s (unit %d) on rank %d", unitName(buf, sizeof(buf), tile.unit, model_kind), tile.unit,
                    state.rank);
        ImGui::Separator();
        if (tile.residency == Residency::Sharded) {
            ImGui::TextUnformatted("sharded: no unit event from this rank yet");
        } else {
            ImGui::Text("%s at +%s", tile.residency == Residency::Materialized ? "materialized" : "freed",
                        formatDuration(double(tile.since_ns) - origin_ns).c_str());
            if (tile.residency == Residency::Materialized)
                ImGui::Text("gathered for %s", tile.gathered_for == 1 ? "backward" : "forward");
            ImGui::Text("full unit %s (%s), measured", formatBytes(double(tile.full_bytes)).c_str(),
                        formatBytesExact(tile.full_bytes).c_str());
        }
        ImGui::TextDisabled("theory: 4 B x %s padded elements = %s; shard 1/%d = %s",
                            formatCount(uint64_t(tile.theory_full_bytes / 4)).c_str(),
                            formatBytes(double(tile.theory_full_bytes)).c_str(), state.shards,
                            formatBytes(double(tile.theory_full_bytes / state.shards)).c_str());
        if (tile.all_gather || tile.all_gather_queued)
            ImGui::Text("all-gather #%llu %s at +%s", (unsigned long long)tile.all_gather_seq,
                        tile.all_gather ? "in flight since" : "queued since",
                        formatDuration(double(tile.all_gather_t0) - origin_ns).c_str());
        if (tile.reduce_scatter || tile.reduce_scatter_queued)
            ImGui::Text("reduce-scatter #%llu %s at +%s", (unsigned long long)tile.reduce_scatter_seq,
                        tile.reduce_scatter ? "in flight since" : "queued since",
                        formatDuration(double(tile.reduce_scatter_t0) - origin_ns).c_str());
        ImGui::EndTooltip();
    }
    ImGui::EndChild();

    // Footer: the measured counter and, next to it, the theory peak.
    if (!state.any_unit_events)
        ImGui::TextDisabled("No unit events from rank %d by this moment: every unit holds only its shard.",
                            state.rank);
    if (state.materialized_bytes >= 0.0)
        ImGui::Text("unsharded copies alive: %s (measured at the last unit event)",
                    formatBytes(state.materialized_bytes).c_str());
    else
        ImGui::TextDisabled("unsharded copies alive: not reported yet");
    ImGui::SameLine();
    const ModelStateTheory theory = modelStateTheory(model.scenario());
    const StrategyConfig& strategy = model.scenario().strategy;
    ImGui::TextDisabled("|  theory peak %s: root + largest unit%s",
                        formatBytes(double(theory.materialized_peak)).c_str(),
                        strategy.forward_prefetch || strategy.backward_prefetch ? " + one prefetched" : "");
}

} // namespace dt::app
