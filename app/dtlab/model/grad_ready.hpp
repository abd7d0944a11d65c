// grad_ready.hpp: when each gradient became ready in one real backward, as a
// rank reported it (GradReady instants, one per parameter: the moment the
// AccumulateGrad post-hook ran that DDP counts toward its bucket and ZeRO/FSDP
// toward its unit).
//
//   1. the backward: the latest whole-backward span (Backward, unit -2) of the
//      rank that has ended by the moment and has readiness reports (DDP with
//      gradient accumulation reports only the microbatch that communicates)
//   2. its GradReady instants: those of the same step inside the span; with
//      microbatches, the span is one microbatch's backward
//   3. per parameter (model order): milliseconds from the span's start; the
//      picture is complete when every parameter has one
#pragma once

#include "model/run_model.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace dt::app {

struct GradReadyPicture {
    int rank = -1;
    int step = -1;                // -1: no backward with readiness reports yet
    int microbatch = -1;          // the span's (-1: the worker's whole-backward span names none)
    double backward_ms = 0.0;     // the whole-backward span's length
    std::vector<double> ready_ms; // per parameter, model order; < 0 = not reported in this backward
    std::vector<int> group_of;    // per parameter: the report's value (DDP bucket, ZeRO/FSDP unit)
    [[nodiscard]] bool complete() const;
};

// `param_count`: the model's trainable parameters. `at_ns`: the views' moment (nullopt = now).
[[nodiscard]] GradReadyPicture gradReadyPicture(const RunModel& model, int rank, std::optional<int64_t> at_ns,
                                                size_t param_count);

} // namespace dt::app
