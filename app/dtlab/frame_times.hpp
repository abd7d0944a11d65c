// frame_times.hpp: what each frame of the main loop cost, for `print_frame_times`.
//
// The main loop (main.cpp, step 6) times two parts of every frame:
//   build   update() (events from the ranks into the RunModel), NewFrame, every
//           view's draw, ImGui::Render: dtlab's own CPU work;
//   render  the OpenGL draw and the swap, only for frames that differ from the
//           one on screen (draw_fingerprint.hpp); with no GPU this is Mesa's
//           llvmpipe rasterizing on the CPU.
// summary() gives the median, p90 and max of each since the last clear(), so a
// script can measure one moment of a run (e.g. 32 live ranks).
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace dt::app {

class FrameTimes {
  public:
    void add(double build_ms, double render_ms, bool drawn) {
        m_build.push_back(build_ms);
        if (drawn)
            m_render.push_back(render_ms);
    }
    void clear() {
        m_build.clear();
        m_render.clear();
    }
    [[nodiscard]] size_t frames() const { return m_build.size(); }

    // "40 frames: build median 3.1 ms, p90 4.0, max 6.2; render and swap (32 drawn) median 21.0 ms, ..."
    [[nodiscard]] std::string summary() const {
        if (m_build.empty())
            return "no frames timed";
        char line[256];
        const Stats b = stats(m_build);
        int n = std::snprintf(line, sizeof(line), "%zu frames: build median %.2f ms, p90 %.2f, max %.2f",
                              m_build.size(), b.median, b.p90, b.max);
        if (!m_render.empty()) {
            const Stats r = stats(m_render);
            std::snprintf(line + n, sizeof(line) - size_t(n),
                          "; render and swap (%zu drawn) median %.2f ms, p90 %.2f, max %.2f", m_render.size(),
                          r.median, r.p90, r.max);
        }
        return line;
    }

  private:
    struct Stats {
        double median, p90, max;
    };
    static Stats stats(std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 9 / 10)], v.back()};
    }
    std::vector<double> m_build, m_render;
};

} // namespace dt::app
