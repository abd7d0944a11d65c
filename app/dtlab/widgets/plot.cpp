// plot.cpp: line plots with axes, legend and hover readout (see plot.hpp).
//
// [SECTION] Ranges and ticks
// [SECTION] Drawing
// [SECTION] Hover readout
#include "widgets/plot.hpp"

#include "widgets/format.hpp"
#include "widgets/help.hpp"
#include "widgets/palette.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace dt::app {
namespace {

// -----------------------------------------------------------------------------
// [SECTION] Ranges and ticks
// -----------------------------------------------------------------------------

struct Range {
    double lo = std::numeric_limits<double>::max();
    double hi = std::numeric_limits<double>::lowest();
    void add(double v) {
        if (!std::isfinite(v))
            return;
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    bool valid() const { return lo <= hi; }
};

struct YAxis {
    double step = 1.0;
    double unit = 1.0; // bytes: 1024^k
    const char* unit_name = "";
};

void formatY(char* out, size_t size, double v, const PlotOptions& options, const YAxis& axis) {
    if (options.y_unit == AxisUnit::Bytes)
        formatBytesTick(out, size, v, axis.step, axis.unit, axis.unit_name);
    else
        formatValueTick(out, size, v, axis.step);
}

void formatReadout(char* out, size_t size, double v, const PlotOptions& options) {
    if (options.y_unit == AxisUnit::Bytes) {
        char human[32];
        formatBytes(human, sizeof(human), v);
        std::snprintf(out, size, "%s (%s)", human, formatBytesExact(int64_t(std::llround(v))).c_str());
    } else {
        std::snprintf(out, size, "%.5g%s", v, options.y_suffix);
    }
}

} // namespace

// Clips segment a-b to the rectangle [lo, hi] (Liang-Barsky); false when
// nothing of it is inside.
bool clipSegment(ImVec2& a, ImVec2& b, ImVec2 lo, ImVec2 hi) {
    const float dx = b.x - a.x, dy = b.y - a.y;
    float t0 = 0.0f, t1 = 1.0f;
    const float p[4] = {-dx, dx, -dy, dy};
    const float q[4] = {a.x - lo.x, hi.x - a.x, a.y - lo.y, hi.y - a.y};
    for (int i = 0; i < 4; ++i) {
        if (p[i] == 0.0f) {
            if (q[i] < 0.0f)
                return false; // parallel to this edge and outside it
            continue;
        }
        const float t = q[i] / p[i];
        if (p[i] < 0.0f)
            t0 = std::max(t0, t);
        else
            t1 = std::min(t1, t);
        if (t0 > t1)
            return false;
    }
    const ImVec2 start(a.x + dx * t0, a.y + dy * t0), end(a.x + dx * t1, a.y + dy * t1);
    a = start;
    b = end;
    return true;
}

int nearestIndex(const std::vector<double>& xs, double x) {
    if (xs.empty())
        return -1;
    auto it = std::lower_bound(xs.begin(), xs.end(), x);
    if (it == xs.end())
        return int(xs.size()) - 1;
    if (it == xs.begin())
        return 0;
    const auto before = it - 1;
    return int((x - *before <= *it - x ? before : it) - xs.begin());
}

// -----------------------------------------------------------------------------
// [SECTION] Drawing
// -----------------------------------------------------------------------------

void linePlot(const char* id, ImVec2 size, const std::vector<PlotSeries>& series,
              const PlotOptions& options) {
    const ImGuiStyle& style = ImGui::GetStyle();
    const float line_h = ImGui::GetTextLineHeight();
    size.x = std::max(size.x, 120.0f);
    size.y = std::max(size.y, line_h * 6.0f);

    const ImVec2 box_min = ImGui::GetCursorScreenPos();
    const ImVec2 box_max(box_min.x + size.x, box_min.y + size.y);
    ImGui::InvisibleButton(id, size);
    const bool hovered = ImGui::IsItemHovered();
    ImDrawList* draw = ImGui::GetWindowDrawList();
    draw->AddRectFilled(box_min, box_max, ImGui::GetColorU32(ImGuiCol_FrameBg), style.FrameRounding);
    draw->AddRect(box_min, box_max, ImGui::GetColorU32(ImGuiCol_Border), style.FrameRounding);

    const float pad = style.FramePadding.x + 2.0f;
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
    const ImU32 text_dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    draw->AddText(ImVec2(box_min.x + pad, box_min.y + pad * 0.5f), text, options.title);

    // Legend: right-aligned on the title line. When the labels do not all fit
    // beside the title, shorter ones ("rank 3" -> "3"); when those do not fit
    // either, the last ones that do and "..." (never a series silently dropped).
    {
        const float title_end = box_min.x + pad + ImGui::CalcTextSize(options.title).x + 12.0f;
        const float swatch = line_h * 0.7f;
        const float dots_w = ImGui::CalcTextSize("...").x + 6.0f;
        auto shortLabel = [](const std::string& label) {
            return label.rfind("rank ", 0) == 0 ? label.substr(5) : label;
        };
        auto widthOf = [&](bool short_labels) {
            float w = 0.0f;
            for (const auto& s : series)
                w += ImGui::CalcTextSize((short_labels ? shortLabel(s.label) : s.label).c_str()).x + swatch +
                     14.0f;
            return w;
        };
        const float room = box_max.x - pad - title_end;
        const bool short_labels = widthOf(false) > room;
        const bool all_fit = widthOf(short_labels) <= room;
        float x = box_max.x - pad;
        for (size_t i = series.size(); i-- > 0;) {
            const std::string label = short_labels ? shortLabel(series[i].label) : series[i].label;
            const float w = ImGui::CalcTextSize(label.c_str()).x;
            if (x - w - swatch - 4.0f < title_end + (all_fit ? 0.0f : dots_w)) {
                draw->AddText(ImVec2(x - dots_w + 6.0f, box_min.y + pad * 0.5f), text_dim, "...");
                break;
            }
            x -= w;
            draw->AddText(ImVec2(x, box_min.y + pad * 0.5f), text, label.c_str());
            x -= swatch + 4.0f;
            const float y = box_min.y + pad * 0.5f + (line_h - swatch) * 0.5f;
            draw->AddRectFilled(ImVec2(x, y), ImVec2(x + swatch, y + swatch), series[i].color, 2.0f);
            x -= 10.0f;
        }
    }

    Range xr, yr;
    for (const auto& s : series)
        for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
            xr.add(s.x[i]);
            if (s.in_y_range)
                yr.add(s.y[i]);
        }
    if (xr.valid() && std::isfinite(options.x_range_hi))
        xr.add(options.x_range_hi);
    if (!xr.valid() || !yr.valid()) {
        const char* msg = "no data yet";
        const ImVec2 ts = ImGui::CalcTextSize(msg);
        draw->AddText(ImVec2((box_min.x + box_max.x - ts.x) * 0.5f, (box_min.y + box_max.y - ts.y) * 0.5f),
                      text_dim, msg);
        return;
    }
    if (options.y_from_zero)
        yr.add(0.0);
    if (yr.hi - yr.lo < 1e-12) {
        yr.lo -= 0.5 * (std::fabs(yr.lo) + 1.0);
        yr.hi += 0.5 * (std::fabs(yr.hi) + 1.0);
    }
    if (xr.hi - xr.lo < 1e-12) {
        xr.lo -= 1.0;
        xr.hi += 1.0;
    }
    const double ypad = (yr.hi - yr.lo) * 0.06;
    if (!(options.y_from_zero && yr.lo == 0.0))
        yr.lo -= ypad;
    yr.hi += ypad;

