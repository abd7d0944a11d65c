// test_ddp_buckets.cpp: DDP's bucket assignment (PyTorch 1.13's rule, checked
// against a table PyTorch itself produced) and DdpGradientSync on a real
// in-process Gloo group: one bucket in step 0, buckets rebuilt from the ready
// order after it, gradients divided by N before the all-reduce, and after a
// step the mean over ranks of each rank's local gradient, with and without
// overlap.
#include "dtlab/ddp_buckets.hpp"
#include "model/model.hpp"
#include "strategy/ddp.hpp"

#include "inprocess_gloo.hpp"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <set>
#include <vector>

using dt::assignBucketsBySize;
using dt::BucketPlan;

namespace {

// Every parameter exactly once, offsets contiguous from 0, bucket numel = sum.
void checkPlanIsAPartition(const std::vector<BucketPlan>& plan, const std::vector<int64_t>& numel) {
    std::multiset<int> seen;
    for (const auto& bucket : plan) {
        int64_t offset = 0;
        for (const auto& slot : bucket.slots) {
            CHECK(slot.offset == offset);
            CHECK(slot.numel == numel[size_t(slot.param_index)]);
            offset += slot.numel;
            seen.insert(slot.param_index);
        }
        CHECK(bucket.numel == offset);
    }
    std::multiset<int> all;
    for (int i = 0; i < int(numel.size()); ++i)
        all.insert(i);
    CHECK(seen == all);
}

// Parameter indices per bucket, in slot order.
std::vector<std::vector<int>> members(const std::vector<BucketPlan>& plan) {
    std::vector<std::vector<int>> out;
    for (const auto& b : plan) {
        out.emplace_back();
        for (const auto& s : b.slots)
            out.back().push_back(s.param_index);
    }
    return out;
}

std::vector<int64_t> bucketBytes(const std::vector<BucketPlan>& plan) {
    std::vector<int64_t> out;
    for (const auto& b : plan)
        out.push_back(b.numel * 4);
    return out;
}

} // namespace

TEST_CASE("assignBucketsBySize follows reducer.cpp's compute_bucket_assignment_by_size", "[buckets]") {
    SECTION("a bucket closes when it reaches its limit, with the parameter that crossed it inside") {
        // 4-byte elements, limits 80 then 160 bytes, order 3 2 1 0 (40, 30, 20, 10 elements):
        // 3 (160 B >= 80) | 2 + 1 (120 B, then 200 B >= 160) | 0 (40 B, still open at the end)
        const std::vector<int64_t> numel{10, 20, 30, 40};
        const auto plan = assignBucketsBySize({3, 2, 1, 0}, numel, 4, {80, 160});
        checkPlanIsAPartition(plan, numel);
        CHECK(members(plan) == std::vector<std::vector<int>>{{3}, {2, 1}, {0}});
        CHECK(plan[1].slots[1].offset == 30);
    }

    SECTION("a bucket that exactly reaches the limit closes (>=, not >)") {
        const auto plan = assignBucketsBySize({0, 1, 2}, {8, 8, 8}, 4, {64});
        CHECK(members(plan) == std::vector<std::vector<int>>{{0, 1}, {2}});
    }

    SECTION("the first limit applies to the first bucket only; the last limit repeats") {
        // limits 4 elements then 12: [0] | [1 2 3] | [4 5 6] | [7]
        const std::vector<int64_t> numel(8, 4);
        const auto plan = assignBucketsBySize({0, 1, 2, 3, 4, 5, 6, 7}, numel, 4, {16, 48});
        CHECK(members(plan) == std::vector<std::vector<int>>{{0}, {1, 2, 3}, {4, 5, 6}, {7}});
    }

    SECTION("the order given is kept, not sorted") {
        const auto plan = assignBucketsBySize({2, 0, 3, 1}, {5, 5, 5, 5}, 4, {40});
        CHECK(members(plan) == std::vector<std::vector<int>>{{2, 0}, {3, 1}});
    }

    SECTION("the first iteration puts every parameter in one bucket, in registration order") {
        const std::vector<int64_t> numel{1 << 20, 3, 1 << 22, 7};
        const auto plan = dt::firstIterationBuckets(numel);
        REQUIRE(plan.size() == 1);
        CHECK(members(plan)[0] == std::vector<int>{0, 1, 2, 3});
        checkPlanIsAPartition(plan, numel);
    }

    SECTION("no parameters give no buckets") {
        CHECK(assignBucketsBySize({}, {}, 4, {1024}).empty());
    }
}

