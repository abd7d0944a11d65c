// clock.hpp: the one clock. CLOCK_MONOTONIC nanoseconds on a host; a rank on
// another host adds the offset it measured against the Session at connect.
#pragma once
#include <cstdint>

namespace dt {
[[nodiscard]] int64_t monotonicNowNs();
} // namespace dt
