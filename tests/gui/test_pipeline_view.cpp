// test_pipeline_view.cpp: the pipeline view, headless, from synthetic steps
// generated from the schedules themselves (views_fixture.hpp, SyntheticPipeline).
//
// [SECTION] Empty states
// [SECTION] A 2-stage 1F1B step: spans, bubble, theory
// [SECTION] Send -> Recv matching
// [SECTION] Every schedule: measured = simulated when nothing but compute takes time
// [SECTION] Drawing
#include "gui/views_fixture.hpp"

#include "views/view_pipeline.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace dt;
using namespace dt::app;
using dt::test::HeadlessImGui;
using dt::test::SyntheticPipeline;
using dt::test::SyntheticRun;

// -----------------------------------------------------------------------------
// [SECTION] Empty states
// -----------------------------------------------------------------------------

TEST_CASE("The pipeline view says what it needs before it draws", "[gui][pipeline]") {
    HeadlessImGui imgui;
    PipelineView view;
    RunModel model;
    ViewInputs in;

    SECTION("with no run it shows the no-run empty state") {
        CHECK(pipelineEmpty(in) == PipeEmpty::NoRun);
        CHECK(imgui.frame([&] { view.draw(in); }).balanced);
        CHECK(view.lastEmpty() == PipeEmpty::NoRun);
    }
    SECTION("a ddp run is not a pipeline") {
        SyntheticRun::fill(model, 2, 3);
        in.model = &model;
        CHECK(pipelineEmpty(in) == PipeEmpty::NotPipeline);
        CHECK(imgui.frame([&] { view.draw(in); }).balanced);
        CHECK(view.lastEmpty() == PipeEmpty::NotPipeline);
    }
    SECTION("kind = pipeline with one stage has no bubble to show") {
        model.reset(SyntheticPipeline::scenario(2, 1, 4), 2);
        in.model = &model;
        CHECK(pipelineEmpty(in) == PipeEmpty::NotPipeline);
        CHECK(imgui.frame([&] { view.draw(in); }).balanced);
    }
    SECTION("a pipeline run with no events yet draws the theory in unit time") {
        model.reset(SyntheticPipeline::scenario(2, 2, 4), 2);
        in.model = &model;
        CHECK(pipelineEmpty(in) == PipeEmpty::None);
        CHECK(imgui.frame([&] { view.draw(in); }).balanced);
        CHECK(view.lastEmpty() == PipeEmpty::None);
        CHECK(view.lastStep().blocks.empty());
        CHECK_FALSE(view.lastTheory().measured_durations);
        CHECK(view.lastTheory().formula_bubble == Approx(1.0 / 5.0)); // (p-1)/(m+p-1)
        CHECK(view.lastTheory().slots.size() == 2u * 4u * 2u);        // F and B per stage and microbatch
    }
}

// -----------------------------------------------------------------------------
// [SECTION] A 2-stage 1F1B step: spans, bubble, theory
// -----------------------------------------------------------------------------

