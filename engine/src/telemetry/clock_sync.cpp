// clock_sync.cpp: the clock filter and drift fit (steps in the header).
#include "telemetry/clock_sync.hpp"

#include "dtlab/errors.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace dt {

void ClockSync::addSample(const ClockSample& sample) {
    if (m_same_host || sample.roundTripNs() < 0)
        return;
    m_samples.push_back(sample);
    while (m_samples.size() > 2 && sample.t_recv_ns - m_samples.front().t_recv_ns > kWindowNs)
        m_samples.pop_front();
}

// Weighted least-squares slope of offset against local time, and its standard
// error. A sample's offset is off by up to half its round trip, so each weighs
// 1 / (round trip / 2)^2: a sample delayed in a queue barely tilts the line.
std::optional<ClockSync::Drift> ClockSync::fitDrift() const {
    if (m_samples.size() < 3 || m_samples.back().t_send_ns - m_samples.front().t_send_ns < kMinDriftSpanNs)
        return std::nullopt;
    const int64_t t0 = m_samples.front().t_send_ns, y0 = m_samples.front().offsetNs();
    struct Point {
        double x, y, w;
    };
    std::vector<Point> points; // (local time, offset) relative to the first sample
    double sum_w = 0, mean_x = 0, mean_y = 0;
    for (const auto& s : m_samples) {
        const double half = std::max(1000.0, double(s.roundTripNs()) / 2);
        points.push_back({double(s.t_send_ns - t0), double(s.offsetNs() - y0), 1.0 / (half * half)});
        sum_w += points.back().w;
    }
    for (const Point& p : points)
        mean_x += p.w * p.x / sum_w, mean_y += p.w * p.y / sum_w;
    double sxx = 0, sxy = 0;
    for (const Point& p : points)
        sxx += p.w * (p.x - mean_x) * (p.x - mean_x), sxy += p.w * (p.x - mean_x) * (p.y - mean_y);
    if (sxx <= 0)
        return std::nullopt;
    const double slope = sxy / sxx, intercept = mean_y - slope * mean_x;
    double residuals = 0;
    for (const Point& p : points)
        residuals += p.w * (p.y - intercept - slope * p.x) * (p.y - intercept - slope * p.x);
    Drift d;
    d.offset_slope = slope;
    d.standard_error = std::sqrt(residuals / double(points.size() - 2) / sxx);
    return d;
}

ClockEstimate ClockSync::estimateAt(int64_t local_now_ns) const {
    ClockEstimate e;
    if (m_same_host) {
        e.same_host = true;
        return e;
    }
    if (m_samples.empty())
        return e;
    const std::optional<Drift> fit = fitDrift();
    const double drift = fit ? fit->offset_slope : 0.0; // the offset's change per ns of local time
    // A rank clock that runs fast gains on the Session's: its offset falls.
    e.drift_ppm = fit ? std::optional<double>(-fit->offset_slope * 1e6) : std::nullopt;
    e.bound_growth_ppm = fit ? std::max(0.1, 3.0 * fit->standard_error * 1e6) : kUnmeasuredDriftPpm;
    const double growth = e.bound_growth_ppm * 1e-6;
    // The sample whose bound is smallest now: half its round trip, plus what
    // the clocks may have drifted apart, uncorrected, since it was taken.
    double best_bound = std::numeric_limits<double>::infinity();
    const ClockSample* best = nullptr;
    for (const auto& s : m_samples) {
        const double age = double(std::max<int64_t>(0, local_now_ns - s.t_recv_ns));
        const double bound = double(s.roundTripNs()) / 2 + growth * age;
        if (bound < best_bound) {
            best_bound = bound;
            best = &s;
        }
    }
    const double mid = double(best->t_send_ns + best->t_recv_ns) / 2;
    e.offset_ns = best->offsetNs() + int64_t(std::llround(drift * (double(local_now_ns) - mid)));
    e.error_bound_ns = int64_t(std::ceil(best_bound));
    e.round_trip_ns = best->roundTripNs();
    e.samples = int(m_samples.size());
    return e;
}

int64_t ClockCorrection::sessionTime(int64_t local_ns) const {
    return local_ns + offset_ns + int64_t(std::llround(offset_slope * double(local_ns - at_local_ns)));
}

ClockCorrection ClockSync::correctionAt(int64_t local_now_ns) const {
    const ClockEstimate e = estimateAt(local_now_ns);
    ClockCorrection c;
    c.offset_ns = e.offset_ns;
    c.at_local_ns = local_now_ns;
    c.offset_slope = e.drift_ppm ? -*e.drift_ppm * 1e-6 : 0.0;
    return c;
}

bool BootId::known() const {
    for (uint8_t b : bytes)
        if (b != 0)
            return true;
    return false;
}

bool BootId::operator==(const BootId& other) const {
    return std::memcmp(bytes, other.bytes, sizeof(bytes)) == 0;
}

BootId thisBootId() {
    BootId id;
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string text;
    if (!(in >> text))
        return id;
    int filled = 0;
    for (size_t i = 0; i + 1 < text.size() && filled < 16; ++i) {
        if (text[i] == '-')
            continue;
        const std::string pair = text.substr(i, 2);
        char* end = nullptr;
        const long value = std::strtol(pair.c_str(), &end, 16);
        if (end != pair.c_str() + 2)
            return BootId{};
        id.bytes[filled++] = uint8_t(value);
        ++i;
    }
    return filled == 16 ? id : BootId{};
}

// A simulated drift beyond the bound's assumed worst case before the drift is
// measured (ClockSync::kUnmeasuredDriftPpm) would make the reported bound a lie.
constexpr double kUnmeasuredDriftPpmLimit = ClockSync::kUnmeasuredDriftPpm;

ClockSkew parseClockSkew(const std::string& text) {
    auto bad = [&](const std::string& why) {
        return UsageError("DTLAB_CLOCK_SKEW='" + text + "': " + why +
                          " (expected OFFSET_MS[,DRIFT_PPM], e.g. 250,40)");
    };
    const size_t comma = text.find(',');
    auto number = [&](const std::string& part, double limit, const char* what) {
        size_t used = 0;
        double value = 0;
        try {
            value = std::stod(part, &used);
        } catch (const std::exception&) {
            throw bad(std::string(what) + " is not a number");
        }
        if (used != part.size() || !std::isfinite(value))
            throw bad(std::string(what) + " is not a number");
        if (std::fabs(value) > limit)
            throw bad(std::string(what) + " is outside +-" + std::to_string(int64_t(limit)));
        return value;
    };
    ClockSkew skew;
    skew.offset_ns = int64_t(std::llround(number(text.substr(0, comma), 1e6, "the offset") * 1e6));
    if (comma != std::string::npos)
        skew.drift_ppm = number(text.substr(comma + 1), kUnmeasuredDriftPpmLimit, "the drift");
    return skew;
}

} // namespace dt