    // Y ticks (a label every ~2.5 lines), measured to size the label column.
    YAxis axis;
    const float plot_top = box_min.y + pad + line_h + 6.0f;
    const float plot_bottom = box_max.y - pad - line_h * 2.0f - 2.0f;
    const float approx_ticks = std::max(2.0f, (plot_bottom - plot_top) / (line_h * 2.5f));
    if (options.y_unit == AxisUnit::Bytes) {
        axis.unit = bytesUnit(std::max(std::fabs(yr.hi), std::fabs(yr.lo)), &axis.unit_name);
        axis.step = niceBytesStep((yr.hi - yr.lo) / approx_ticks, axis.unit);
    } else {
        axis.step = niceStep((yr.hi - yr.lo) / approx_ticks);
    }
    char buf[64];
    float label_w = 0.0f;
    const double y_first = std::ceil(yr.lo / axis.step) * axis.step;
    for (double v = y_first; v <= yr.hi + axis.step * 1e-6; v += axis.step) {
        formatY(buf, sizeof(buf), v, options, axis);
        label_w = std::max(label_w, ImGui::CalcTextSize(buf).x);
    }
    const ImVec2 plot_min(box_min.x + pad + label_w + 6.0f, plot_top);
    const ImVec2 plot_max(box_max.x - pad - 4.0f, plot_bottom);
    if (plot_max.x - plot_min.x < 20.0f || plot_max.y - plot_min.y < 10.0f)
        return;
    const double plot_w = plot_max.x - plot_min.x, plot_h = plot_max.y - plot_min.y;
    auto px = [&](double x) { return float(plot_min.x + (x - xr.lo) / (xr.hi - xr.lo) * plot_w); };
    auto py = [&](double y) { return float(plot_max.y - (y - yr.lo) / (yr.hi - yr.lo) * plot_h); };

