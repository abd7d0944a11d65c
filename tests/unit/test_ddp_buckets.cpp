// test_ddp_buckets.cpp: DDP's bucket plan (reverse order, cap, oversize
// parameters, contiguous offsets) and DdpGradientSync on a real in-process Gloo
// group: gradients live in the buckets, and after a step they are the mean over
// ranks of each rank's local gradient, with and without overlap.
#include "dtlab/ddp_buckets.hpp"
#include "strategy/ddp.hpp"

#include "inprocess_gloo.hpp"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include <numeric>
#include <set>
#include <vector>

using dt::BucketPlan;
using dt::planBuckets;

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

// Parameter indices in plan order (bucket by bucket, slot by slot).
std::vector<int> planOrder(const std::vector<BucketPlan>& plan) {
    std::vector<int> out;
    for (const auto& b : plan)
        for (const auto& s : b.slots)
            out.push_back(s.param_index);
    return out;
}

} // namespace

TEST_CASE("planBuckets packs parameters in reverse order under the cap", "[buckets]") {
    SECTION("parameters are taken last to first") {
        const std::vector<int64_t> numel{10, 20, 30, 40};
        const auto plan = planBuckets(numel, 4, 1 << 20);
        REQUIRE(plan.size() == 1);
        CHECK(planOrder(plan) == std::vector<int>{3, 2, 1, 0});
        checkPlanIsAPartition(plan, numel);
    }

    SECTION("no bucket holding several parameters exceeds the cap") {
        const std::vector<int64_t> numel{7, 3, 12, 5, 5, 9, 1, 16, 2, 8};
        for (int64_t cap_elems : {8, 10, 16, 20, 33, 100}) {
            CAPTURE(cap_elems);
            const auto plan = planBuckets(numel, 4, cap_elems * 4);
            checkPlanIsAPartition(plan, numel);
            std::vector<int> order = planOrder(plan);
            std::vector<int> reversed(numel.size());
            std::iota(reversed.rbegin(), reversed.rend(), 0);
            CHECK(order == reversed);
            for (const auto& b : plan)
                if (b.slots.size() > 1)
                    CHECK(b.numel * 4 <= cap_elems * 4);
            // greedy: a bucket is closed only because the next parameter did not fit
            for (size_t i = 0; i + 1 < plan.size(); ++i) {
                const int64_t next = plan[i + 1].slots.front().numel;
                CHECK((plan[i].numel + next) * 4 > cap_elems * 4);
            }
        }
    }

    SECTION("a parameter larger than the cap gets a bucket of its own") {
        // cap 10 elements: 3 | 50 | 4+6 | 2
        const std::vector<int64_t> numel{2, 6, 4, 50, 3};
        const auto plan = planBuckets(numel, 4, 40);
        checkPlanIsAPartition(plan, numel);
        REQUIRE(plan.size() == 4);
        CHECK(planOrder({plan[0]}) == std::vector<int>{4});
        CHECK(planOrder({plan[1]}) == std::vector<int>{3});
        CHECK(plan[1].numel == 50);
        CHECK(planOrder({plan[2]}) == std::vector<int>{2, 1});
        CHECK(plan[2].slots[1].offset == 4);
        CHECK(planOrder({plan[3]}) == std::vector<int>{0});
    }

    SECTION("the element size scales the cap") {
        const std::vector<int64_t> numel{4, 4, 4, 4};
        CHECK(planBuckets(numel, 4, 32).size() == 2); // 2 float32 params per 32 bytes
        CHECK(planBuckets(numel, 2, 32).size() == 1); // 4 half params fit
    }

    SECTION("no parameters give no buckets") {
        CHECK(planBuckets({}, 4, 1024).empty());
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
    bool grads_are_bucket_views = false;
    size_t buckets = 0;
};

// Runs `steps` DDP steps on `world` thread ranks.
std::vector<RankResult> runDdp(int world, double bucket_mb, bool overlap, int steps) {
    std::vector<RankResult> results(static_cast<size_t>(world));
    dttest::runGlooRanks(
        world, overlap ? "ddp-overlap" : "ddp-serial", [&](int r, std::unique_ptr<dt::Communicator>& comm) {
            auto params = makeParams();
            dt::DdpGradientSync sync(params, *comm, bucket_mb, overlap, nullptr);
            auto& out = results[size_t(r)];
            out.buckets = sync.plan().size();
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
                localLoss(params, rankInput(r, step), r).backward();
                out.launched_in_backward.push_back(sync.bucketsLaunchedDuringBackward());
                sync.finishBackward();
                ok = ok && viewsOk();
                std::vector<at::Tensor> grads;
                for (const auto& p : params)
                    grads.push_back(p.grad().clone());
                out.grads.push_back(grads);
            }
            out.grads_are_bucket_views = ok;
        });
    return results;
}

} // namespace

TEST_CASE("DdpGradientSync averages gradients over a real Gloo group", "[buckets]") {
    const int world = GENERATE(1, 2, 3);
    CAPTURE(world);
    const int steps = 2;
    // Bucket cap of 32 float32 elements: b2 (3) | w2 (30) | b1 (10) | w1 (40, oversize).
    const double small_mb = 32.0 * 4 / (1024.0 * 1024.0);
    const double large_mb = 1.0; // one bucket for all four

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

    SECTION("with overlap, several buckets launch during backward and match the reference") {
        const auto results = runDdp(world, small_mb, true, steps);
        for (int r = 0; r < world; ++r) {
            CAPTURE(r);
            CHECK(results[size_t(r)].buckets == 4);
            CHECK(results[size_t(r)].grads_are_bucket_views);
            for (int launched : results[size_t(r)].launched_in_backward)
                CHECK(launched == 4);
        }
        checkAgainstReference(results);
    }

    SECTION("without overlap, nothing launches during backward and the result matches") {
        const auto results = runDdp(world, small_mb, false, steps);
        for (int r = 0; r < world; ++r) {
            CAPTURE(r);
            CHECK(results[size_t(r)].buckets == 4);
            CHECK(results[size_t(r)].grads_are_bucket_views);
            for (int launched : results[size_t(r)].launched_in_backward)
                CHECK(launched == 0);
        }
        checkAgainstReference(results);
    }

    SECTION("overlap on and off give bit-identical gradients on every rank") {
        const auto on = runDdp(world, small_mb, true, steps);
        const auto off = runDdp(world, small_mb, false, steps);
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

    SECTION("one large bucket holds every gradient and matches the reference") {
        const auto results = runDdp(world, large_mb, true, steps);
        for (int r = 0; r < world; ++r) {
            CAPTURE(r);
            CHECK(results[size_t(r)].buckets == 1);
            CHECK(results[size_t(r)].grads_are_bucket_views);
            for (int launched : results[size_t(r)].launched_in_backward)
                CHECK(launched == 1);
        }
        checkAgainstReference(results);
    }
}
