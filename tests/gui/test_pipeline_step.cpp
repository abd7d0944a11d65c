// test_pipeline_step.cpp: model/pipeline_step.hpp without ImGui, on a pipeline
// step placed by hand: 2 stages x 2 replicas (world 4), 2 microbatches, GPipe
// order. Times in ms after the step's start:
//
//   stage 0 (rank 0)  F0 [0, 10]   F1 [10, 20]                B1 [54, 74]  B0 [74, 94]
//   stage 1 (rank 1)      F0 [12, 22]  F1 [22, 30]  B1 [32, 52]  B0 [52, 72]
//
// Messages: activations 0 -> 1 sent at 10 and 20, arrived at 12 and 22; the
// gradient of microbatch 1 sent 1 -> 0 at 52, arrived at 54; the gradient of
// microbatch 0 sent at 72 never arrives (its Recv is still open). Both stages
// report their Step span for step 0; in step 1 only stage 0 has run two
// forwards (12 ms and 14 ms). Every expected value below is worked out by hand
// from this table, not by the code under test.
#include "gui/views_fixture.hpp"

#include "model/pipeline_step.hpp"

#include <catch2/catch.hpp>

using namespace dt;
using namespace dt::app;
using dt::test::SyntheticRun;

namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kT0 = 1000 * kMs;

Scenario pipelineScenario(int ranks) {
    Scenario s;
    s.topology.ranks = ranks;
    s.topology.stages = 2;
    s.strategy.kind = StrategyKind::Pipeline;
    s.strategy.schedule = "gpipe";
    s.strategy.microbatches = 2;
    s.model.layers = 2;
    return s;
}

Event compute(int rank, int step, EventKind kind, int microbatch, int chunk, int64_t t0_ms, int64_t t1_ms) {
    Event e = SyntheticRun::span(rank, step, kind, chunk, kT0 + t0_ms * kMs, kT0 + t1_ms * kMs);
    e.microbatch = int16_t(microbatch);
    return e;
}

// A Send from `rank` to `peer` (seq-th in that direction) posted at t_ms, or
// its Recv on `rank` from `peer`, completed at t_ms (< 0: still open).
void message(std::vector<Event>& out, int rank, int peer, EventKind kind, uint64_t seq, int microbatch,
             int chunk, int64_t posted_ms, int64_t done_ms) {
    auto work = [&](EventPhase phase, int64_t t_ms) {
        Event e = SyntheticRun::work(rank, 0, kind, phase, seq, chunk, kT0 + t_ms * kMs, 2, 4096, peer);
        e.microbatch = int16_t(microbatch);
        out.push_back(e);
    };
    work(EventPhase::WorkScheduled, posted_ms);
    work(EventPhase::WorkStarted, posted_ms);
    if (done_ms >= 0)
        work(EventPhase::WorkCompleted, done_ms);
}

std::vector<Event> handPlacedStep() {
    std::vector<Event> ev;
    // stage 0 (rank 0, chunk 0)
    ev.push_back(compute(0, 0, EventKind::Forward, 0, 0, 0, 10));
    ev.push_back(compute(0, 0, EventKind::Forward, 1, 0, 10, 20));
    ev.push_back(compute(0, 0, EventKind::Backward, 1, 0, 54, 74));
    ev.push_back(compute(0, 0, EventKind::Backward, 0, 0, 74, 94));
    // stage 1 (rank 1, chunk 1)
    ev.push_back(compute(1, 0, EventKind::Forward, 0, 1, 12, 22));
    ev.push_back(compute(1, 0, EventKind::Forward, 1, 1, 22, 30));
    ev.push_back(compute(1, 0, EventKind::Backward, 1, 1, 32, 52));
    ev.push_back(compute(1, 0, EventKind::Backward, 0, 1, 52, 72));
    // activations 0 -> 1, gradients 1 -> 0
    message(ev, 0, 1, EventKind::Send, 0, 0, 0, 10, 10);
    message(ev, 1, 0, EventKind::Recv, 0, 0, 1, 0, 12);
    message(ev, 0, 1, EventKind::Send, 1, 1, 0, 20, 20);
    message(ev, 1, 0, EventKind::Recv, 1, 1, 1, 0, 22);
    message(ev, 1, 0, EventKind::Send, 0, 1, 1, 52, 52);
    message(ev, 0, 1, EventKind::Recv, 0, 1, 0, 0, 54);
    message(ev, 1, 0, EventKind::Send, 1, 0, 1, 72, 72);
    message(ev, 0, 1, EventKind::Recv, 1, 0, 0, 0, -1); // never arrives
    for (int rank : {0, 1})
        ev.push_back(SyntheticRun::span(rank, 0, EventKind::Step, -1, kT0, kT0 + 95 * kMs));
    // step 1: two forwards on stage 0, nothing else yet
    ev.push_back(compute(0, 1, EventKind::Forward, 0, 0, 100, 112));
    ev.push_back(compute(0, 1, EventKind::Forward, 1, 0, 112, 126));
    return ev;
}

RunModel handPlacedModel(int world = 4, bool with_step_1 = true) {
    RunModel model;
    model.reset(pipelineScenario(world), world);
    std::vector<Event> events = handPlacedStep();
    if (!with_step_1)
        events.resize(events.size() - 2);
    model.ingest(events.data(), events.size());
    return model;
}

} // namespace

