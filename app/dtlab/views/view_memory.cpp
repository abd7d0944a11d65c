// view_memory.cpp: stacked memory bars per rank on one scale (see view_memory.hpp).
//
// [SECTION] Data (pure)
// [SECTION] Drawing
#include "views/view_memory.hpp"

#include "dtlab/quantization_theory.hpp"
#include "dtlab/swarm_layout.hpp"
#include "model/scenario_catalog.hpp"
#include "widgets/elide.hpp"
#include "widgets/format.hpp"
#include "widgets/help.hpp"
#include "widgets/palette.hpp"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace dt::app {

// -----------------------------------------------------------------------------
// [SECTION] Data (pure)
// -----------------------------------------------------------------------------

namespace {
const char* const kCategoryNames[5] = {"parameters", "gradients", "optimizer state", "activations",
                                       "comm buffers"};
} // namespace

int64_t MemoryBars::total(const std::array<int64_t, 5>& parts) {
    int64_t sum = 0;
    for (int64_t p : parts)
        sum += std::max<int64_t>(p, 0);
    return sum;
}

MemoryBars memoryBars(const ViewInputs& inputs, int rank) {
    MemoryBars bars;
    if (inputs.memory_theory)
        bars.theory = inputs.memory_theory(rank);
    if (inputs.ranks && rank >= 0 && size_t(rank) < inputs.ranks->size())
        bars.state = (*inputs.ranks)[size_t(rank)].state;
    // At the views' moment (the cursor, else now): the samples up to it.
    if (inputs.state && rank >= 0 && size_t(rank) < inputs.state->memory.size()) {
        const RankMemoryAt& m = inputs.state->memory[size_t(rank)];
        bars.any = m.any;
        bars.now = m.now;
        bars.peak = m.peak;
        bars.allocator_live = m.allocator_live;
        bars.allocator_peak = m.allocator_peak;
        bars.host_now = m.host_now;
        bars.host_peak = m.host_peak;
        bars.measured = m.measured;
        bars.temporaries_now = m.temporaries_now;
        bars.temporaries_peak = m.temporaries_peak;
        bars.startup_peak = m.startup_peak;
        bars.rss = m.rss;
        return bars;
    }
    const RunModel& model = *inputs.model;
    const RankLane& lane = model.lane(rank);
    // Measured when the allocator reported; else the strategy's bookkeeping (an older recording).
    bars.measured = !lane.counters[size_t(EventKind::MemMeasuredParameters)].empty();
    const auto& categories = bars.measured ? kMeasuredMemoryCategories : kMemoryCategories;
    for (size_t c = 0; c < categories.size(); ++c) {
        const auto& points = lane.counters[size_t(categories[c])];
        if (points.empty())
            continue;
        bars.any = true;
        bars.now[c] = int64_t(std::llround(points.back().value));
        bars.peak[c] = int64_t(std::llround(lane.counter_max[size_t(categories[c])]));
    }
    const auto& temporaries = lane.counters[size_t(EventKind::MemMeasuredTemporaries)];
    if (!temporaries.empty()) {
        bars.temporaries_now = temporaries.back().value;
        bars.temporaries_peak = lane.counter_max[size_t(EventKind::MemMeasuredTemporaries)];
    }
    double value = 0.0;
    if (model.lastCounter(rank, EventKind::MemStartupPeak, value))
        bars.startup_peak = value;
    if (model.lastCounter(rank, EventKind::MemRss, value))
        bars.rss = value;
    double v = 0.0;
    if (model.lastCounter(rank, EventKind::MemLive, v))
        bars.allocator_live = v;
    if (!lane.counters[size_t(EventKind::MemPeak)].empty())
        bars.allocator_peak = lane.counter_max[size_t(EventKind::MemPeak)];
    const auto& host = lane.counters[size_t(EventKind::MemHost)];
    if (!host.empty()) {
        bars.host_now = int64_t(std::llround(host.back().value));
        bars.host_peak = int64_t(std::llround(lane.counter_max[size_t(EventKind::MemHost)]));
    }
    return bars;
}

// -----------------------------------------------------------------------------
// [SECTION] Drawing
// -----------------------------------------------------------------------------

MemoryView::MemoryView() : View("memory", "Memory") {}

