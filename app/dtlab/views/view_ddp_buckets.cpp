// view_ddp_buckets.cpp: the DDP bucket view (see view_ddp_buckets.hpp).
#include "views/view_ddp_buckets.hpp"

#include "dtlab/ddp_buckets.hpp"
#include "widgets/elide.hpp"
#include "widgets/help.hpp"
#include "widgets/palette.hpp"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dt::app {

namespace {

// Plain DDP (no fault tolerance): the runs that have buckets.
bool isPlainDdp(const Scenario& s) {
    return s.strategy.kind == StrategyKind::Ddp && !s.fault_tolerance.enabled;
}

// The layers in the order backward visits them, and each parameter's layer.
void backwardNodes(const ModelConfig& m, const std::vector<ParameterShape>& params,
                   std::vector<std::string>& nodes, std::vector<int>& node_of_param) {
    nodes.clear();
    node_of_param.clear();
    if (m.kind == "tiny_gpt") {
        nodes.push_back("head");
        for (int b = m.layers - 1; b >= 0; --b)
            nodes.push_back("block " + std::to_string(b));
        nodes.push_back("embeddings");
        for (const ParameterShape& p : params) {
            if (p.unit >= 0)
                node_of_param.push_back(1 + (m.layers - 1 - p.unit));
            else if (p.name.rfind("tok_emb", 0) == 0 || p.name.rfind("pos_emb", 0) == 0)
                node_of_param.push_back(int(nodes.size()) - 1);
            else
                node_of_param.push_back(0); // ln_f, head
        }
    } else {
        const int layers = int(m.hidden.size()) + 1;
        for (int u = layers - 1; u >= 0; --u)
            nodes.push_back(u == layers - 1 ? "out" : "fc" + std::to_string(u));
        for (const ParameterShape& p : params)
            node_of_param.push_back(layers - 1 - p.unit);
    }
}

} // namespace

BucketPicture computeBucketPicture(const RunModel& model, int rank, std::optional<int64_t> at_ns) {
    BucketPicture pic;
    const Scenario& s = model.scenario();
    pic.rank = rank;
    pic.overlap = s.strategy.overlap;
    const std::vector<ParameterShape> params = parameterLayout(s.model);
    std::vector<int> node_of_param;
    backwardNodes(s.model, params, pic.nodes, node_of_param);
    const std::vector<BucketPlan> plan = ddpBucketPlan(s);
    for (size_t b = 0; b < plan.size(); ++b) {
        BucketRow row;
        row.bucket = int(b);
        row.bytes = plan[b].numel * 4;
        row.first_node = int(pic.nodes.size());
        row.last_node = -1;
        for (const BucketSlot& slot : plan[b].slots) {
            const int node = node_of_param[size_t(slot.param_index)];
            row.first_node = std::min(row.first_node, node);
            row.last_node = std::max(row.last_node, node);
        }
        row.first_param = params[size_t(plan[b].slots.front().param_index)].name;
        row.last_param = params[size_t(plan[b].slots.back().param_index)].name;
        pic.buckets.push_back(row);
    }
    if (rank < 0 || rank >= model.world())
        return pic;

    // The step: the latest whole-backward span (unit -2) at or before the
    // moment whose every bucket all-reduce has completed on this rank.
    const RankLane& lane = model.lane(rank);
    const std::vector<SpanRecord>& phases = lane.compute[1];
    for (auto it = phases.rbegin(); it != phases.rend(); ++it) {
        if (it->kind != EventKind::Backward || it->unit != -2)
            continue;
        if (at_ns && it->t0 > *at_ns)
            continue;
        const SpanRecord& backward = *it;
        // The last launch of each bucket in this step (with microbatches, the last microbatch's).
        std::vector<const SpanRecord*> works(plan.size(), nullptr);
        for (const SpanRecord& c : lane.comm)
            if (c.kind == EventKind::AllReduce && c.step == backward.step && c.unit >= 0 &&
                size_t(c.unit) < plan.size() && c.t_scheduled >= backward.t0 &&
                (!works[size_t(c.unit)] || c.t0 >= works[size_t(c.unit)]->t0))
                works[size_t(c.unit)] = &c;
        const bool complete = std::all_of(works.begin(), works.end(),
                                          [](const SpanRecord* w) { return w && !w->open() && !w->failed; });
        if (!complete)
            continue;
        pic.step = backward.step;
        pic.backward_ms = double(backward.t1 - backward.t0) / 1e6;
        // Block backward spans inside this backward, for "which block was running".
        std::vector<const SpanRecord*> blocks;
        for (const SpanRecord& span : lane.compute[2])
            if (span.kind == EventKind::Backward && span.step == backward.step && span.t0 >= backward.t0 &&
                span.t1 <= backward.t1)
                blocks.push_back(&span);
        for (BucketRow& row : pic.buckets) {
            const SpanRecord& w = *works[size_t(row.bucket)];
            const int64_t launched = w.t_scheduled != 0 ? w.t_scheduled : w.t0;
            row.measured = true;
            row.measured_bytes = w.bytes;
            row.launched_ms = double(launched - backward.t0) / 1e6;
            row.allreduce_ms = double(w.t1 - launched) / 1e6;
            row.hidden_ms = std::max(0.0, double(std::min(w.t1, backward.t1) - launched) / 1e6);
            row.launched_during_node = -1;
            if (launched < backward.t1) {
                row.launched_during_node = 0; // before any block: the head's backward
                for (const SpanRecord* blk : blocks)
                    if (launched >= blk->t0) {
                        const int node = s.model.kind == "tiny_gpt" ? 1 + (s.model.layers - 1 - blk->unit)
                                                                    : int(pic.nodes.size()) - 1 - blk->unit;
                        // Past this block's end: the next node (the embeddings after block 0) was running.
                        row.launched_during_node =
                            launched <= blk->t1 ? node : std::min(node + 1, int(pic.nodes.size()) - 1);
                    }
            }
        }
        break;
    }
    return pic;
}

