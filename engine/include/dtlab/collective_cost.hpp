// collective_cost.hpp: the alpha-beta cost model of ring collectives, and bus
// bandwidth, for the backend comparison (scenarios/backends_compare.toml).
//
// A ring collective of a tensor of S bytes over N ranks moves, per rank,
//   all-reduce       2(N-1)/N x S      (reduce-scatter then all-gather)
//   all-gather       (N-1)/N  x S      (S = the gathered tensor)
//   reduce-scatter   (N-1)/N  x S      (S = the input tensor)
// Cost model: t(S) = alpha + factor x S / B, alpha = the fixed cost per call
// (latency, synchronisation), B = the link's bandwidth.
// Bus bandwidth (nccl-tests' busbw) = factor x S / t: the rate each rank's
// link carried, comparable across N and ops; it approaches B for large S.
#pragma once

#include "dtlab/events.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dt {

// The ring factor of an op ("all_reduce", "all_gather", "reduce_scatter").
[[nodiscard]] double ringFactor(const std::string& op, int ranks);

// factor x size / seconds, in GB/s (1e9 bytes); 0 when seconds <= 0.
[[nodiscard]] double busBandwidthGBs(const std::string& op, double size_bytes, int ranks, double seconds);

struct AlphaBetaFit {
    double alpha_s = 0.0;           // fixed cost per call
    double bandwidth_bytes_s = 0.0; // B
    bool ok = false;                // false: fewer than 2 distinct sizes, or no positive slope
    // Model time for a call moving `wire_bytes` per rank.
    [[nodiscard]] double seconds(double wire_bytes) const { return alpha_s + wire_bytes / bandwidth_bytes_s; }
};

// Least-squares fit of t = alpha + wire_bytes / B to measured points
// (wire_bytes = ringFactor x size). alpha is clamped at 0.
[[nodiscard]] AlphaBetaFit fitAlphaBeta(const std::vector<double>& wire_bytes,
                                        const std::vector<double>& seconds);

// The backend comparison's measurement, from the ranks' BusBandwidth
// counters (unit = op 0/1/2, backend, bytes = message size, dur_ns = the
// rank's median time, value = its bus GB/s): one point per (backend, op,
// size), averaged over the ranks, and the cost model fitted per (backend, op).
// The summary's bus_bandwidth object and the GUI's bandwidth view both use it.
struct BusBandwidthPoint {
    CommBackend backend = CommBackend::Gloo;
    std::string op; // "all_reduce", "all_gather", "reduce_scatter"
    int64_t size_bytes = 0;
    double seconds = 0.0; // mean over ranks of each rank's median
    double gbs = 0.0;     // mean over ranks of the bus bandwidth
};
struct BusBandwidthModel {
    CommBackend backend = CommBackend::Gloo;
    std::string op;
    AlphaBetaFit fit;
};
struct BusBandwidthMeasure {
    int ranks = 0;
    std::vector<BusBandwidthPoint> points; // sorted by backend, op, size
    std::vector<BusBandwidthModel> models; // the fits that worked
};
[[nodiscard]] BusBandwidthMeasure measureBusBandwidth(const std::vector<Event>& events);

} // namespace dt
