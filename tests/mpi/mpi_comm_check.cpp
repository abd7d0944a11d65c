// mpi_comm_check.cpp: every collective of dtlab's MPI communicator against a
// reference computed locally, run under mpirun by test_mpi_communicator.cpp:
//
//   mpirun -np N mpi_comm_check [GROUPS]
//
// Rank r of N holds x_r[i] = (r + 1) * 1000 + i (exact in float32 for the
// sizes used), so every expected result is known without communicating. With
// GROUPS = 2 the world splits into two groups by rank parity (MPI_Comm_split)
// and each group checks its own sums. Prints "rank R: ok" per rank and exits
// 0, or prints the first mismatch and exits 1. Usage errors exit 2.
#include "comm/mpi_communicator.hpp"

#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

int g_failures = 0;
int g_world_rank = 0;

void expectEqual(const char* what, const at::Tensor& got, const at::Tensor& want) {
    if (got.sizes() == want.sizes() && at::equal(got, want))
        return;
    ++g_failures;
    const auto diff = (got.flatten() - want.flatten()).abs();
    std::fprintf(stderr, "rank %d: %s: mismatch (max abs diff %g)\n", g_world_rank, what,
                 got.numel() == want.numel() ? diff.max().item<float>() : -1.0f);
}

// The payload of group rank r: (r + 1) * 1000 + i.
at::Tensor payload(int r, int64_t n) {
    return at::arange(n, at::kFloat) + float((r + 1) * 1000);
}

} // namespace

int main(int argc, char** argv) {
    const int groups = argc > 1 ? std::atoi(argv[1]) : 1;
    if (groups != 1 && groups != 2) {
        std::fprintf(stderr, "usage: mpirun -np N mpi_comm_check [1|2]\n");
        return 2;
    }
    const char* rank_env = std::getenv("OMPI_COMM_WORLD_RANK");
    const char* size_env = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (!rank_env || !size_env) {
        std::fprintf(stderr, "mpi_comm_check: start it with mpirun (%s)\n",
                     dt::mpiUnavailableReason().c_str());
        return 2;
    }
    g_world_rank = std::atoi(rank_env);
    const int world = std::atoi(size_env);
    const int color = groups == 2 ? g_world_rank % 2 : 0;
    const int n = groups == 2 ? (world + 1 - color) / 2 : world;
    const int r = groups == 2 ? g_world_rank / 2 : g_world_rank;
    try {
        auto comm = dt::makeMpiCommunicator(color, r, n, nullptr);
        for (const int64_t numel : {int64_t(n), int64_t(1024 * n), int64_t(262144 * n)}) {
            // all-reduce: sum over ranks q of (q + 1) * 1000 + i
            at::Tensor sum_of_bases = at::full({numel}, float(1000 * n * (n + 1) / 2));
            at::Tensor want_sum = sum_of_bases + at::arange(numel, at::kFloat) * float(n);
            at::Tensor x = payload(r, numel);
            comm->allReduce(x)->wait();
            expectEqual("all-reduce", x, want_sum);
            // all-gather: the concatenation of every rank's payload
            std::vector<at::Tensor> parts;
            for (int q = 0; q < n; ++q)
                parts.push_back(payload(q, numel));
            at::Tensor gathered = at::empty({numel * n}, at::kFloat);
            comm->allGather(gathered, payload(r, numel))->wait();
            expectEqual("all-gather", gathered, at::cat(parts));
            // reduce-scatter: this rank's chunk of the sum
            at::Tensor chunk = at::empty({numel / n}, at::kFloat);
            comm->reduceScatter(chunk, payload(r, numel))->wait();
            expectEqual("reduce-scatter", chunk, want_sum.narrow(0, r * (numel / n), numel / n));
            // broadcast from the last rank
            at::Tensor b = payload(r, numel);
            comm->broadcast(b, n - 1)->wait();
            expectEqual("broadcast", b, payload(n - 1, numel));
        }
        // Ring of queued send/recv (even ranks send first, so no deadlock),
        // then posted messages both ways at once, then a barrier.
        if (n > 1) {
            const int next = (r + 1) % n, prev = (r + n - 1) % n;
            at::Tensor in = at::empty({100}, at::kFloat);
            if (r % 2 == 0) {
                comm->send(payload(r, 100), next)->wait();
                comm->recv(in, prev)->wait();
            } else {
                comm->recv(in, prev)->wait();
                comm->send(payload(r, 100), next)->wait();
            }
            expectEqual("send/recv", in, payload(prev, 100));
            at::Tensor from_next = at::empty({64}, at::kFloat), from_prev = at::empty({64}, at::kFloat);
            auto s1 = comm->postSend(payload(r, 64), next, 7);
            auto s2 = comm->postSend(payload(r, 64) * 2, prev, 8);
            auto r1 = comm->postRecv(from_prev, prev, 7);
            auto r2 = comm->postRecv(from_next, next, 8);
            r1->wait();
            r2->wait();
            s1->wait();
            s2->wait();
            comm->reapPosted();
            expectEqual("posted send/recv (tag 7)", from_prev, payload(prev, 64));
            expectEqual("posted send/recv (tag 8)", from_next, payload(next, 64) * 2);
        }
        comm->barrier()->wait();
        if (comm->backendName() != "mpi") {
            ++g_failures;
            std::fprintf(stderr, "rank %d: backend name '%s'\n", g_world_rank, comm->backendName().c_str());
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", g_world_rank, e.what());
        return 1;
    }
    if (g_failures == 0)
        std::printf("rank %d: ok\n", g_world_rank);
    return g_failures == 0 ? 0 : 1;
}
