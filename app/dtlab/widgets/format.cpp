// format.cpp: durations, bytes and ticks as text (see format.hpp).
#include "widgets/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dt::app {

void formatDuration(char* out, size_t size, double ns) {
    const double a = std::fabs(ns);
    if (a < 1e3)
        std::snprintf(out, size, "%.0f ns", ns);
    else if (a < 1e6)
        std::snprintf(out, size, "%.3g us", ns / 1e3);
    else if (a < 1e9)
        std::snprintf(out, size, "%.3g ms", ns / 1e6);
    else
        std::snprintf(out, size, "%.3g s", ns / 1e9);
}

void formatBytes(char* out, size_t size, double bytes) {
    const double a = std::fabs(bytes);
    if (a < 1024.0)
        std::snprintf(out, size, "%.0f B", bytes);
    else if (a < 1024.0 * 1024.0)
        std::snprintf(out, size, "%.3g KiB", bytes / 1024.0);
    else if (a < 1024.0 * 1024.0 * 1024.0)
        std::snprintf(out, size, "%.3g MiB", bytes / (1024.0 * 1024.0));
    else
        std::snprintf(out, size, "%.3g GiB", bytes / (1024.0 * 1024.0 * 1024.0));
}

void formatCount(char* out, size_t size, uint64_t value) {
    char digits[32];
    const int n = std::snprintf(digits, sizeof(digits), "%llu", static_cast<unsigned long long>(value));
    size_t o = 0;
    for (int i = 0; i < n && o + 1 < size; ++i) {
        if (i > 0 && (n - i) % 3 == 0 && o + 2 < size)
            out[o++] = ',';
        out[o++] = digits[i];
    }
    if (size > 0)
        out[o < size ? o : size - 1] = '\0';
}

const char* kindLabel(EventKind kind) {
    return eventKindLabel(kind).data(); // the labels are string literals, so NUL-terminated
}

std::string formatDuration(double ns) {
    char buf[32];
    formatDuration(buf, sizeof(buf), ns);
    return buf;
}

std::string formatBytes(double bytes) {
    char buf[32];
    formatBytes(buf, sizeof(buf), bytes);
    return buf;
}

std::string formatBytesExact(int64_t bytes) {
    char buf[40];
    formatCount(buf, sizeof(buf), uint64_t(bytes < 0 ? -bytes : bytes));
    return std::string(bytes < 0 ? "-" : "") + buf + " B";
}

std::string formatCount(uint64_t value) {
    char buf[32];
    formatCount(buf, sizeof(buf), value);
    return buf;
}

double niceStep(double raw) {
    if (!(raw > 0.0))
        return 1.0;
    const double p = std::pow(10.0, std::floor(std::log10(raw)));
    const double m = raw / p;
    const double nice = m <= 1.0 ? 1.0 : m <= 2.0 ? 2.0 : m <= 5.0 ? 5.0 : 10.0;
    return nice * p;
}

// Decimals needed to show multiples of `step` exactly in a unit of size `unit`.
static int decimalsFor(double step, double unit) {
    const double s = step / unit;
    if (s >= 1.0)
        return 0;
    return std::min(9, int(std::ceil(-std::log10(s) - 1e-9)));
}

void formatTimeTick(char* out, size_t size, double ns, double step_ns) {
    // The unit is picked so a label needs at most 3 decimals: a 500 ms step
    // reads "6.5 s", a 50 ms step "6550 ms".
    const double a = std::fabs(step_ns);
    double unit = 1.0;
    const char* name = "ns";
    if (a >= 1e8)
        unit = 1e9, name = "s";
    else if (a >= 1e5)
        unit = 1e6, name = "ms";
    else if (a >= 1e2)
        unit = 1e3, name = "us";
    std::snprintf(out, size, "%.*f %s", decimalsFor(step_ns, unit), ns / unit, name);
}

void formatValueTick(char* out, size_t size, double value, double step) {
    const double a = std::fabs(step);
    if (a >= 1e9)
        std::snprintf(out, size, "%.*fG", decimalsFor(step, 1e9), value / 1e9);
    else if (a >= 1e6)
        std::snprintf(out, size, "%.*fM", decimalsFor(step, 1e6), value / 1e6);
    else if (a >= 1e3)
        std::snprintf(out, size, "%.*fk", decimalsFor(step, 1e3), value / 1e3);
    else
        std::snprintf(out, size, "%.*f", decimalsFor(step, 1.0), value);
}

double bytesUnit(double max_bytes, const char** name) {
    static const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double unit = 1.0;
    int i = 0;
    while (i < 4 && std::fabs(max_bytes) >= unit * 1024.0)
        unit *= 1024.0, ++i;
    if (name)
        *name = names[i];
    return unit;
}

double niceBytesStep(double raw_bytes, double unit) {
    return niceStep(raw_bytes / unit) * unit;
}

void formatBytesTick(char* out, size_t size, double bytes, double step, double unit, const char* unit_name) {
    std::snprintf(out, size, "%.*f %s", decimalsFor(step, unit), bytes / unit, unit_name);
}

} // namespace dt::app