const char* DdpBucketsView::helpText() const {
    return "Why DDP all-reduces during backward. Backward visits the model from the loss to the first layer, "
           "so "
           "the last layers' gradients are ready first.\n\n"
           "Buckets as PyTorch 1.13 builds them: step 0 runs with ONE bucket holding every gradient, "
           "all-reduced "
           "when the last one is ready, while DDP records the order the gradients arrive in. After step 0 it "
           "rebuilds the buckets from that order: a parameter is added to the bucket, and the bucket closes "
           "once it reaches its limit (the first 1 MiB, the others [strategy] bucket_mb), so the last bucket "
           "holds whatever is left. Each gradient is divided by the number of ranks as it becomes ready; the "
           "all-reduce sums. A bucket is launched when its last gradient is ready and every bucket before it "
           "has been launched.\n\n"
           "Top: the layers in backward order. Brackets: the parameters each bucket holds (predicted from "
           "the "
           "model; the MiB column shows the bytes the all-reduce really carried). Triangles: where each "
           "bucket's all-reduce was really launched in one step of the selected rank (the time cursor's "
           "step, "
           "else the latest). The table gives when, for how long, and how much of it was hidden behind "
           "backward; the rest is exposed. With overlap = false every bucket waits for the end of backward.";
}

BucketsEmpty ddpBucketsEmpty(const ViewInputs& inputs) {
    if (!inputs.model)
        return BucketsEmpty::NoRun;
    if (!isPlainDdp(inputs.model->scenario()))
        return BucketsEmpty::NotDdp;
    return BucketsEmpty::None;
}

std::optional<bool> DdpBucketsView::relevantTo(const Scenario& scenario) const {
    return isPlainDdp(scenario);
}

LayoutPlace DdpBucketsView::layoutPlace(const LayoutContext& context) const {
    LayoutPlace place;
    place.area = LayoutArea::Band;
    place.height = std::round(preferredHeight(int(ddpBucketPlan(context.scenario).size())));
    return place;
}

bool DdpBucketsView::isEmpty(const ViewInputs& inputs) const {
    return ddpBucketsEmpty(inputs) != BucketsEmpty::None;
}

float DdpBucketsView::preferredHeight(int buckets) {
    const ImGuiStyle& style = ImGui::GetStyle();
    return ImGui::GetFrameHeightWithSpacing() * 2.0f +
           ImGui::GetTextLineHeightWithSpacing() * (5.5f + float(buckets)) + style.WindowPadding.y * 2.0f +
           60.0f;
}

