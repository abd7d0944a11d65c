// plot_png.cpp: draws line plots from a CSV into a PNG, for the benchmark
// figures in docs/ (no plotting library is packaged for C++; this uses only
// stb_easy_font for text and stb_image_write for the file, both from libstb-dev).
//
//   plot_png OUT.png TITLE X_LABEL Y_LABEL DATA.csv [--log-x] [--y-min V] [--y-max V]
//
// DATA.csv: one point per line, "series,x,y" (no header). Series are drawn in
// the order they first appear, each as a polyline in its own colour, with a
// legend. Axes get 5 ticks with round labels.
#include <stb/stb_easy_font.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr int kWidth = 1000, kHeight = 600;
constexpr int kLeft = 90, kRight = 260, kTop = 50, kBottom = 70; // margins; the legend sits on the right

struct Rgb {
    uint8_t r, g, b;
};

struct Canvas {
    std::vector<uint8_t> pixels = std::vector<uint8_t>(size_t(kWidth) * kHeight * 3, 255);
    void set(int x, int y, Rgb c) {
        if (x < 0 || y < 0 || x >= kWidth || y >= kHeight)
            return;
        uint8_t* p = &pixels[(size_t(y) * kWidth + size_t(x)) * 3];
        p[0] = c.r, p[1] = c.g, p[2] = c.b;
    }
    void fill(int x0, int y0, int x1, int y1, Rgb c) {
        for (int y = y0; y < y1; ++y)
            for (int x = x0; x < x1; ++x)
                set(x, y, c);
    }
    // A line of the given width (square brush), Bresenham.
    void line(double fx0, double fy0, double fx1, double fy1, Rgb c, int width = 2) {
        int x0 = int(std::lround(fx0)), y0 = int(std::lround(fy0)), x1 = int(std::lround(fx1)),
            y1 = int(std::lround(fy1));
        const int dx = std::abs(x1 - x0), dy = -std::abs(y1 - y0), sx = x0 < x1 ? 1 : -1,
                  sy = y0 < y1 ? 1 : -1;
        int err = dx + dy;
        for (;;) {
            fill(x0 - width / 2, y0 - width / 2, x0 - width / 2 + width, y0 - width / 2 + width, c);
            if (x0 == x1 && y0 == y1)
                break;
            const int e2 = 2 * err;
            if (e2 >= dy)
                err += dy, x0 += sx;
            if (e2 <= dx)
                err += dx, y0 += sy;
        }
    }
    // Text at (x, y) top-left, scaled; stb_easy_font emits quads of 4 vertices.
    void text(int x, int y, const std::string& s, Rgb c, int scale = 2) {
        static char buffer[200000];
        const int quads =
            stb_easy_font_print(0, 0, const_cast<char*>(s.c_str()), nullptr, buffer, sizeof buffer);
        const float* v = reinterpret_cast<const float*>(buffer);
        for (int q = 0; q < quads; ++q) {
            const float* a = v + q * 16; // 4 vertices x (x, y, z, colour)
            const float* b = a + 8;      // the opposite corner
            fill(x + int(a[0]) * scale, y + int(a[1]) * scale, x + int(b[0]) * scale, y + int(b[1]) * scale,
                 c);
        }
    }
    static int textWidth(const std::string& s, int scale = 2) {
        return stb_easy_font_width(const_cast<char*>(s.c_str())) * scale;
    }
};

std::string label(double v) {
    char buf[32];
    if (v != 0 && (std::fabs(v) >= 1e5 || std::fabs(v) < 1e-2))
        std::snprintf(buf, sizeof buf, "%.0e", v);
    else
        std::snprintf(buf, sizeof buf, "%g", std::round(v * 1000) / 1000);
    return buf;
}

