// test_models.cpp: makeModel: TinyGPT's parameter count against the formula in
// tiny_gpt.cpp, loss at init near ln(vocab), seeding, the UnitTimer callbacks
// in forward and backward; the MLP classifier's shapes and initial loss.
#include "model/model.hpp"

#include "dtlab/ddp_buckets.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/scenario.hpp"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <utility>
#include <vector>

using dt::ModelConfig;

namespace {

ModelConfig smallGpt() {
    ModelConfig c;
    c.kind = "tiny_gpt";
    c.vocab = 128;
    c.context = 16;
    c.d_model = 32;
    c.layers = 2;
    c.heads = 4;
    c.mlp_ratio = 4;
    return c;
}

int64_t countParameters(const dt::TrainableModel& m) {
    int64_t n = 0;
    for (const auto& p : m.trainableParameters())
        n += p.tensor.numel();
    return n;
}

// The header comment of tiny_gpt.cpp: V*C + T*C + L*(12*C^2 + 13*C) + 2*C + C*V (ratio 4, with biases)
int64_t gptFormula(const ModelConfig& c) {
    const int64_t V = c.vocab, T = c.context, C = c.d_model, L = c.layers;
    return V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C + C * V;
}

// Layer by layer, for any MLP ratio R: per block ln1 2C, qkv 3C^2+3C, proj C^2+C,
// ln2 2C, fc1 R*C^2+R*C, fc2 R*C^2+C.
int64_t gptByLayer(const ModelConfig& c) {
    const int64_t V = c.vocab, T = c.context, C = c.d_model, L = c.layers, R = c.mlp_ratio;
    const int64_t block =
        2 * C + (3 * C * C + 3 * C) + (C * C + C) + 2 * C + (R * C * C + R * C) + (R * C * C + C);
    return V * C + T * C + L * block + 2 * C + C * V;
}

bool sameParameters(const dt::TrainableModel& a, const dt::TrainableModel& b) {
    const auto pa = a.trainableParameters(), pb = b.trainableParameters();
    if (pa.size() != pb.size())
        return false;
    for (size_t i = 0; i < pa.size(); ++i)
        if (pa[i].name != pb[i].name || !at::equal(pa[i].tensor, pb[i].tensor))
            return false;
    return true;
}

using Mark = std::pair<int, bool>; // (unit, begin)

// Models call timer.forward unconditionally, so it must be set.
dt::UnitTimer quietTimer() {
    dt::UnitTimer t;
    t.forward = [](int, bool) {};
    return t;
}

} // namespace

TEST_CASE("TinyGPT has the parameters its header formula says", "[models]") {
    SECTION("the small config matches the formula and a layer-by-layer count") {
        const auto c = smallGpt();
        const auto model = dt::makeModel(c, 1);
        CHECK(gptFormula(c) == 34176); // 4096 + 512 + 2*(12288 + 416) + 64 + 4096
        CHECK(countParameters(*model) == gptFormula(c));
        CHECK(countParameters(*model) == gptByLayer(c));
    }

    SECTION("other sizes match the formula too") {
        ModelConfig c = smallGpt();
        c.vocab = 64;
        c.context = 8;
        c.d_model = 48;
        c.layers = 3;
        c.heads = 3;
        CHECK(countParameters(*dt::makeModel(c, 1)) == gptFormula(c));
    }

    SECTION("with another MLP ratio the layer-by-layer count holds (the formula assumes ratio 4)") {
        ModelConfig c = smallGpt();
        c.mlp_ratio = 2;
        CHECK(countParameters(*dt::makeModel(c, 1)) == gptByLayer(c));
    }

    SECTION("parameters come in a fixed order with the expected shapes") {
        const auto params = dt::makeModel(smallGpt(), 1)->trainableParameters();
        std::map<std::string, std::vector<int64_t>> shape;
        for (const auto& p : params)
            shape[p.name] = p.tensor.sizes().vec();
        REQUIRE(params.size() == 2 + 2 * 12 + 2 + 1);
        CHECK(params.front().name == "tok_emb.weight");
        CHECK(params.back().name == "head.weight");
        CHECK(shape["tok_emb.weight"] == std::vector<int64_t>{128, 32});
        CHECK(shape["pos_emb.weight"] == std::vector<int64_t>{16, 32});
        CHECK(shape["block0.qkv.weight"] == std::vector<int64_t>{96, 32});
        CHECK(shape["block1.fc1.weight"] == std::vector<int64_t>{128, 32});
        CHECK(shape["block1.fc2.weight"] == std::vector<int64_t>{32, 128});
        CHECK(shape["head.weight"] == std::vector<int64_t>{128, 32});
        CHECK(shape.count("head.bias") == 0);
        for (const auto& p : params) {
            CAPTURE(p.name);
            CHECK(p.tensor.requires_grad());
            CHECK(p.tensor.scalar_type() == at::kFloat);
            CHECK(p.tensor.is_contiguous());
        }
    }

    SECTION("parameterLayout, which the GUI draws DDP's buckets from, names every parameter in order") {
        for (const dt::ModelConfig& config : {smallGpt(), dt::ModelConfig{}}) {
            const auto params = dt::makeModel(config, 1)->trainableParameters();
            const auto layout = dt::parameterLayout(config);
            const auto units = dt::makeModel(config, 1)->parameterUnits();
            REQUIRE(layout.size() == params.size());
            for (size_t i = 0; i < params.size(); ++i) {
                CAPTURE(i, params[i].name);
                CHECK(layout[i].name == params[i].name);
                CHECK(layout[i].numel == params[i].tensor.numel());
                CHECK(layout[i].unit == units[i]);
            }
        }
    }

    SECTION("an unknown model kind is a UsageError") {
        ModelConfig c = smallGpt();
        c.kind = "resnet";
        CHECK_THROWS_AS(dt::makeModel(c, 1), dt::UsageError);
    }
}

