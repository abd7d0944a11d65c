// progress_line.cpp: see the header. Step = the slowest rank's completed step
// (a DDP step is as far as its slowest rank); loss = mean over ranks.
#include "progress_line.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace dt {

std::string formatProgressLine(const std::vector<RankProgress>& ranks, int total_steps, double elapsed_s) {
    int min_step = total_steps;
    double loss = 0, step_ms = 0;
    int counted = 0;
    std::map<std::string, int> states;
    for (const auto& r : ranks) {
        min_step = std::min(min_step, r.step);
        if (r.step >= 0) {
            step_ms = std::max(step_ms, r.last_step_ms);
            if (!std::isnan(r.last_loss)) { // a pipeline's loss is on its last stage only
                loss += r.last_loss;
                ++counted;
            }
        }
        states[std::string(rankStateLabel(r.state))]++;
    }
    const int done = min_step + 1;
    char buf[256];
    std::string out;
    std::snprintf(buf, sizeof(buf), "step %d/%d", std::max(done, 0), total_steps);
    out += buf;
    if (counted > 0) {
        std::snprintf(buf, sizeof(buf), "  loss %.3f  %.0f ms/step", loss / counted, step_ms);
        out += buf;
        if (done > 0 && done < total_steps) {
            const double eta = elapsed_s / done * (total_steps - done);
            std::snprintf(buf, sizeof(buf), "  ETA %d:%02d", int(eta) / 60, int(eta) % 60);
            out += buf;
        }
    }
    out += "  ranks";
    for (const auto& [state, n] : states)
        out += " " + std::to_string(n) + " " + state;
    return out;
}

} // namespace dt
