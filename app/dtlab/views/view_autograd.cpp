// view_autograd.cpp: the autograd strip (see view_autograd.hpp).
//
// Steps per frame:
//   1. the groups: DDP's predicted buckets (ddpBucketPlan, from the gradient
//      order the engine measures), else the sharded strategies' units
//   2. per group, its launch point: the execution position of its last leaf
//      (a bucket also waits for every earlier bucket, as DDP launches in order)
//   3. the strip: cells in execution order, wrapped; markers at launch points
//   4. the measured row: the selected rank's last backward, one tick per
//      parameter at the moment its GradReady report says its gradient was
//      ready (gradReadyPicture), each group's last gradient marked
//   5. per group, one line: the launch point as a share of backward, the
//      measured ready time, and for DDP the measured launch (computeBucketPicture)
#include "views/view_autograd.hpp"

#include "dtlab/ddp_buckets.hpp"
#include "dtlab/strategy_kind.hpp"
#include "model/grad_ready.hpp"
#include "views/view_ddp_buckets.hpp"
#include "widgets/elide.hpp"
#include "widgets/help.hpp"
#include "widgets/palette.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dt::app {

namespace {

const char* unitName(int unit, char* buf, size_t size) {
    if (unit < 0)
        return "root";
    std::snprintf(buf, size, "block %d", unit);
    return buf;
}

} // namespace

AutogradView::AutogradView() : View("autograd", "Autograd graph") {
    open = false; // View > Autograd graph
}

const char* AutogradView::helpText() const {
    return "The model's real autograd graph, in the order LibTorch's engine ran it.\n\n"
           "dtlab builds the same model the ranks build (the same code, config and seed), runs one forward, "
           "walks "
           "the loss's grad_fn through its next edges, puts a pre-hook on every node and runs backward: the "
           "order the hooks fire in is the strip's order, left to right, row by row. Grey cells are backward "
           "functions (AddmmBackward0, NativeLayerNormBackward0, ...); coloured cells are AccumulateGrad "
           "leaves, one "
           "per parameter: the moment its gradient is ready in .grad.\n\n"
           "DDP's hook sits on these leaves: when the last gradient of a bucket is ready (and every earlier "
           "bucket has been launched), the bucket's all-reduce starts, while backward goes on with the "
           "earlier "
           "layers. The markers show where, and how much of backward is still to run: that is the "
           "communication that can hide behind computation. ZeRO and FSDP launch a unit's reduce-scatter the "
           "same way, when the unit's last gradient is ready.\n\n"
           "Under the strip, measured in the run: the selected rank reports the moment each parameter's "
           "gradient was ready in its last backward (the hook DDP and FSDP count), drawn as one tick per "
           "parameter on that backward's time axis, with each group's last gradient marked. For DDP the "
           "bucket's measured all-reduce launch follows (the DDP buckets view's numbers). Hover a cell or a "
           "tick to read it.";
}

LayoutPlace AutogradView::layoutPlace(const LayoutContext&) const {
    LayoutPlace place;
    place.area = LayoutArea::Band;
    place.height = std::round(ImGui::GetFrameHeightWithSpacing() * 17.0f);
    return place;
}

bool AutogradView::isEmpty(const ViewInputs& inputs) const {
    return !inputs.model || !inputs.autograd_graph;
}

void AutogradView::drawEmptyState(const ViewInputs& inputs) {
    if (!inputs.model)
        emptyState("No run open", "Start a scenario: the graph of its model is drawn here.");
    else
        emptyState("No graph yet", inputs.autograd_status.empty() ? "Building the model's graph..."
                                                                  : inputs.autograd_status.c_str());
}

