// pipeline_measure.hpp: the bubble of a real pipeline run, measured from its
// compute spans (no LibTorch), beside the formula and the simulated schedule.
//
// Per step (the first, a warm-up, is left out when there are more) and per
// pipeline (world rank = replica * p + stage):
//   window      = earliest start .. latest end of the step's F / B / Bi / W spans
//                 over the pipeline's stages
//   bubble(r)   = 1 - busy(r) / window, busy = the sum of rank r's F/B/Bi/W spans
// The run's bubble is the mean over steps, pipelines and stages. Mean span
// durations (per chunk) feed the theory: bubbleTheory(schedule, shape, t_f, t_b, t_w)
// and the simulated schedule with those durations.
#pragma once

#include "dtlab/events.hpp"
#include "dtlab/scenario.hpp"

#include <vector>

namespace dt {

struct PipelineMeasure {
    bool valid = false; // a pipeline run with at least one complete step
    int steps_measured = 0;
    double bubble = 0.0;                 // mean over steps, pipelines and stages
    std::vector<double> bubble_per_rank; // index = world rank
    double t_forward_ms = 0.0;           // mean span per (microbatch, chunk)
    double t_backward_ms = 0.0;          // full B, or Bi for zero bubble
    double t_weight_ms = 0.0;            // W (zero bubble), else 0
    double bubble_theory = 0.0;          // the paper's formula with the measured times
    double bubble_simulated = 0.0;       // the schedule executed with the measured times
};

[[nodiscard]] PipelineMeasure measurePipeline(const std::vector<Event>& events, const Scenario& scenario);

} // namespace dt
