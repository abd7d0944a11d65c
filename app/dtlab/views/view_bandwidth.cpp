// view_bandwidth.cpp: the backend comparison plot (see view_bandwidth.hpp).
#include "views/view_bandwidth.hpp"

#include "widgets/help.hpp"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace dt::app {

namespace {

// The backend comparison: the scenarios this view belongs to.
bool isBackendComparison(const Scenario& scenario) {
    return scenario.strategy.kind == StrategyKind::Collectives;
}

} // namespace

BandwidthEmpty bandwidthEmpty(const ViewInputs& inputs) {
    if (!inputs.model)
        return BandwidthEmpty::NoRun;
    if (!isBackendComparison(inputs.model->scenario()))
        return BandwidthEmpty::NotComparison;
    if (inputs.model->busBandwidthEvents().empty())
        return BandwidthEmpty::NoPointYet;
    return BandwidthEmpty::None;
}

const char* BandwidthView::helpText() const {
    return "The backend comparison: for each backend (Gloo, Open MPI) and collective, the bus bandwidth each "
           "rank's "
           "link carried, per message size: factor x size / time, with factor 2(N-1)/N for all-reduce and "
           "(N-1)/N "
           "for all-gather and reduce-scatter (nccl-tests' busbw). Each point is the mean over ranks of each "
           "rank's "
           "median call.\n\n"
           "Dashed: theory, the cost model t = alpha + factor x size / B fitted to the same points (alpha: "
           "the fixed "
           "cost of a call; B: the link's bandwidth). Small messages are alpha-bound, large ones approach B. "
           "The "
           "table lists the fits; dtrun prints the same numbers.";
}

std::optional<bool> BandwidthView::relevantTo(const Scenario& scenario) const {
    return isBackendComparison(scenario);
}

LayoutPlace BandwidthView::layoutPlace(const LayoutContext& context) const {
    LayoutPlace place;
    place.area = LayoutArea::Band;
    place.height = std::round(context.body_height * 0.42f);
    return place;
}

bool BandwidthView::isEmpty(const ViewInputs& inputs) const {
    return bandwidthEmpty(inputs) != BandwidthEmpty::None;
}

namespace {

ImU32 seriesColor(CommBackend backend, const std::string& op) {
    const int shade = op == "all_reduce" ? 0 : op == "all_gather" ? 1 : 2;
    static const ImU32 gloo[3] = {IM_COL32(66, 165, 245, 255), IM_COL32(38, 198, 218, 255),
                                  IM_COL32(126, 87, 194, 255)};
    static const ImU32 mpi[3] = {IM_COL32(255, 167, 38, 255), IM_COL32(239, 83, 80, 255),
                                 IM_COL32(212, 225, 87, 255)};
    return backend == CommBackend::Mpi ? mpi[shade] : gloo[shade];
}

std::string sizeLabel(double bytes) {
    char buf[32];
    if (bytes >= 1024.0 * 1024.0)
        std::snprintf(buf, sizeof(buf), "%.0fM", bytes / (1024.0 * 1024.0));
    else
        std::snprintf(buf, sizeof(buf), "%.0fK", bytes / 1024.0);
    return buf;
}

} // namespace

void BandwidthView::drawEmptyState(const ViewInputs& inputs) {
    switch (bandwidthEmpty(inputs)) {
    case BandwidthEmpty::NoRun:
        emptyState("No run", "Open scenarios/backends_compare.toml.");
        return;
    case BandwidthEmpty::NotComparison:
        emptyState(
            "Not a backend comparison",
            "This view plots [strategy] kind = \"collectives\" runs (scenarios/backends_compare.toml): the "
            "same collectives timed over each backend, one message size per step.");
        return;
    case BandwidthEmpty::NoPointYet:
        emptyState("No size measured yet",
                   "Each step times one message size on every backend; the first point "
                   "appears when step 0 ends.");
        return;
    case BandwidthEmpty::None:
        return;
    }
}

