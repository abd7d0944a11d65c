// frame_pacer.hpp: how long the main loop may wait before its next frame.
//
// With no GPU, Mesa's llvmpipe draws every frame on the CPU: at 60 frames per
// second a 1600x900 window cost about 1.5 of this machine's 2 cores (measured
// with perf on ddp_basics under Xvfb: 67 % in llvmpipe's JIT shaders, 1 % in
// dtlab's own code), and the ranks it was showing got the rest. So:
//   - for a second after any input (a key, a click, the wheel, the mouse
//     moving, a resize) frames come at up to 60 per second, so hovering and
//     dragging feel immediate;
//   - otherwise at 20 per second, enough for a live timeline, and the wait
//     ends at once when input arrives (glfwWaitEventsTimeout).
#pragma once

#include <chrono>

namespace dt::app {

class FramePacer {
  public:
    using Clock = std::chrono::steady_clock;

    static constexpr std::chrono::microseconds kInteractiveFrame{16600}; // 60 frames per second
    static constexpr std::chrono::microseconds kIdleFrame{50000};        // 20 frames per second
    static constexpr std::chrono::milliseconds kInteractiveFor{1000};    // after the last input

    void noteInput(Clock::time_point now) { last_input_ = now; }

    // True while the user is interacting: input within the last second.
    bool interactive(Clock::time_point now) const {
        return last_input_ != Clock::time_point{} && now - last_input_ < kInteractiveFor;
    }

    // The frame's length: from its start to the start of the next one.
    std::chrono::microseconds frameBudget(Clock::time_point now) const {
        return interactive(now) ? kInteractiveFrame : kIdleFrame;
    }

  private:
    Clock::time_point last_input_{};
};

} // namespace dt::app
