// pipeline_schedule.hpp: pipeline schedules as data (no LibTorch), their
// validator, a unit-time simulator that draws the predicted picture, and the
// bubble formulas of the papers.
//
// The model's blocks are cut into C = p * v contiguous chunks (p = stages =
// pipeline ranks, v = chunks per rank). Chunk g runs on pipeline rank g % p
// (so with v = 2 on 4 ranks, rank 0 holds chunks 0 and 4: the interleaved
// layout of Megatron-LM). A microbatch's activation flows chunk 0 -> C-1; its
// gradient flows back C-1 -> 0.
//
// A schedule is, for every pipeline rank, an ordered list of actions:
//   F(mb, g)      forward of microbatch mb through chunk g
//   B(mb, g)      backward: input and weight gradients (gpipe, 1f1b, interleaved)
//   Bi(mb, g)     zero bubble: input gradient only (what the previous chunk waits for)
//   W(mb, g)      zero bubble: weight gradient, scheduled later to fill bubbles
//   SendAct / RecvAct (mb, g, peer): chunk g's output to / chunk g's input from a rank
//   SendGrad / RecvGrad (mb, g, peer): chunk g's input gradient to / its output gradient from
//   Optimizer     the step, once, last
// Sends are asynchronous (posted, waited at the end of the step); a receive
// blocks until its data arrives. Bytes per send: B/m x T x C x 4 (one
// microbatch's activation, or its gradient, of shape (B/m, T, C)).
//
// Generators (p stages, m microbatches):
//   gpipe        all forwards, then all backwards (holds m microbatches' activations)
//   1f1b         p-1-r warm-up forwards on rank r, then one forward / one backward,
//                then the remaining backwards (holds at most p - r microbatches)
//   interleaved  1f1b over v chunks per rank in Megatron's order (m a multiple of p)
//   zb-h1        1f1b's order of F and Bi (the backward split in Bi and W); each W is
//                placed greedily, planned by running the ranks in time order with
//                F = Bi = W = one time unit (the run keeps the planned order whatever
//                the real times): a rank runs its next F or Bi when that one's input
//                has arrived, and otherwise its oldest pending W (in microbatch
//                order) to fill the wait. A forward also waits (filled with a W if
//                one is pending) while p microbatches hold activations on the rank
//                (F run, W not yet): at most p, 1f1b's peak on its first stage.
//                Ws left at the end run back to back before the optimizer. A Bi's
//                input gradient is sent at once, before any W.
// Bubble fraction of the wall time of one step, t_f/t_b/t_w per chunk:
//   gpipe, 1f1b   (p-1) / (m + p - 1)
//   interleaved   (p-1) / (v m + p - 1)                (Megatron: bubble / ideal = (p-1) / (v m))
//   zb-h1         (p-1)(t_f + t_b - t_w) / (m (t_f + t_b + t_w) + (p-1)(t_f + t_b - t_w))
//                 (Zero Bubble, Table 2; t_b = input gradient only)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dt {

struct Scenario;

enum class PipeOp : uint8_t {
    Forward,
    Backward,
    BackwardInput,
    BackwardWeight,
    SendAct,
    RecvAct,
    SendGrad,
    RecvGrad,
    Optimizer
};

struct PipeAction {
    PipeOp op = PipeOp::Forward;
    int microbatch = -1;
    int chunk = -1; // global chunk id g
    int peer = -1;  // pipeline rank, for sends and receives
};

struct PipelineShape {
    int stages = 1;          // p: pipeline ranks
    int microbatches = 1;    // m
    int chunks_per_rank = 1; // v
    [[nodiscard]] int chunks() const { return stages * chunks_per_rank; }
    [[nodiscard]] int rankOfChunk(int g) const { return g % stages; }
};

using PipelineSchedule = std::vector<std::vector<PipeAction>>; // [pipeline rank][step in order]