    const ImU32 grid = palette::withAlpha(ImGui::GetColorU32(ImGuiCol_Border), 0.6f);
    for (double v = y_first; v <= yr.hi + axis.step * 1e-6; v += axis.step) {
        const float y = py(v);
        draw->AddLine(ImVec2(plot_min.x, y), ImVec2(plot_max.x, y), grid);
        formatY(buf, sizeof(buf), v, options, axis);
        const ImVec2 ts = ImGui::CalcTextSize(buf);
        draw->AddText(ImVec2(plot_min.x - 6.0f - ts.x, y - ts.y * 0.5f), text_dim, buf);
    }

    // X ticks: a label every ~90 px.
    double x_step = niceStep((xr.hi - xr.lo) / std::max(1.0, plot_w / 90.0));
    if (options.x_integer)
        x_step = std::max(1.0, x_step);
    for (double v = std::ceil(xr.lo / x_step) * x_step; v <= xr.hi + x_step * 1e-6; v += x_step) {
        const float x = px(v);
        draw->AddLine(ImVec2(x, plot_max.y), ImVec2(x, plot_max.y + 4.0f), text_dim);
        formatValueTick(buf, sizeof(buf), v, x_step);
        const ImVec2 ts = ImGui::CalcTextSize(buf);
        draw->AddText(ImVec2(x - ts.x * 0.5f, plot_max.y + 5.0f), text_dim, buf);
    }
    {
        const ImVec2 ts = ImGui::CalcTextSize(options.x_label);
        draw->AddText(ImVec2((plot_min.x + plot_max.x - ts.x) * 0.5f, plot_max.y + 5.0f + line_h), text_dim,
                      options.x_label);
    }
    draw->AddLine(ImVec2(plot_min.x, plot_max.y), ImVec2(plot_max.x, plot_max.y), text_dim);
    draw->AddLine(ImVec2(plot_min.x, plot_min.y), ImVec2(plot_min.x, plot_max.y), text_dim);

