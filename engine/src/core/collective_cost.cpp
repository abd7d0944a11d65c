// collective_cost.cpp: ring factors, bus bandwidth and the alpha-beta fit
// (formulas in collective_cost.hpp).
//
// The fit weights each point by 1 / t^2 (relative error), so the small
// messages, whose times are microseconds, pin alpha and the large ones pin B;
// an unweighted fit would let the 16 MiB point decide everything.
#include "dtlab/collective_cost.hpp"

#include <algorithm>
#include <cmath>

namespace dt {

double ringFactor(const std::string& op, int ranks) {
    if (ranks < 2) return 0.0;
    const double share = double(ranks - 1) / ranks;
    return op == "all_reduce" ? 2.0 * share : share;
}

double busBandwidthGBs(const std::string& op, double size_bytes, int ranks, double seconds) {
    if (seconds <= 0) return 0.0;
    return ringFactor(op, ranks) * size_bytes / seconds / 1e9;
}

AlphaBetaFit fitAlphaBeta(const std::vector<double>& wire_bytes, const std::vector<double>& seconds) {
    AlphaBetaFit fit;
    const size_t n = std::min(wire_bytes.size(), seconds.size());
    // Weighted least squares of t = a + b x (b = 1 / B), weights 1 / t^2.
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; ++i) {
        if (seconds[i] <= 0) continue;
        const double w = 1.0 / (seconds[i] * seconds[i]);
        const double x = wire_bytes[i], y = seconds[i];
        sw += w;
        sx += w * x;
        sy += w * y;
        sxx += w * x * x;
        sxy += w * x * y;
    }
    const double det = sw * sxx - sx * sx;
    if (sw == 0 || std::abs(det) <= 1e-30 * sw * sxx) return fit;
    double b = (sw * sxy - sx * sy) / det;
    double a = (sy - b * sx) / sw;
    if (a < 0) { // no negative latency: refit the slope through the origin
        a = 0;
        b = sxy / sxx;
    }
    if (!(b > 0)) return fit;
    fit.alpha_s = a;
    fit.bandwidth_bytes_s = 1.0 / b;
    fit.ok = true;
    return fit;
}

} // namespace dt
