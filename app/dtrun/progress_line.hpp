// progress_line.hpp: the one-line live status dtrun prints on a terminal.
#pragma once

#include "dtlab/session.hpp"

#include <string>
#include <vector>

namespace dt {

// "step 12/40  loss 2.314  152 ms/step  ETA 0:04  ranks 4 running"
[[nodiscard]] std::string formatProgressLine(const std::vector<RankProgress>& ranks, int total_steps,
                                             double elapsed_s);

} // namespace dt
