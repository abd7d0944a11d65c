// bench_collectives.cpp: bus bandwidth of dtlab's Gloo and MPI communicators
// against raw c10d ProcessGroupGloo and raw MPI calls of the same sizes, in
// the same processes, interleaved (a burst of other work slows all of them).
//
//   mpirun -np N bench_collectives PORT [MAX_MB]
//
// Per op (all-reduce, all-gather, reduce-scatter) and size S (4 KiB x 4^k up
// to MAX_MB, default 64 MiB), each implementation is timed in ROUNDS rounds
// of `iters` back-to-back calls, the rounds interleaved between
// implementations; the time per call is the median round. iters makes a round
// last about kRoundSeconds (3..20000 calls) for the slowest of the
// implementations compared with each other (a round of small calls must last
// milliseconds, or one scheduler tick decides it; and a fixed count made 4 KiB
// Gloo calls at 4 ranks take minutes).
// Bus bandwidth = ring factor x S / time (dtlab/collective_cost.hpp).
// Rank 0 prints one markdown row per (op, size):
//   | op | size | N | dtlab gloo | raw c10d gloo | ratio | dtlab mpi | raw MPI | ratio |
//   | dtlab mpi async | ratio |   (one row; split here to fit the column limit)
// ratio = dtlab / raw (1.0 = no overhead; below 1, dtlab is slower). dtlab's
// Gloo collectives are rings on Gloo's pairs in synchronous mode, driven by the
// calling thread (comm/gloo_ring.cpp); raw c10d runs Gloo's algorithms on its
// worker thread over asynchronous pairs. LibTorch 1.13's Gloo has no
// reduce-scatter, so there is no raw c10d call to compare dtlab's with (n/a).
//
// dtlab's calls are its blocking forms (allReduceNow, ...), which run on the
// calling thread when nothing is queued, as the raw calls do. "async" is the
// form an overlapping strategy uses, allReduce(x)->wait(): the call may be
// handed to the communicator thread, which costs the thread wake-ups.
#include "comm/gloo_communicator.hpp"
#include "comm/mpi_communicator.hpp"
#include "dtlab/collective_cost.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

constexpr int kRounds = 5;
constexpr double kRoundSeconds = 0.1;

double nowSeconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int envInt(const char* name) {
    const char* v = std::getenv(name);
    if (!v) {
        std::fprintf(stderr, "bench_collectives: %s is not set: run it under mpirun\n", name);
        std::exit(2);
    }
    return std::atoi(v);
}

struct Buffers {
    at::Tensor full;                // S bytes: all-reduce in place, reduce-scatter input, all-gather output
    at::Tensor chunk;               // S / N: all-gather input, reduce-scatter output
    std::vector<at::Tensor> chunks; // views of `full` (raw c10d all-gather outputs)
};

