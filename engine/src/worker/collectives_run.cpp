// collectives_run.cpp: the backend comparison ([strategy] kind = "collectives").
//
// No model: one message size per step, the same calls on every backend.
//  1. Build a world communicator per backend in [collectives] backends
//     (gloo: rendezvous through the Session's store; mpi: MPI_COMM_WORLD split with color 0).
//  2. Step s, size S = sizes_kb[s] KiB (float32, the full tensor):
//       for each backend, for each op:
//         one warm-up call, checked against the exact sum (rank r sends r + 1),
//         then `repeats` calls, each timed from issue to completion;
//         report the median as a BusBandwidth counter.
//     Tensor shapes (N ranks, n = S / 4 floats):
//       all-reduce      x [n] -> x [n]                   bytes on the wire per rank 2(N-1)/N S
//       all-gather      x [n/N] -> out [n]               (N-1)/N S
//       reduce-scatter  x [n] -> out [n/N]               (N-1)/N S
//  3. A barrier on every backend, then RankFinished.
// The Work records of each call carry Event::backend, so both backends share
// one timeline and the timeline shows which library moved the bytes.
#include "worker/collectives_run.hpp"

#include "dtlab/clock.hpp"
#include "dtlab/collective_cost.hpp"
#include "dtlab/errors.hpp"
#include "rank/rank_groups.hpp"
#include "rank/step_gate.hpp"
#include "telemetry/telemetry_sender.hpp"

#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace dt {
namespace {

int opIndex(const std::string& op) {
    return op == "all_reduce" ? 0 : op == "all_gather" ? 1 : 2;
}

struct OpTensors {
    at::Tensor in, out;
};

OpTensors makeTensors(const std::string& op, int64_t floats, int rank, int ranks) {
    const auto options = at::TensorOptions().dtype(at::kFloat);
    const int64_t chunk = floats / ranks;
    OpTensors t;
    if (op == "all_gather") {
        t.in = at::full({chunk}, double(rank + 1), options);
        t.out = at::zeros({chunk * ranks}, options);
    } else if (op == "reduce_scatter") {
        t.in = at::full({chunk * ranks}, double(rank + 1), options);
        t.out = at::zeros({chunk}, options);
    } else {
        t.in = at::full({floats}, double(rank + 1), options);
    }
    return t;
}

// One blocking call of `op` (the caller waits at once, as the raw calls it is
// compared with do).
void runOp(Communicator& comm, const std::string& op, OpTensors& t, CommTag tag) {
    if (op == "all_gather")
        return comm.allGatherNow(t.out, t.in, tag);
    if (op == "reduce_scatter")
        return comm.reduceScatterNow(t.out, t.in, tag);
    comm.allReduceNow(t.in, tag);
}

// After the warm-up call: every element is what the op must give.
void checkResult(const std::string& op, const OpTensors& t, int rank, int ranks, const std::string& backend) {
    bool ok = true;
    if (op == "all_gather") {
        const int64_t chunk = t.in.numel();
        for (int r = 0; r < ranks && ok; ++r) {
            const at::Tensor part = t.out.narrow(0, r * chunk, chunk);
            ok = part.eq(float(r + 1)).all().item<bool>();
        }
    } else {
        const at::Tensor& result = op == "reduce_scatter" ? t.out : t.in;
        ok = result.eq(float(ranks * (ranks + 1) / 2)).all().item<bool>(); // the sum of 1..N
    }
    if (!ok)
        throw CommError(CommErrorKind::Other, backend + " " + op + " of " + std::to_string(t.in.numel()) +
                                                  " floats gave a wrong result on rank " +
                                                  std::to_string(rank));
}

} // namespace

int runCollectives(const LaunchEnv& env, const Scenario& scenario, TelemetrySender& sender, StepGate& gate,
                   c10::intrusive_ptr<c10d::Store> store) {
    const CollectivesConfig& c = scenario.collectives;
    const int rank = env.rank, ranks = env.world;
    EventSink* sink = scenario.telemetry.enabled ? &sender : nullptr;
    const GlooOptions gloo = glooOptionsFor(env, scenario);
    std::vector<std::unique_ptr<Communicator>> comms;
    for (const std::string& backend : c.backends)
        comms.push_back(makeGroupCommunicator(
            {backend, "dtlab/world_" + backend, 0, rank, ranks, kGroupWorld}, store, gloo, sink));
    auto instant = [&](EventKind kind, int step) {
        Event e;
        e.kind = kind;
        e.phase = EventPhase::Instant;
        e.rank = rank;
        e.step = step;
        e.t_ns = sender.now();
        sender.emit(e);
    };
    instant(EventKind::RankReady, -1);
    if (rank == 0) {
        std::string names;
        for (const std::string& b : c.backends)
            names += (names.empty() ? "" : " and ") + b;
        sender.log(LogLevel::Info, "timing collectives on " + names + ": " +
                                       std::to_string(c.sizes_kb.size()) + " sizes, " +
                                       std::to_string(c.repeats) + " calls each after a warm-up");
    }

    for (int step = 0; step < scenario.run.steps; ++step) {
        gate.waitToStart(step);
        const int64_t step_begin = sender.now();
        // Whole floats, divisible by N so all-gather / reduce-scatter chunks are equal.
        int64_t floats = int64_t(c.sizes_kb[size_t(step)]) * 1024 / 4;
        floats = std::max<int64_t>(ranks, floats / ranks * ranks);
        const int64_t size_bytes = floats * 4;
        for (size_t b = 0; b < comms.size(); ++b) {
            Communicator& comm = *comms[b];
            for (const std::string& op : c.ops) {
                OpTensors t = makeTensors(op, floats, rank, ranks);
                CommTag tag;
                tag.step = step;
                tag.unit = opIndex(op);
                runOp(comm, op, t, tag);
                checkResult(op, t, rank, ranks, c.backends[b]);
                comm.barrierNow(tag); // start the timed calls together
                std::vector<int64_t> durations;
                for (int i = 0; i < c.repeats; ++i) {
                    const int64_t t0 = monotonicNowNs();
                    runOp(comm, op, t, tag);
                    durations.push_back(monotonicNowNs() - t0);
                }
                std::sort(durations.begin(), durations.end());
                const int64_t median = durations[durations.size() / 2];
                Event e;
                e.kind = EventKind::BusBandwidth;
                e.phase = EventPhase::Counter;
                e.rank = rank;
                e.step = step;
                e.t_ns = sender.now();
                e.value = busBandwidthGBs(op, double(size_bytes), ranks, double(median) / 1e9);
                e.dur_ns = median;
                e.bytes = size_bytes;
                e.unit = int16_t(opIndex(op));
                e.backend = comm.backend();
                e.group_size = uint16_t(ranks);
                sender.emit(e);
            }
        }
        Event span;
        span.kind = EventKind::Step;
        span.phase = EventPhase::Span;
        span.rank = rank;
        span.step = step;
        span.t_ns = step_begin;
        span.dur_ns = sender.now() - step_begin;
        sender.emit(span);
    }
    for (auto& comm : comms)
        comm->barrierNow(); // leave together
    instant(EventKind::RankFinished, scenario.run.steps - 1);
    return 0;
}

} // namespace dt
