// test_fsdp_prefetch.cpp: when FSDP issues a unit's all-gather, read from the
// Work records of one training step of two in-process Gloo ranks (threads).
//
// The worker's UnitTimer is rebuilt here: the model's forward and backward
// marks call the strategy's unit hooks, and the test notes how many events the
// rank had emitted when backward reached the last block. The last block is
// freed after its forward; with backward_prefetch its all-gather is issued
// again from the root's pre-backward (the loss's gradient, as PyTorch FSDP's
// root pre-backward hook prefetches it), so it is already scheduled when the
// block's backward begins; without prefetch it is issued only then.
#include "inprocess_gloo.hpp"

#include "dtlab/scenario.hpp"
#include "model/model.hpp"
#include "strategy/training_strategy.hpp"

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

namespace {

constexpr int kWorld = 2;
constexpr int kLayers = 3;

dt::Scenario fsdpScenario(bool backward_prefetch) {
    dt::Scenario s;
    s.topology.ranks = kWorld;
    s.model.kind = "tiny_gpt";
    s.model.vocab = 64;
    s.model.context = 16;
    s.model.d_model = 32;
    s.model.layers = kLayers;
    s.model.heads = 4;
    s.strategy.kind = dt::StrategyKind::Fsdp;
    s.strategy.backward_prefetch = backward_prefetch;
    s.strategy.forward_prefetch = false;
    return s;
}

// All-gathers of `unit` scheduled among the first `count` events.
int gathersScheduled(const std::vector<dt::Event>& events, size_t count, int unit) {
    int n = 0;
    for (size_t i = 0; i < count && i < events.size(); ++i) {
        const dt::Event& e = events[i];
        n += e.kind == dt::EventKind::AllGather && e.phase == dt::EventPhase::WorkScheduled && e.unit == unit;
    }
    return n;
}

// One step (one microbatch) on each rank; returns, per rank, its events and
// how many of them it had emitted when backward reached the last block.
struct RankRun {
    std::vector<dt::Event> events;
    size_t at_last_block_backward = 0;
    int last_block_backward_marks = 0;
};

std::vector<RankRun> runOneStep(bool backward_prefetch) {
    std::vector<std::unique_ptr<dt::RecordingEventSink>> sinks;
    dttest::GroupOptions options;
    for (int r = 0; r < kWorld; ++r) {
        sinks.push_back(std::make_unique<dt::RecordingEventSink>());
        options.sinks.push_back(sinks.back().get());
    }
    std::vector<RankRun> runs(kWorld);
    dttest::runGlooRanks(
        kWorld, "fsdp-prefetch",
        [&](int rank, std::unique_ptr<dt::Communicator>& comm) {
            const dt::Scenario scenario = fsdpScenario(backward_prefetch);
            auto model = dt::makeModel(scenario.model, 7);
            dt::StrategyContext context;
            context.scenario = &scenario;
            context.model = model.get();
            context.world = comm.get();
            context.sink = sinks[size_t(rank)].get();
            context.rank = rank;
            auto strategy = dt::makeStrategy(context);

            RankRun& run = runs[size_t(rank)];
            dt::UnitTimer timer; // as the worker composes it: the strategy's hooks
            timer.forward = [&](int unit, bool begin) {
                if (begin)
                    strategy->beforeUnitForward(unit);
                else
                    strategy->afterUnitForward(unit);
            };
            timer.backward = [&](int unit, bool begin) {
                if (!begin)
                    return;
                if (unit == kLayers - 1) { // backward reaches the last block
                    run.at_last_block_backward = sinks[size_t(rank)]->events().size();
                    ++run.last_block_backward_marks;
                }
                strategy->beforeUnitBackward(unit);
            };

            const int64_t B = 2, T = scenario.model.context;
            const at::Tensor tokens =
                at::arange(B * T, at::kLong).remainder(scenario.model.vocab).view({B, T});
            const at::Tensor targets = (tokens + 1).remainder(scenario.model.vocab);
            strategy->beginStep(0);
            strategy->beginMicrobatch(0, /*last=*/true);
            at::Tensor loss = model->loss(tokens, targets, timer);
            loss.backward();
            strategy->finishMicrobatch();
            strategy->optimizerStep();
            run.events = sinks[size_t(rank)]->events();
        },
        options);
    return runs;
}

} // namespace

TEST_CASE("FSDP's backward all-gather of the last block is prefetched from the root's pre-backward",
          "[sharding][fsdp]") {
    SECTION("with backward prefetch the last block's all-gather is scheduled before backward reaches it") {
        for (const RankRun& run : runOneStep(/*backward_prefetch=*/true)) {
            REQUIRE(run.last_block_backward_marks == 1);
            // Once for its forward, once more (prefetched) for its backward.
            CHECK(gathersScheduled(run.events, run.at_last_block_backward, kLayers - 1) == 2);
            // and it is gathered twice in the step in all: no third gather when backward reaches it
            CHECK(gathersScheduled(run.events, run.events.size(), kLayers - 1) == 2);
        }
    }

    SECTION("without prefetch it is issued only when backward reaches the block") {
        for (const RankRun& run : runOneStep(/*backward_prefetch=*/false)) {
            REQUIRE(run.last_block_backward_marks == 1);
            CHECK(gathersScheduled(run.events, run.at_last_block_backward, kLayers - 1) == 1);
            CHECK(gathersScheduled(run.events, run.events.size(), kLayers - 1) == 2);
        }
    }
}