// The table: tests/tools/pytorch_ddp_buckets.py run with Debian's torch 1.13.1
// (python3-torch): PyTorch's own DistributedDataParallel, bucket_cap_mb as
// given, the Reducer's rebuilt_bucket_sizes and rebuilt_per_bucket_param_indices
// after the first iteration. Parameter indices are registration order.
TEST_CASE("the buckets predicted for the shipped DDP models are the ones PyTorch 1.13 builds", "[buckets]") {
    struct Row {
        const char* what;
        dt::ModelConfig model;
        double bucket_mb;
        std::vector<int64_t> pytorch_bytes;
        std::vector<std::vector<int>> pytorch_members; // in gradient-ready order
    };
    dt::ModelConfig gpt;         // ddp_basics, ddp_slow_link, ddp_kill_rank: the default TinyGPT
    dt::ModelConfig small = gpt; // ranks_and_rendezvous
    small.context = 32;
    small.d_model = 64;
    small.layers = 2;
    small.heads = 2;
    dt::ModelConfig mlp; // mlp_fashion
    mlp.kind = "mlp";
    mlp.hidden = {256, 128};
    const std::vector<std::vector<int>> gpt_1mib{
        {52, 50, 51, 49, 48, 47, 46, 44, 45, 43, 42, 41, 40, 38, 39, 37, 36},
        {35, 34, 32, 33, 31, 30, 29, 28, 26, 27, 25, 24, 23, 22},
        {20, 21, 19, 18, 17, 16, 14, 15, 13, 12, 11, 10, 8, 9, 7, 6, 5, 4},
        {2, 3, 1, 0}};
    const std::vector<Row> rows{
        {"TinyGPT, 1 MiB", gpt, 1.0, {1122304, 1057280, 1058304, 99328}, gpt_1mib},
        {"TinyGPT, 0.25 MiB",
         gpt,
         0.25,
         {1122304, 264192, 265216, 263680, 264192, 265216, 263680, 264192, 265216, 99328},
         {gpt_1mib[0],
          {35, 34},
          {32, 33, 31, 30, 29, 28},
          {26, 27, 25, 24},
          {23, 22},
          {20, 21, 19, 18, 17, 16},
          {14, 15, 13, 12},
          {11, 10},
          {8, 9, 7, 6, 5, 4},
          {2, 3, 1, 0}}},
        {"TinyGPT, 25 MiB (PyTorch's default cap)",
         gpt,
         25.0,
         {1122304, 2214912},
         {gpt_1mib[0], {35, 34, 32, 33, 31, 30, 29, 28, 26, 27, 25, 24, 23, 22, 20, 21, 19, 18,
                        17, 16, 14, 15, 13, 12, 11, 10, 8,  9,  7,  6,  5,  4,  2,  3,  1,  0}}},
        {"small TinyGPT, 1 MiB", small, 1.0, {474112}, {{28, 26, 27, 25, 24, 23, 22, 20, 21, 19,
                                                         18, 17, 16, 14, 15, 13, 12, 11, 10, 8,
                                                         9,  7,  6,  5,  4,  2,  3,  1,  0}}},
        {"MLP 784-256-128-10, 1 MiB", mlp, 1.0, {940584}, {{5, 4, 3, 2, 1, 0}}},
    };
    for (const Row& row : rows) {
        CAPTURE(row.what);
        dt::Scenario s;
        s.model = row.model;
        s.strategy.bucket_mb = row.bucket_mb;
        const auto plan = dt::ddpBucketPlan(s);
        CHECK(bucketBytes(plan) == row.pytorch_bytes);
        // The same parameters in each bucket, in PyTorch's gradient-ready order.
        CHECK(members(plan) == row.pytorch_members);
    }

    SECTION(
        "the engine's DDP on the real TinyGPT records PyTorch's ready order and rebuilds PyTorch's buckets") {
        for (const double cap_mb : {1.0, 0.25}) {
            CAPTURE(cap_mb);
            const auto& row = cap_mb == 1.0 ? rows[0] : rows[1];
            std::vector<std::vector<int>> got_members;
            std::vector<int> ready;
            size_t buckets_in_step0 = 0;
            dttest::runGlooRanks(1, "ddp-rebuild", [&](int, std::unique_ptr<dt::Communicator>& comm) {
                auto model = dt::makeModel(gpt, 7);
                std::vector<at::Tensor> params;
                for (const auto& p : model->trainableParameters())
                    params.push_back(p.tensor);
                dt::DdpGradientSync sync(params, *comm, cap_mb, true, nullptr);
                dt::UnitTimer quiet;
                quiet.forward = [](int, bool) {};
                at::manual_seed(3);
                for (int step = 0; step < 2; ++step) {
                    sync.beginStep(step);
                    if (step == 0)
                        buckets_in_step0 = sync.plan().size();
                    auto tokens = at::randint(0, gpt.vocab, {2, gpt.context}, at::kLong);
                    model->loss(tokens, tokens, quiet).backward();
                    sync.finishBackward();
                }
                got_members = members(sync.plan());
                ready = sync.readyOrder();
            });
            CHECK(buckets_in_step0 == 1);
            // Exactly PyTorch's order, LayerNorm weight-before-bias included: the same autograd engine.
            CHECK(got_members == row.pytorch_members);
            CHECK(ready.size() == 53);
        }
    }
}

