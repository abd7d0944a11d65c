// test_gloo_ring.cpp: the ring collectives on Gloo's synchronous pairs
// (comm/gloo_ring.cpp), through the Gloo Communicator, ranks as threads of this
// process: sizes the chunking must get right (fewer elements than ranks, odd
// counts), messages far larger than a socket's buffers (the even/odd order must
// not deadlock), the dtypes the rings sum and the tensors they hand to
// ProcessGroupGloo instead, bit-identical results on every rank, and a peer
// that leaves mid-ring.
#include "comm/communicator.hpp"
#include "comm/gloo_communicator.hpp"
#include "comm/gloo_ring.hpp"

#include "inprocess_gloo.hpp"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

using dt::CommError;
using dt::Communicator;

namespace {

// Rank r's float payload: not exactly representable sums, so the order of the
// additions shows in the last bits.
at::Tensor wavy(int rank, int64_t numel) {
    return at::sin(at::arange(numel, at::kFloat) * 0.37f + float(rank) * 1.3f) * float(rank + 1);
}

double maxAbs(const at::Tensor& a, const at::Tensor& b) {
    return a.numel() == 0 ? 0.0 : (a - b).abs().max().item<double>();
}

} // namespace

TEST_CASE("Ring all-reduce sums any element count on every group size, bit-identical on every rank",
          "[comm][ring]") {
    const int world = GENERATE(2, 3, 4, 5);
    const int64_t numel = GENERATE(1, 2, 3, 7, 1000, 4097);
    CAPTURE(world, numel);
    std::vector<at::Tensor> got(static_cast<size_t>(world));
    dttest::runGlooRanks(world, "ring_allreduce", [&](int r, std::unique_ptr<Communicator>& comm) {
        at::Tensor x = wavy(r, numel);
        comm->allReduceNow(x);
        got[size_t(r)] = x;
    });
    at::Tensor expected = at::zeros({numel}, at::kFloat);
    for (int r = 0; r < world; ++r)
        expected += wavy(r, numel);
    for (int r = 0; r < world; ++r) {
        CAPTURE(r);
        CHECK(maxAbs(got[size_t(r)], expected) < 1e-5);
        CHECK(at::equal(got[size_t(r)], got[0])); // each chunk's bits come from its owner
    }
}

TEST_CASE("Ring collectives move messages far larger than a socket's buffers without deadlock",
          "[comm][ring]") {
    const int world = GENERATE(2, 3, 4);
    CAPTURE(world);
    const int64_t numel = 12 * 1024 * 1024 / 4 / world * world; // 12 MiB, a multiple of world
    std::vector<double> allreduce_error(static_cast<size_t>(world)),
        scatter_error(static_cast<size_t>(world));
    std::vector<bool> gathered(static_cast<size_t>(world)), broadcast_ok(static_cast<size_t>(world));
    dttest::runGlooRanks(world, "ring_large", [&](int r, std::unique_ptr<Communicator>& comm) {
        at::Tensor expected = at::zeros({numel}, at::kFloat);
        for (int q = 0; q < world; ++q)
            expected += at::full({numel}, float(q + 1));

        at::Tensor x = at::full({numel}, float(r + 1));
        comm->allReduceNow(x);
        allreduce_error[size_t(r)] = maxAbs(x, expected);

        at::Tensor out = at::empty({numel / world}, at::kFloat);
        comm->reduceScatterNow(out, at::full({numel}, float(r + 1)));
        scatter_error[size_t(r)] = maxAbs(out, expected.narrow(0, 0, numel / world));

        at::Tensor all = at::empty({numel}, at::kFloat);
        comm->allGatherNow(all, at::full({numel / world}, float(r)));
        bool ok = true;
        for (int q = 0; q < world; ++q)
            ok = ok && at::equal(all.narrow(0, q * (numel / world), numel / world),
                                 at::full({numel / world}, float(q)));
        gathered[size_t(r)] = ok;

        at::Tensor b = at::full({numel}, float(r));
        comm->broadcastNow(b, 1);
        broadcast_ok[size_t(r)] = at::equal(b, at::full({numel}, 1.0f));
    });
    for (int r = 0; r < world; ++r) {
        CAPTURE(r);
        CHECK(allreduce_error[size_t(r)] == 0.0);
        CHECK(scatter_error[size_t(r)] == 0.0);
        CHECK(gathered[size_t(r)]);
        CHECK(broadcast_ok[size_t(r)]);
    }
}