LayoutPlace MemoryView::layoutPlace(const LayoutContext& context) const {
    LayoutPlace place;
    place.area = LayoutArea::Bottom;
    place.width_share = 0.24f;
    if (familyOf(context.scenario) == ScenarioFamily::Sharded) { // the main view: sized by its content
        const float line = ImGui::GetTextLineHeightWithSpacing();
        place.height =
            std::round(line * (12.0f + 3.5f * float(std::max(1, context.scenario.topology.ranks))));
    }
    return place;
}

const char* MemoryView::helpText() const {
    return "How much memory each rank holds, by category.\n\n"
           "Each rank has a bar for now (the latest values it reported; at the time cursor, the latest up to "
           "it) and a thinner bar for the peak (each "
           "category's largest value so far, stacked). All ranks share one scale, so equal bars mean equal "
           "bytes. Hover a segment for its exact size.\n\n"
           "Categories: parameters (the weights this rank keeps), gradients (DDP's bucket buffers), "
           "optimizer "
           "state (AdamW's two moments: 2x the parameters), activations (what the forward pass keeps for "
           "backward), communication buffers.\n\n"
           "Measured, not computed: the bars are the tracking allocator's own sums. Every block a rank "
           "allocates is tagged with its owner where it is made (model build = parameters, the optimizer "
           "step = optimizer state, forward = activations, ...), so each category is counted by the "
           "allocator, independently of the strategy's idea of what it holds. The row under the bars "
           "(\"alloc\") gives what has no bar: temporaries (everything else a step allocates), the step "
           "peak (the allocator's peak since set-up ended), the start-up peak (model build, before "
           "sharding) and the process's RSS (everything resident, LibTorch included: a sanity line). "
           "A recording made before the allocator tagged blocks shows the strategy's bookkeeping instead; "
           "the legend says which.\n\n"
           "With DDP every rank holds a full copy of everything, so the bars are equal. Sharding strategies "
           "(ZeRO/FSDP) divide parameters, gradients and optimizer state by the number of shards: watch "
           "those segments shrink (ZeRO-1: optimizer state; ZeRO-2: also gradients; FSDP: also parameters, "
           "plus the units gathered at the moment). When a theory overlay is available it is drawn as an "
           "outlined bar labelled \"theory\", computed from the model's shapes and the strategy's formula "
           "(hover the legend or a theory segment to read it; Psi = parameter count, N = shards). "
           "Activations and buffers are not modelled: 0 in the theory bar.\n\n"
           "With optimizer offload (ZeRO-Offload, [strategy] offload_optimizer) the optimizer state leaves "
           "the "
           "device bar; a row labelled \"host\" shows what the rank keeps in host memory instead (AdamW's "
           "moments, "
           "the fp32 shard it updates and that shard's gradient). On this CPU-only machine host and device "
           "are "
           "the same RAM; dtlab allocates the host part outside the counted device memory to show the move.";
}

bool MemoryView::hasData(const ViewInputs& inputs) {
    if (!inputs.model)
        return false;
    for (EventKind kind : kMemoryCategories)
        if (inputs.model->hasCounter(kind))
            return true;
    return false;
}

bool MemoryView::isEmpty(const ViewInputs& inputs) const {
    return !hasData(inputs);
}

void MemoryView::drawLegend(const ViewInputs& inputs) {
    helpMarker(helpText());
    ImGui::SameLine();
    bool measured = false; // any rank's bars measured by the allocator
    if (inputs.model)
        for (int r = 0; r < inputs.model->world(); ++r)
            measured = measured || memoryBars(inputs, r).measured;
    // A short pane: the short words, so the legend takes one line (the tooltips say the rest).
    if (m_compact)
        ImGui::TextDisabled(measured ? "measured:" : "bookkeeping:");
    else
        ImGui::TextDisabled(measured ? "bars: measured (allocator)" : "bars: strategy bookkeeping");
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(measured ? "The tracking allocator's bytes per owner tag: each block is tagged "
                                     "where it is allocated."
                                   : "This recording has no allocator tags: the bars are the bytes of the "
                                     "tensors the strategy says it holds.");
    for (size_t c = 0; c < kMemoryCategories.size(); ++c) // each on this line if it fits, else the next
        legendItem(palette::kindColor(kMemoryCategories[c]), kCategoryNames[c], false);
    if (inputs.memory_theory) {
        legendItem(palette::kTheory, m_compact ? "theory" : "theory (outlined)", false);
        if (!inputs.memory_theory_label.empty() && ImGui::IsItemHovered())
            ImGui::SetTooltip("theory, not measured: %s", inputs.memory_theory_label.c_str());
    }
}