std::vector<AutogradGroup> autogradGroups(const AutogradGraph& g, const Scenario& scenario) {
    const StrategyTraits& traits = strategyTraits(scenario.strategy.kind);
    const bool ddp = scenario.strategy.kind == StrategyKind::Ddp;
    const bool sharded = traits.shards_gradients || traits.shards_parameters;
    std::vector<AutogradGroup> groups;
    if (ddp) {
        for (const BucketPlan& bucket : ddpBucketPlan(scenario)) {
            AutogradGroup group{"bucket " + std::to_string(groups.size()), -1, {}};
            for (const BucketSlot& slot : bucket.slots)
                if (slot.param_index >= 0 && size_t(slot.param_index) < g.param_names.size())
                    group.params.push_back(slot.param_index);
            groups.push_back(group);
        }
    } else if (sharded) {
        int max_unit = -1;
        for (int u : g.param_units)
            max_unit = std::max(max_unit, u);
        char buf[32];
        for (int u = -1; u <= max_unit; ++u) {
            AutogradGroup group{unitName(u, buf, sizeof(buf)), -1, {}};
            for (size_t p = 0; p < g.param_units.size(); ++p)
                if (g.param_units[p] == u)
                    group.params.push_back(int(p));
            groups.push_back(group);
        }
    }
    std::vector<int> leaf_order(g.param_names.size(), -1);
    for (const AutogradNode& node : g.nodes)
        if (node.param >= 0)
            leaf_order[size_t(node.param)] = node.order;
    int earlier = -1;
    for (AutogradGroup& group : groups) {
        for (int p : group.params)
            group.launch_order = std::max(group.launch_order, leaf_order[size_t(p)]);
        if (ddp) { // DDP launches buckets in order: a bucket also waits for the ones before it
            group.launch_order = std::max(group.launch_order, earlier);
            earlier = group.launch_order;
        }
    }
    return groups;
}