// One schedule: what it is called in scenarios, what it needs and what it
// gives. Each is defined in its own file (engine/src/core/schedules/NAME.cpp)
// and listed once (schedules.def); everything that depends on the schedule
// (the validator, the pipeline strategy, the measurements, the views) asks its
// spec rather than comparing its name.
struct PipelineScheduleSpec {
    const char* name;           // as in scenarios: "1f1b"
    const char* summary;        // one line: what it does
    bool splits_backward;       // B split in Bi (input gradient) and W (weight gradient): zero bubble
    bool several_chunks;        // v >= 2 model chunks per rank (interleaved); else exactly 1
    const char* bubble_formula; // the paper's bubble fraction, as text
    PipelineSchedule (*generate)(const PipelineShape& shape);
    double (*bubble)(const PipelineShape& shape, double t_f, double t_b, double t_w);
    std::string (*shape_problem)(const PipelineShape& shape); // further needs ("" = fine); may be null
};
[[nodiscard]] const std::vector<const PipelineScheduleSpec*>& pipelineSchedules(); // in schedules.def order
[[nodiscard]] const PipelineScheduleSpec* findPipelineSchedule(const std::string& name); // null: unknown
[[nodiscard]] const PipelineScheduleSpec& pipelineSchedule(const std::string& name);     // throws UsageError
// The accepted schedule names, in list order: "gpipe", "1f1b", "interleaved", "zb-h1".
[[nodiscard]] const std::vector<std::string>& pipelineScheduleNames();
[[nodiscard]] std::string pipelineScheduleNameList(); // "gpipe, 1f1b, interleaved or zb-h1"
// The shape a scenario's pipeline runs: p = [topology] stages, m = [strategy]
// microbatches, v = chunks_per_rank (each at least 1).
[[nodiscard]] PipelineShape pipelineShapeOf(const Scenario& scenario);
// True when the scenario's schedule splits the backward in Bi and W (zb-h1).
[[nodiscard]] bool splitsBackward(const Scenario& scenario);
// Throws UsageError for an unknown name or a shape the schedule cannot run
// (interleaved: v >= 2 and m a multiple of p; the others: v = 1).
[[nodiscard]] PipelineSchedule makePipelineSchedule(const std::string& name, const PipelineShape& shape);
// "" when `name` can run `shape`, else why not.
[[nodiscard]] std::string pipelineShapeProblem(const std::string& name, const PipelineShape& shape);

// Why a schedule cannot run: the rank, the action (as text) and the reason.
struct ScheduleProblem {
    int rank = -1;
    int index = -1;
    std::string action;
    std::string reason;
    [[nodiscard]] std::string message() const;
};
// Every chunk's F and B (or Bi and W) exactly once per microbatch on the rank
// that owns it, in dependency order; every send matched by the receive of the
// same (kind, microbatch, chunk) in the same order on the peer; no deadlock
// (checked by executing it: receives block, sends do not); the optimizer last.
[[nodiscard]] std::optional<ScheduleProblem> validatePipelineSchedule(const PipelineSchedule& schedule,
                                                                      const PipelineShape& shape);

[[nodiscard]] std::string describeAction(const PipeAction& action); // "F(mb 3, chunk 1)"

// The predicted picture: the schedule executed with fixed durations (theory).
struct PredictedSlot {
    int rank = 0;
    PipeAction action;
    double start = 0.0;
    double end = 0.0;
};
struct PipeDurations {
    double forward = 1.0, backward = 2.0, backward_input = 1.0, backward_weight = 1.0;
};
[[nodiscard]] std::vector<PredictedSlot> simulatePipelineSchedule(const PipelineSchedule& schedule,
                                                                  const PipelineShape& shape,
                                                                  const PipeDurations& durations = {});
// Bubble fraction of the simulated step: 1 - busy / (p x makespan).
[[nodiscard]] double simulatedBubble(const std::vector<PredictedSlot>& slots, int stages);

// The papers' bubble fraction (see the header comment); t_* per chunk.
[[nodiscard]] double bubbleTheory(const std::string& name, const PipelineShape& shape, double t_f = 1.0,
                                  double t_b = 1.0, double t_w = 1.0);

} // namespace dt