void DdpBucketsView::drawEmptyState(const ViewInputs& inputs) {
    switch (ddpBucketsEmpty(inputs)) {
    case BucketsEmpty::NoRun:
        emptyState("No run", "Open a DDP scenario (scenarios/ddp_basics.toml).");
        return;
    case BucketsEmpty::NotDdp:
        emptyState("Not a DDP run",
                   "Buckets belong to plain DDP ([strategy] kind = \"ddp\", without [fault_tolerance]). Open "
                   "scenarios/ddp_basics.toml.");
        return;
    case BucketsEmpty::None:
        return;
    }
}

void DdpBucketsView::drawContent(const ViewInputs& inputs) {
    const RunModel& model = *inputs.model;
    int rank = inputs.selected_rank && *inputs.selected_rank >= 0 ? *inputs.selected_rank : 0;
    if (rank >= model.world())
        rank = 0;
    std::optional<int64_t> at;
    if (inputs.cursor_ns && inputs.cursor_ns->has_value())
        at = **inputs.cursor_ns;
    // Recomputed only when events arrived, or the rank or the cursor moved (it walks the rank's comm spans).
    if (model.generation() != m_generation || rank != m_rank || at != m_at) {
        m_picture = computeBucketPicture(model, rank, at);
        m_generation = model.generation();
        m_rank = rank;
        m_at = at;
    }
    const BucketPicture& pic = m_picture;

    helpMarker(helpText());
    ImGui::SameLine();
    if (pic.step < 0) { // wrapped: at any text size it stays inside the view
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped(
            "rank %d: waiting for a step after step 0 whose all-reduces have all completed (step "
            "0 all-reduces every gradient as one bucket; the buckets below are built after it)",
            rank);
        ImGui::PopStyleColor();
    } else
        ImGui::Text("rank %d, step %d%s: backward %.1f ms, %d buckets of <= %.1f MiB, overlap %s", rank,
                    pic.step, at ? " (at the time cursor)" : "", pic.backward_ms, int(pic.buckets.size()),
                    model.scenario().strategy.bucket_mb, pic.overlap ? "on" : "off");

    // The layers in backward order, as boxes in a row, and the bucket brackets under them.
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const float width = std::max(200.0f, ImGui::GetContentRegionAvail().x);
    const float line = ImGui::GetTextLineHeight();
    const int n = int(pic.nodes.size());
    const float gap = line * 0.6f;
    const float box_w = (width - gap * float(n)) / float(std::max(1, n + 1)); // +1: the loss at the left
    const float box_h = line * 1.6f;
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
    const ImU32 frame = ImGui::GetColorU32(ImGuiCol_Border);
    const ImU32 backward_color = palette::kindColor(EventKind::Backward);
    const ImU32 reduce_color = palette::kindColor(EventKind::AllReduce);
    auto boxX = [&](int node) { return origin.x + (box_w + gap) * float(node + 1); };
    // loss -> head -> ... : backward's direction
    dl->AddRect(ImVec2(origin.x, origin.y), ImVec2(origin.x + box_w, origin.y + box_h), frame, 3.0f);
    dl->AddText(ImVec2(origin.x + 4.0f, origin.y + line * 0.3f), text, "loss");
    for (int i = 0; i < n; ++i) {
        const float x = boxX(i);
        dl->AddRectFilled(ImVec2(x, origin.y), ImVec2(x + box_w, origin.y + box_h),
                          (backward_color & 0x00FFFFFF) | 0x60000000, 3.0f);
        dl->AddRect(ImVec2(x, origin.y), ImVec2(x + box_w, origin.y + box_h), frame, 3.0f);
        dl->PushClipRect(ImVec2(x, origin.y), ImVec2(x + box_w, origin.y + box_h), true);
        const std::string label = elideToWidth(pic.nodes[size_t(i)], box_w - 8.0f);
        dl->AddText(ImVec2(x + 4.0f, origin.y + line * 0.3f), text, label.c_str());
        dl->PopClipRect();
        const float ax = x - gap;
        dl->AddLine(ImVec2(ax + 1.0f, origin.y + box_h * 0.5f), ImVec2(x - 2.0f, origin.y + box_h * 0.5f),
                    frame, 1.5f);
        dl->AddTriangleFilled(ImVec2(x - 2.0f, origin.y + box_h * 0.5f),
                              ImVec2(x - 7.0f, origin.y + box_h * 0.5f - 3.5f),
                              ImVec2(x - 7.0f, origin.y + box_h * 0.5f + 3.5f), frame);
    }
    dl->AddText(ImVec2(origin.x, origin.y + box_h + 2.0f), ImGui::GetColorU32(ImGuiCol_TextDisabled),
                "backward runs left to right: gradients of the last layers are ready first");
    // Brackets, one row per bucket, each with its launch marker.
    float y = origin.y + box_h + line * 1.5f;
    for (const BucketRow& row : pic.buckets) {
        const float x0 = boxX(row.first_node) + 2.0f, x1 = boxX(row.last_node) + box_w - 2.0f;
        dl->AddLine(ImVec2(x0, y), ImVec2(x1, y), reduce_color, 3.0f);
        dl->AddLine(ImVec2(x0, y - 4.0f), ImVec2(x0, y + 4.0f), reduce_color, 2.0f);
        dl->AddLine(ImVec2(x1, y - 4.0f), ImVec2(x1, y + 4.0f), reduce_color, 2.0f);
        char label[64];
        std::snprintf(label, sizeof(label), "bucket %d", row.bucket);
        dl->AddText(ImVec2(x0 + 3.0f, y + 2.0f), text, label);
        if (row.measured) {
            const float mx = row.launched_during_node < 0 ? boxX(n - 1) + box_w + gap * 0.5f
                                                          : boxX(row.launched_during_node) + box_w * 0.5f;
            dl->AddTriangleFilled(ImVec2(mx, y - 6.0f), ImVec2(mx - 5.0f, y - 14.0f),
                                  ImVec2(mx + 5.0f, y - 14.0f), ImGui::GetColorU32(ImGuiCol_PlotHistogram));
        }
        y += line * 1.3f;
    }
    ImGui::Dummy(ImVec2(width, y - origin.y + 2.0f));

    // One line per bucket: what it holds and what its all-reduce did in this step.
    // Proportional widths within the view: at large text a cell clips its text instead of the
    // table running past the view's right edge.
    if (ImGui::BeginTable("buckets", 5, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp)) {
        ImGui::TableSetupColumn("bucket");
        ImGui::TableSetupColumn("holds (first ready .. launching gradient)",
                                ImGuiTableColumnFlags_WidthStretch);
        ImGui::TableSetupColumn("MiB");
        ImGui::TableSetupColumn("launched");
        ImGui::TableSetupColumn("all-reduce (hidden behind backward)");
        ImGui::TableHeadersRow();
        for (const BucketRow& row : pic.buckets) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::Text("%d", row.bucket);
            ImGui::TableNextColumn();
            ImGui::Text("%s .. %s", row.first_param.c_str(), row.last_param.c_str());
            ImGui::TableNextColumn();
            if (row.measured && row.measured_bytes > 0 && row.measured_bytes != row.bytes) {
                ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.35f, 1.0f), "%.2f (ran %.2f)",
                                   double(row.bytes) / (1024.0 * 1024.0),
                                   double(row.measured_bytes) / (1024.0 * 1024.0));
                if (ImGui::IsItemHovered())
                    ImGui::SetTooltip(
                        "The all-reduce carried a different size than the predicted bucket: the "
                        "gradients arrived in another order than the model's reverse registration "
                        "order.");
            } else {
                ImGui::Text("%.2f", double(row.bytes) / (1024.0 * 1024.0));
            }
            ImGui::TableNextColumn();
            if (!row.measured)
                ImGui::TextDisabled("-");
            else if (row.launched_during_node < 0)
                ImGui::Text("+%.1f ms, after backward", row.launched_ms);
            else
                ImGui::Text("+%.1f ms, during %s", row.launched_ms,
                            pic.nodes[size_t(row.launched_during_node)].c_str());
            ImGui::TableNextColumn();
            if (!row.measured)
                ImGui::TextDisabled("-");
            else
                ImGui::Text("%.1f ms (%.1f ms hidden)", row.allreduce_ms, row.hidden_ms);
        }
        ImGui::EndTable();
    }
}

} // namespace dt::app