    // Lines. Points that fall in the same pixel column collapse to the
    // column's first, min, max and last value: the shape survives, the cost
    // is bounded by the width. A non-finite y breaks the line: no data there
    // (a rank that was dead), so nothing is drawn across it.
    draw->PushClipRect(ImVec2(plot_min.x - 3.0f, plot_min.y - 3.0f),
                       ImVec2(plot_max.x + 3.0f, plot_max.y + 3.0f), true);
    std::vector<ImVec2> points;
    for (const auto& s : series) {
        const size_t n = std::min(s.x.size(), s.y.size());
        const bool dense = n > size_t(plot_w);
        size_t finite = 0;
        for (size_t i = 0; i < n; ++i)
            finite += std::isfinite(s.y[i]) ? 1 : 0;
        const bool markers = !dense && finite < size_t(plot_w / 8.0);
        points.clear();
        int column = std::numeric_limits<int>::min();
        float first = 0, lo = 0, hi = 0, last = 0;
        auto flush = [&]() {
            if (column == std::numeric_limits<int>::min())
                return;
            const float x = float(column) + 0.5f;
            points.push_back(ImVec2(x, first));
            if (lo != first && lo != last)
                points.push_back(ImVec2(x, lo));
            if (hi != first && hi != last)
                points.push_back(ImVec2(x, hi));
            if (last != first)
                points.push_back(ImVec2(x, last));
            column = std::numeric_limits<int>::min();
        };
        float along = 0.0f; // dashes: the pattern carried across the segments
        auto drawRun = [&]() {
            if (dense)
                flush();
            if (s.dashed) {
                // 6 px on, 4 px off. Each segment is first clipped to the plot
                // (a theory line that does not set the y range may run thousands
                // of plot heights off it), so the dash loop walks visible pixels only.
                for (size_t i = 1; i < points.size(); ++i) {
                    ImVec2 a = points[i - 1], b = points[i];
                    if (!clipSegment(a, b, ImVec2(plot_min.x - 3.0f, plot_min.y - 3.0f),
                                     ImVec2(plot_max.x + 3.0f, plot_max.y + 3.0f)))
                        continue;
                    const float len = std::hypot(b.x - a.x, b.y - a.y);
                    if (!(len > 0.0f))
                        continue;
                    for (float d = 0.0f; d < len;) {
                        const float phase = std::fmod(along + d, 10.0f);
                        const float run = std::min(len - d, phase < 6.0f ? 6.0f - phase : 10.0f - phase);
                        if (phase < 6.0f) {
                            const float t0 = d / len, t1 = (d + run) / len;
                            draw->AddLine(ImVec2(a.x + (b.x - a.x) * t0, a.y + (b.y - a.y) * t0),
                                          ImVec2(a.x + (b.x - a.x) * t1, a.y + (b.y - a.y) * t1), s.color,
                                          2.0f);
                        }
                        d += std::max(run, 0.01f);
                    }
                    along += len;
                }
            } else {
                if (points.size() >= 2)
                    draw->AddPolyline(points.data(), int(points.size()), s.color, 0, 2.0f);
                // A lone point between two breaks is drawn too, else it would vanish.
                if (markers || points.size() == 1)
                    for (const ImVec2& p : points)
                        draw->AddCircleFilled(p, 2.5f, s.color, 8);
            }
            points.clear();
        };
        for (size_t i = 0; i < n; ++i) {
            if (!std::isfinite(s.y[i])) {
                drawRun();
                continue;
            }
            const float x = px(s.x[i]), y = py(s.y[i]);
            if (!dense) {
                points.push_back(ImVec2(x, y));
                continue;
            }
            const int c = int(std::floor(x));
            if (c != column) {
                flush();
                column = c;
                first = lo = hi = last = y;
            } else {
                lo = std::min(lo, y);
                hi = std::max(hi, y);
                last = y;
            }
        }
        drawRun();
    }
    if (std::isfinite(options.marker_x)) { // the time cursor's step
        const float x = px(options.marker_x);
        draw->AddLine(ImVec2(x, plot_min.y), ImVec2(x, plot_max.y), options.marker_color, 2.0f);
        draw->AddText(ImVec2(x + 3.0f, plot_min.y), options.marker_color, options.marker_label);
    }
    draw->PopClipRect();

    // -------------------------------------------------------------------------
    // [SECTION] Hover readout
    // -------------------------------------------------------------------------
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    if (!hovered || mouse.x < plot_min.x || mouse.x > plot_max.x || mouse.y < plot_min.y ||
        mouse.y > plot_max.y)
        return;
    double x = xr.lo + (mouse.x - plot_min.x) / plot_w * (xr.hi - xr.lo);
    if (options.x_integer)
        x = std::round(x);
    const float cx = px(x);
    draw->AddLine(ImVec2(cx, plot_min.y), ImVec2(cx, plot_max.y), text_dim);
    ImGui::BeginTooltip();
    formatValueTick(buf, sizeof(buf), x, options.x_integer ? 1.0 : x_step / 100.0);
    ImGui::Text("%s %s", options.x_label, buf);
    for (const auto& s : series) {
        const int i = nearestIndex(s.x, x);
        if (i < 0 || size_t(i) >= s.y.size())
            continue;
        if (options.x_integer && s.x[size_t(i)] != x)
            continue; // this series has no point at this step
        if (!std::isfinite(s.y[size_t(i)]))
            continue; // a break in the line
        draw->AddCircleFilled(ImVec2(px(s.x[size_t(i)]), py(s.y[size_t(i)])), 4.0f, s.color, 12);
        colorSwatch(s.color);
        ImGui::SameLine();
        formatReadout(buf, sizeof(buf), s.y[size_t(i)], options);
        ImGui::Text("%s: %s", s.label.c_str(), buf);
    }
    ImGui::EndTooltip();
}

} // namespace dt::app
