// test_tracking_allocator.cpp: the counting CPU allocator (live, peak, reset,
// owner tags, start-up peak) and the memory accounting built on it (storage
// bytes, the activations rule, the measured side of a sample), and that freed
// memory stays in the process for the next step.
//
// The allocator is process-wide once installed, so every check here works on
// differences of trackedLiveBytes() around its own allocations.
#include "memory/memory_accounting.hpp"
#include "memory/tracking_allocator.hpp"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include <malloc.h>
#include <sys/resource.h>

#include <atomic>
#include <thread>
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

namespace {

using dt::MemoryOwner;

// Live bytes per owner now.
std::vector<int64_t> liveByOwner() {
    std::vector<int64_t> v;
    for (int k = 0; k < dt::kMemoryOwners; ++k)
        v.push_back(dt::trackedLiveBytes(MemoryOwner(k)));
    return v;
}

// after - before, per owner
std::vector<int64_t> grownBy(const std::vector<int64_t>& before) {
    std::vector<int64_t> d = liveByOwner();
    for (size_t k = 0; k < d.size(); ++k)
        d[k] -= before[k];
    return d;
}

std::vector<int64_t> only(MemoryOwner owner, int64_t bytes) {
    std::vector<int64_t> v(size_t(dt::kMemoryOwners), 0);
    v[size_t(owner)] = bytes;
    return v;
}

} // namespace

TEST_CASE("The tracking allocator counts each allocation against the owner that made it", "[allocator]") {
    dt::installTrackingAllocator();

    SECTION("without a scope an allocation is a temporary") {
        CHECK(dt::currentAllocationOwner() == MemoryOwner::Temporaries);
        const auto before = liveByOwner();
        auto t = at::empty({250}, at::kFloat);
        CHECK(grownBy(before) == only(MemoryOwner::Temporaries, 1000));
    }

    SECTION("an allocation under each scope adds exactly its bytes to that owner and no other") {
        for (int k = 0; k < dt::kMemoryOwners; ++k) {
            const auto owner = MemoryOwner(k);
            CAPTURE(dt::memoryOwnerName(owner));
            const auto before = liveByOwner();
            {
                at::Tensor t;
                {
                    const dt::AllocationOwnerScope scope(owner);
                    t = at::empty({1000 + k}, at::kFloat);
                }
                CHECK(grownBy(before) == only(owner, (1000 + k) * 4));
            }
            CHECK(grownBy(before) == only(owner, 0));
        }
    }

    SECTION("the innermost scope wins and the outer one comes back when it ends") {
        const auto before = liveByOwner();
        const dt::AllocationOwnerScope outer(MemoryOwner::Parameters);
        auto p = at::empty({100}, at::kFloat);
        at::Tensor g;
        {
            const dt::AllocationOwnerScope inner(MemoryOwner::Gradients);
            CHECK(dt::currentAllocationOwner() == MemoryOwner::Gradients);
            g = at::empty({30}, at::kFloat);
        }
        CHECK(dt::currentAllocationOwner() == MemoryOwner::Parameters);
        auto p2 = at::empty({5}, at::kDouble);
        auto expected = only(MemoryOwner::Parameters, 400 + 40);
        expected[size_t(MemoryOwner::Gradients)] = 120;
        CHECK(grownBy(before) == expected);
    }

    SECTION("a free under another scope subtracts from the owner that allocated the block") {
        const auto before = liveByOwner();
        at::Tensor state;
        {
            const dt::AllocationOwnerScope scope(MemoryOwner::OptimizerState);
            state = at::zeros({512}, at::kFloat);
        }
        {
            const dt::AllocationOwnerScope scope(MemoryOwner::Activations);
            CHECK(grownBy(before) == only(MemoryOwner::OptimizerState, 2048));
            state = at::Tensor(); // freed while activations are the current owner
        }
        CHECK(grownBy(before) == only(MemoryOwner::OptimizerState, 0));
    }

    SECTION("the per-owner sums add up to the total live bytes") {
        int64_t sum = 0;
        for (int64_t v : liveByOwner())
            sum += v;
        CHECK(sum == dt::trackedLiveBytes());
    }

    SECTION("retagging moves a block's bytes to the new owner, and its free subtracts from there") {
        const auto before = liveByOwner();
        auto grad = at::empty({64, 4}, at::kFloat); // a temporary of the backward...
        CHECK(grownBy(before) == only(MemoryOwner::Temporaries, 1024));
        CHECK(dt::retagStorage(grad.narrow(0, 3, 2), MemoryOwner::Gradients)); // ...handed to .grad
        CHECK(grownBy(before) == only(MemoryOwner::Gradients, 1024));          // the whole block moves
        grad = at::Tensor();
        CHECK(grownBy(before) == only(MemoryOwner::Gradients, 0));
        CHECK(grownBy(before) == only(MemoryOwner::Temporaries, 0));
    }

    SECTION("memory the allocator did not make cannot be retagged") {
        std::vector<float> outside(16, 1.0f);
        auto blob = at::from_blob(outside.data(), {16}, at::kFloat);
        const auto before = liveByOwner();
        CHECK_FALSE(dt::retagStorage(blob, MemoryOwner::Gradients));
        CHECK_FALSE(dt::retagStorage(at::Tensor(), MemoryOwner::Gradients));
        CHECK(grownBy(before) == only(MemoryOwner::Gradients, 0));
    }

    SECTION("scopes are per thread: concurrent threads count against their own owners") {
        // Four threads, each under its own owner, allocate and free many blocks,
        // keeping some; the totals are exact, with nothing lost to races.
        const std::vector<MemoryOwner> owners = {MemoryOwner::Parameters, MemoryOwner::Gradients,
                                                 MemoryOwner::OptimizerState, MemoryOwner::CommBuffers};
        const auto before = liveByOwner();
        std::vector<std::vector<at::Tensor>> kept(owners.size());
        std::atomic<int> ready{0};
        std::vector<std::thread> threads;
        for (size_t i = 0; i < owners.size(); ++i)
            threads.emplace_back([&, i] {
                const dt::AllocationOwnerScope scope(owners[i]);
                ++ready;
                while (ready.load() < int(owners.size()))
                    std::this_thread::yield(); // start together, so the counters are contended
                for (int n = 1; n <= 2000; ++n) {
                    auto t = at::empty({n % 97 + 1}, at::kFloat);
                    if (n % 100 == 0)
                        kept[i].push_back(t); // 20 kept blocks: n = 100, 200, ..., 2000
                }
            });
        for (auto& t : threads)
            t.join();
        int64_t kept_bytes = 0;
        for (int n = 100; n <= 2000; n += 100)
            kept_bytes += (n % 97 + 1) * 4;
        auto expected = only(MemoryOwner::Parameters, 0);
        for (MemoryOwner o : owners)
            expected[size_t(o)] = kept_bytes;
        CHECK(grownBy(before) == expected);
        CHECK(dt::currentAllocationOwner() == MemoryOwner::Temporaries); // this thread's owner is untouched
    }
}

