// wall_clock.hpp: seconds of wall-clock time since the app first asked (toasts,
// the narration's flash, the script's waits).
#pragma once

#include <chrono>

namespace dt::app {

inline double wallSeconds() {
    using clock = std::chrono::steady_clock;
    static const clock::time_point t0 = clock::now();
    return std::chrono::duration<double>(clock::now() - t0).count();
}

} // namespace dt::app
