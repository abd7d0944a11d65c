// rank_clock.hpp: what the topology says about a rank's clock, from its
// latest ClockSync (RankLane::clock_sync) and ClockDriftPpm counter.
//   same host   one CLOCK_MONOTONIC: offset 0, exact; the tile says nothing
//   measured    the offset the rank applies and its error bound (half the
//               round trip of the ping-pong in use, plus the drift since):
//               the tile reads "clock ±12 µs", the details the whole story
// Plain strings: headless tests read them (telemetry/clock_sync.hpp has the
// method).
#pragma once

#include "model/run_model.hpp"

#include <string>

namespace dt::app {

struct RankClockText {
    std::string tile;   // "" (same host, or nothing reported yet) or "clock ±12 µs"
    std::string detail; // the details table's "clock" cell
};

[[nodiscard]] RankClockText rankClockText(const RankLane& lane);

// "850 ns", "12 µs", "3.4 ms", "1.25 s": a duration in the unit that reads best.
[[nodiscard]] std::string clockDuration(double ns);

} // namespace dt::app