TEST_CASE("A 2-stage 1F1B step shows its spans, its bubble and the theory beside it", "[gui][pipeline]") {
    // p = 2, m = 4, F = 1 ms, B = 2 ms, no communication time: the step takes
    // (m + p - 1)(F + B) = 15 ms and each stage is busy m (F + B) = 12 ms.
    const Scenario sc = SyntheticPipeline::scenario(2, 2, 4, "1f1b");
    RunModel model;
    SyntheticPipeline::fill(model, sc, 3);

    SECTION("the step's F and B spans are found per stage") {
        const PipeStep step = measurePipelineStep(model, 0, 1);
        CHECK(step.complete);
        CHECK(step.blocks.size() == 2u * 4u * 2u);
        CHECK(step.t1 - step.t0 == 15 * SyntheticPipeline::kUnit);
        CHECK(step.stage_busy[0] == 12 * SyntheticPipeline::kUnit);
        CHECK(step.stage_busy[1] == 12 * SyntheticPipeline::kUnit);
        for (const PipeBlock& b : step.blocks)
            CHECK((b.chunk == b.stage)); // v = 1: chunk g on stage g
    }
    SECTION("the measured bubble is 1 - busy / window per stage, and their mean") {
        const PipeStep step = measurePipelineStep(model, 0, 2);
        CHECK(step.stage_bubble[0] == Approx(1.0 - 12.0 / 15.0));
        CHECK(step.stage_bubble[1] == Approx(1.0 - 12.0 / 15.0));
        CHECK(step.bubble == Approx(0.2));
    }
    SECTION("the theory runs with the measured mean durations and matches the formula") {
        const PipeMeans means = pipelineMeans(model);
        CHECK(means.forward_ns == Approx(1.0 * SyntheticPipeline::kUnit));
        CHECK(means.backward_ns == Approx(2.0 * SyntheticPipeline::kUnit));
        const PipeTheory theory = pipelineTheory(sc, means);
        REQUIRE(theory.problem.empty());
        CHECK(theory.measured_durations);
        CHECK(theory.makespan == Approx(15.0 * SyntheticPipeline::kUnit));
        CHECK(theory.formula_bubble == Approx(0.2));
        CHECK(theory.simulated_bubble == Approx(0.2));
    }
    SECTION("the latest completed step is the default, the cursor picks another") {
        const PipeStepRange range = pipelineStepRange(model, 0);
        CHECK(range.first == 0);
        CHECK(range.last == 2);
        CHECK(range.latest_complete == 2);
        CHECK(pipelineStepAt(model, 0, SyntheticPipeline::stepStart(1) + 3 * SyntheticPipeline::kUnit) == 1);
        CHECK(pipelineStepAt(model, 0, 0) == 0);
    }
    SECTION("a step still running is not complete and the latest completed one stays the default") {
        std::vector<Event> more;
        SyntheticPipeline::addStep(more, sc, 0, 3);
        more.erase(std::remove_if(more.begin(), more.end(),
                                  [](const Event& e) { return e.rank == 1 && e.kind == EventKind::Step; }),
                   more.end());
        model.ingest(more.data(), more.size());
        CHECK(pipelineStepRange(model, 0).latest_complete == 2);
        CHECK(pipelineStepRange(model, 0).last == 3);
        CHECK_FALSE(measurePipelineStep(model, 0, 3).complete);
    }
}

// -----------------------------------------------------------------------------
// [SECTION] Send -> Recv matching
// -----------------------------------------------------------------------------