TEST_CASE("TinyGPT at init predicts near-uniformly and is seeded", "[models]") {
    const auto c = smallGpt();

    SECTION("the loss at init is within 0.3 of ln(vocab)") {
        auto model = dt::makeModel(c, 3);
        at::manual_seed(11);
        auto tokens = at::randint(0, c.vocab, {4, c.context}, at::kLong);
        auto targets = at::randint(0, c.vocab, {4, c.context}, at::kLong);
        const double loss = model->loss(tokens, targets, quietTimer()).item<double>();
        CHECK(loss == Approx(std::log(double(c.vocab))).margin(0.3));
    }

    SECTION("a context shorter than the model's also works") {
        auto model = dt::makeModel(c, 3);
        auto tokens = at::randint(0, c.vocab, {2, 5}, at::kLong);
        const auto loss = model->loss(tokens, tokens, quietTimer());
        CHECK(loss.dim() == 0);
        CHECK(std::isfinite(loss.item<double>()));
    }

    SECTION("the same seed gives identical parameters") {
        const auto a = dt::makeModel(c, 42);
        const auto b = dt::makeModel(c, 42);
        CHECK(sameParameters(*a, *b));
    }

    SECTION("a different seed gives different parameters") {
        const auto a = dt::makeModel(c, 42);
        const auto b = dt::makeModel(c, 43);
        CHECK_FALSE(sameParameters(*a, *b));
        const auto pa = a->trainableParameters(), pb = b->trainableParameters();
        CHECK_FALSE(at::equal(pa.front().tensor, pb.front().tensor)); // the token embedding
    }
}