double niceStep(double range) {
    const double raw = range / 5, p = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
        if (m * p >= raw)
            return m * p;
    return 10 * p;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 6) {
        std::cerr
            << "usage: plot_png OUT.png TITLE X_LABEL Y_LABEL DATA.csv [--log-x] [--y-min V] [--y-max V]\n";
        return 2;
    }
    const std::string out = argv[1], title = argv[2], xlabel = argv[3], ylabel = argv[4], data = argv[5];
    bool log_x = false;
    double forced_ymin = NAN, forced_ymax = NAN;
    for (int i = 6; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--log-x")
            log_x = true;
        else if (a == "--y-min" && i + 1 < argc)
            forced_ymin = std::atof(argv[++i]);
        else if (a == "--y-max" && i + 1 < argc)
            forced_ymax = std::atof(argv[++i]);
        else {
            std::cerr << "plot_png: unknown option " << a << "\n";
            return 2;
        }
    }
    std::ifstream in(data);
    if (!in) {
        std::cerr << "plot_png: cannot read " << data << "\n";
        return 2;
    }
    std::vector<std::string> order;
    std::map<std::string, std::vector<std::pair<double, double>>> series;
    std::string row;
    int line_no = 0;
    while (std::getline(in, row)) {
        ++line_no;
        if (row.empty())
            continue;
        const size_t c1 = row.find(','), c2 = row.rfind(',');
        if (c1 == std::string::npos || c1 == c2) {
            std::cerr << data << ":" << line_no << ":1: error: expected series,x,y\n";
            return 2;
        }
        const std::string name = row.substr(0, c1);
        const double x = std::atof(row.substr(c1 + 1, c2 - c1 - 1).c_str()),
                     y = std::atof(row.substr(c2 + 1).c_str());
        if (!std::isfinite(x) || !std::isfinite(y) || (log_x && x <= 0))
            continue;
        if (!series.count(name))
            order.push_back(name);
        series[name].emplace_back(log_x ? std::log10(x) : x, y);
    }
    if (order.empty()) {
        std::cerr << "plot_png: " << data << " holds no points\n";
        return 2;
    }
    double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
    for (auto& [name, pts] : series)
        for (auto [x, y] : pts)
            xmin = std::min(xmin, x), xmax = std::max(xmax, x), ymin = std::min(ymin, y),
            ymax = std::max(ymax, y);
    if (std::isfinite(forced_ymin))
        ymin = forced_ymin;
    if (std::isfinite(forced_ymax))
        ymax = forced_ymax;
    if (xmax <= xmin)
        xmax = xmin + 1;
    if (ymax <= ymin)
        ymax = ymin + 1;
    const double ystep = niceStep(ymax - ymin);
    ymin = std::floor(ymin / ystep) * ystep, ymax = std::ceil(ymax / ystep) * ystep;
    const double xstep = log_x ? 1.0 : niceStep(xmax - xmin);
    if (!log_x)
        xmin = std::floor(xmin / xstep) * xstep, xmax = std::ceil(xmax / xstep) * xstep;

    Canvas c;
    const int pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
    const auto px = [&](double x) { return kLeft + (x - xmin) / (xmax - xmin) * pw; };
    const auto py = [&](double y) { return kTop + ph - (y - ymin) / (ymax - ymin) * ph; };
    const Rgb grid{225, 225, 225}, axis{60, 60, 60}, ink{20, 20, 20};
    for (double y = ymin; y <= ymax + ystep / 2; y += ystep) {
        c.line(kLeft, py(y), kLeft + pw, py(y), grid, 1);
        const std::string t = label(y);
        c.text(kLeft - 8 - Canvas::textWidth(t), int(py(y)) - 6, t, ink);
    }
    for (double x = log_x ? std::ceil(xmin) : xmin; x <= xmax + xstep / 2; x += xstep) {
        c.line(px(x), kTop, px(x), kTop + ph, grid, 1);
        const std::string t = label(log_x ? std::pow(10.0, x) : x);
        c.text(int(px(x)) - Canvas::textWidth(t) / 2, kTop + ph + 8, t, ink);
    }
    c.line(kLeft, kTop + ph, kLeft + pw, kTop + ph, axis, 2);
    c.line(kLeft, kTop, kLeft, kTop + ph, axis, 2);
    c.text(kLeft, 14, title, ink, 3);
    c.text(kLeft + pw / 2 - Canvas::textWidth(xlabel) / 2, kHeight - 32, xlabel, ink);
    c.text(8, kTop - 22, ylabel, ink);

    const Rgb palette[] = {{31, 119, 180}, {214, 39, 40},   {44, 160, 44},   {255, 127, 14}, {148, 103, 189},
                           {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};
    for (size_t k = 0; k < order.size(); ++k) {
        const Rgb col = palette[k % 10];
        auto& pts = series[order[k]];
        std::sort(pts.begin(), pts.end());
        for (size_t i = 1; i < pts.size(); ++i) {
            const double y0 = std::clamp(pts[i - 1].second, ymin, ymax),
                         y1 = std::clamp(pts[i].second, ymin, ymax);
            c.line(px(pts[i - 1].first), py(y0), px(pts[i].first), py(y1), col, 2);
        }
        const int ly = kTop + 10 + int(k) * 24;
        c.fill(kWidth - kRight + 16, ly + 4, kWidth - kRight + 40, ly + 8, col);
        c.text(kWidth - kRight + 46, ly, order[k], ink);
    }
    if (!stbi_write_png(out.c_str(), kWidth, kHeight, 3, c.pixels.data(), kWidth * 3)) {
        std::cerr << "plot_png: cannot write " << out << "\n";
        return 1;
    }
    return 0;
}
