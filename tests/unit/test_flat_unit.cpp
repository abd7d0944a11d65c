// test_flat_unit.cpp: the pieces of FSDP below the collectives: unit layouts
// that match the real models, flat units that pad, view and free, and
// activation checkpointing that recomputes without changing a gradient.
#include "sharding/flat_unit.hpp"

#include "dtlab/scenario.hpp"
#include "dtlab/sharding_theory.hpp"
#include "model/model.hpp"

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <map>

namespace {

dt::ModelConfig gpt(int layers = 3) {
    dt::ModelConfig c;
    c.kind = "tiny_gpt";
    c.vocab = 128;
    c.context = 16;
    c.d_model = 32;
    c.layers = layers;
    c.heads = 4;
    return c;
}

} // namespace

TEST_CASE("unitLayout counts what the real models hold per unit", "[sharding]") {
    dt::ModelConfig mlp;
    mlp.kind = "mlp";
    mlp.hidden = {64, 32};
    for (const dt::ModelConfig& config : {gpt(), mlp}) {
        CAPTURE(config.kind);
        auto model = dt::makeModel(config, 1);
        const auto params = model->trainableParameters();
        const auto units = model->parameterUnits();
        REQUIRE(units.size() == params.size());
        std::map<int, int64_t> real;
        for (size_t i = 0; i < params.size(); ++i)
            real[units[i]] += params[i].tensor.numel();
        const dt::UnitLayout layout = dt::unitLayout(config);
        CHECK(real.size() == layout.unit_numel.size() + (layout.root_numel > 0 ? 1 : 0));
        CHECK(real[-1] == layout.root_numel);
        for (size_t u = 0; u < layout.unit_numel.size(); ++u)
            CHECK(real[int(u)] == layout.unit_numel[u]);
    }
}

TEST_CASE("Flat units pad, view the parameters and free their bytes", "[sharding]") {
    auto model = dt::makeModel(gpt(2), 3);
    auto params = model->trainableParameters();
    std::vector<at::Tensor> before;
    for (const auto& p : params)
        before.push_back(p.tensor.detach().clone());
    const int shards = 3, rank = 1;
    auto units = dt::buildFlatUnits(params, model->parameterUnits(), shards, rank);

    SECTION("blocks come first in forward order, the root unit last") {
        REQUIRE(units.size() == 3);
        CHECK(units[0].id == 0);
        CHECK(units[1].id == 1);
        CHECK(units[2].id == -1);
    }
    SECTION("each unit is padded to a multiple of the shard count and split in equal shards") {
        for (const auto& u : units) {
            CHECK(u.padded % shards == 0);
            CHECK(u.padded - u.numel < shards);
            CHECK(u.shard_numel * shards == u.padded);
            CHECK(u.shard.numel() == u.shard_numel);
            CHECK(u.shard.data_ptr<float>() == u.full.data_ptr<float>() + rank * u.shard_numel);
        }
    }
    SECTION("the parameters keep their values and become views into the flat vector") {
        for (size_t i = 0; i < params.size(); ++i) {
            CHECK(at::equal(params[i].tensor, before[i]));
            const bool in_a_unit = params[i].tensor.is_alias_of(units[0].full) ||
                                   params[i].tensor.is_alias_of(units[1].full) ||
                                   params[i].tensor.is_alias_of(units[2].full);
            CHECK(in_a_unit);
        }
        at::NoGradGuard no_grad;
        units[2].full.fill_(2.0f); // the root unit holds params[0] (tok_emb): writing it writes the parameter
        CHECK(params[0].tensor.min().item<float>() == 2.0f);
    }
    SECTION("freeing drops the bytes; re-allocating brings room back for an all-gather to fill") {
        auto& u = units[1];
        const auto saved = u.full.clone();
        dt::releaseStorage(u.full);
        CHECK(dt::storageNbytes(u.full) == 0);
        dt::allocateStorage(u.full);
        CHECK(dt::storageNbytes(u.full) == u.padded * 4);
        u.full.copy_(saved); // what the all-gather does
        at::Tensor x = at::randint(0, 128, {2, 16}, at::kLong);
        CHECK_NOTHROW(model->loss(x, x, {}).item<double>()); // the views see the new bytes
    }
}

TEST_CASE("Activation checkpointing recomputes each block and gives the same gradients", "[sharding]") {
    auto plain = dt::makeModel(gpt(), 5);
    auto checkpointed = dt::makeModel(gpt(), 5);
    checkpointed->setActivationCheckpointing(true);
    at::manual_seed(9);
    const at::Tensor tokens = at::randint(0, 128, {4, 16}, at::kLong);
    const at::Tensor targets = at::randint(0, 128, {4, 16}, at::kLong);

    std::vector<int> recomputed;
    dt::UnitTimer timer;
    timer.recompute = [&](int unit, bool begin) {
        if (begin)
            recomputed.push_back(unit);
    };
    plain->loss(tokens, targets, {}).backward();
    checkpointed->loss(tokens, targets, timer).backward();

    CHECK(recomputed == std::vector<int>{2, 1, 0}); // backward order
    const auto a = plain->trainableParameters(), b = checkpointed->trainableParameters();
    for (size_t i = 0; i < a.size(); ++i) {
        CAPTURE(a[i].name);
        REQUIRE(b[i].tensor.grad().defined());
        CHECK(at::allclose(a[i].tensor.grad(), b[i].tensor.grad(), 1e-5, 1e-6));
    }
    SECTION("the MLP has no blocks to recompute and says so") {
        dt::ModelConfig mlp;
        mlp.kind = "mlp";
        CHECK_THROWS_WITH(dt::makeModel(mlp, 1)->setActivationCheckpointing(true),
                          Catch::Contains("needs the tiny_gpt model"));
    }
}