void AutogradView::drawContent(const ViewInputs& inputs) {
    const AutogradGraph& g = *inputs.autograd_graph;
    const Scenario& scenario = inputs.model->scenario();
    const bool ddp = scenario.strategy.kind == StrategyKind::Ddp;
    const int n = int(g.execution.size());

    // 1-2. Groups and their launch points.
    const std::vector<AutogradGroup> groups = autogradGroups(g, scenario);
    std::vector<int> group_of(g.param_names.size(), -1);
    for (size_t gi = 0; gi < groups.size(); ++gi)
        for (int p : groups[gi].params)
            group_of[size_t(p)] = int(gi);

    const int rank = inputs.selected_rank && *inputs.selected_rank >= 0 ? *inputs.selected_rank : 0;
    const GradReadyPicture ready =
        groups.empty() ? GradReadyPicture{}
                       : gradReadyPicture(*inputs.model, rank, inputs.cursor(), g.param_names.size());
    const bool measured = ready.step >= 0;

    helpMarker(helpText());
    ImGui::SameLine();
    textDisabledElided(std::to_string(n) + " nodes of this model's backward, " + std::to_string(g.leaves()) +
                       " of them AccumulateGrad leaves, in the order LibTorch ran them (measured)");

    // 3. The strip.
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const float line_h = ImGui::GetTextLineHeight();
    const float avail = ImGui::GetContentRegionAvail().x;
    const float cell = std::max(6.0f, std::floor(line_h * 0.45f));
    const int per_row = std::max(1, int(avail / cell));
    const int rows = (n + per_row - 1) / per_row;
    const float row_h = line_h * 1.6f;
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const ImU32 op = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    int hovered = -1;
    for (int pos = 0; pos < n; ++pos) {
        const int k = g.execution[size_t(pos)];
        const AutogradNode& node = g.nodes[size_t(k)];
        const float x = origin.x + float(pos % per_row) * cell, y = origin.y + float(pos / per_row) * row_h;
        const bool leaf = node.param >= 0;
        const int group = leaf ? group_of[size_t(node.param)] : -1;
        const ImU32 color = !leaf        ? palette::withAlpha(op, 0.55f)
                            : group >= 0 ? palette::rankColor(group)
                                         : ImGui::GetColorU32(ImGuiCol_Text);
        const float top = leaf ? y : y + line_h * 0.35f;
        draw->AddRectFilled(ImVec2(x, top), ImVec2(x + cell - 1.0f, y + line_h), color);
        if (mouse.x >= x && mouse.x < x + cell && mouse.y >= y && mouse.y < y + row_h)
            hovered = pos;
    }
    // Launch markers: a bar after the launch point's cell and the group's name under it.
    // A name that would run into the previous one on its row goes to the right of it instead.
    float name_end = -1e9f;
    int name_row = -1;
    for (size_t gi = 0; gi < groups.size(); ++gi) {
        const int pos = groups[gi].launch_order;
        if (pos < 0)
            continue;
        const float x = origin.x + float(pos % per_row + 1) * cell,
                    y = origin.y + float(pos / per_row) * row_h;
        draw->AddLine(ImVec2(x, y - 2.0f), ImVec2(x, y + line_h + 2.0f), palette::rankColor(int(gi)), 3.0f);
        const float name_x =
            pos / per_row == name_row ? std::max(x + 2.0f, name_end + line_h * 0.5f) : x + 2.0f;
        draw->AddText(ImVec2(name_x, y + line_h), palette::rankColor(int(gi)), groups[gi].label.c_str());
        name_end = name_x + ImGui::CalcTextSize(groups[gi].label.c_str()).x;
        name_row = pos / per_row;
    }
    ImGui::Dummy(ImVec2(avail, float(rows) * row_h + line_h * 0.6f));
    if (hovered >= 0) {
        const AutogradNode& node = g.nodes[size_t(g.execution[size_t(hovered)])];
        ImGui::BeginTooltip();
        ImGui::Text("%s", node.name.c_str());
        ImGui::TextDisabled("ran %d of %d in backward; %zu next edge%s", hovered + 1, n, node.next.size(),
                            node.next.size() == 1 ? "" : "s");
        if (node.param >= 0) {
            const size_t p = size_t(node.param);
            ImGui::Text("writes %s (%lld elements) into .grad", g.param_names[p].c_str(),
                        (long long)g.param_numel[p]);
            if (group_of[p] >= 0)
                ImGui::Text("%s: %s", ddp ? "its bucket" : "its unit",
                            groups[size_t(group_of[p])].label.c_str());
            if (measured && ready.ready_ms[p] >= 0.0)
                ImGui::Text("ready %.1f ms into a %.1f ms backward (rank %d, step %d, measured)",
                            ready.ready_ms[p], ready.backward_ms, ready.rank, ready.step);
            ImGui::TextDisabled("the strategies' gradient-ready hook runs after this node");
        }
        ImGui::EndTooltip();
    }

    // 4. The measured row: one tick per parameter at its ready time in the rank's last backward.
    std::vector<double> group_ready_ms(groups.size(), -1.0);
    if (!groups.empty()) {
        if (!measured) {
            ImGui::TextDisabled("Measured: no gradient-ready reports from rank %d yet (they come with each "
                                "backward).",
                                rank);
        } else {
            double earlier = -1.0;
            for (size_t gi = 0; gi < groups.size(); ++gi) {
                for (int p : groups[gi].params)
                    group_ready_ms[gi] = std::max(group_ready_ms[gi], ready.ready_ms[size_t(p)]);
                if (ddp) { // launched in bucket order, as above
                    group_ready_ms[gi] = std::max(group_ready_ms[gi], earlier);
                    earlier = group_ready_ms[gi];
                }
            }
            char title[160];
            std::snprintf(title, sizeof(title),
                          "Measured on rank %d, step %d: each gradient's ready time in a %.1f ms backward%s",
                          rank, ready.step, ready.backward_ms,
                          ready.complete() ? "" : " (some not reported)");
            textElided(title, ImGui::GetContentRegionAvail().x);
            const ImVec2 axis = ImGui::GetCursorScreenPos();
            const float width = std::max(10.0f, ImGui::GetContentRegionAvail().x - line_h);
            const float tick_h = line_h * 1.2f;
            const double span_ms = std::max(1e-3, ready.backward_ms);
            draw->AddLine(ImVec2(axis.x, axis.y + tick_h), ImVec2(axis.x + width, axis.y + tick_h), op, 1.0f);
            int hovered_param = -1;
            for (size_t p = 0; p < ready.ready_ms.size(); ++p) {
                if (ready.ready_ms[p] < 0.0)
                    continue;
                const float x = axis.x + float(ready.ready_ms[p] / span_ms) * width;
                const int group = group_of[p];
                draw->AddLine(ImVec2(x, axis.y), ImVec2(x, axis.y + tick_h),
                              group >= 0 ? palette::rankColor(group) : ImGui::GetColorU32(ImGuiCol_Text),
                              2.0f);
                if (std::fabs(mouse.x - x) < 3.0f && mouse.y >= axis.y && mouse.y < axis.y + tick_h)
                    hovered_param = int(p);
            }
            for (size_t gi = 0; gi < groups.size(); ++gi) {
                if (group_ready_ms[gi] < 0.0)
                    continue;
                const float x = axis.x + float(group_ready_ms[gi] / span_ms) * width;
                draw->AddTriangleFilled(ImVec2(x - line_h * 0.3f, axis.y + tick_h + line_h * 0.5f),
                                        ImVec2(x + line_h * 0.3f, axis.y + tick_h + line_h * 0.5f),
                                        ImVec2(x, axis.y + tick_h), palette::rankColor(int(gi)));
            }
            char ends[64];
            std::snprintf(ends, sizeof(ends), "%.0f ms", ready.backward_ms);
            draw->AddText(ImVec2(axis.x, axis.y + tick_h + line_h * 0.5f), op, "0 (backward starts)");
            draw->AddText(
                ImVec2(axis.x + width - ImGui::CalcTextSize(ends).x, axis.y + tick_h + line_h * 0.5f), op,
                ends);
            ImGui::Dummy(ImVec2(width, tick_h + line_h * 1.6f));
            if (hovered_param >= 0) {
                const size_t p = size_t(hovered_param);
                ImGui::BeginTooltip();
                ImGui::Text("%s", g.param_names[p].c_str());
                ImGui::Text("ready %.1f ms into backward (rank %d, step %d, measured)", ready.ready_ms[p],
                            rank, ready.step);
                if (group_of[p] >= 0)
                    ImGui::Text("%s: %s", ddp ? "its bucket" : "its unit",
                                groups[size_t(group_of[p])].label.c_str());
                ImGui::EndTooltip();
            }
        }
    }

    // 5. Per group: how much of backward is still to run at its launch point; measured too.
    if (groups.empty()) {
        ImGui::TextDisabled("This strategy launches no per-bucket or per-unit collective from these hooks.");
        return;
    }
    std::optional<BucketPicture> picture;
    if (ddp)
        picture = computeBucketPicture(*inputs.model, rank, inputs.cursor());
    char line[256];
    for (size_t gi = 0; gi < groups.size(); ++gi) {
        const AutogradGroup& group = groups[gi];
        if (group.launch_order < 0)
            continue;
        const double left = 100.0 * double(n - 1 - group.launch_order) / double(std::max(1, n));
        std::snprintf(line, sizeof(line),
                      "%s: its last gradient is ready at node %d of %d: %s can start with %.0f %% "
                      "of backward's nodes still to run",
                      group.label.c_str(), group.launch_order + 1, n,
                      ddp ? "its all-reduce" : "its reduce-scatter", left);
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(palette::rankColor(int(gi))));
        textElided(line, ImGui::GetContentRegionAvail().x);
        ImGui::PopStyleColor();
        if (measured && group_ready_ms[gi] >= 0.0) {
            std::snprintf(
                line, sizeof(line),
                "   measured (rank %d, step %d): its last gradient ready %.1f ms into a %.1f ms backward "
                "(%.0f %% of it still to run)",
                rank, ready.step, group_ready_ms[gi], ready.backward_ms,
                100.0 * std::max(0.0, 1.0 - group_ready_ms[gi] / std::max(1e-3, ready.backward_ms)));
            ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
            textElided(line, ImGui::GetContentRegionAvail().x);
            ImGui::PopStyleColor();
        }
        if (picture && gi < picture->buckets.size() && picture->buckets[gi].measured) {
            const BucketRow& b = picture->buckets[gi];
            std::snprintf(line, sizeof(line),
                          "   measured (rank %d, step %d): launched %.1f ms into a %.1f ms backward, "
                          "%.1f ms of its all-reduce hidden",
                          picture->rank, picture->step, b.launched_ms, picture->backward_ms, b.hidden_ms);
            ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
            textElided(line, ImGui::GetContentRegionAvail().x);
            ImGui::PopStyleColor();
        }
    }
}

} // namespace dt::app