TEST_CASE("A pipeline step is measured from its spans and messages", "[gui][pipeline][model]") {
    const RunModel model = handPlacedModel();
    const PipeStep step = measurePipelineStep(model, 0, 0);

    SECTION("the window runs from the first forward to the last backward over both stages") {
        CHECK(step.replica == 0);
        CHECK(step.stages == 2);
        CHECK(step.t0 == kT0);
        CHECK(step.t1 == kT0 + 94 * kMs);
        CHECK(step.blocks.size() == 8);
    }
    SECTION("each stage's bubble is its idle share of the window, and the bubble is their mean") {
        const double window = 94.0;
        const double busy0 = 10 + 10 + 20 + 20, busy1 = 10 + 8 + 20 + 20;
        REQUIRE(step.stage_busy.size() == 2);
        CHECK(step.stage_busy[0] == int64_t(busy0) * kMs);
        CHECK(step.stage_busy[1] == int64_t(busy1) * kMs);
        CHECK(step.stage_bubble[0] == Approx(1.0 - busy0 / window));
        CHECK(step.stage_bubble[1] == Approx(1.0 - busy1 / window));
        CHECK(step.bubble == Approx(((1.0 - busy0 / window) + (1.0 - busy1 / window)) / 2.0));
    }
    SECTION("each Send is matched to the Recv with the same sender, receiver and sequence number") {
        REQUIRE(step.arrows.size() == 3);
        const PipeArrow& first = step.arrows[0];
        CHECK(first.from_stage == 0);
        CHECK(first.to_stage == 1);
        CHECK(first.t_send == kT0 + 10 * kMs);
        CHECK(first.t_arrived == kT0 + 12 * kMs);
        CHECK_FALSE(first.gradient);
        const PipeArrow& back = step.arrows[2];
        CHECK(back.from_stage == 1);
        CHECK(back.to_stage == 0);
        CHECK(back.t_send == kT0 + 52 * kMs);
        CHECK(back.t_arrived == kT0 + 54 * kMs);
        CHECK(back.gradient);
        CHECK(back.microbatch == 1);
        CHECK(step.mismatched == 0);
    }
    SECTION("a Send whose Recv has not completed is counted as not arrived") {
        CHECK(step.open_sends == 1);
    }
    SECTION("a step is complete only when every stage reported its Step span") {
        CHECK(step.complete);
        CHECK_FALSE(measurePipelineStep(model, 0, 1).complete);
    }
    SECTION("a replica with no spans yet measures an empty, incomplete step") {
        const PipeStep other = measurePipelineStep(model, 1, 0);
        CHECK(other.blocks.empty());
        CHECK_FALSE(other.complete);
        CHECK(other.bubble == -1.0);
    }
}

TEST_CASE("The pipeline's step range and mean durations come from the spans", "[gui][pipeline][model]") {
    SECTION("the range spans the steps with spans; the latest complete step is the last every stage ended") {
        const PipeStepRange range = pipelineStepRange(handPlacedModel(), 0);
        CHECK(range.first == 0);
        CHECK(range.last == 1);
        CHECK(range.latest_complete == 0);
    }
    SECTION("the mean durations are taken over step 0 while no later step has spans") {
        const PipeMeans means = pipelineMeans(handPlacedModel(4, false));
        CHECK(means.forward_ns == Approx((10.0 + 10.0 + 10.0 + 8.0) / 4.0 * double(kMs)));
        CHECK(means.backward_ns == Approx(20.0 * double(kMs)));
        CHECK(means.spans == 8);
    }
    SECTION("once a later step has spans, step 0 (a warm-up) is left out") {
        const PipeMeans means = pipelineMeans(handPlacedModel());
        CHECK(means.forward_ns == Approx((12.0 + 14.0) / 2.0 * double(kMs)));
        CHECK(means.backward_ns == 0.0);
        CHECK(means.spans == 2);
    }
}

TEST_CASE("The pipeline and the step a view shows follow the selection, the pin and the cursor",
          "[gui][pipeline][model]") {
    const RunModel model = handPlacedModel();

    SECTION("the pipeline is the selected rank's replica (rank / stages), else the first") {
        CHECK(pipelineReplicaOf(model, -1) == 0);
        CHECK(pipelineReplicaOf(model, 1) == 0);
        CHECK(pipelineReplicaOf(model, 2) == 1);
        CHECK(pipelineReplicaOf(model, 3) == 1);
    }
    SECTION("a replica whose stages are not all in the world falls back to the first") {
        const RunModel partial = handPlacedModel(3);
        CHECK(pipelineReplicaOf(partial, 2) == 0);
    }
    SECTION("a pinned step wins over the cursor and the latest step") {
        const PipeStepRange range = pipelineStepRange(model, 0);
        CHECK(pipelineShownStep(model, 0, range, 7, kT0) == 7);
    }
    SECTION("without a pin, the step at the time cursor is shown") {
        const PipeStepRange range = pipelineStepRange(model, 0);
        CHECK(pipelineShownStep(model, 0, range, std::nullopt, kT0 + 50 * kMs) == 0);
        CHECK(pipelineShownStep(model, 0, range, std::nullopt, kT0 + 113 * kMs) == 1);
    }
    SECTION("without a pin or a cursor, the latest complete step, else the last one in progress") {
        CHECK(pipelineShownStep(model, 0, pipelineStepRange(model, 0), std::nullopt, std::nullopt) == 0);
        PipeStepRange none_complete;
        none_complete.first = 0;
        none_complete.last = 1;
        CHECK(pipelineShownStep(model, 0, none_complete, std::nullopt, std::nullopt) == 1);
    }
}
