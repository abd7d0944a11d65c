// diloco_theory.hpp: what DiLoCo and Streaming DiLoCo send, from the scenario
// alone (the formulas of diloco_strategy.cpp; tests compare the measured bytes
// with these, the GUI draws them beside the measurement, labelled theory).
//
// P_f = parameters of fragment f (diloco_schedule.hpp), N = ranks (replicas).
//   one sync of fragment f, bytes sent per rank:
//     fp32             2 (N-1)/N x 4 P_f          (ring all-reduce)
//     bf16/int8/int4   (N-1) x encoded(P_f)       (all-gather of the codes)
//   DDP, per step:     2 (N-1)/N x 4 P            (sync_every_microbatch: x M)
// Classic DiLoCo (one fp32 fragment) sends DDP's per-step bytes once every H
// steps; streaming's peak per sync is about 1/F of that, times the width.
#pragma once

#include "dtlab/scenario.hpp"

#include <cstdint>
#include <vector>

namespace dt {

struct DilocoTheory {
    std::vector<int64_t> fragment_numel; // parameters per fragment
    std::vector<int64_t> bytes_per_sync; // per fragment: bytes one rank sends in its sync
    int64_t peak_bytes_per_sync = 0;     // the largest of those
    int64_t bytes_per_period = 0;        // every fragment once: H steps
    int64_t ddp_bytes_per_step = 0;      // DDP on the same model and ranks
    [[nodiscard]] double averageBytesPerStep(int inner_steps) const {
        return double(bytes_per_period) / inner_steps;
    }
};

[[nodiscard]] DilocoTheory dilocoTheory(const Scenario& scenario);

} // namespace dt
