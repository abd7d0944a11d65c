// test_ddp_buckets.cpp: the DDP bucket view, headless, from synthetic events
// (views_fixture.hpp): its empty states, the buckets it derives from the
// scenario (the plan DDP rebuilds after step 0), and where it places each
// bucket's launch within one step's backward; and from a real recorded run,
// that the buckets it draws are the ones the engine all-reduced.
#include "gui/views_fixture.hpp"
#include "integration/process_helpers.hpp"

#include "dtlab/ddp_buckets.hpp"
#include "dtlab/recording.hpp"
#include "views/view_ddp_buckets.hpp"

#include <catch2/catch.hpp>

using namespace dt;
using namespace dt::app;
using dt::test::HeadlessImGui;
using dt::test::SyntheticRun;

namespace {

constexpr int64_t kMs = 1'000'000;

// TinyGPT d_model 128, 4 layers (ddp_basics), 1 MiB buckets: 4 buckets.
Scenario ddpScenario() {
    Scenario s;
    s.name = "ddp buckets";
    s.topology.ranks = 2;
    s.strategy.kind = StrategyKind::Ddp;
    s.strategy.bucket_mb = 1.0;
    return s;
}

// One step of rank 0: backward from 100 to 200 ms, block b's backward over
// [100 + 20 (3 - b) + 10, +20), and bucket b's all-reduce scheduled at `launch[b]`.
void ingestStep(RunModel& model, const std::vector<int64_t>& launch_ms, int64_t end_ms) {
    std::vector<Event> events;
    events.push_back(SyntheticRun::span(0, 0, EventKind::Backward, -2, 100 * kMs, 200 * kMs));
    for (int b = 0; b < 4; ++b) {
        const int64_t t0 = (100 + 10 + 20 * (3 - b)) * kMs;
        events.push_back(SyntheticRun::span(0, 0, EventKind::Backward, b, t0, t0 + 20 * kMs));
    }
    for (size_t b = 0; b < launch_ms.size(); ++b) {
        const int64_t t = launch_ms[b] * kMs;
        events.push_back(
            SyntheticRun::work(0, 0, EventKind::AllReduce, EventPhase::WorkScheduled, b, int(b), t, 2));
        events.push_back(
            SyntheticRun::work(0, 0, EventKind::AllReduce, EventPhase::WorkStarted, b, int(b), t + kMs, 2));
        if (end_ms > 0)
            events.push_back(SyntheticRun::work(0, 0, EventKind::AllReduce, EventPhase::WorkCompleted, b,
                                                int(b), (launch_ms[b] + end_ms) * kMs, 2));
    }
    model.ingest(events.data(), events.size());
}

} // namespace

TEST_CASE("The DDP bucket view says why it is empty", "[gui][ddp]") {
    HeadlessImGui imgui;
    DdpBucketsView view;
    ViewInputs in;
    SECTION("no run open") {
        CHECK(ddpBucketsEmpty(in) == BucketsEmpty::NoRun);
        CHECK(imgui.frame([&] { view.draw(in); }).balanced);
    }
    SECTION("a strategy other than plain ddp has no buckets") {
        for (StrategyKind kind : {StrategyKind::Fsdp, StrategyKind::Pipeline, StrategyKind::TensorParallel}) {
            CAPTURE(strategyKindName(kind));
            Scenario s = ddpScenario();
            s.strategy.kind = kind;
            RunModel model;
            model.reset(s, 2);
            in.model = &model;
            CHECK(ddpBucketsEmpty(in) == BucketsEmpty::NotDdp);
            const auto stats = imgui.frame([&] { view.draw(in); });
            CHECK(stats.balanced);
            CHECK(stats.vertices > 0);
        }
    }
}

