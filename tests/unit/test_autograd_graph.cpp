// test_autograd_graph.cpp: the real autograd graph of the models
// (dtlab/autograd_graph.hpp): every parameter has its AccumulateGrad leaf, the
// measured execution order runs every node once, after the nodes that feed it,
// and the last layers' gradients are ready first (why DDP can all-reduce
// during backward).
#include "dtlab/autograd_graph.hpp"
#include "dtlab/scenario.hpp"

#include <catch2/catch.hpp>

#include <set>

TEST_CASE("The autograd graph of TinyGPT is walked from the loss and run in a measured order", "[autograd]") {
    dt::ModelConfig config; // ddp_basics' TinyGPT
    const dt::AutogradGraph g = dt::autogradGraph(config, 1234);
    REQUIRE_FALSE(g.nodes.empty());

    SECTION("every trainable parameter has exactly one AccumulateGrad leaf, and leaves have no next edges") {
        std::set<int> seen;
        for (const dt::AutogradNode& n : g.nodes)
            if (n.param >= 0) {
                CHECK(n.name == "AccumulateGrad");
                CHECK(n.next.empty());
                CHECK(seen.insert(n.param).second);
            }
        CHECK(int(seen.size()) == int(g.param_names.size()));
        CHECK(g.leaves() == int(g.param_names.size()));
        CHECK(g.param_units.size() == g.param_names.size());
    }
    SECTION(
        "backward runs every node once, the loss's node first, and each node after every node feeding it") {
        REQUIRE(g.execution.size() == g.nodes.size());
        CHECK(g.execution.front() == 0);
        for (size_t k = 0; k < g.nodes.size(); ++k) {
            CHECK(g.nodes[k].order >= 0);
            for (int next : g.nodes[k].next)
                CHECK(g.nodes[size_t(next)].order > g.nodes[k].order);
        }
    }
    SECTION("the head's gradients are ready before the embeddings': the order DDP's buckets follow") {
        int head = -1, embedding = -1;
        for (const dt::AutogradNode& n : g.nodes) {
            if (n.param < 0)
                continue;
            const std::string& name = g.param_names[size_t(n.param)];
            if (name.find("head") != std::string::npos && head < 0)
                head = n.order;
            if (name.find("tok_emb") != std::string::npos)
                embedding = n.order;
        }
        REQUIRE(head >= 0);
        REQUIRE(embedding >= 0);
        CHECK(head < embedding);
    }
}

TEST_CASE("The MLP's autograd graph has one leaf per weight and bias", "[autograd]") {
    dt::ModelConfig config;
    config.kind = "mlp";
    const dt::AutogradGraph g = dt::autogradGraph(config, 7);
    CHECK(g.leaves() == 6); // 784-256-128-10: three Linear layers, weight and bias each
    CHECK(g.execution.size() == g.nodes.size());
}