namespace {

// A two-layer net: w1 (10,4), b1 (10), w2 (3,10), b2 (3) = 40 + 10 + 30 + 3 elements.
std::vector<at::Tensor> makeParams() {
    auto make = [](std::vector<int64_t> shape, float phase) {
        int64_t n = 1;
        for (auto d : shape)
            n *= d;
        auto t = (at::cos(at::arange(n, at::kFloat) * 0.7f + phase) * 0.5f).view(shape).contiguous();
        return t.set_requires_grad(true);
    };
    return {make({10, 4}, 0.1f), make({10}, 0.2f), make({3, 10}, 0.3f), make({3}, 0.4f)};
}

// Rank r's input (5,4): different per rank, so local gradients differ.
at::Tensor rankInput(int rank, int step) {
    return at::sin(at::arange(20, at::kFloat) * (0.3f + float(rank)) + float(step)).view({5, 4});
}

// loss_r = (r+1) * mean((tanh(x w1^T + b1) w2^T + b2)^2)
at::Tensor localLoss(const std::vector<at::Tensor>& p, const at::Tensor& x, int rank) {
    auto h = at::tanh(at::matmul(x, p[0].t()) + p[1]);
    auto y = at::matmul(h, p[2].t()) + p[3];
    return y.pow(2).mean() * double(rank + 1);
}

// The reference: mean over ranks of each rank's local gradient, by plain autograd.
std::vector<at::Tensor> referenceMeanGradients(int world, int step) {
    std::vector<at::Tensor> sum;
    for (int r = 0; r < world; ++r) {
        auto p = makeParams();
        localLoss(p, rankInput(r, step), r).backward();
        for (size_t i = 0; i < p.size(); ++i) {
            if (sum.size() <= i)
                sum.push_back(at::zeros_like(p[i]));
            sum[i] += p[i].grad();
        }
    }
    for (auto& s : sum)
        s /= double(world);
    return sum;
}

struct RankResult {
    std::vector<std::vector<at::Tensor>> grads; // per step
    std::vector<int> launched_in_backward;      // per step
    std::vector<size_t> buckets;                // per step
    std::vector<int> ready_order;
    std::vector<BucketPlan> final_plan;
    bool grads_are_bucket_views = false;
    bool divided_before_allreduce =
        true; // overlap off: before finishBackward each .grad = local gradient / N
};

// Runs `steps` DDP steps on `world` thread ranks; first_bucket_bytes scales PyTorch's 1 MiB first bucket
// down to this small model.
std::vector<RankResult> runDdp(int world, double bucket_mb, bool overlap, int steps,
                               int64_t first_bucket_bytes) {
    std::vector<RankResult> results(static_cast<size_t>(world));
    dttest::runGlooRanks(
        world, overlap ? "ddp-overlap" : "ddp-serial", [&](int r, std::unique_ptr<dt::Communicator>& comm) {
            auto params = makeParams();
            dt::DdpGradientSync sync(params, *comm, bucket_mb, overlap, nullptr, first_bucket_bytes);
            auto& out = results[size_t(r)];
            auto viewsOk = [&] {
                const auto buffers = sync.bucketBuffers();
                for (size_t b = 0; b < sync.plan().size(); ++b)
                    for (const auto& slot : sync.plan()[b].slots) {
                        const auto& g = params[size_t(slot.param_index)].grad();
                        if (!g.defined() ||
                            g.data_ptr<float>() != buffers[b].data_ptr<float>() + slot.offset ||
                            !g.storage().is_alias_of(buffers[b].storage()) ||
                            g.sizes() != params[size_t(slot.param_index)].sizes())
                            return false;
                    }
                return true;
            };
            bool ok = viewsOk();
            for (int step = 0; step < steps; ++step) {
                sync.beginStep(step);
                out.buckets.push_back(sync.plan().size());
                ok = ok && viewsOk();
                localLoss(params, rankInput(r, step), r).backward();
                out.launched_in_backward.push_back(sync.bucketsLaunchedDuringBackward());
                if (!overlap) { // nothing launched yet: the slots hold the local gradient divided by N
                    auto local = makeParams();
                    localLoss(local, rankInput(r, step), r).backward();
                    for (size_t i = 0; i < params.size(); ++i) {
                        const auto want = local[i].grad() / double(world);
                        if ((params[i].grad() - want).abs().max().item<double>() > 1e-7)
                            out.divided_before_allreduce = false;
                    }
                }
                sync.finishBackward();
                ok = ok && viewsOk();
                std::vector<at::Tensor> grads;
                for (const auto& p : params)
                    grads.push_back(p.grad().clone());
                out.grads.push_back(grads);
            }
            out.grads_are_bucket_views = ok;
            out.ready_order = sync.readyOrder();
            out.final_plan = sync.plan();
        });
    return results;
}

} // namespace