TEST_CASE("The start-up peak is kept when set-up ends and the step peak starts from live", "[allocator]") {
    dt::installTrackingAllocator();
    auto keep = at::empty({1000}, at::kFloat);
    { auto build_whole_model = at::empty({1 << 18}, at::kFloat); } // 1 MiB, freed before set-up ends
    const int64_t startup_peak = dt::trackedPeakBytes();
    REQUIRE(startup_peak >= dt::trackedLiveBytes() + (1 << 20));
    dt::markStartupEnd();

    SECTION("the start-up peak is the peak reached before markStartupEnd") {
        CHECK(dt::trackedStartupPeakBytes() == startup_peak);
    }

    SECTION("the step peak is what is live plus what the step allocates") {
        const int64_t live = dt::trackedLiveBytes();
        CHECK(dt::trackedPeakBytes() == live);
        { auto activation = at::empty({1 << 10}, at::kFloat); }
        CHECK(dt::trackedPeakBytes() == live + 4096);
        CHECK(dt::trackedStartupPeakBytes() == startup_peak);
    }

    SECTION("each owner keeps its own peak, exact between samples, reset with the step peak") {
        const int64_t grads0 = dt::trackedLiveBytes(MemoryOwner::Gradients);
        CHECK(dt::trackedPeakBytes(MemoryOwner::Gradients) == grads0);
        {
            const dt::AllocationOwnerScope scope(MemoryOwner::Gradients);
            auto a = at::empty({1000}, at::kFloat);
            { auto b = at::empty({500}, at::kFloat); } // 6000 bytes at once, then 4000
            auto c = at::empty({100}, at::kFloat);     // 4400: below the mark
        }
        CHECK(dt::trackedLiveBytes(MemoryOwner::Gradients) == grads0);
        CHECK(dt::trackedPeakBytes(MemoryOwner::Gradients) == grads0 + 6000);
        dt::resetTrackedPeak();
        CHECK(dt::trackedPeakBytes(MemoryOwner::Gradients) == grads0);
    }

    SECTION("a sample's measured side reads the allocator's counters") {
        at::Tensor opt;
        {
            const dt::AllocationOwnerScope scope(MemoryOwner::OptimizerState);
            opt = at::zeros({300}, at::kFloat);
        }
        const auto s = dt::sampleMemory(0, 0, 0, 0);
        for (int k = 0; k < dt::kMemoryOwners; ++k) {
            CHECK(s.measured.of(MemoryOwner(k)) == dt::trackedLiveBytes(MemoryOwner(k)));
            CHECK(s.measured.peak_by_owner[size_t(k)] == dt::trackedPeakBytes(MemoryOwner(k)));
        }
        CHECK(s.measured.of(MemoryOwner::OptimizerState) >= 1200);
        CHECK(s.measured.step_peak == dt::trackedPeakBytes());
        CHECK(s.measured.startup_peak == startup_peak);
        // The resident set holds at least what the allocator made (it also holds LibTorch itself).
        CHECK(s.measured.rss >= s.live);
    }
}

TEST_CASE("Memory a step frees stays in the process for the next step", "[allocator]") {
    dt::installTrackingAllocator(); // sets glibc's thresholds (keepFreedMemoryForReuse)
    // A "step": 8 activations of 3 MiB made, written and freed together (24 MiB, 6,144 pages).
    constexpr int64_t kBlock = 3 << 20, kBlocks = 8, kPages = kBlock * kBlocks / 4096;
    const auto step = [] {
        std::vector<at::Tensor> activations;
        for (int i = 0; i < kBlocks; ++i)
            activations.push_back(at::empty({kBlock / 4}, at::kFloat).fill_(1.0f));
    };
    const auto faults = [] {
        struct rusage usage {};
        getrusage(RUSAGE_SELF, &usage);
        return int64_t(usage.ru_minflt);
    };
    malloc_trim(0); // what earlier tests left free goes back: the first step faults its pages in
    const int64_t start = faults();
    step();
    const int64_t first = faults() - start;
    step();
    const int64_t before_third = faults();
    step();
    const int64_t third = faults() - before_third;
    INFO("page faults: first step " << first << ", third " << third << " (of " << kPages << " pages)");
    // glibc's defaults map each block on its own or trim the heap's top when
    // the step frees them, and every step faults its 6,144 pages in again.
    CHECK(first >= kPages / 2); // the measure sees a step's faults
    CHECK(third < kPages / 10); // the third step reuses the pages of the one before
}