TEST_CASE("The rings sum integers and doubles, and hand other tensors to ProcessGroupGloo", "[comm][ring]") {
    SECTION("int64 and float64 sums are exact") {
        std::vector<at::Tensor> ints(3), doubles(3);
        dttest::runGlooRanks(3, "ring_dtypes", [&](int r, std::unique_ptr<Communicator>& comm) {
            at::Tensor i = at::arange(5, at::kLong) + (int64_t(1) << 40); // beyond float's exact integers
            i += r;
            comm->allReduceNow(i);
            ints[size_t(r)] = i;
            at::Tensor d = at::full({4}, 0.1 * (r + 1), at::kDouble);
            comm->allReduceNow(d);
            doubles[size_t(r)] = d;
        });
        const at::Tensor expected_ints = (at::arange(5, at::kLong) + (int64_t(1) << 40)) * 3 + 3;
        for (int r = 0; r < 3; ++r) {
            CHECK(at::equal(ints[size_t(r)], expected_ints));
            CHECK(maxAbs(doubles[size_t(r)], at::full({4}, 0.6, at::kDouble)) < 1e-15);
        }
    }
    SECTION("the rings add float32/64 and int32/64, and choose by dtype alone") {
        CHECK(dt::GlooRing::sumsDtype(at::kFloat));
        CHECK(dt::GlooRing::sumsDtype(at::kLong));
        CHECK_FALSE(dt::GlooRing::sumsDtype(at::kBFloat16));
        CHECK_FALSE(dt::GlooRing::sumsDtype(at::kByte));
    }
    SECTION("wrong sizes are refused before anything is sent, and the group goes on") {
        std::vector<std::string> errors(2);
        std::vector<at::Tensor> after(2);
        dttest::runGlooRanks(2, "ring_sizes", [&](int r, std::unique_ptr<Communicator>& comm) {
            try {
                comm->reduceScatterNow(at::empty({2}), at::ones({5})); // 5 is not 2 x 2
            } catch (const std::exception& e) {
                errors[size_t(r)] = e.what();
            }
            at::Tensor x = at::ones({3});
            comm->allReduceNow(x); // the mesh was not closed by the refusal
            after[size_t(r)] = x;
        });
        for (int r = 0; r < 2; ++r) {
            CAPTURE(errors[size_t(r)]);
            CHECK(errors[size_t(r)].find("reduceScatter") != std::string::npos);
            CHECK(at::equal(after[size_t(r)], at::full({3}, 2.0f)));
        }
    }
    SECTION("a non-contiguous all-reduce and broadcast give the right values in place") {
        std::vector<at::Tensor> sums(2), casts(2);
        dttest::runGlooRanks(2, "ring_fallback", [&](int r, std::unique_ptr<Communicator>& comm) {
            at::Tensor h = at::full({4, 2}, float(r + 1)).t(); // a transposed view
            comm->allReduceNow(h);
            sums[size_t(r)] = h.contiguous().view(-1);
            at::Tensor m = at::full({3, 3}, float(r)).t(); // a transposed view
            comm->broadcastNow(m, 0);
            casts[size_t(r)] = m.contiguous();
        });
        for (int r = 0; r < 2; ++r) {
            CHECK(at::equal(sums[size_t(r)], at::full({8}, 3.0f)));
            CHECK(at::equal(casts[size_t(r)], at::zeros({3, 3})));
        }
    }
}

TEST_CASE("Collectives of every kind in a row keep their messages apart", "[comm][ring]") {
    const int world = GENERATE(2, 3);
    CAPTURE(world);
    std::vector<bool> ok(static_cast<size_t>(world));
    dttest::runGlooRanks(world, "ring_mixed", [&](int r, std::unique_ptr<Communicator>& comm) {
        bool good = true;
        for (int round = 0; round < 20; ++round) {
            // Async calls queue on the communicator thread; the rings run there in issue order.
            at::Tensor a = at::full({64 + round}, float(r));
            at::Tensor g = at::empty({world * 3}, at::kFloat);
            at::Tensor s = at::empty({2}, at::kFloat);
            auto w1 = comm->allReduce(a);
            auto w2 = comm->allGather(g, at::full({3}, float(r + round)));
            auto w3 = comm->reduceScatter(s, at::ones({2 * world}));
            auto w4 = comm->barrier();
            w1->wait();
            w2->wait();
            w3->wait();
            w4->wait();
            good = good && at::equal(a, at::full({64 + round}, float(world * (world - 1) / 2)));
            for (int q = 0; q < world; ++q)
                good = good && at::equal(g.narrow(0, q * 3, 3), at::full({3}, float(q + round)));
            good = good && at::equal(s, at::full({2}, float(world)));
        }
        ok[size_t(r)] = good;
    });
    for (int r = 0; r < world; ++r)
        CHECK(ok[size_t(r)]);
}

TEST_CASE("A ring whose peer leaves fails on every rank at once, not after the timeout", "[comm][ring]") {
    // Rank 2 leaves; rank 0 reads from it and sees the connection close, rank 1
    // reads from rank 0 only: it learns of the failure because rank 0 closes
    // its pairs (with a 20 s timeout, a wait for it would show).
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::string> errors(3);
    dttest::runGlooRanks(3, "ring_peer_lost", [&](int r, std::unique_ptr<Communicator>& comm) {
        comm->barrierNow();
        if (r == 2) {
            comm.reset(); // closes its pairs: its neighbours see the connection close
            return;
        }
        try {
            at::Tensor x = at::ones({1024});
            comm->allReduceNow(x);
        } catch (const CommError& e) {
            errors[size_t(r)] = std::string(e.what()) + " kind " + std::to_string(int(e.kind()));
        }
    });
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(elapsed < 10.0);
    for (int r = 0; r < 2; ++r) {
        CAPTURE(errors[size_t(r)]);
        CHECK(errors[size_t(r)].find("all-reduce") != std::string::npos);
        CHECK(errors[size_t(r)].find("lost a peer") != std::string::npos);
    }
}