TEST_CASE("Messages link a Send's start to the end of the Recv with the same sender, receiver and seq",
          "[gui][pipeline]") {
    const int64_t latency = 250'000; // 0.25 ms on the wire
    const Scenario sc = SyntheticPipeline::scenario(2, 2, 4, "1f1b");
    RunModel model;
    SyntheticPipeline::fill(model, sc, 2, latency);

    SECTION("every activation goes 0 -> 1 and every gradient 1 -> 0, once per microbatch") {
        const PipeStep step = measurePipelineStep(model, 0, 1);
        REQUIRE(step.arrows.size() == 8u);
        CHECK(step.open_sends == 0);
        CHECK(step.mismatched == 0);
        int activations = 0, gradients = 0;
        for (const PipeArrow& a : step.arrows) {
            CHECK(a.t_arrived - a.t_send == latency);
            CHECK(a.same_microbatch);
            if (a.gradient) {
                ++gradients;
                CHECK(a.from_stage == 1);
                CHECK(a.to_stage == 0);
            } else {
                ++activations;
                CHECK(a.from_stage == 0);
                CHECK(a.to_stage == 1);
            }
        }
        CHECK(activations == 4);
        CHECK(gradients == 4);
    }
    SECTION("an activation leaves when its forward ends and arrives before the next stage's forward starts") {
        const PipeStep step = measurePipelineStep(model, 0, 1);
        for (const PipeArrow& a : step.arrows) {
            if (a.gradient)
                continue;
            const auto producer =
                std::find_if(step.blocks.begin(), step.blocks.end(), [&](const PipeBlock& b) {
                    return b.stage == a.from_stage && b.kind == EventKind::Forward &&
                           b.microbatch == a.microbatch;
                });
            const auto consumer =
                std::find_if(step.blocks.begin(), step.blocks.end(), [&](const PipeBlock& b) {
                    return b.stage == a.to_stage && b.kind == EventKind::Forward &&
                           b.microbatch == a.microbatch;
                });
            REQUIRE(producer != step.blocks.end());
            REQUIRE(consumer != step.blocks.end());
            CHECK(a.t_send == producer->t1);
            CHECK(consumer->t0 >=
                  a.t_send); // the synthetic spans come from the simulator, which has no latency
        }
    }
    SECTION("the match is by seq, so a Recv that carries another microbatch is flagged, not re-paired") {
        // Relabel the microbatch of rank 1's first receive of step 1 from rank 0.
        RunModel relabelled;
        std::vector<Event> events = SyntheticPipeline::make(sc, 2, latency);
        const uint64_t first = 1000; // step 1, first message
        for (Event& e : events)
            if (e.rank == 1 && e.kind == EventKind::Recv && e.peer == 0 && e.seq == first)
                e.microbatch = 3;
        relabelled.reset(sc, 2);
        relabelled.ingest(events.data(), events.size());
        const PipeStep step = measurePipelineStep(relabelled, 0, 1);
        CHECK(step.arrows.size() == 8u);
        CHECK(step.mismatched == 1);
        const auto it = std::find_if(step.arrows.begin(), step.arrows.end(),
                                     [&](const PipeArrow& a) { return a.from_stage == 0 && a.seq == first; });
        REQUIRE(it != step.arrows.end());
        CHECK(it->microbatch == 0); // the Send's microbatch; the arrow still ends at seq 1000's Recv
        CHECK_FALSE(it->same_microbatch);
    }
    SECTION("a Recv that has not completed leaves its Send without an arrow, counted as not arrived") {
        RunModel partial;
        std::vector<Event> events = SyntheticPipeline::make(sc, 2, latency);
        events.erase(std::remove_if(events.begin(), events.end(),
                                    [](const Event& e) {
                                        return e.rank == 0 && e.kind == EventKind::Recv && e.step == 1 &&
                                               e.phase == EventPhase::WorkCompleted && e.seq == 1003;
                                    }),
                     events.end());
        partial.reset(sc, 2);
        partial.ingest(events.data(), events.size());
        const PipeStep step = measurePipelineStep(partial, 0, 1);
        CHECK(step.arrows.size() == 7u);
        CHECK(step.open_sends == 1);
    }
    SECTION("with two pipelines side by side, each pipeline's arrows stay inside it") {
        const Scenario two = SyntheticPipeline::scenario(4, 2, 4, "1f1b");
        RunModel dp;
        SyntheticPipeline::fill(dp, two, 2, latency);
        const PipeStep step = measurePipelineStep(dp, 1, 1); // ranks 2 and 3
        CHECK(step.replica == 1);
        CHECK(step.blocks.size() == 16u);
        CHECK(step.arrows.size() == 8u);
        CHECK(step.open_sends == 0);
    }
}

// -----------------------------------------------------------------------------
// [SECTION] Every schedule: measured = simulated when nothing but compute takes time
// -----------------------------------------------------------------------------

