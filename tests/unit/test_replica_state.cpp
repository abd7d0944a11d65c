// test_replica_state.cpp: a replica's state as the heal moves it
// (replica_state.hpp): the packed copy and the live views hold the same
// bytes, before and after AdamW has state, and unpacking restores them.
#include "checkpoint/replica_state.hpp"

#include <ATen/ATen.h>
#include <catch2/catch.hpp>
#include <torch/optim/adamw.h>

#include <cstring>
#include <vector>

namespace {

at::Tensor concatenated(const std::vector<at::Tensor>& views) {
    std::vector<at::Tensor> flat;
    for (const auto& v : views)
        flat.push_back(v.reshape({-1}));
    return at::cat(flat);
}

bool sameBits(const at::Tensor& a, const at::Tensor& b) {
    return a.numel() == b.numel() && std::memcmp(a.data_ptr(), b.data_ptr(), size_t(a.numel()) * 4) == 0;
}

} // namespace

TEST_CASE("a replica's live state views, laid end to end, are its packed copy", "[ft][replica_state]") {
    at::manual_seed(3);
    std::vector<at::Tensor> params = {at::randn({3, 5}).requires_grad_(), at::randn({7}).requires_grad_(),
                                      at::randn({1}).requires_grad_()};
    torch::optim::AdamW optimizer(params, torch::optim::AdamWOptions(1e-2));
    const int64_t P = 15 + 7 + 1;
    REQUIRE(dt::replicaStateNumel(params) == 2 + 3 * P);

    SECTION("before the first step: no AdamW state, its moments are zeros") {
        const at::Tensor packed = dt::packReplicaState(params, optimizer, 4);
        CHECK(sameBits(concatenated(dt::replicaStateViews(params, optimizer, 4)), packed));
        CHECK(packed[1].item<float>() == 0.0f);
        CHECK(packed.narrow(0, 2 + P, 2 * P).abs().sum().item<float>() == 0.0f);
    }
    SECTION("after two steps: parameters, exp_avg and exp_avg_sq, and a copy that restores them") {
        for (int k = 0; k < 2; ++k) {
            for (auto& p : params)
                p.mutable_grad() = at::randn(p.sizes());
            optimizer.step();
        }
        const at::Tensor packed = dt::packReplicaState(params, optimizer, 9);
        const auto views = dt::replicaStateViews(params, optimizer, 9);
        CHECK(sameBits(concatenated(views), packed));
        // The layout a healer receives the pieces by: each view's element count, in order.
        const std::vector<int64_t> numels = dt::replicaStateViewNumels(params);
        REQUIRE(numels.size() == views.size());
        for (size_t i = 0; i < views.size(); ++i)
            CHECK(numels[i] == views[i].numel());
        CHECK(packed[0].item<float>() == 9.0f);
        CHECK(packed[1].item<float>() == 2.0f);
        // The views are the live tensors (no copy): a parameter's storage is shared.
        CHECK(views[1].data_ptr() == params[0].data_ptr());

        // Unpacking into fresh parameters and optimizer gives back the same bytes.
        std::vector<at::Tensor> other = {at::zeros({3, 5}).requires_grad_(), at::zeros({7}).requires_grad_(),
                                         at::zeros({1}).requires_grad_()};
        torch::optim::AdamW other_optimizer(other, torch::optim::AdamWOptions(1e-2));
        CHECK(dt::unpackReplicaState(packed, other, other_optimizer) == 9);
        CHECK(sameBits(dt::packReplicaState(other, other_optimizer, 9), packed));
    }
}

TEST_CASE("the heal sends large live pieces alone and packs small neighbours, never across a message",
          "[ft][replica_state]") {
    const int64_t K = dt::kReplicaStateInPlaceNumel;
    SECTION("a small model: everything in one packed message") {
        const auto runs = dt::replicaStateRuns({2, 100, 7, 100, 7, 100, 7}, {323});
        REQUIRE(runs.size() == 1);
        CHECK(runs[0].begin == 0);
        CHECK(runs[0].end == 7);
        CHECK(runs[0].numel == 323);
    }
    SECTION("large pieces alone, the small ones between them packed, every piece exactly once") {
        const std::vector<int64_t> numels = {2, K, 10, 20, 2 * K, 5, K - 5, 1};
        int64_t total = 0;
        for (int64_t n : numels)
            total += n;
        const auto runs = dt::replicaStateRuns(numels, {total});
        REQUIRE(runs.size() == 6);
        const std::vector<std::pair<size_t, size_t>> expected = {{0, 1}, {1, 2}, {2, 4},
                                                                 {4, 5}, {5, 7}, {7, 8}};
        size_t next = 0;
        for (size_t r = 0; r < runs.size(); ++r) {
            CAPTURE(r);
            CHECK(runs[r].begin == expected[r].first);
            CHECK(runs[r].end == expected[r].second);
            CHECK(runs[r].begin == next);
            next = runs[r].end;
            int64_t sum = 0;
            for (size_t i = runs[r].begin; i < runs[r].end; ++i)
                sum += numels[i];
            CHECK(runs[r].numel == sum);
        }
        CHECK(next == numels.size());
    }
    SECTION("a run ends where a message ends") {
        const auto runs = dt::replicaStateRuns({2, 10, 10, 4}, {12, 14});
        REQUIRE(runs.size() == 2);
        CHECK(runs[0].end == 2);
        CHECK(runs[1].begin == 2);
        CHECK(runs[1].numel == 14);
    }
}

TEST_CASE("the heal's metadata names what differs between source and healer", "[replica_state]") {
    const std::vector<int64_t> layout = {262146, 262144, 1000};
    const at::Tensor meta = dt::replicaStateMetadata(17, layout);
    SECTION("it holds the step, the count and each message's elements, as int64") {
        REQUIRE(meta.scalar_type() == at::kLong);
        REQUIRE(meta.numel() == 5);
        CHECK(meta[0].item<int64_t>() == 17);
        CHECK(meta[1].item<int64_t>() == 3);
        CHECK(meta[2].item<int64_t>() == 262146);
        CHECK(meta[4].item<int64_t>() == 1000);
    }
    SECTION("the same step and layout agree") {
        CHECK(dt::replicaStateMetadataMismatch(meta, 17, layout).empty());
    }
    SECTION("another step is refused, naming both") {
        const std::string why = dt::replicaStateMetadataMismatch(meta, 18, layout);
        CHECK(why.find("step 17") != std::string::npos);
        CHECK(why.find("is 18") != std::string::npos);
    }
    SECTION("another layout is refused, naming both") {
        const std::string fewer = dt::replicaStateMetadataMismatch(meta, 17, {262146, 263144});
        CHECK(fewer.find("3 messages of 262146, 262144, 1000") != std::string::npos);
        CHECK(fewer.find("this rank's is 2 messages of 262146, 263144") != std::string::npos);
        CHECK_FALSE(dt::replicaStateMetadataMismatch(meta, 17, {262146, 262144, 1001}).empty());
    }
    SECTION("metadata whose count disagrees with its length is malformed") {
        at::Tensor bad = meta.clone();
        bad[1] = 7;
        CHECK(dt::replicaStateMetadataMismatch(bad, 17, layout).find("malformed") != std::string::npos);
        CHECK(dt::replicaStateMetadataMismatch(at::zeros({1}, at::kLong), 17, layout).find("malformed") !=
              std::string::npos);
    }
}