TEST_CASE("The DDP bucket view places each bucket's launch in the real backward", "[gui][ddp]") {
    RunModel model;
    model.reset(ddpScenario(), 2);

    SECTION("before any step it draws the layers and the planned buckets") {
        const BucketPicture pic = computeBucketPicture(model, 0, std::nullopt);
        CHECK(pic.step == -1);
        REQUIRE(pic.nodes.size() == 6);
        CHECK(pic.nodes.front() == "head");
        CHECK(pic.nodes[1] == "block 3");
        CHECK(pic.nodes.back() == "embeddings");
        REQUIRE(pic.buckets.size() == dt::ddpBucketPlan(model.scenario()).size());
        REQUIRE(pic.buckets.size() == 4);
        // Bucket 0 starts with the head's parameters (the first gradients backward produces),
        // the last bucket ends with the token embedding.
        CHECK(pic.buckets[0].first_param == "head.weight");
        CHECK(pic.buckets[0].first_node == 0);
        CHECK(pic.buckets.back().last_param == "tok_emb.weight");
        CHECK(pic.buckets.back().last_node == 5);
        for (const BucketRow& row : pic.buckets)
            CHECK_FALSE(row.measured);
    }
    SECTION("a launch inside a block's backward names that block, with its delay and hidden time") {
        // Buckets launched at 135 (block 2), 155 (block 1), 175 (block 0) and 200 (after backward).
        ingestStep(model, {135, 155, 175, 200}, 30);
        const BucketPicture pic = computeBucketPicture(model, 0, std::nullopt);
        REQUIRE(pic.step == 0);
        CHECK(pic.backward_ms == Approx(100.0));
        REQUIRE(pic.buckets.size() == 4);
        CHECK(pic.buckets[0].measured);
        CHECK(pic.buckets[0].launched_ms == Approx(35.0));
        CHECK(pic.nodes[size_t(pic.buckets[0].launched_during_node)] == "block 2");
        CHECK(pic.buckets[0].allreduce_ms == Approx(30.0));
        CHECK(pic.buckets[0].hidden_ms == Approx(30.0)); // done at 165, before backward ends at 200
        CHECK(pic.nodes[size_t(pic.buckets[1].launched_during_node)] == "block 1");
        CHECK(pic.nodes[size_t(pic.buckets[2].launched_during_node)] == "block 0");
        CHECK(pic.buckets[2].hidden_ms == Approx(25.0));  // 175 .. 200 of 175 .. 205
        CHECK(pic.buckets[3].launched_during_node == -1); // at the end of backward
        CHECK(pic.buckets[3].hidden_ms == Approx(0.0));
    }
    SECTION("a step whose all-reduces have not all completed is not shown") {
        ingestStep(model, {135, 155, 175, 200}, 0);
        CHECK(computeBucketPicture(model, 0, std::nullopt).step == -1);
    }
    SECTION("it draws balanced with a measured step") {
        ingestStep(model, {135, 155, 175, 200}, 30);
        HeadlessImGui imgui;
        DdpBucketsView view;
        ViewInputs in;
        in.model = &model;
        const auto stats = imgui.frame([&] { view.draw(in); });
        CHECK(stats.balanced);
        CHECK(view.lastPicture().step == 0);
    }
}

// The view from a real run: `dtrun run --record` of 2-rank DDP on ddp_basics' TinyGPT, the recording
// fed to the same RunModel the app uses. Every predicted bucket is matched by an all-reduce of exactly
// its bytes in a step after step 0, and step 0 all-reduced every gradient as one bucket.
TEST_CASE("The DDP bucket view's buckets are the ones a real DDP run all-reduced", "[gui][ddp]") {
    it::TempDir dir("dtlab-buckets");
    it::ScenarioSpec spec;
    spec.name = "buckets from a real run";
    spec.ranks = 2;
    spec.steps = 4;
    spec.batch_per_rank = 2;
    const std::string scenario = dir.write("ddp.toml", it::scenarioToml(spec));
    const std::string recording = dir.file("run.dtrec");
    const auto r = it::runDtrun({"run", scenario, "--record", recording, "--quiet"}, {{}, {}, 120.0, ""});
    INFO(it::describe(r));
    REQUIRE(r.exit_code == 0);
    const dt::RecordingLoad load = dt::readRecording(recording);
    REQUIRE(load.complete);

    RunModel model;
    model.reset(load.record.scenario, int(load.record.ranks.size()));
    model.ingest(load.record.events.data(), load.record.events.size());
    const std::vector<BucketPlan> plan = ddpBucketPlan(model.scenario());
    REQUIRE(plan.size() == 4);
    int64_t total = 0;
    for (const BucketPlan& b : plan)
        total += b.numel * 4;

    for (int rank = 0; rank < 2; ++rank) {
        CAPTURE(rank);
        const BucketPicture pic = computeBucketPicture(model, rank, std::nullopt);
        REQUIRE(pic.step >= 1);
        REQUIRE(pic.buckets.size() == plan.size());
        for (const BucketRow& row : pic.buckets) {
            CAPTURE(row.bucket);
            CHECK(row.measured);
            CHECK(row.measured_bytes == row.bytes);
            CHECK(row.allreduce_ms > 0.0);
        }
        // Step 0: one all-reduce of every gradient.
        std::vector<int64_t> step0;
        for (const SpanRecord& c : model.lane(rank).comm)
            if (c.kind == EventKind::AllReduce && c.step == 0)
                step0.push_back(c.bytes);
        CHECK(step0 == std::vector<int64_t>{total});
    }
}