TEST_CASE("DdpGradientSync averages gradients over a real Gloo group", "[buckets]") {
    const int world = GENERATE(1, 2, 3);
    CAPTURE(world);
    const int steps = 3;
    // Limits of 32 float32 elements (first bucket and cap), parameters w1 (40), b1 (10), w2 (30), b2 (3):
    // step 0 one bucket; then, in the ready order, buckets close at 32 elements or more.
    const double small_mb = 32.0 * 4 / (1024.0 * 1024.0);
    const int64_t small_first = 32 * 4;
    const double large_mb = 1.0; // with the 1 MiB first bucket: one bucket for all four

    std::vector<std::vector<at::Tensor>> reference;
    for (int step = 0; step < steps; ++step)
        reference.push_back(referenceMeanGradients(world, step));

    auto checkAgainstReference = [&](const std::vector<RankResult>& results) {
        for (int r = 0; r < world; ++r)
            for (int step = 0; step < steps; ++step)
                for (size_t i = 0; i < reference[size_t(step)].size(); ++i) {
                    CAPTURE(r, step, i);
                    const auto& got = results[size_t(r)].grads[size_t(step)][i];
                    const auto& want = reference[size_t(step)][i];
                    REQUIRE(got.sizes() == want.sizes());
                    const double max_diff = (got - want).abs().max().item<double>();
                    CAPTURE(max_diff);
                    CHECK(max_diff <= 1e-6 + 1e-5 * want.abs().max().item<double>());
                }
    };

    // Step 0 runs with one bucket; from step 1 on the buckets are rebuilt from the recorded ready order.
    auto checkRebuild = [&](const RankResult& result, int64_t first_bytes, double cap_mb) {
        REQUIRE(result.buckets.size() == size_t(steps));
        CHECK(result.buckets[0] == 1);
        std::vector<int> sorted = result.ready_order;
        std::sort(sorted.begin(), sorted.end());
        CHECK(sorted == std::vector<int>{0, 1, 2, 3});
        const auto expected = dt::rebuiltBuckets(result.ready_order, {40, 10, 30, 3}, 4,
                                                 int64_t(cap_mb * 1024 * 1024), first_bytes);
        CHECK(members(result.final_plan) == members(expected));
        for (int step = 1; step < steps; ++step)
            CHECK(result.buckets[size_t(step)] == expected.size());
        checkPlanIsAPartition(result.final_plan, {40, 10, 30, 3});
    };

    SECTION("with overlap, the rebuilt buckets launch during backward and match the reference") {
        const auto results = runDdp(world, small_mb, true, steps, small_first);
        for (int r = 0; r < world; ++r) {
            CAPTURE(r);
            checkRebuild(results[size_t(r)], small_first, small_mb);
            CHECK(results[size_t(r)].final_plan.size() >= 2);
            CHECK(results[size_t(r)].grads_are_bucket_views);
            for (int step = 0; step < steps; ++step)
                CHECK(results[size_t(r)].launched_in_backward[size_t(step)] ==
                      int(results[size_t(r)].buckets[size_t(step)]));
            // every rank builds the same buckets (rank 0's order is broadcast)
            CHECK(members(results[size_t(r)].final_plan) == members(results[0].final_plan));
        }
        checkAgainstReference(results);
    }

    SECTION("without overlap, nothing launches during backward, gradients are divided by N before the "
            "all-reduce, and the result matches") {
        const auto results = runDdp(world, small_mb, false, steps, small_first);
        for (int r = 0; r < world; ++r) {
            CAPTURE(r);
            checkRebuild(results[size_t(r)], small_first, small_mb);
            CHECK(results[size_t(r)].grads_are_bucket_views);
            CHECK(results[size_t(r)].divided_before_allreduce);
            for (int launched : results[size_t(r)].launched_in_backward)
                CHECK(launched == 0);
        }
        checkAgainstReference(results);
    }

    SECTION("overlap on and off give bit-identical gradients on every rank") {
        const auto on = runDdp(world, small_mb, true, steps, small_first);
        const auto off = runDdp(world, small_mb, false, steps, small_first);
        for (int r = 0; r < world; ++r)
            for (int step = 0; step < steps; ++step)
                for (size_t i = 0; i < on[size_t(r)].grads[size_t(step)].size(); ++i) {
                    CAPTURE(r, step, i);
                    CHECK(at::equal(on[size_t(r)].grads[size_t(step)][i],
                                    off[size_t(r)].grads[size_t(step)][i]));
                    // every replica holds the same averaged gradient
                    CHECK(at::equal(on[size_t(r)].grads[size_t(step)][i], on[0].grads[size_t(step)][i]));
                }
    }

    SECTION("with the 1 MiB first bucket the small model stays in one bucket and matches the reference") {
        const auto results = runDdp(world, large_mb, true, steps, dt::kDefaultFirstBucketBytes);
        for (int r = 0; r < world; ++r) {
            CAPTURE(r);
            checkRebuild(results[size_t(r)], dt::kDefaultFirstBucketBytes, large_mb);
            CHECK(results[size_t(r)].final_plan.size() == 1);
            CHECK(results[size_t(r)].grads_are_bucket_views);
            for (int launched : results[size_t(r)].launched_in_backward)
                CHECK(launched == 1);
        }
        checkAgainstReference(results);
    }
}
