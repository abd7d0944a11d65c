#include "dtlab/clock.hpp"

#include <ctime>

namespace dt {
int64_t monotonicNowNs() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
} // namespace dt