void MemoryView::drawEmptyState(const ViewInputs& inputs) {
    m_shown.reset();
    m_pane.reset();
    drawLegend(inputs);
    emptyState("No events yet: start a run or open a recording",
               "Each rank reports its parameters, gradients, optimizer state, activations and communication "
               "buffers once per step; they appear here as stacked bars.");
}

void MemoryView::drawContent(const ViewInputs& inputs) {
    m_compact = m_pane.begin();
    m_shown = ShownContent{"rank bars", 0, 0};
    drawLegend(inputs);
    const RunModel& model = *inputs.model;
    const int world = model.world();
    std::vector<MemoryBars> bars(static_cast<size_t>(world));
    double scale = 1.0;
    for (int r = 0; r < world; ++r) {
        bars[size_t(r)] = memoryBars(inputs, r);
        const MemoryBars& b = bars[size_t(r)];
        scale = std::max({scale, double(MemoryBars::total(b.now)), double(MemoryBars::total(b.peak))});
        if (b.theory)
            scale = std::max(scale, double(MemoryBars::total(*b.theory)));
        scale = std::max(scale, double(b.host_now));
        if (b.host_now >= 0 && inputs.memory_host_theory)
            scale = std::max(scale, double(*inputs.memory_host_theory));
    }

    const float child_top = ImGui::GetCursorPosY();
    ImGui::BeginChild("##memory_bars", ImVec2(0.0f, 0.0f), false);
    // A sharding lesson: the model state a room can read, above the stacked bars.
    if (inputs.model_state && familyOf(model.scenario()) == ScenarioFamily::Sharded) {
        const int shown = inputs.selected_rank && *inputs.selected_rank >= 0 && *inputs.selected_rank < world
                              ? *inputs.selected_rank
                              : 0;
        drawModelState(inputs, *inputs.model_state, bars[size_t(shown)], shown);
        if (m_compact) { // after the ladder's one line, on the same line
            ImGui::SameLine();
            ImGui::TextDisabled("|  every rank, stacked on one scale:");
        } else {
            ImGui::Separator();
            ImGui::TextDisabled("Every rank, stacked on one scale:");
        }
    }
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImGuiStyle& style = ImGui::GetStyle();
    const float line_h = ImGui::GetTextLineHeight();
    const float label_w = std::floor(ImGui::CalcTextSize("rank 000").x + style.ItemSpacing.x * 2.0f);
    const float total_w = std::floor(ImGui::CalcTextSize("000.0 MiB").x + style.ItemSpacing.x * 2.0f);
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const float avail_w = ImGui::GetContentRegionAvail().x;
    const float bar_x0 = origin.x + label_w;
    const float bar_w = std::max(40.0f, avail_w - label_w - total_w);
    const float now_h = std::floor(line_h + 2.0f), peak_h = std::floor(line_h * 0.6f),
                theory_h = std::floor(line_h * 0.5f);
    const float gap = std::floor(line_h * (m_compact ? 0.3f : 0.7f));
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const bool window_hovered = ImGui::IsWindowHovered();
    auto xOf = [&](double bytes) { return bar_x0 + float(bytes / scale) * bar_w; };

    // Hovered segment, reported after the loop.
    int hover_rank = -1, hover_cat = -1, hover_host_rank = -1;
    const char* hover_bar = nullptr;
    char buf[64];

    float y = origin.y + (m_compact ? 0.0f : 4.0f);
    for (int r = 0; r < world; ++r) {
        const MemoryBars& b = bars[size_t(r)];
        const bool has_theory = b.theory.has_value();
        // Rows: "now" (a full bar), then "peak" and "theory" (thinner bars, each
        // in a row one text line tall so their labels never overlap).
        const bool has_host = b.host_now >= 0;
        const bool has_alloc = b.any && (b.allocator_peak >= 0.0 || b.startup_peak >= 0.0 || b.rss >= 0.0);
        const float block_h = m_compact ? now_h
                                        : now_h + line_h + (has_theory ? line_h : 0.0f) +
                                              (has_host ? line_h : 0.0f) + (has_alloc ? line_h : 0.0f);
        ++m_shown->total;
        m_shown->shown += rowInsideWindow(y, y + now_h) ? 1 : 0;
        if (inputs.selected_rank && *inputs.selected_rank == r)
            draw->AddRectFilled(ImVec2(origin.x, y - 2.0f), ImVec2(origin.x + avail_w, y + block_h + 2.0f),
                                palette::withAlpha(ImGui::GetColorU32(ImGuiCol_Header), 0.45f));
        std::snprintf(buf, sizeof(buf), "rank %d", r);
        draw->AddText(ImVec2(origin.x + style.ItemSpacing.x, y + (now_h - line_h) * 0.5f), text, buf);
        if (!b.any) {
            const Scenario& sc = inputs.model->scenario();
            const bool trainer =
                sc.strategy.kind == StrategyKind::Swarm && SwarmLayout::of(sc).isTrainer(r); // no model state
            draw->AddText(ImVec2(bar_x0, y + (now_h - line_h) * 0.5f), dim,
                          trainer ? "a swarm trainer: data and loss, no model state"
                                  : "no memory reported yet");
            y += block_h + gap;
            continue;
        }
        // Stacked segments of one bar; remembers the hovered one.
        auto stacked = [&](const std::array<int64_t, 5>& parts, float top, float h, bool outlined,
                           const char* which) {
            double acc = 0.0;
            for (size_t c = 0; c < parts.size(); ++c) {
                if (parts[c] <= 0)
                    continue;
                const float x0 = xOf(acc), x1 = std::max(xOf(acc + double(parts[c])), x0 + 1.0f);
                acc += double(parts[c]);
                const ImU32 color = palette::kindColor(kMemoryCategories[c]);
                if (outlined)
                    draw->AddRect(ImVec2(x0, top), ImVec2(x1, top + h), color, 0.0f, 0, 1.5f);
                else
                    draw->AddRectFilled(ImVec2(x0, top), ImVec2(x1, top + h), color);
                if (window_hovered && mouse.x >= x0 && mouse.x < x1 && mouse.y >= top && mouse.y < top + h) {
                    hover_rank = r;
                    hover_cat = int(c);
                    hover_bar = which;
                }
            }
        };
        stacked(b.now, y, now_h, false, "now");
        if (b.gone()) // its last report, faded; what happened to the rank goes right of its peak bar
            draw->AddRectFilled(ImVec2(bar_x0, y), ImVec2(xOf(double(MemoryBars::total(b.now))), y + now_h),
                                palette::withAlpha(ImGui::GetColorU32(ImGuiCol_WindowBg), 0.55f));
        if (m_compact) { // the total and, for a rank that is gone, what happened; the rest on hover
            formatBytes(buf, sizeof(buf), double(MemoryBars::total(b.now)));
            std::string total = buf;
            if (b.gone())
                total += "  " + std::string(rankStateLabel(*b.state));
            draw->AddText(ImVec2(bar_x0 + bar_w + style.ItemSpacing.x, y + (now_h - line_h) * 0.5f),
                          b.gone() ? palette::kFailed : text, total.c_str());
            y += block_h + gap;
            continue;
        }
        const float peak_y = y + now_h + std::floor((line_h - peak_h) * 0.5f) + 1.0f;
        draw->PushClipRect(ImVec2(bar_x0, peak_y), ImVec2(bar_x0 + bar_w + 2.0f, peak_y + peak_h), true);
        stacked(b.peak, peak_y, peak_h, false, "peak");
        draw->PopClipRect();
        draw->AddRectFilled(
            ImVec2(bar_x0, peak_y), ImVec2(xOf(double(MemoryBars::total(b.peak))), peak_y + peak_h),
            palette::withAlpha(ImGui::GetColorU32(ImGuiCol_WindowBg), 0.35f)); // lighter: it is not "now"
        if (b.allocator_peak > 0.0 && b.allocator_peak <= scale * 1.5) {
            const float x = std::min(xOf(b.allocator_peak), bar_x0 + bar_w);
            draw->AddLine(ImVec2(x, peak_y - 1.0f), ImVec2(x, peak_y + peak_h + 1.0f), text, 2.0f);
        }
        formatBytes(buf, sizeof(buf), double(MemoryBars::total(b.now)));
        draw->AddText(ImVec2(bar_x0 + bar_w + style.ItemSpacing.x, y + (now_h - line_h) * 0.5f), text, buf);
        draw->AddText(ImVec2(origin.x + style.ItemSpacing.x + 8.0f, peak_y + (peak_h - line_h) * 0.5f), dim,
                      "peak");
        if (b.gone()) {
            const std::string what(rankStateLabel(*b.state)); // the bars above: its last report
            draw->AddText(ImVec2(xOf(double(MemoryBars::total(b.peak))) + style.ItemSpacing.x,
                                 peak_y + (peak_h - line_h) * 0.5f),
                          palette::kFailed, what.c_str());
        }
        if (has_theory) {
            const float theory_y = y + now_h + line_h + std::floor((line_h - theory_h) * 0.5f);
            stacked(*b.theory, theory_y, theory_h, true, "theory");
            draw->AddText(
                ImVec2(origin.x + style.ItemSpacing.x + 8.0f, theory_y + (theory_h - line_h) * 0.5f), dim,
                "theory");
        }
        if (has_host) { // offloaded: host memory, beside the device bars on the same scale
            const float host_y =
                y + now_h + line_h + (has_theory ? line_h : 0.0f) + std::floor((line_h - peak_h) * 0.5f);
            const float x1 = std::max(xOf(double(b.host_now)), bar_x0 + 1.0f);
            draw->AddRectFilled(ImVec2(bar_x0, host_y), ImVec2(x1, host_y + peak_h),
                                palette::kindColor(EventKind::MemHost));
            if (inputs.memory_host_theory)
                draw->AddRect(
                    ImVec2(bar_x0, host_y),
                    ImVec2(std::max(xOf(double(*inputs.memory_host_theory)), bar_x0 + 1.0f), host_y + peak_h),
                    palette::kTheory, 0.0f, 0, 1.5f);
            draw->AddText(ImVec2(origin.x + style.ItemSpacing.x + 8.0f, host_y + (peak_h - line_h) * 0.5f),
                          dim, "host");
            formatBytes(buf, sizeof(buf), double(b.host_now));
            draw->AddText(ImVec2(x1 + style.ItemSpacing.x, host_y + (peak_h - line_h) * 0.5f), dim, buf);
            if (window_hovered && mouse.x >= bar_x0 && mouse.x < bar_x0 + bar_w && mouse.y >= host_y &&
                mouse.y < host_y + peak_h)
                hover_host_rank = r;
        }
        if (has_alloc) { // the allocator's numbers without a bar, measured
            const float alloc_y =
                y + now_h + line_h + (has_theory ? line_h : 0.0f) + (has_host ? line_h : 0.0f);
            draw->AddText(ImVec2(origin.x + style.ItemSpacing.x + 8.0f, alloc_y), dim, "alloc");
            std::string line;
            const auto part = [&](const char* name, double bytes) {
                if (bytes < 0.0)
                    return;
                line += (line.empty() ? "" : "  ") + std::string(name) + " " + formatBytes(bytes);
            };
            part("temporaries", b.temporaries_now);
            part("step peak", b.allocator_peak);
            part("start-up peak", b.startup_peak);
            part("RSS", b.rss);
            draw->AddText(ImVec2(bar_x0, alloc_y), dim, line.c_str());
        }
        // Clicking a rank's block selects the rank (shared with the other views).
        if (window_hovered && inputs.selected_rank && ImGui::IsMouseClicked(ImGuiMouseButton_Left) &&
            mouse.y >= y && mouse.y < y + block_h && mouse.x >= origin.x && mouse.x < origin.x + avail_w)
            *inputs.selected_rank = r;
        y += block_h + gap;
    }

    // Shared byte axis under the bars.
    const char* unit_name = "B";
    const double unit = bytesUnit(scale, &unit_name);
    const double step = niceBytesStep(scale / std::max(2.0, double(bar_w) / 90.0), unit);
    draw->AddLine(ImVec2(bar_x0, y), ImVec2(bar_x0 + bar_w, y), dim);
    for (double v = 0.0; v <= scale * 1.0001; v += step) {
        const float x = xOf(v);
        draw->AddLine(ImVec2(x, y), ImVec2(x, y + 4.0f), dim);
        formatBytesTick(buf, sizeof(buf), v, step, unit, unit_name);
        const float w = ImGui::CalcTextSize(buf).x;
        draw->AddText(ImVec2(std::min(x - w * 0.5f, bar_x0 + bar_w - w), y + 5.0f), dim, buf);
    }
    ImGui::Dummy(ImVec2(avail_w, y + line_h * 2.0f + 6.0f - origin.y));

    if (hover_host_rank >= 0) {
        const MemoryBars& b = bars[size_t(hover_host_rank)];
        ImGui::BeginTooltip();
        colorSwatch(palette::kindColor(EventKind::MemHost));
        ImGui::SameLine();
        ImGui::Text("rank %d, host memory (optimizer offload)", hover_host_rank);
        ImGui::Separator();
        ImGui::Text("now     %s  (%s)", formatBytes(double(b.host_now)).c_str(),
                    formatBytesExact(b.host_now).c_str());
        ImGui::Text("peak    %s  (%s)", formatBytes(double(b.host_peak)).c_str(),
                    formatBytesExact(b.host_peak).c_str());
        if (inputs.memory_host_theory)
            ImGui::Text("theory  %s  (16 Psi / N: AdamW 8 + fp32 shard 4 + its gradient 4)",
                        formatBytes(double(*inputs.memory_host_theory)).c_str());
        ImGui::TextDisabled("not part of the device bars: AdamW runs here, on the host");
        ImGui::EndTooltip();
    }
    if (hover_rank >= 0) {
        const MemoryBars& b = bars[size_t(hover_rank)];
        const size_t c = size_t(hover_cat);
        ImGui::BeginTooltip();
        colorSwatch(palette::kindColor(kMemoryCategories[c]));
        ImGui::SameLine();
        ImGui::Text("rank %d, %s (%s bar, %s)", hover_rank, kCategoryNames[c], hover_bar,
                    std::string(hover_bar) == "theory" ? "formula"
                    : b.measured                       ? "measured by the allocator"
                                                       : "the strategy's bookkeeping");
        ImGui::Separator();
        ImGui::Text("now     %s  (%s)", formatBytes(double(b.now[c])).c_str(),
                    formatBytesExact(b.now[c]).c_str());
        ImGui::Text("peak    %s  (%s)", formatBytes(double(b.peak[c])).c_str(),
                    formatBytesExact(b.peak[c]).c_str());
        if (b.theory) {
            ImGui::Text("theory  %s  (%s)", formatBytes(double((*b.theory)[c])).c_str(),
                        formatBytesExact((*b.theory)[c]).c_str());
            if (!inputs.memory_theory_label.empty())
                ImGui::TextDisabled("theory: %s", inputs.memory_theory_label.c_str());
        }
        ImGui::Text("rank total now %s", formatBytesExact(MemoryBars::total(b.now)).c_str());
        if (b.allocator_live >= 0.0)
            ImGui::TextDisabled("allocator: live %s, step peak %s", formatBytes(b.allocator_live).c_str(),
                                formatBytes(std::max(b.allocator_peak, 0.0)).c_str());
        if (b.temporaries_now >= 0.0)
            ImGui::TextDisabled("temporaries (no bar): now %s, peak %s",
                                formatBytes(b.temporaries_now).c_str(),
                                formatBytes(std::max(b.temporaries_peak, 0.0)).c_str());
        ImGui::EndTooltip();
    }
    drawQuantizedSize(model.scenario());
    const float child_h = ImGui::GetCursorPosY(); // the child's content, from its top (no scrolling sideways)
    ImGui::EndChild();
    // The child fills the window: the app measures the window's height, the content is the child's.
    m_pane.end(child_top - m_pane.topY() + child_h, m_pane.availAtBegin());
}

