// test_autograd_view.cpp: the Autograd view's buckets and units on the real
// graph of ddp_basics' model (views/view_autograd.hpp): every parameter in one
// group, DDP's launch points in bucket order and each after all of its
// bucket's leaves, and the view drawn headless with a run behind it; and the
// ranks' own reports of when each gradient was ready (GradReady) in real DDP
// and FSDP runs, against the graph the app builds.
#include "gui/views_fixture.hpp"

#include "dtlab/autograd_graph.hpp"
#include "dtlab/recording.hpp"
#include "integration/process_helpers.hpp"
#include "model/grad_ready.hpp"
#include "views/view_autograd.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace dt::app;

namespace {

dt::Scenario scenarioWith(const char* kind) {
    dt::Scenario s = dt::loadScenarioFile(std::string(DTLAB_SOURCE_DIR) + "/scenarios/ddp_basics.toml");
    REQUIRE(dt::parseStrategyKind(kind, s.strategy.kind));
    return s;
}

} // namespace

TEST_CASE("The Autograd view groups the real graph's leaves into DDP buckets and FSDP units",
          "[gui][autograd]") {
    const dt::Scenario ddp = scenarioWith("ddp");
    const dt::AutogradGraph graph = dt::autogradGraph(ddp.model, ddp.run.seed);
    std::vector<int> leaf_order(graph.param_names.size(), -1);
    for (const dt::AutogradNode& n : graph.nodes)
        if (n.param >= 0)
            leaf_order[size_t(n.param)] = n.order;

    SECTION("DDP: each parameter in one bucket; a bucket launches after its last leaf, in bucket order") {
        const std::vector<AutogradGroup> groups = autogradGroups(graph, ddp);
        REQUIRE(groups.size() >= 2);
        std::set<int> seen;
        int previous = -1;
        for (const AutogradGroup& g : groups) {
            for (int p : g.params) {
                CHECK(seen.insert(p).second);
                CHECK(g.launch_order >= leaf_order[size_t(p)]);
            }
            CHECK(g.launch_order >= previous);
            previous = g.launch_order;
        }
        CHECK(seen.size() == graph.param_names.size());
        // The first bucket is ready well before backward ends: the overlap DDP relies on.
        CHECK(groups.front().launch_order < int(graph.execution.size()) / 2);
    }
    SECTION("FSDP: one group per unit, the root's last, since the embeddings are ready last") {
        const std::vector<AutogradGroup> groups = autogradGroups(graph, scenarioWith("fsdp"));
        REQUIRE(groups.size() == size_t(ddp.model.layers + 1));
        CHECK(groups.front().label == "root");
        int latest = -1;
        for (const AutogradGroup& g : groups)
            latest = std::max(latest, g.launch_order);
        CHECK(groups.front().launch_order == latest);
    }
    SECTION("a pipeline or DiLoCo run has no groups: no hook launches a collective per bucket") {
        CHECK(autogradGroups(graph, scenarioWith("diloco")).empty());
    }
    SECTION("the view draws the graph with a run behind it, balanced") {
        dt::test::HeadlessImGui imgui;
        std::vector<dt::Event> events;
        for (int step = 0; step < 3; ++step)
            for (int rank = 0; rank < 4; ++rank)
                dt::test::SyntheticRun::addStep(events, rank, step, 4);
        RunModel model;
        model.reset(ddp, 4);
        model.ingest(events.data(), events.size());
        AutogradView view;
        ViewInputs inputs;
        inputs.model = &model;
        inputs.now_ns = model.tEnd();
        inputs.autograd_graph = &graph;
        const dt::test::FrameStats stats = imgui.frame([&] { view.draw(inputs); });
        CHECK(stats.balanced);
        CHECK(stats.vertices > 1000); // 260 cells and the lines under them
    }
}

TEST_CASE("Real ranks report when each gradient is ready, in the order of the app's graph",
          "[gui][autograd][recorded]") {
    it::TempDir dir("dtlab-grad-ready");
    for (const char* kind : {"ddp", "fsdp"}) {
        DYNAMIC_SECTION(kind) {
            it::ScenarioSpec spec;
            spec.name = std::string("grad ready ") + kind;
            spec.strategy = kind;
            spec.ranks = 2;
            spec.steps = 3;
            spec.d_model = 32;
            spec.layers = 2;
            spec.heads = 2;
            const std::string scenario = dir.write("run.toml", it::scenarioToml(spec));
            const std::string recording = dir.file("run.dtrec");
            const auto r = it::runDtrun({"run", scenario, "--record", recording, "--quiet"},
                                        it::ProcessOptions{{}, {}, 180.0, ""});
            INFO(it::describe(r));
            REQUIRE(r.exit_code == 0);
            const dt::RecordingLoad load = dt::readRecording(recording);
            REQUIRE(load.complete);
            RunModel model;
            model.reset(load.record.scenario, int(load.record.ranks.size()));
            model.ingest(load.record.events.data(), load.record.events.size());
            const dt::AutogradGraph graph =
                dt::autogradGraph(load.record.scenario.model, load.record.scenario.run.seed);
            const size_t params = graph.param_names.size();

            // One report per parameter per backward on every rank.
            for (int rank = 0; rank < model.world(); ++rank)
                CHECK(model.lane(rank).grad_ready.size() == params * 3);

            const GradReadyPicture ready = gradReadyPicture(model, 1, model.tEnd(), params);
            REQUIRE(ready.complete());
            CHECK(ready.step == 2);
            std::vector<int> measured(params), predicted(params);
            for (size_t p = 0; p < params; ++p) {
                CHECK(ready.ready_ms[p] >= 0.0);
                CHECK(ready.ready_ms[p] <= ready.backward_ms);
                measured[p] = predicted[p] = int(p);
            }
            // The rank's autograd engine ran the leaves in the order the app's graph measured.
            std::vector<int> leaf_order(params, -1);
            for (const dt::AutogradNode& n : graph.nodes)
                if (n.param >= 0)
                    leaf_order[size_t(n.param)] = n.order;
            std::sort(measured.begin(), measured.end(),
                      [&](int a, int b) { return ready.ready_ms[size_t(a)] < ready.ready_ms[size_t(b)]; });
            std::sort(predicted.begin(), predicted.end(),
                      [&](int a, int b) { return leaf_order[size_t(a)] < leaf_order[size_t(b)]; });
            CHECK(measured == predicted);
            if (std::string(kind) == "fsdp")
                for (size_t p = 0; p < params; ++p)
                    CHECK(ready.group_of[p] == graph.param_units[p]); // the unit the report names
            // At an earlier moment, an earlier backward.
            const GradReadyPicture first = gradReadyPicture(model, 1, model.tBegin() + 1, params);
            CHECK(first.step == -1);

            // The view draws the measured row.
            dt::test::HeadlessImGui imgui;
            AutogradView view;
            ViewInputs inputs;
            inputs.model = &model;
            inputs.now_ns = model.tEnd();
            inputs.autograd_graph = &graph;
            const dt::test::FrameStats stats = imgui.frame([&] { view.draw(inputs); });
            CHECK(stats.balanced);
        }
    }
}