TEST_CASE("For every schedule the measured bubble of its own simulated step equals the simulated bubble",
          "[gui][pipeline]") {
    struct Case {
        const char* schedule;
        int stages, microbatches, chunks;
    };
    const Case c = GENERATE(Case{"gpipe", 2, 4, 1}, Case{"1f1b", 4, 8, 1}, Case{"interleaved", 2, 4, 2},
                            Case{"interleaved", 4, 8, 2}, Case{"zb-h1", 4, 8, 1});
    CAPTURE(c.schedule, c.stages, c.microbatches, c.chunks);
    const Scenario sc = SyntheticPipeline::scenario(c.stages, c.stages, c.microbatches, c.schedule, c.chunks);
    RunModel model;
    SyntheticPipeline::fill(model, sc, 2);
    const PipeStep step = measurePipelineStep(model, 0, 1);
    const PipeTheory theory = pipelineTheory(sc, pipelineMeans(model));
    REQUIRE(theory.problem.empty());
    CHECK(theory.measured_durations);
    CHECK(step.complete);
    CHECK(step.bubble == Approx(theory.simulated_bubble).margin(1e-9));
    CHECK(double(step.t1 - step.t0) == Approx(theory.makespan));
    CHECK(step.mismatched == 0);
    CHECK(step.open_sends == 0);
    if (std::string(c.schedule) == "zb-h1") {
        CHECK(spanDepth(EventKind::BackwardInput, 0) == 2); // beside F and B in the lane
        CHECK(theory.durations.backward_input == Approx(1.0 * SyntheticPipeline::kUnit));
        CHECK(theory.durations.backward_weight == Approx(1.0 * SyntheticPipeline::kUnit));
    }
}

// -----------------------------------------------------------------------------
// [SECTION] Drawing
// -----------------------------------------------------------------------------

TEST_CASE("The pipeline view draws the chosen step of the selected rank's pipeline", "[gui][pipeline]") {
    HeadlessImGui imgui;
    PipelineView view;
    const Scenario sc = SyntheticPipeline::scenario(4, 2, 4, "1f1b");
    RunModel model;
    SyntheticPipeline::fill(model, sc, 3, 100'000);
    int selected = -1;
    std::optional<int64_t> cursor;
    ViewInputs in;
    in.model = &model;
    in.now_ns = model.tEnd();
    in.selected_rank = &selected;
    in.cursor_ns = &cursor;

    SECTION("by default the latest completed step of pipeline 0, with the bubble measured") {
        const auto stats = imgui.frame([&] { view.draw(in); });
        CHECK(stats.balanced);
        CHECK(stats.vertices > 0);
        CHECK(view.lastEmpty() == PipeEmpty::None);
        CHECK(view.lastStep().step == 2);
        CHECK(view.lastStep().replica == 0);
        CHECK(view.lastStep().bubble == Approx(0.2)); // the spans come from the simulator: no waiting
        CHECK(view.lastTheory().measured_durations);
        CHECK(view.lastTheory().formula_bubble == Approx(0.2));
    }
    SECTION("the time cursor picks its step, a pin overrides it, Latest follows again") {
        cursor = SyntheticPipeline::stepStart(1) + SyntheticPipeline::kUnit;
        imgui.frame([&] { view.draw(in); });
        CHECK(view.lastStep().step == 1);
        view.pinStep(0);
        imgui.frame([&] { view.draw(in); });
        CHECK(view.lastStep().step == 0);
        view.followLatest();
        cursor.reset();
        imgui.frame([&] { view.draw(in); });
        CHECK(view.lastStep().step == 2);
    }
    SECTION("selecting rank 3 shows the second pipeline") {
        selected = 3;
        CHECK(imgui.frame([&] { view.draw(in); }).balanced);
        CHECK(view.lastStep().replica == 1);
        CHECK(view.lastStep().blocks.size() == 16u);
    }
    SECTION("a frame with nothing new does not measure again") {
        imgui.frame([&] { view.draw(in); });
        const int measured = view.measureCount(), theories = view.theoryCount();
        for (int i = 0; i < 5; ++i)
            CHECK(imgui.frame([&] { view.draw(in); }).balanced);
        CHECK(view.measureCount() == measured);
        CHECK(view.theoryCount() == theories);
        const Event late = SyntheticRun::counter(0, 2, EventKind::MemActivations, 1.0, model.tEnd());
        model.ingest(&late, 1); // new events: the step is measured again, the theory stays
        imgui.frame([&] { view.draw(in); });
        CHECK(view.measureCount() == measured + 1);
        CHECK(view.theoryCount() == theories);
    }
}