void MemoryView::drawQuantizedSize(const Scenario& scenario) {
    // QAT: what the trained model would take shipped with integer Linear
    // weights. Arithmetic from the scenario, labelled theory: training itself
    // holds fp32 weights (the bars above).
    const QuantizedModelSize q = quantizedModelSize(scenario.model);
    if (q.bits == 0)
        return;
    ImGui::Separator();
    char line[384];
    std::snprintf(line, sizeof(line),
                  "theory, QAT int%d: shipped with int%d Linear weights the model takes %s instead of %s in "
                  "fp32: its Linear weights %s (fp32: %s) + %lld scales and zero points %s; embeddings, "
                  "norms and biases stay fp32 (%s). Training holds fp32 weights: the bars above.",
                  q.bits, q.bits, formatBytes(double(q.quantizedBytes())).c_str(),
                  formatBytes(double(q.fp32Bytes())).c_str(),
                  formatBytes(double(q.linearWeightBytes())).c_str(),
                  formatBytes(4.0 * double(q.linear_weights)).c_str(), (long long)q.scales,
                  formatBytes(8.0 * double(q.scales)).c_str(), formatBytes(4.0 * double(q.other)).c_str());
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s", line);
    ImGui::PopTextWrapPos();
}

// -----------------------------------------------------------------------------
// [SECTION] Model state (ZeRO / FSDP)
// -----------------------------------------------------------------------------

