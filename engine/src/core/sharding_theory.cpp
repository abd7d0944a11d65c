// sharding_theory.cpp: the ZeRO / FSDP formulas of sharding_theory.hpp.
#include "dtlab/sharding_theory.hpp"

#include "dtlab/diloco_theory.hpp"

#include <algorithm>

namespace dt {

int64_t UnitLayout::total() const {
    int64_t n = root_numel;
    for (int64_t u : unit_numel)
        n += u;
    return n;
}

UnitLayout unitLayout(const ModelConfig& m) {
    UnitLayout layout;
    if (m.kind == "tiny_gpt") {
        const int64_t C = m.d_model, V = m.vocab, T = m.context, R = m.mlp_ratio;
        // ln1 (2C) + qkv (3C*C + 3C) + proj (C*C + C) + ln2 (2C) + fc1 (R*C*C + R*C) + fc2 (R*C*C + C)
        const int64_t block =
            2 * C + (3 * C * C + 3 * C) + (C * C + C) + 2 * C + (R * C * C + R * C) + (R * C * C + C);
        layout.unit_numel.assign(size_t(m.layers), block);
        layout.root_numel = V * C + T * C + 2 * C + C * V; // tok_emb, pos_emb, ln_f, head (no bias)
    } else if (m.kind == "mlp") {
        int64_t in = 784;
        for (int h : m.hidden) {
            layout.unit_numel.push_back(in * h + h);
            in = h;
        }
        layout.unit_numel.push_back(in * 10 + 10);
    }
    return layout;
}

int64_t paddedNumel(int64_t numel, int shards) {
    return shards <= 1 ? numel : (numel + shards - 1) / shards * shards;
}

int shardCount(const Scenario& s) {
    const StrategyKind k = s.strategy.kind;
    if (k == StrategyKind::Ddp || k == StrategyKind::Pipeline || k == StrategyKind::Diloco ||
        k == StrategyKind::Swarm)
        return 1;
    if (k == StrategyKind::Hsdp)
        return s.topology.ranks / std::max(1, s.topology.replicas);
    if (ftGroupSize(s) > 1) // replica groups under a quorum: sharded inside a group
        return ftGroupSize(s);
    return s.topology.ranks;
}

ModelStateTheory modelStateTheory(const Scenario& s) {
    const UnitLayout layout = unitLayout(s.model);
    const StrategyKind k = s.strategy.kind;
    const int N = shardCount(s);
    int64_t padded = 0, largest_unit = 0;
    for (int64_t u : layout.unit_numel) {
        padded += paddedNumel(u, N);
        largest_unit = std::max(largest_unit, paddedNumel(u, N));
    }
    const int64_t root_padded = paddedNumel(layout.root_numel, N);
    padded += root_padded;
    const int64_t shard = padded / N; // every unit's padded size divides by N

    ModelStateTheory t;
    if (k == StrategyKind::Pipeline) { // each stage holds about 1/p of the model, whole
        const int64_t stage = layout.total() / std::max(1, s.topology.stages);
        t.parameters = 4 * stage;
        t.gradients = 4 * stage;
        t.optimizer_state = 8 * stage;
        const int d = s.topology.ranks / std::max(1, s.topology.stages);
        if (s.strategy.pipeline_data_parallel != "ddp" && d > 1) { // + ZeRO-1 / FSDP over the pipelines
            const int64_t padded = paddedNumel(stage, d);
            t.parameters = 4 * padded; // one flat vector, padded
            t.gradients = 4 * stage + 4 * padded / d;
            t.optimizer_state = 8 * padded / d;
            if (s.strategy.pipeline_data_parallel == "fsdp") { // the shard, + the whole stage during a step
                t.parameters = 4 * padded / d;
                t.materialized_peak = 4 * padded;
            }
        }
        return t;
    }
    if (k == StrategyKind::Swarm) { // a server: its stage whole, AdamW, and DiLoCo's global copy and momentum
        const int64_t stage = layout.total() / std::max(1, s.topology.stages);
        t.parameters = 4 * stage;
        t.gradients = 4 * stage;
        t.optimizer_state = 8 * stage + 8 * stage;
        return t;
    }
    if (k ==
        StrategyKind::TensorParallel) { // Megatron: each block's Linear weights split N ways, the rest whole
        const int64_t C = s.model.d_model, R = s.model.mlp_ratio, W = std::max(1, s.topology.ranks);
        const int64_t split =
            (3 * C * C + 3 * C) + C * C + (R * C * C + R * C) + R * C * C; // qkv, proj W, fc1, fc2 W
        const int64_t whole = 2 * C + C + 2 * C + C;                       // ln1, proj b, ln2, fc2 b
        const int64_t per_rank = layout.root_numel + int64_t(s.model.layers) * (whole + split / W);
        t.parameters = 4 * per_rank;
        t.gradients = 4 * per_rank;
        t.optimizer_state = 8 * per_rank;
        return t;
    }
    if (k == StrategyKind::Diloco) { // local and global copies; inner optimizer state and the outer momentum
        t.parameters = 8 * layout.total();
        t.gradients = 4 * layout.total();
        t.optimizer_state = (s.optimizer.kind == "sgd" ? 0 : 8 * layout.total()) + 4 * layout.total();
        return t;
    }
    if (k == StrategyKind::Ddp) {
        t.parameters = 4 * layout.total();
        t.gradients = 4 * layout.total();
        t.optimizer_state = 8 * layout.total();
    } else if (k == StrategyKind::Zero1) {
        t.parameters = 4 * padded;
        t.gradients = 4 * padded;
        t.optimizer_state = 8 * shard;
    } else if (k == StrategyKind::Zero2) {
        t.parameters = 4 * padded;
        t.gradients = 4 * shard;
        t.optimizer_state = 8 * shard;
    } else { // fsdp, hsdp
        t.parameters = 4 * shard;
        t.gradients = 4 * shard;
        t.optimizer_state = 8 * shard;
        const bool prefetch = s.strategy.forward_prefetch || s.strategy.backward_prefetch;
        const int64_t units_alive = prefetch ? 2 : 1;
        t.materialized_peak = 4 * (root_padded + units_alive * largest_unit);
    }
    if (s.strategy.offload_optimizer) { // ZeRO-Offload: AdamW and what it reads and writes move to the host
        t.host = t.optimizer_state + 4 * shard + 4 * shard;
        t.optimizer_state = 0;
        t.offload_bytes_each_way = 4 * shard;
    }
    return t;
}

int64_t bytesPerStepTheory(const Scenario& s) {
    const UnitLayout layout = unitLayout(s.model);
    const StrategyKind k = s.strategy.kind;
    const int W = s.topology.ranks;
    const int N = shardCount(s);
    const int M = s.strategy.microbatches;
    const int grad_syncs = s.strategy.sync_every_microbatch ? M : 1;
    if (k == StrategyKind::Ddp)
        return grad_syncs * (2 * int64_t(W - 1) * 4 * layout.total() / W);
    if (k == StrategyKind::TensorParallel) { // 4 all-reduces of (B/M) x T x C fp32 per block and microbatch
        const int64_t call = 4 * int64_t(s.data.batch_per_rank / M) * s.model.context * s.model.d_model;
        return int64_t(M) * s.model.layers * 4 * (2 * int64_t(W - 1) * call / W);
    }
    if (k == StrategyKind::Swarm) { // a trainer's calls: forward sends x_s, backward x_s and dy_s, per stage
        const int S = std::max(1, s.topology.stages);
        const int64_t BT = int64_t(s.data.batch_per_rank) * s.model.context;
        int64_t total = 0;
        for (int stage = 0; stage < S; ++stage) {
            const int64_t x = stage == 0 ? 8 * BT : 4 * BT * s.model.d_model; // tokens are int64
            const int64_t dy = stage == S - 1 ? 4 * BT * s.model.vocab : 4 * BT * s.model.d_model;
            total += 2 * x + dy;
        }
        return total;
    }
    if (k == StrategyKind::Diloco) { // the average over H steps (diloco_theory.hpp has the per-sync figures)
        return dilocoTheory(s).bytes_per_period / std::max(1, s.diloco.inner_steps);
    }
    if (k ==
        StrategyKind::Pipeline) { // an inner stage: every microbatch's activation forward and gradient back,
        // once per chunk; plus the all-reduce of its 1/p of the model across pipelines
        const int p = std::max(1, s.topology.stages), d = W / p;
        const int64_t activations = int64_t(s.data.batch_per_rank) * s.model.context * s.model.d_model * 4;
        const int64_t p2p = p > 1 ? 2 * int64_t(s.strategy.chunks_per_rank) * activations : 0;
        return p2p + 2 * int64_t(d - 1) * (4 * layout.total() / p) / std::max(1, d);
    }

    // Per unit, with the communicator's integer cost model.
    int64_t total = 0;
    const auto allGather = [&](int64_t padded) { return int64_t(N - 1) * (4 * padded / N); };
    const auto reduceScatter = [&](int64_t padded) { return int64_t(N - 1) * (4 * padded) / N; };
    std::vector<int64_t> units = layout.unit_numel;
    const bool has_root = layout.root_numel > 0;
    if (has_root)
        units.push_back(layout.root_numel);
    for (size_t i = 0; i < units.size(); ++i) {
        const bool is_root = has_root && i + 1 == units.size();
        const int64_t padded = paddedNumel(units[i], N);
        total += grad_syncs * reduceScatter(padded);
        if (k == StrategyKind::Zero1 || k == StrategyKind::Zero2) {
            total += allGather(padded); // the updated shards, once after the optimizer
        } else {
            total += M * allGather(padded); // forward
            if (!is_root)
                total += M * allGather(padded); // backward (the root stays materialized)
        }
    }
    if (k == StrategyKind::Hsdp ||
        ftGroupSize(s) > 1) { // the replicate all-reduce of each shard (sharded kinds)
        const int R = k == StrategyKind::Hsdp ? s.topology.replicas : ftReplicaGroups(s);
        for (int64_t u : units)
            total += grad_syncs * 2 * int64_t(R - 1) * (4 * paddedNumel(u, N) / N) / R;
    }
    return total;
}

std::string modelStateFormula(const StrategyConfig& strategy) {
    std::string formula;
    switch (strategy.kind) {
    case StrategyKind::Ddp:
        formula = "DDP: params 4 Psi + grads 4 Psi + AdamW 8 Psi = 16 Psi per rank";
        break;
    case StrategyKind::Zero1:
        formula = "ZeRO-1: 4 Psi + 4 Psi + 8 Psi / N";
        break;
    case StrategyKind::Zero2:
        formula = "ZeRO-2: 4 Psi + (4 + 8) Psi / N";
        break;
    case StrategyKind::Fsdp:
        formula = "ZeRO-3 / FSDP: 16 Psi / N + root + largest unit materialized";
        break;
    case StrategyKind::Hsdp:
        formula = "HSDP: 16 Psi / N (N = ranks per replica) + root + largest unit";
        break;
    case StrategyKind::Pipeline:
        if (strategy.pipeline_data_parallel == "zero1")
            formula = "Pipeline + ZeRO-1: about (4 + 4) Psi / p + 8 Psi / (p d) over d pipelines";
        else if (strategy.pipeline_data_parallel == "fsdp")
            formula = "Pipeline + FSDP: about 16 Psi / (p d) between steps over d pipelines, + the whole "
                      "stage (4 Psi / "
                      "p) and its gradients during a step";
        else
            formula = "Pipeline: each stage holds its blocks whole, about 16 Psi / p";
        break;
    case StrategyKind::TensorParallel:
        formula = "Tensor parallel: embeddings, norms and head whole + 1/N of each block's Linear weights, x "
                  "16 bytes";
        break;
    case StrategyKind::Diloco:
        formula = "DiLoCo: local 4 Psi + global 4 Psi + grads 4 Psi + inner AdamW 8 Psi + outer momentum 4 "
                  "Psi = 24 Psi";
        break;
    case StrategyKind::Collectives:
        break;
    case StrategyKind::Swarm:
        formula = "SWARM: a server holds its stage whole: params 4 Psi/S + grads 4 Psi/S + AdamW 8 Psi/S + "
                  "DiLoCo global copy and momentum 8 Psi/S = 24 Psi / S; trainers hold none";
        break;
    }
    if (strategy.offload_optimizer)
        formula +=
            "; offload: AdamW 8 Psi / N leaves the device, and the host holds it with an fp32 shard and its "
            "gradient, 16 Psi / N";
    return formula;
}

} // namespace dt
