// test_tracking_allocator.cpp: the counting CPU allocator (live, peak, reset)
// and the memory accounting built on it (storage bytes, the activations rule).
//
// The allocator is process-wide once installed, so every check here works on
// differences of trackedLiveBytes() around its own allocations.
#include "memory/memory_accounting.hpp"
#include "memory/tracking_allocator.hpp"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include <vector>

TEST_CASE("The tracking allocator counts live and peak bytes", "[allocator]") {
    dt::installTrackingAllocator();
    dt::installTrackingAllocator(); // idempotent
    REQUIRE(dt::trackingAllocatorInstalled());

    SECTION("a float tensor of N elements adds N*4 bytes while alive") {
        for (int64_t n : {1, 7, 1000, 123457}) {
            CAPTURE(n);
            const int64_t before = dt::trackedLiveBytes();
            {
                auto t = at::empty({n}, at::kFloat);
                CHECK(dt::trackedLiveBytes() - before == n * 4);
            }
            CHECK(dt::trackedLiveBytes() == before);
        }
    }

    SECTION("other element types count their own width") {
        const int64_t before = dt::trackedLiveBytes();
        auto d = at::empty({10, 3}, at::kDouble);
        auto i = at::empty({5}, at::kLong);
        auto b = at::empty({9}, at::kBool);
        CHECK(dt::trackedLiveBytes() - before == 30 * 8 + 5 * 8 + 9);
    }

    SECTION("views and in-place ops allocate nothing; an out-of-place op allocates its result") {
        auto t = at::ones({64, 64}, at::kFloat);
        const int64_t before = dt::trackedLiveBytes();
        auto v = t.view({4096});
        auto n = t.narrow(0, 3, 10);
        t.mul_(2.0);
        CHECK(dt::trackedLiveBytes() == before);
        auto u = t + 1.0f;
        CHECK(dt::trackedLiveBytes() - before == 64 * 64 * 4);
    }

    SECTION("peak keeps the high-water mark after the tensor is freed") {
        dt::resetTrackedPeak();
        const int64_t live0 = dt::trackedLiveBytes();
        CHECK(dt::trackedPeakBytes() == live0);
        {
            auto a = at::empty({1 << 18}, at::kFloat); // 1 MiB
            auto b = at::empty({1 << 16}, at::kFloat); // 256 KiB
        }
        CHECK(dt::trackedLiveBytes() == live0);
        CHECK(dt::trackedPeakBytes() == live0 + (1 << 20) + (1 << 18));
        {
            auto small = at::empty({100}, at::kFloat); // below the mark: peak unchanged
        }
        CHECK(dt::trackedPeakBytes() == live0 + (1 << 20) + (1 << 18));
    }

    SECTION("resetTrackedPeak lowers peak to what is live now") {
        auto keep = at::empty({1000}, at::kFloat);
        { auto big = at::empty({1 << 18}, at::kFloat); }
        CHECK(dt::trackedPeakBytes() >= dt::trackedLiveBytes() + (1 << 20));
        dt::resetTrackedPeak();
        CHECK(dt::trackedPeakBytes() == dt::trackedLiveBytes());
        { auto next = at::empty({10}, at::kFloat); }
        CHECK(dt::trackedPeakBytes() == dt::trackedLiveBytes() + 40);
    }

    SECTION("memory from the allocator is usable and 64-byte aligned") {
        auto t = at::empty({1001}, at::kFloat);
        CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64 == 0);
        t.fill_(3.0f);
        CHECK(t.sum().item<double>() == Approx(3003.0).epsilon(1e-6));
    }
}

TEST_CASE("storageBytes counts each storage once", "[allocator]") {
    auto base = at::zeros({10, 10}, at::kFloat); // 400 bytes
    auto other = at::zeros({7}, at::kFloat);     // 28 bytes

    SECTION("views of one storage count once, at the full storage size") {
        CHECK(dt::storageBytes({base}) == 400);
        CHECK(dt::storageBytes({base, base[0], base.narrow(1, 2, 3), base.view({100})}) == 400);
        CHECK(dt::storageBytes({base.narrow(0, 0, 1)}) == 400); // a small view still holds the whole buffer
    }

    SECTION("distinct storages add up") {
        CHECK(dt::storageBytes({base, other}) == 428);
        CHECK(dt::storageBytes({base, other, base.t(), other.view({7, 1})}) == 428);
        CHECK(dt::storageBytes({base.clone()}) == 400);
    }

    SECTION("undefined tensors and empty lists count zero") {
        CHECK(dt::storageBytes({}) == 0);
        CHECK(dt::storageBytes({at::Tensor(), other}) == 28);
    }
}

TEST_CASE("sampleMemory reports activations as live minus the owned categories", "[allocator]") {
    dt::installTrackingAllocator();

    SECTION("activations are what is live beyond parameters, gradients, optimizer state and buffers") {
        auto params = at::zeros({1000}, at::kFloat);
        auto grads = at::zeros({1000}, at::kFloat);
        const int64_t p = dt::storageBytes({params}), g = dt::storageBytes({grads});
        const int64_t others = dt::trackedLiveBytes() - p - g; // whatever else this process holds
        auto activation = at::zeros({5000}, at::kFloat);       // 20000 bytes

        const auto s = dt::sampleMemory(p, g, 0, 0);
        CHECK(s.parameters == 4000);
        CHECK(s.gradients == 4000);
        CHECK(s.optimizer_state == 0);
        CHECK(s.comm_buffers == 0);
        CHECK(s.live == dt::trackedLiveBytes());
        CHECK(s.peak == dt::trackedPeakBytes());
        CHECK(s.activations == others + 20000);
        CHECK(s.activations == s.live - (s.parameters + s.gradients + s.optimizer_state + s.comm_buffers));
    }

    SECTION("every category is subtracted") {
        auto hold = at::zeros({1000}, at::kFloat); // live is at least 4000 bytes
        const int64_t live = dt::trackedLiveBytes();
        const auto s = dt::sampleMemory(10, 20, 30, 40);
        CHECK(s.optimizer_state == 30);
        CHECK(s.comm_buffers == 40);
        REQUIRE(live >= 4000);
        CHECK(s.activations == live - 100);
    }

    SECTION("activations are floored at zero when the categories exceed live") {
        const int64_t live = dt::trackedLiveBytes();
        const auto s = dt::sampleMemory(live, live, 0, 0);
        CHECK(s.activations == 0);
        CHECK(s.live == live);
    }

    SECTION("peak is at least live") {
        const auto s = dt::sampleMemory(0, 0, 0, 0);
        CHECK(s.peak >= s.live);
    }
}