void MemoryView::drawModelState(const ViewInputs& inputs, const ModelStateReference& ref,
                                const MemoryBars& bars, int rank) {
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImGuiStyle& style = ImGui::GetStyle();
    const float line_h = ImGui::GetTextLineHeight();
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    ImGui::Text("Model state of rank %d", rank);
    ImGui::SameLine();
    textDisabledElided("each bar on its own scale: full width = what one DDP replica holds");
    const float label_w = std::floor(ImGui::CalcTextSize("optimizer state  ").x);
    const float value_w = std::floor(ImGui::CalcTextSize("peak 000.0 KiB = 00.0x the parameters ").x);
    const float avail = ImGui::GetContentRegionAvail().x;
    const float bar_w = std::max(60.0f, avail - label_w - value_w);
    const float bar_h = std::floor(line_h * (m_compact ? 1.0f : 1.5f));
    char buf[96];
    // Parameters, gradients, optimizer state: measured bar, DDP's full width, the formula's target.
    for (size_t c = 0; c < 3; ++c) {
        const ImVec2 at = ImGui::GetCursorScreenPos();
        const float x0 = at.x + label_w, y0 = at.y;
        const double full = double(std::max<int64_t>(ref.replica[c], 1));
        const double measured = double(std::max<int64_t>(bars.now[c], 0));
        const double target = double(ref.theory[c]);
        draw->AddText(ImVec2(at.x, y0 + (bar_h - line_h) * 0.5f), text, kCategoryNames[c]);
        draw->AddRect(ImVec2(x0, y0), ImVec2(x0 + bar_w, y0 + bar_h), dim, 2.0f, 0, 1.0f); // DDP: full
        const float xm = x0 + float(std::min(measured / full, 1.25)) * bar_w;
        draw->AddRectFilled(ImVec2(x0, y0 + 2.0f), ImVec2(std::max(xm, x0 + 1.0f), y0 + bar_h - 2.0f),
                            palette::kindColor(kMemoryCategories[c]), 2.0f);
        const float xt = x0 + float(std::min(target / full, 1.25)) * bar_w; // the formula: a target line
        draw->AddLine(ImVec2(xt, y0 - 3.0f), ImVec2(xt, y0 + bar_h + 3.0f), palette::kTheory, 3.0f);
        std::snprintf(buf, sizeof(buf), "%s of %s", formatBytes(measured).c_str(), formatBytes(full).c_str());
        draw->AddText(ImVec2(x0 + bar_w + style.ItemSpacing.x, y0 + (bar_h - line_h) * 0.5f), text, buf);
        ImGui::Dummy(ImVec2(avail, bar_h + (m_compact ? 0.0f : style.ItemSpacing.y)));
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("%s of rank %d: %s measured by the allocator, at the moment shown\n"
                              "outline: one DDP replica's %s, %s (theory)\n"
                              "grey line: this strategy's formula, %s (theory: %s)",
                              kCategoryNames[c], rank, formatBytesExact(bars.now[c]).c_str(),
                              kCategoryNames[c], formatBytes(full).c_str(), formatBytes(target).c_str(),
                              ref.formula.c_str());
    }
    // Activations beside them, on their own scale: their peak so far (at a step
    // boundary they are freed), compared with one replica's parameters. ZeRO does not shard them.
    {
        const ImVec2 at = ImGui::GetCursorScreenPos();
        const float x0 = at.x + label_w;
        const double peak = double(std::max<int64_t>(bars.peak[3], 0));
        const double now = double(std::max<int64_t>(bars.now[3], 0));
        draw->AddText(ImVec2(at.x, at.y + (bar_h - line_h) * 0.5f), text, "activations");
        draw->AddRect(ImVec2(x0, at.y), ImVec2(x0 + bar_w, at.y + bar_h), dim, 2.0f, 0, 1.0f);
        if (peak > 0.0) {
            draw->AddRectFilled(ImVec2(x0, at.y + 2.0f), ImVec2(x0 + bar_w, at.y + bar_h - 2.0f),
                                palette::withAlpha(palette::kindColor(kMemoryCategories[3]), 0.45f), 2.0f);
            draw->AddRectFilled(ImVec2(x0, at.y + 2.0f),
                                ImVec2(x0 + std::max(1.0f, float(now / peak) * bar_w), at.y + bar_h - 2.0f),
                                palette::kindColor(kMemoryCategories[3]), 2.0f);
        }
        const double params = double(std::max<int64_t>(ref.replica[0], 1));
        std::snprintf(buf, sizeof(buf), "peak %s = %.1fx the parameters", formatBytes(peak).c_str(),
                      peak / params);
        draw->AddText(ImVec2(x0 + bar_w + style.ItemSpacing.x, at.y + (bar_h - line_h) * 0.5f), text, buf);
        ImGui::Dummy(ImVec2(avail, bar_h + (m_compact ? 0.0f : style.ItemSpacing.y)));
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "activations of rank %d, on their own scale (full width = their peak so far)\n"
                "now %s (at a step boundary they are freed), peak %s\n"
                "not sharded by ZeRO or FSDP: activation checkpointing or microbatches shrink them",
                rank, formatBytes(now).c_str(), formatBytes(peak).c_str());
    }
    if (!m_compact) // a short pane: each bar's tooltip says it
        ImGui::TextDisabled("grey line: the formula's target, %s (N = %d)", ref.formula.c_str(), ref.shards);
    // The ZeRO ladder for this model (theory): each strategy's model state per rank, one
    // scale. A short pane: its rungs on hover, so every rank's bar stays in view.
    if (m_compact) {
        ImGui::TextDisabled("ZeRO ladder at N = %d (theory): hover here", ref.shards);
        if (ImGui::IsItemHovered()) {
            ImGui::BeginTooltip();
            for (size_t rung = 0; rung < ref.ladder.size(); ++rung) {
                const auto& [label, parts] = ref.ladder[rung];
                ImGui::Text("%s  %s%s", label.c_str(),
                            formatBytes(double(parts[0] + parts[1] + parts[2])).c_str(),
                            int(rung) == ref.current_rung ? "  (this run)" : "");
            }
            ImGui::EndTooltip();
        }
        (void)inputs;
        return;
    }
    ImGui::TextDisabled("The ladder for this model at N = %d (theory, model state per rank):", ref.shards);
    double ladder_max = 1.0;
    for (const auto& [label, parts] : ref.ladder)
        ladder_max = std::max(ladder_max, double(parts[0] + parts[1] + parts[2]));
    for (size_t rung = 0; rung < ref.ladder.size(); ++rung) {
        const auto& [label, parts] = ref.ladder[rung];
        const ImVec2 at = ImGui::GetCursorScreenPos();
        const float x0 = at.x + label_w, h = std::floor(line_h * 0.9f);
        const bool current = int(rung) == ref.current_rung;
        draw->AddText(ImVec2(at.x, at.y), current ? text : dim, label.c_str());
        double acc = 0.0;
        for (size_t c = 0; c < 3; ++c) {
            const float a = x0 + float(acc / ladder_max) * bar_w;
            acc += double(parts[c]);
            const float b = x0 + float(acc / ladder_max) * bar_w;
            draw->AddRect(ImVec2(a, at.y + 1.0f), ImVec2(std::max(b, a + 1.0f), at.y + h),
                          palette::kindColor(kMemoryCategories[c]), 0.0f, 0, current ? 2.5f : 1.0f);
        }
        draw->AddText(ImVec2(x0 + float(acc / ladder_max) * bar_w + style.ItemSpacing.x, at.y), dim,
                      formatBytes(acc).c_str());
        ImGui::Dummy(ImVec2(avail, line_h + 2.0f));
        if (current && ImGui::IsItemHovered())
            ImGui::SetTooltip("this run's strategy");
    }
    (void)inputs;
}

} // namespace dt::app