void BandwidthView::drawContent(const ViewInputs& inputs) {
    const RunModel& model = *inputs.model;
    if (model.generation() != m_generation) {
        m_measure = measureBusBandwidth(model.busBandwidthEvents());
        m_generation = model.generation();
    }
    const BusBandwidthMeasure& m = m_measure;

    helpMarker(helpText());
    ImGui::SameLine();
    ImGui::Text(
        "%d ranks, %d points; bus bandwidth (GB/s) per message size; dashed = theory (fitted cost model)",
        m.ranks, int(m.points.size()));

    // Axes: x = log2(size), y = GB/s from 0 to the largest point (or model value) seen.
    double min_size = 1e30, max_size = 0.0, max_gbs = 0.0;
    for (const BusBandwidthPoint& p : m.points) {
        min_size = std::min(min_size, double(p.size_bytes));
        max_size = std::max(max_size, double(p.size_bytes));
        max_gbs = std::max(max_gbs, p.gbs);
    }
    if (max_size <= min_size)
        max_size = min_size * 2.0;
    max_gbs = std::max(max_gbs * 1.15, 1e-3);
    const float table_h = ImGui::GetTextLineHeightWithSpacing() * float(m.models.size() + 2);
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float plot_h =
        std::max(ImGui::GetTextLineHeight() * 6.0f, avail.y - table_h - ImGui::GetStyle().ItemSpacing.y * 2);
    const float plot_w = std::max(200.0f, avail.x * 0.62f);
    const ImVec2 o = ImGui::GetCursorScreenPos();
    const float left = ImGui::CalcTextSize("00.00").x + 6.0f, bottom = ImGui::GetTextLineHeight() + 4.0f;
    const ImVec2 p0(o.x + left, o.y + 4.0f), p1(o.x + plot_w, o.y + plot_h - bottom);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImU32 axis = ImGui::GetColorU32(ImGuiCol_TextDisabled),
                grid = ImGui::GetColorU32(ImGuiCol_Separator);
    auto X = [&](double size) {
        return p0.x +
               float((std::log2(size) - std::log2(min_size)) / (std::log2(max_size) - std::log2(min_size))) *
                   (p1.x - p0.x);
    };
    auto Y = [&](double gbs) { return p1.y - float(std::min(gbs, max_gbs) / max_gbs) * (p1.y - p0.y); };
    dl->AddRect(p0, p1, grid);
    for (int i = 0; i <= 4; ++i) {
        const double v = max_gbs * i / 4.0;
        char buf[16];
        std::snprintf(buf, sizeof(buf), "%.2f", v);
        dl->AddLine(ImVec2(p0.x, Y(v)), ImVec2(p1.x, Y(v)), grid);
        dl->AddText(ImVec2(o.x, Y(v) - ImGui::GetTextLineHeight() * 0.5f), axis, buf);
    }
    for (double s = min_size; s <= max_size * 1.001; s *= 4.0) {
        const std::string label = sizeLabel(s);
        dl->AddText(ImVec2(X(s) - ImGui::CalcTextSize(label.c_str()).x * 0.5f, p1.y + 2.0f), axis,
                    label.c_str());
    }
    // Theory first (under the measurements): each fit as a dashed curve.
    for (const BusBandwidthModel& f : m.models) {
        const double factor = ringFactor(f.op, m.ranks);
        const ImU32 color = (seriesColor(f.backend, f.op) & 0x00FFFFFF) | 0xB0000000;
        ImVec2 prev;
        for (int i = 0; i <= 64; ++i) {
            const double size =
                std::exp2(std::log2(min_size) + (std::log2(max_size) - std::log2(min_size)) * i / 64.0);
            const double gbs = factor * size / f.fit.seconds(factor * size) / 1e9;
            const ImVec2 pt(X(size), Y(gbs));
            if (i > 0 && i % 2 == 1)
                dl->AddLine(prev, pt, color, 1.5f); // every other segment: dashed
            prev = pt;
        }
    }
    // Measurements: points joined per series.
    for (size_t i = 0; i < m.points.size(); ++i) {
        const BusBandwidthPoint& p = m.points[i];
        const ImU32 color = seriesColor(p.backend, p.op);
        const ImVec2 pt(X(double(p.size_bytes)), Y(p.gbs));
        dl->AddCircleFilled(pt, 3.5f, color);
        if (i > 0 && m.points[i - 1].backend == p.backend && m.points[i - 1].op == p.op)
            dl->AddLine(ImVec2(X(double(m.points[i - 1].size_bytes)), Y(m.points[i - 1].gbs)), pt, color,
                        2.0f);
    }
    // Legend beside the plot.
    ImGui::SetCursorScreenPos(ImVec2(o.x + plot_w + 12.0f, o.y));
    ImGui::BeginGroup();
    std::string last;
    for (const BusBandwidthPoint& p : m.points) {
        const std::string key = std::string(commBackendLabel(p.backend)) + " " + p.op;
        if (key == last)
            continue;
        last = key;
        const ImVec2 c = ImGui::GetCursorScreenPos();
        ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(c.x, c.y + 4.0f), ImVec2(c.x + 10.0f, c.y + 14.0f),
                                                  seriesColor(p.backend, p.op));
        ImGui::Dummy(ImVec2(14.0f, 0.0f));
        ImGui::SameLine();
        ImGui::TextUnformatted(key.c_str());
    }
    ImGui::TextDisabled("dashed: theory (fitted)");
    ImGui::EndGroup();
    ImGui::SetCursorScreenPos(ImVec2(o.x, o.y + plot_h));

    if (!m.models.empty() &&
        ImGui::BeginTable("fits", 4, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
        ImGui::TableSetupColumn("backend");
        ImGui::TableSetupColumn("op");
        ImGui::TableSetupColumn("alpha (fixed cost per call)");
        ImGui::TableSetupColumn("B (fitted bandwidth)");
        ImGui::TableHeadersRow();
        for (const BusBandwidthModel& f : m.models) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(std::string(commBackendLabel(f.backend)).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(f.op.c_str());
            ImGui::TableNextColumn();
            ImGui::Text("%.1f us", f.fit.alpha_s * 1e6);
            ImGui::TableNextColumn();
            ImGui::Text("%.2f GB/s", f.fit.bandwidth_bytes_s / 1e9);
        }
        ImGui::EndTable();
    }
}

} // namespace dt::app