using Call = std::function<void()>;

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: mpirun -np N bench_collectives PORT [MAX_MB]\n");
        return 2;
    }
    const int port = std::atoi(argv[1]);
    const int64_t max_bytes = int64_t(argc > 2 ? std::atof(argv[2]) : 64.0) * 1024 * 1024;
    const int rank = envInt("OMPI_COMM_WORLD_RANK"), n = envInt("OMPI_COMM_WORLD_SIZE");
    at::set_num_threads(1);

    // dtlab's MPI communicator initialises MPI (MPI_THREAD_MULTIPLE).
    auto dtlab_mpi = dt::makeMpiCommunicator(0, rank, n, nullptr);
    MPI_Comm raw_mpi = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &raw_mpi);

    c10d::TCPStoreOptions store_options;
    store_options.port = uint16_t(port);
    store_options.isServer = rank == 0;
    store_options.waitWorkers = false;
    store_options.timeout = std::chrono::seconds(60);
    auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", store_options);
    dt::GlooOptions gloo;
    gloo.prefix = "bench/dtlab";
    gloo.timeout = std::chrono::milliseconds(120000);
    auto dtlab_gloo = dt::makeGlooCommunicator(store, rank, n, gloo, nullptr);
    // Raw c10d: the same options dtlab uses (one device on 127.0.0.1, one thread).
    auto raw_options = c10d::ProcessGroupGloo::Options::create(std::chrono::milliseconds(120000));
    raw_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    raw_options->threads = 1;
    auto raw_gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>("bench/raw", store), rank, n, raw_options);

    if (rank == 0) {
        std::printf("| op | size | ranks | dtlab gloo GB/s | raw c10d gloo GB/s | ratio | dtlab mpi GB/s | "
                    "raw MPI GB/s | "
                    "ratio | dtlab mpi async GB/s | ratio |\n");
        std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    }
    for (const std::string op : {"all_reduce", "all_gather", "reduce_scatter"}) {
        for (int64_t size = 4096; size <= max_bytes; size *= 4) {
            const int64_t floats = std::max<int64_t>(n, size / 4 / n * n);
            const int64_t bytes = floats * 4;
            Buffers b;
            b.full = at::ones({floats}, at::kFloat);
            b.chunk = at::ones({floats / n}, at::kFloat);
            for (int r = 0; r < n; ++r)
                b.chunks.push_back(b.full.narrow(0, r * (floats / n), floats / n));
            const int count = int(floats / n);

            // The four implementations of this op (empty = none).
            Call dtlab_g, raw_g, dtlab_m, raw_m, dtlab_m_async;
            if (op == "all_reduce") {
                dtlab_g = [&] { dtlab_gloo->allReduceNow(b.full); };
                raw_g = [&] {
                    std::vector<at::Tensor> t{b.full};
                    raw_gloo->allreduce(t)->wait();
                };
                dtlab_m = [&] { dtlab_mpi->allReduceNow(b.full); };
                dtlab_m_async = [&] { dtlab_mpi->allReduce(b.full)->wait(); };
                raw_m = [&] {
                    MPI_Allreduce(MPI_IN_PLACE, b.full.data_ptr<float>(), int(floats), MPI_FLOAT, MPI_SUM,
                                  raw_mpi);
                };
            } else if (op == "all_gather") {
                dtlab_g = [&] { dtlab_gloo->allGatherNow(b.full, b.chunk); };
                raw_g = [&] {
                    std::vector<at::Tensor> in{b.chunk};
                    std::vector<std::vector<at::Tensor>> out{b.chunks};
                    raw_gloo->allgather(out, in)->wait();
                };
                dtlab_m = [&] { dtlab_mpi->allGatherNow(b.full, b.chunk); };
                dtlab_m_async = [&] { dtlab_mpi->allGather(b.full, b.chunk)->wait(); };
                raw_m = [&] {
                    MPI_Allgather(b.chunk.data_ptr<float>(), count, MPI_FLOAT, b.full.data_ptr<float>(),
                                  count, MPI_FLOAT, raw_mpi);
                };
            } else {
                dtlab_g = [&] { dtlab_gloo->reduceScatterNow(b.chunk, b.full); };
                dtlab_m = [&] { dtlab_mpi->reduceScatterNow(b.chunk, b.full); };
                dtlab_m_async = [&] { dtlab_mpi->reduceScatter(b.chunk, b.full)->wait(); };
                raw_m = [&] {
                    MPI_Reduce_scatter_block(b.full.data_ptr<float>(), b.chunk.data_ptr<float>(), count,
                                             MPI_FLOAT, MPI_SUM, raw_mpi);
                };
            }
            std::vector<Call*> calls{&dtlab_g, &raw_g, &raw_m, &dtlab_m, &dtlab_m_async};
            // Calls per round: enough for a round of ~kRoundSeconds, from the
            // slowest of the implementations compared with each other (the Gloo
            // pair; the MPI three), timed after a warm-up and agreed on by all
            // ranks (the max over ranks), so both sides of a ratio do the same work.
            std::vector<double> call_s(calls.size(), 0.0);
            for (size_t i = 0; i < calls.size(); ++i) {
                if (!*calls[i])
                    continue;
                (*calls[i])(); // warm-up
                MPI_Barrier(raw_mpi);
                const double t0 = nowSeconds();
                for (int k = 0; k < 3; ++k)
                    (*calls[i])();
                call_s[i] = (nowSeconds() - t0) / 3;
            }
            MPI_Allreduce(MPI_IN_PLACE, call_s.data(), int(call_s.size()), MPI_DOUBLE, MPI_MAX, raw_mpi);
            const auto itersFor = [&](std::initializer_list<size_t> family) {
                double slowest = 1e-9;
                for (size_t i : family)
                    slowest = std::max(slowest, call_s[i]);
                return int(std::clamp<double>(kRoundSeconds / slowest, 3, 20000));
            };
            const int gloo_iters = itersFor({0, 1}), mpi_iters = itersFor({2, 3, 4});
            std::vector<std::vector<double>> rounds(calls.size());
            for (int round = 0; round < kRounds; ++round)
                for (size_t i = 0; i < calls.size(); ++i) {
                    if (!*calls[i])
                        continue;
                    const int iters = i < 2 ? gloo_iters : mpi_iters;
                    MPI_Barrier(raw_mpi); // start together
                    const double t0 = nowSeconds();
                    for (int k = 0; k < iters; ++k)
                        (*calls[i])();
                    rounds[i].push_back((nowSeconds() - t0) / iters);
                }
            if (rank != 0)
                continue;
            double gbs[5] = {0, 0, 0, 0, 0};
            for (size_t i = 0; i < calls.size(); ++i) {
                if (rounds[i].empty())
                    continue;
                std::sort(rounds[i].begin(), rounds[i].end());
                gbs[i] = dt::busBandwidthGBs(op, double(bytes), n, rounds[i][rounds[i].size() / 2]);
            }
            auto cell = [](double v) { return v > 0 ? std::to_string(v).substr(0, 5) : std::string("n/a"); };
            auto ratio = [](double a, double b) {
                return b > 0 ? std::to_string(a / b).substr(0, 4) : std::string("n/a");
            };
            const std::string label = bytes >= (1 << 20) ? std::to_string(bytes >> 20) + " MiB"
                                                         : std::to_string(bytes >> 10) + " KiB";
            std::printf("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", op.c_str(),
                        label.c_str(), n, cell(gbs[0]).c_str(), cell(gbs[1]).c_str(),
                        ratio(gbs[0], gbs[1]).c_str(), cell(gbs[3]).c_str(), cell(gbs[2]).c_str(),
                        ratio(gbs[3], gbs[2]).c_str(), cell(gbs[4]).c_str(), ratio(gbs[4], gbs[2]).c_str());
            std::fflush(stdout);
        }
    }
    MPI_Barrier(raw_mpi);
    dtlab_gloo.reset();
    dtlab_mpi.reset();
    raw_gloo.reset();
    MPI_Comm_free(&raw_mpi);
    dt::finalizeMpi();
    return 0;
}