TEST_CASE("TinyGPT calls the UnitTimer around every block", "[models]") {
    const auto c = smallGpt();
    auto model = dt::makeModel(c, 5);
    std::vector<Mark> forward, backward;
    dt::UnitTimer timer;
    timer.forward = [&](int unit, bool begin) { forward.emplace_back(unit, begin); };
    timer.backward = [&](int unit, bool begin) { backward.emplace_back(unit, begin); };
    auto tokens = at::randint(0, c.vocab, {2, c.context}, at::kLong);
    auto loss = model->loss(tokens, tokens, timer);

    SECTION("forward marks the embedding, each block in order, then the head") {
        const std::vector<Mark> expected{{-1, true}, {-1, false}, {0, true},  {0, false},
                                         {1, true},  {1, false},  {-1, true}, {-1, false}};
        CHECK(forward == expected);
        CHECK(backward.empty()); // nothing before backward runs
    }

    SECTION("backward marks the root's begin first, then begin and end for each block, last block first") {
        loss.backward();
        std::map<int, std::vector<size_t>> begins, ends; // unit -> positions in the record
        for (size_t i = 0; i < backward.size(); ++i)
            (backward[i].second ? begins : ends)[backward[i].first].push_back(i);
        CAPTURE(backward.size());
        for (int unit = 0; unit < c.layers; ++unit) {
            CAPTURE(unit);
            REQUIRE(begins[unit].size() == 1);
            REQUIRE(ends[unit].size() == 1);
            CHECK(begins[unit][0] < ends[unit][0]);
        }
        CHECK(backward.size() == size_t(2 * c.layers + 1));
        CHECK(begins[1][0] < begins[0][0]); // gradients flow from the last block down
        CHECK(ends[1][0] <= ends[0][0]);
        // The loss's gradient comes first: the root's pre-backward, where FSDP
        // prefetches the last block's all-gather. The root has no end mark.
        CHECK(backward.front() == Mark{-1, true});
        CHECK(ends[-1].empty());
        CHECK(backward[1] == Mark{1, true});
        CHECK(backward.back() == Mark{0, false});
    }

    SECTION("without a backward callback no hooks are needed") {
        dt::UnitTimer forward_only;
        forward_only.forward = [](int, bool) {};
        auto l = model->loss(tokens, tokens, forward_only);
        l.backward();
        CHECK(backward.empty());
    }
}

TEST_CASE("The MLP classifier maps 784 pixels to 10 classes", "[models]") {
    ModelConfig c;
    c.kind = "mlp";
    c.hidden = {32, 16};
    auto model = dt::makeModel(c, 7);

    SECTION("layer shapes follow the hidden widths") {
        const auto params = model->trainableParameters();
        std::vector<std::pair<std::string, std::vector<int64_t>>> got;
        for (const auto& p : params)
            got.emplace_back(p.name, p.tensor.sizes().vec());
        const std::vector<std::pair<std::string, std::vector<int64_t>>> expected{
            {"fc0.weight", {32, 784}}, {"fc0.bias", {32}},       {"fc1.weight", {16, 32}},
            {"fc1.bias", {16}},        {"out.weight", {10, 16}}, {"out.bias", {10}}};
        CHECK(got == expected);
        CHECK(countParameters(*model) == 784 * 32 + 32 + 32 * 16 + 16 + 16 * 10 + 10);
        // parameterLayout (the GUI's DDP bucket view) says the same, with each layer its unit.
        const auto layout = dt::parameterLayout(c);
        REQUIRE(layout.size() == expected.size());
        for (size_t i = 0; i < layout.size(); ++i) {
            CHECK(layout[i].name == expected[i].first);
            int64_t numel = 1;
            for (int64_t d : expected[i].second)
                numel *= d;
            CHECK(layout[i].numel == numel);
            CHECK(layout[i].unit == model->parameterUnits()[i]);
        }
    }

    SECTION("the loss at init is within 0.3 of ln(10), and gradients reach every layer") {
        at::manual_seed(3);
        auto images = at::rand({16, 784}, at::kFloat);
        auto labels = at::randint(0, 10, {16}, at::kLong);
        std::vector<Mark> forward;
        dt::UnitTimer timer;
        timer.forward = [&](int unit, bool begin) { forward.emplace_back(unit, begin); };
        auto loss = model->loss(images, labels, timer);
        CHECK(loss.dim() == 0);
        CHECK(loss.item<double>() == Approx(std::log(10.0)).margin(0.3));
        const std::vector<Mark> expected{{0, true}, {0, false}, {1, true},  {1, false},
                                         {2, true}, {2, false}, {-1, true}, {-1, false}};
        CHECK(forward == expected);
        loss.backward();
        for (const auto& p : model->trainableParameters()) {
            CAPTURE(p.name);
            REQUIRE(p.tensor.grad().defined());
            CHECK(p.tensor.grad().abs().sum().item<double>() > 0.0);
        }
    }

    SECTION("the same seed gives the same MLP") {
        CHECK(sameParameters(*model, *dt::makeModel(c, 7)));
        CHECK_FALSE(sameParameters(*model, *dt::makeModel(c, 8)));
    }
}
