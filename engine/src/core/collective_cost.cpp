// collective_cost.cpp: ring factors, bus bandwidth and the alpha-beta fit
// (formulas in collective_cost.hpp).
//
// The fit weights each point by 1 / t^2 (relative error), so the small
// messages, whose times are microseconds, pin alpha and the large ones pin B;
// an unweighted fit would let the 16 MiB point decide everything.
#include "dtlab/collective_cost.hpp"

#include <map>
#include <tuple>

#include <algorithm>
#include <cmath>

namespace dt {

double ringFactor(const std::string& op, int ranks) {
    if (ranks < 2)
        return 0.0;
    const double share = double(ranks - 1) / ranks;
    return op == "all_reduce" ? 2.0 * share : share;
}

double busBandwidthGBs(const std::string& op, double size_bytes, int ranks, double seconds) {
    if (seconds <= 0)
        return 0.0;
    return ringFactor(op, ranks) * size_bytes / seconds / 1e9;
}

AlphaBetaFit fitAlphaBeta(const std::vector<double>& wire_bytes, const std::vector<double>& seconds) {
    AlphaBetaFit fit;
    const size_t n = std::min(wire_bytes.size(), seconds.size());
    // Weighted least squares of t = a + b x (b = 1 / B), weights 1 / t^2.
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; ++i) {
        if (seconds[i] <= 0)
            continue;
        const double w = 1.0 / (seconds[i] * seconds[i]);
        const double x = wire_bytes[i], y = seconds[i];
        sw += w;
        sx += w * x;
        sy += w * y;
        sxx += w * x * x;
        sxy += w * x * y;
    }
    const double det = sw * sxx - sx * sx;
    if (sw == 0 || std::abs(det) <= 1e-30 * sw * sxx)
        return fit;
    double b = (sw * sxy - sx * sy) / det;
    double a = (sy - b * sx) / sw;
    if (a < 0) { // no negative latency: refit the slope through the origin
        a = 0;
        b = sxy / sxx;
    }
    if (!(b > 0))
        return fit;
    fit.alpha_s = a;
    fit.bandwidth_bytes_s = 1.0 / b;
    fit.ok = true;
    return fit;
}

BusBandwidthMeasure measureBusBandwidth(const std::vector<Event>& events) {
    static const char* kOps[] = {"all_reduce", "all_gather", "reduce_scatter"};
    struct Cell {
        double seconds = 0, gbs = 0;
        int ranks = 0;
    };
    std::map<std::tuple<int, int, int64_t>, Cell> cells; // (backend, op, size)
    BusBandwidthMeasure m;
    for (const Event& e : events) {
        if (e.kind != EventKind::BusBandwidth || e.unit < 0 || e.unit > 2)
            continue;
        Cell& c = cells[{int(e.backend), int(e.unit), e.bytes}];
        c.seconds += double(e.dur_ns) / 1e9;
        c.gbs += e.value;
        c.ranks += 1;
        m.ranks = e.group_size;
    }
    std::map<std::pair<int, int>, std::pair<std::vector<double>, std::vector<double>>> series;
    for (const auto& [key, c] : cells) {
        const auto [backend, op, size] = key;
        BusBandwidthPoint p;
        p.backend = CommBackend(backend);
        p.op = kOps[op];
        p.size_bytes = size;
        p.seconds = c.seconds / c.ranks;
        p.gbs = c.gbs / c.ranks;
        m.points.push_back(p);
        auto& [wire, times] = series[{backend, op}];
        wire.push_back(ringFactor(p.op, m.ranks) * double(size));
        times.push_back(p.seconds);
    }
    for (const auto& [key, s] : series) {
        const AlphaBetaFit fit = fitAlphaBeta(s.first, s.second);
        if (fit.ok)
            m.models.push_back(BusBandwidthModel{CommBackend(key.first), kOps[key.second], fit});
    }
    return m;
}

} // namespace dt
