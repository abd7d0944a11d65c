// sharding_theory.hpp: what the ZeRO and FSDP papers predict for a scenario,
// computed from the scenario alone (no LibTorch), so the summary, the
// benchmark and the GUI's theory overlays agree with each other.
//
// Units (FSDP's FlatParameters): TinyGPT's transformer blocks are units
// 0..L-1; the root unit (-1) holds the token and position embeddings, the
// final norm and the head, and stays unsharded from forward to backward. The
// MLP's Linear layers are units 0..k and it has no root parameters. Each unit
// is one flat fp32 vector right-padded to a multiple of the shard count N and
// split into N equal shards.
//
// Model states per rank, fp32 parameters and gradients (4 B per element) and
// AdamW's two moments (8 B), Psi = padded parameter count, N = shard count:
//   ddp    params 4 Psi       grads 4 Psi        optimizer 8 Psi       (16 Psi)
//   zero1  params 4 Psi       grads 4 Psi        optimizer 8 Psi / N   (ZeRO P_os)
//   zero2  params 4 Psi       grads 4 Psi / N    optimizer 8 Psi / N   (ZeRO P_os+g)
//   fsdp   params 4 Psi / N   grads 4 Psi / N    optimizer 8 Psi / N   (ZeRO P_os+g+p)
//          plus the materialized units at peak: root + the largest unit
//          (+ one more unit while a prefetched all-gather is in flight)
//   hsdp   as fsdp with N = ranks / replicas
//   pipeline  each stage its own blocks, whole: about 16 Psi / p (the first
//          stage adds the embeddings, the last the head); with
//          pipeline_data_parallel = "zero1" over d pipelines, AdamW 8 Psi / (p d);
//          "fsdp" also keeps only 4 Psi / (p d) of parameters between steps
//   tensor_parallel  16 bytes x (root + per block: ln1, ln2, proj and fc2
//          biases whole + qkv, proj weight, fc1, fc2 weight / N)
// Bytes sent per rank and step (ring algorithms, cost model of communicator.cpp):
//   ddp          all-reduce                    2 (N-1)/N x 4 Psi
//   zero1/zero2  reduce-scatter + all-gather   2 (N-1)/N x 4 Psi
//   fsdp         all-gather in forward and again in backward (not the root),
//                reduce-scatter                ~3 (N-1)/N x 4 Psi
//   hsdp         fsdp in the shard group + all-reduce of the shard across replicas
//                2 (R-1)/R x 4 Psi / N
//   pipeline     an inner stage sends every microbatch's activation forward and
//                its gradient back: 2 v x B x T x d_model x 4, plus 2 (d-1)/d x 4 Psi / p
//                to average its gradients over d pipelines side by side
//   tensor_parallel  4 all-reduces of the activations per block (2 forward, 2 backward):
//                L x 4 x 2 (N-1)/N x 4 B T d_model
// Optimizer offload (ZeRO-Offload, [strategy] offload_optimizer, sharded kinds):
//   device: the optimizer state goes (0); host: fp32 shard 4 Psi / N + shard
//   gradient 4 Psi / N + AdamW 8 Psi / N = 16 Psi / N. Per step, each way over
//   the host link: the shard gradient down, the updated shard up, 4 Psi / N each.
// With M microbatches the forward/backward all-gathers repeat per microbatch,
// and so do the gradient collectives when sync_every_microbatch is on.
#pragma once

#include "dtlab/scenario.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dt {

struct UnitLayout {
    std::vector<int64_t> unit_numel; // units 0..k in forward order
    int64_t root_numel = 0;          // unit -1 (0 when the model has none)
    [[nodiscard]] int64_t total() const;
};

// Parameter counts per unit from the model config (matches the real models;
// tests/unit/test_sharding.cpp checks it against them).
[[nodiscard]] UnitLayout unitLayout(const ModelConfig& model);

// numel rounded up to a multiple of shards (FSDP's right padding).
[[nodiscard]] int64_t paddedNumel(int64_t numel, int shards);

// Ranks one unit is sharded over: world for zero*/fsdp, ranks / replicas for hsdp and for
// zero*/fsdp replica groups under [fault_tolerance], 1 for ddp.
[[nodiscard]] int shardCount(const Scenario& scenario);

struct ModelStateTheory {
    int64_t parameters = 0; // bytes per rank (for fsdp: the sharded part)
    int64_t gradients = 0;
    int64_t optimizer_state = 0;
    int64_t materialized_peak = 0; // fsdp/hsdp: unsharded unit copies alive at peak; 0 otherwise
    int64_t host = 0;              // offload_optimizer: bytes in host memory (not in the device's total)
    int64_t offload_bytes_each_way =
        0; // offload_optimizer: bytes per step down (gradients) and up (parameters)
    [[nodiscard]] int64_t modelStates() const { return parameters + gradients + optimizer_state; }
};
[[nodiscard]] ModelStateTheory modelStateTheory(const Scenario& scenario);

// Bytes one rank sends per training step by the cost model (see the table above).
[[nodiscard]] int64_t bytesPerStepTheory(const Scenario& scenario);

// One line naming the formula, for summaries and tooltips: "ZeRO-3: 16 Psi / N + root + largest unit",
// with the offload clause when the strategy offloads its optimizer.
[[nodiscard]] std::string modelStateFormula(const StrategyConfig& strategy);

} // namespace dt
