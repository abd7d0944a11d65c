// test_autograd_view.cpp: the Autograd view's buckets and units on the real
// graph of ddp_basics' model (views/view_autograd.hpp): every parameter in one
// group, DDP's launch points in bucket order and each after all of its
// bucket's leaves, and the view drawn headless with a run behind it.
#include "gui/views_fixture.hpp"

#include "dtlab/autograd_graph.hpp"
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
