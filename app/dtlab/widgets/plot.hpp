// plot.hpp: a line plot drawn with ImDrawList (no plotting library is packaged).
//
// Axes with "nice" ticks (1, 2, 5 x 10^k) and units, grid lines, one line per
// series with a legend, and a hover readout: a vertical cursor at the nearest
// x and a tooltip with every series' value there. Long series are reduced to
// at most a few points per pixel column (first, min, max, last), so a plot
// costs its width, not its length.
#pragma once

#include <imgui.h>

#include <cmath>

#include <string>
#include <vector>

namespace dt::app {

struct PlotSeries {
    std::string label; // legend and readout ("rank 0")
    ImU32 color = 0;
    std::vector<double> x;  // ascending
    std::vector<double> y;  // same length as x; a NaN breaks the line there (no data: a gap)
    bool dashed = false;    // a theory line: dashed, no point markers
    bool in_y_range = true; // false: drawn (clipped at the plot's edge) but does not widen the y range
};

enum class AxisUnit { Number, Bytes };

struct PlotOptions {
    const char* title = ""; // top-left, with its unit: "Step time (ms)"
    const char* x_label = "step";
    const char* y_suffix = ""; // appended to readout values: " ms", " tokens/s"
    AxisUnit y_unit = AxisUnit::Number;
    bool y_from_zero = false; // include 0 in the y range
    bool x_integer = true;    // x are steps: ticks and the readout snap to integers
    double x_range_hi = NAN;  // the x range reaches at least this far (a cut series keeps its scale)
    double marker_x = NAN;    // a vertical marker line here (the time cursor's step); NaN = none
    ImU32 marker_color = 0;
    const char* marker_label = ""; // drawn at the marker's top
};

// Draws the plot in a `size` box at the cursor and advances the cursor.
void linePlot(const char* id, ImVec2 size, const std::vector<PlotSeries>& series, const PlotOptions& options);

// Index of the point nearest to x in an ascending vector (-1 if empty). Pure.
[[nodiscard]] int nearestIndex(const std::vector<double>& xs, double x);

} // namespace dt::app
