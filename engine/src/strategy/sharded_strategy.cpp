// sharded_strategy.cpp: ZeRO-1, ZeRO-2, ZeRO-3 (FSDP) and HSDP over flat units
// (flat_unit.hpp). N = shard group size, Psi = parameters, S = a unit's shard.
//
// zero1  parameters and gradients whole on every rank, AdamW state for the shard only.
//        backward: each unit's flat gradient (the .grad are views into it) is
//        reduce-scattered in place into its own shard slice as soon as the unit's
//        gradients are ready; optimizer: AdamW on the shard (a view of the
//        parameters); then all-gather the shards back into the whole parameters.
//        Bytes: reduce-scatter (N-1)/N 4Psi + all-gather (N-1)/N 4Psi = 2 (N-1)/N 4Psi.
// zero2  as zero1, but a unit's gradients are flattened into a temporary buffer,
//        reduce-scattered into a (S) shard gradient and freed: gradient memory 4Psi/N.
// fsdp   as zero2, and the parameters too are sharded: a unit's full vector is
//        all-gathered before its forward, freed after it, all-gathered again
//        before its backward, freed once its gradients are flattened. The root
//        unit (embeddings, final norm, head) stays materialized from its first
//        forward to the end of backward. Prefetch issues the next unit's
//        all-gather early (forward: unit i+1 when unit i starts; backward: the
//        last block from the root's pre-backward, when the loss's gradient
//        starts the backward, then unit i-1 before unit i's reduce-scatter),
//        at most prefetch_limit in flight (as FSDP's BACKWARD_PRE prefetch).
//        Bytes: all-gather 2x + reduce-scatter ~ 3 (N-1)/N 4Psi.
// hsdp   fsdp inside each replica group (shard group), and each reduce-scattered
//        shard gradient all-reduced across replica groups (replicate group):
//        + 2 (R-1)/R 4Psi/N. A unit's all-reduce is issued right after its
//        reduce-scatter and starts when that is done (FSDP's HYBRID_SHARD: both
//        on the post-backward stream), so it overlaps the backward of the
//        units before it; the end of backward waits for the last ones only.
// offload_optimizer (ZeRO-Offload, Ren et al. 2021), any of the above: AdamW's
//        state and an fp32 copy of the shard (host_shard, with its gradient
//        host_grad) live in host memory (memory/host_memory.hpp), outside the
//        device's counted bytes. optimizer step: (1) shard_grad -> host_grad,
//        4S bytes down ("grads to host"); (2) AdamW on host_shard; (3)
//        host_shard -> shard, 4S bytes up ("params to device"); then as above.
//        Device saves 8S (the moments); host holds 16S. On this CPU-only
//        machine both copies are memcpy in one RAM; a PCIe link is theory.
// Gradients are summed by the collectives and divided by the world size once,
// before AdamW; AdamW is elementwise, so updating shards gives the same result
// as updating the whole model (the padding stays zero: zero gradient, zero value).
#include "checkpoint/sharded_checkpoint.hpp"
#include "sharding/flat_unit.hpp"
#include "strategy/gradient_ready_hook.hpp"
#include "strategy/training_strategy.hpp"

#include "dtlab/scenario.hpp"
#include "memory/host_memory.hpp"
#include "memory/memory_accounting.hpp"
#include "memory/tracking_allocator.hpp"
#include "rank/rank_telemetry.hpp"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/optim/adamw.h>

#include <optional>

namespace dt {

namespace {

enum class Stage { Zero1, Zero2, Fsdp };

// A unit's gradient collective of this microbatch, in flight.
struct PendingReduce {
    FlatUnit* unit = nullptr;
    at::Tensor input;  // zero2/fsdp: the flattened gradients (padded); zero1: unit->flat_grad
    at::Tensor output; // (S)
    CommWorkPtr reduce_scatter;
    CommWorkPtr all_reduce; // hsdp: across replica groups
};

class ShardedStrategy final : public TrainingStrategy {
  public:
    explicit ShardedStrategy(const StrategyContext& c)
        : m_scenario(*c.scenario), m_config(c.scenario->strategy), m_model(*c.model),
          m_comm(c.shard_group ? *c.shard_group : *c.world), m_replicate(c.replicate_group),
          m_telemetry(c.sink, c.rank, c.sink != nullptr), m_rank(c.rank),
          // The ranks whose gradients the collectives sum: the shard group
          // (all ranks; one replica group under a quorum) x hsdp's replicas.
          m_world_size(m_comm.size() * (m_replicate ? m_replicate->size() : 1)) {
        const StrategyTraits& traits = strategyTraits(m_config.kind);
        m_stage = traits.shards_parameters  ? Stage::Fsdp
                  : traits.shards_gradients ? Stage::Zero2
                                            : Stage::Zero1;

        auto named = m_model.trainableParameters();
        m_units = buildFlatUnits(named, m_model.parameterUnits(), m_comm.size(), m_comm.rank());
        for (const auto& p : named)
            m_params.push_back(p.tensor);
        m_unit_of_param.assign(m_params.size(), nullptr);
        for (auto& u : m_units) {
            for (int p : u.params)
                m_unit_of_param[size_t(p)] = &u;
            if (u.id < 0)
                m_root = &u;
            else
                m_block_units.push_back(&u);
        }

        at::NoGradGuard no_grad;
        for (auto& u : m_units) {
            std::optional<AllocationOwnerScope> grads(std::in_place, MemoryOwner::Gradients);
            if (m_stage == Stage::Zero1) {
                u.flat_grad = at::zeros({u.padded}, at::kFloat);
                for (size_t k = 0; k < u.params.size(); ++k) {
                    at::Tensor& p = m_params[size_t(u.params[k])];
                    p.mutable_grad() = u.flat_grad.narrow(0, u.offsets[k], p.numel()).view(p.sizes());
                }
                u.shard_grad = u.flat_grad.narrow(0, int64_t(m_comm.rank()) * u.shard_numel, u.shard_numel);
            } else {
                u.shard_grad = at::zeros({u.shard_numel}, at::kFloat);
            }
            grads.reset();
            if (m_stage == Stage::Fsdp) {
                u.shard = u.shard.clone(); // its own storage; then the unsharded vector goes
                releaseStorage(u.full);
                u.materialized = false;
            }
            u.shard.requires_grad_(true);
            u.shard.mutable_grad() = u.shard_grad;
        }

        if (m_config.offload_optimizer) {
            for (auto& u : m_units) {
                u.host_shard = hostZeros(u.shard_numel);
                u.host_shard.copy_(u.shard.detach());
                u.host_grad = hostZeros(u.shard_numel);
                u.host_shard.requires_grad_(true);
                u.host_shard.mutable_grad() = u.host_grad;
            }
        }
        std::vector<at::Tensor> shards;
        for (auto& u : m_units)
            shards.push_back(u.optimizedShard());
        const OptimizerConfig& o = m_scenario.optimizer;
        m_optimizer = std::make_unique<torch::optim::AdamW>(shards, torch::optim::AdamWOptions(o.lr)
                                                                        .betas({o.beta1, o.beta2})
                                                                        .eps(o.eps)
                                                                        .weight_decay(o.weight_decay));
        if (m_config.offload_optimizer) {
            // AdamW would create its moments on first use, with zeros_like (device
            // memory): create them now, in host memory, as it would (step 0, zeros).
            for (auto& u : m_units) {
                auto state = std::make_unique<torch::optim::AdamWParamState>();
                state->step(0);
                state->exp_avg(hostZeros(u.shard_numel));
                state->exp_avg_sq(hostZeros(u.shard_numel));
                m_optimizer->state()[c10::guts::to_string(u.host_shard.unsafeGetTensorImpl())] =
                    std::move(state);
            }
        }

        for (size_t i = 0; i < m_params.size(); ++i) {
            auto accumulator = torch::autograd::impl::grad_accumulator(m_params[i]);
            accumulator->add_post_hook(
                std::make_unique<GradientReadyHook>([this, i] { onGradientReady(i); }));
            m_accumulators.push_back(std::move(accumulator));
        }
    }

    std::string name() const override { return strategyKindName(m_config.kind); }

    // ---- unit hooks (fsdp/hsdp) -------------------------------------------------
    void beforeUnitForward(int id) override {
        if (m_stage != Stage::Fsdp)
            return;
        FlatUnit* u = unitById(id);
        if (!u)
            return;
        waitGathered(*u, /*backward=*/false);
        // The root's forward runs twice (embeddings first, head last): prefetch
        // the block that comes next in this microbatch's forward, if any.
        const int next = id < 0 ? m_next_forward_block : id + 1;
        if (m_config.forward_prefetch && next < int(m_block_units.size()))
            prefetch(unitById(next));
    }

    void afterUnitForward(int id) override {
        if (id >= 0)
            m_next_forward_block = id + 1;
        if (m_stage != Stage::Fsdp || id < 0)
            return; // the root stays until the end of backward
        if (FlatUnit* u = unitById(id))
            release(*u);
    }

    void beforeUnitBackward(int id) override {
        if (m_stage != Stage::Fsdp)
            return;
        if (id < 0) {
            // The root's pre-backward (the loss's gradient, before the head's
            // backward): the root is still whole; the last block, freed after
            // its forward, runs backward first. FSDP's root pre-backward hook
            // prefetches it here, so its all-gather overlaps the head's backward.
            if (m_config.backward_prefetch && !m_block_units.empty())
                prefetch(m_block_units.back());
            return;
        }
        FlatUnit* u = unitById(id);
        if (!u)
            return;
        waitGathered(*u, /*backward=*/true);
        // Issued now, the all-gather of the unit that runs backward next sits in
        // the communicator's queue before this unit's reduce-scatter.
        if (m_config.backward_prefetch && id > 0)
            prefetch(unitById(id - 1));
    }

    // ---- the step -------------------------------------------------------------
    void beginStep(int step) override {
        m_step = step;
        at::NoGradGuard no_grad;
        for (auto& u : m_units) {
            if (u.flat_grad.defined())
                u.flat_grad.zero_();
            else
                u.shard_grad.zero_();
        }
    }

    void beginMicrobatch(int microbatch, bool last) override {
        m_microbatch = microbatch;
        m_last_microbatch = last;
        m_communicate = last || m_config.sync_every_microbatch;
        m_next_forward_block = 0;
        for (auto& u : m_units)
            u.pending_grads = int(u.params.size());
        m_in_backward = true;
    }

    void finishMicrobatch() override {
        m_in_backward = false;
        for (auto& u : m_units)
            DT_ENFORCE(u.pending_grads == 0,
                       "a unit's gradients never all arrived (a parameter unused in forward?)");
        if (m_pending.empty())
            return;
        const int64_t wait_begin = now();
        at::NoGradGuard no_grad;
        for (auto& p : m_pending) {
            p.reduce_scatter->wait();
            if (p.all_reduce)
                p.all_reduce->wait();
            if (m_stage == Stage::Zero1) {
                // The reduced sum is in this rank's slice of flat_grad. Zero the other
                // slices so the next microbatch's reduce-scatter adds only new gradients.
                if (!m_last_microbatch)
                    zeroOtherSlices(*p.unit);
            } else {
                p.unit->shard_grad.add_(p.output);
            }
        }
        span(EventKind::Wait, wait_begin, -1);
        m_pending.clear();
    }

    void optimizerStep() override {
        {
            at::NoGradGuard no_grad;
            for (auto& u : m_units)
                u.shard_grad.mul_(1.0 / double(m_world_size));
        }
        if (m_config.offload_optimizer) {
            offloadedOptimizerStep();
        } else {
            const int64_t t = now();
            m_optimizer->step();
            span(EventKind::Optimizer, t, -1);
        }
        if (m_stage == Stage::Fsdp)
            return;
        // zero1/zero2: every rank updated its shard; gather the updated shards
        // back into the whole parameters (the shard is a view of `full`).
        std::vector<CommWorkPtr> works;
        for (auto& u : m_units)
            works.push_back(m_comm.allGather(u.full, u.shard.detach(), tag(u.id)));
        const int64_t wait_begin = now();
        for (auto& w : works)
            w->wait();
        span(EventKind::Wait, wait_begin, -1);
    }

    // ---- what the rank holds --------------------------------------------------
    StrategyMemory memory() const override {
        StrategyMemory m;
        for (const auto& u : m_units) {
            const int64_t full = storageNbytes(u.full);
            if (m_stage == Stage::Fsdp) {
                m.parameters += storageNbytes(u.shard) + full;
                m.parameters_materialized += full;
            } else {
                m.parameters += full;
            }
            m.gradients += m_stage == Stage::Zero1 ? storageNbytes(u.flat_grad) : storageNbytes(u.shard_grad);
        }
        if (m_stage != Stage::Zero1) { // gradients accumulated unsharded (no_sync microbatches)
            std::vector<at::Tensor> grads;
            for (const auto& p : m_params)
                if (p.grad().defined())
                    grads.push_back(p.grad());
            m.gradients += storageBytes(grads);
        }
        for (const auto& p : m_pending)
            m.comm_buffers += (m_stage == Stage::Zero1 || !p.input.defined() ? 0 : storageNbytes(p.input)) +
                              storageNbytes(p.output);
        if (m_config.offload_optimizer) {
            std::vector<at::Tensor> host;
            for (const auto& u : m_units)
                host.insert(host.end(), {u.host_shard, u.host_grad});
            m.host = storageBytes(host) + adamStateBytes(*m_optimizer);
        } else {
            m.optimizer_state = adamStateBytes(*m_optimizer);
        }
        return m;
    }

    std::vector<NamedParameter> fullParameters() override {
        auto named = m_model.trainableParameters();
        if (m_stage != Stage::Fsdp)
            return named;
        for (auto& u : m_units)
            waitGathered(u, false, /*telemetry=*/false);
        for (auto& p : named)
            p.tensor = p.tensor.detach().clone();
        for (auto& u : m_units)
            release(u, /*telemetry=*/false);
        return named;
    }

    int64_t modeledBytesSent() const override {
        return m_comm.modeledBytesSent() + (m_replicate ? m_replicate->modeledBytesSent() : 0);
    }
    int64_t modeledBytesReceived() const override {
        return m_comm.modeledBytesReceived() + (m_replicate ? m_replicate->modeledBytesReceived() : 0);
    }

    int64_t saveCheckpoint(const std::string& step_dir, int last_step) override {
        // hsdp: every replica holds the same shards; replica 0 writes them.
        const bool writer = !m_replicate || m_replicate->rank() == 0;
        return saveShardedCheckpoint(step_dir, last_step, m_scenario, m_units, *m_optimizer, m_comm, writer);
    }

    int loadCheckpoint(const std::string& step_dir, int64_t& bytes_read) override {
        return loadShardedCheckpoint(step_dir, m_units, *m_optimizer, m_comm.rank(), m_stage != Stage::Fsdp,
                                     bytes_read);
    }

    // ---- under a quorum (ft/ft_group_training.cpp) -----------------------------
    std::vector<at::Tensor> replicaGradients() override {
        std::vector<at::Tensor> grads;
        for (auto& u : m_units)
            grads.push_back(u.shard_grad);
        return grads;
    }

    std::vector<at::Tensor> optimizedTensors() override {
        std::vector<at::Tensor> tensors;
        for (auto& u : m_units)
            tensors.push_back(u.optimizedShard());
        return tensors;
    }

    torch::optim::AdamW* adamW() override { return m_optimizer.get(); }

    void afterStateLoaded() override {
        at::NoGradGuard no_grad;
        for (auto& u : m_units)
            if (u.host_shard.defined())
                u.shard.copy_(u.host_shard);
        if (m_stage == Stage::Fsdp)
            return; // the shard is all this rank keeps; forward gathers the rest
        std::vector<CommWorkPtr> works;
        for (auto& u : m_units)
            works.push_back(m_comm.allGather(u.full, u.shard.detach(), tag(u.id)));
        for (auto& w : works)
            w->wait();
    }

  private:
    // ---- optimizer offload ------------------------------------------------------
    // Down, AdamW on the host, up: each a span on the timeline, the copies with their bytes.
    void offloadedOptimizerStep() {
        at::NoGradGuard no_grad;
        int64_t bytes = 0;
        int64_t t = now();
        for (auto& u : m_units) {
            u.host_grad.copy_(u.shard_grad);
            bytes += u.shard_numel * 4;
        }
        spanWithBytes(EventKind::GradsToHost, t, bytes);
        t = now();
        m_optimizer->step();
        m_telemetry.span(EventKind::Optimizer)
            .from(t)
            .step(m_step)
            .microbatch(-1)
            .value(kOptimizerOnHost)
            .emit();
        t = now();
        for (auto& u : m_units)
            u.shard.detach().copy_(u.host_shard.detach());
        spanWithBytes(EventKind::ParamsToDevice, t, bytes);
    }

    // ---- gradients ------------------------------------------------------------
    void onGradientReady(size_t param_index) {
        if (!m_in_backward)
            return;
        FlatUnit& u = *m_unit_of_param[param_index];
        if (m_telemetry.sink()) // the moment this gradient is ready: the autograd view marks it on the graph
            m_telemetry.instant(EventKind::GradReady)
                .step(m_step)
                .unit(int(param_index))
                .microbatch(m_microbatch)
                .bytes(m_params[param_index].numel() * 4)
                .value(double(u.id))
                .emit();
        if (--u.pending_grads == 0)
            onUnitGradientsReady(u);
    }

    // Every parameter of the unit has its gradient, so every autograd node
    // that reads the unit's parameters has run: its full vector may go.
    void onUnitGradientsReady(FlatUnit& u) {
        if (!m_communicate) { // no_sync: gradients keep accumulating, unsharded
            if (m_stage == Stage::Fsdp)
                release(u);
            return;
        }
        at::NoGradGuard no_grad;
        freeFinishedReduceInputs();
        const AllocationOwnerScope owner(MemoryOwner::CommBuffers);
        PendingReduce p;
        p.unit = &u;
        if (m_stage == Stage::Zero1) {
            p.input = u.flat_grad;
            p.output = u.shard_grad; // in place: the ring reads its input before it writes
        } else {
            p.input = at::zeros({u.padded}, at::kFloat); // the padding stays zero
            for (size_t k = 0; k < u.params.size(); ++k) {
                at::Tensor& param = m_params[size_t(u.params[k])];
                p.input.narrow(0, u.offsets[k], param.numel()).copy_(param.grad().reshape({-1}));
                param.mutable_grad() = at::Tensor(); // the unsharded gradient goes
            }
            p.output = at::empty({u.shard_numel}, at::kFloat);
        }
        p.reduce_scatter = m_comm.reduceScatter(p.output, p.input, tag(u.id));
        // hsdp: the all-reduce across replicas is issued now too, queued to start
        // when the reduce-scatter is done (FSDP's HYBRID_SHARD: both on the
        // post-backward stream), so it overlaps the backward of the units before.
        if (m_replicate)
            p.all_reduce = m_replicate->allReduce(p.output, tag(u.id), /*after=*/p.reduce_scatter);
        m_pending.push_back(std::move(p));
        if (m_stage == Stage::Fsdp)
            release(u);
    }

    // zero2/fsdp: a reduce-scatter's flattened input is needed only until the
    // collective has read it. FSDP drops it when the collective is done (the
    // post-backward stream's free); here, at the next unit's gradients, so that
    // at most the units whose reduce-scatters are still queued hold one.
    void freeFinishedReduceInputs() {
        if (m_stage == Stage::Zero1)
            return; // the input is flat_grad itself
        for (auto& p : m_pending)
            if (p.input.defined() && p.reduce_scatter->isCompleted())
                p.input = at::Tensor();
    }

    void zeroOtherSlices(FlatUnit& u) {
        const int64_t begin = int64_t(m_comm.rank()) * u.shard_numel, end = begin + u.shard_numel;
        if (begin > 0)
            u.flat_grad.narrow(0, 0, begin).zero_();
        if (end < u.padded)
            u.flat_grad.narrow(0, end, u.padded - end).zero_();
    }

    // ---- materializing (fsdp) ----------------------------------------------------
    void issueGather(FlatUnit& u, bool telemetry = true) {
        if (u.materialized || u.gather)
            return;
        {
            const AllocationOwnerScope owner(MemoryOwner::Parameters);
            allocateStorage(u.full);
        }
        u.gather = m_comm.allGather(u.full, u.shard.detach(), tag(u.id));
        ++m_gathers_in_flight;
        if (telemetry)
            emitParameterCounters(); // the bytes are allocated now, before the all-gather fills them
    }

    void prefetch(FlatUnit* u) {
        if (u && m_gathers_in_flight < m_config.prefetch_limit)
            issueGather(*u);
    }

    void waitGathered(FlatUnit& u, bool backward, bool telemetry = true) {
        if (u.materialized)
            return;
        issueGather(u, telemetry);
        const int64_t t = now();
        u.gather->wait();
        u.gather = nullptr;
        --m_gathers_in_flight;
        u.materialized = true;
        if (!telemetry)
            return;
        span(EventKind::Wait, t, u.id);
        unitEvent(EventKind::UnitMaterialized, u, backward ? 1.0 : 0.0);
    }

    void release(FlatUnit& u, bool telemetry = true) {
        if (!u.materialized)
            return;
        releaseStorage(u.full);
        u.materialized = false;
        if (telemetry)
            unitEvent(EventKind::UnitFreed, u, 0.0);
    }

    FlatUnit* unitById(int id) {
        if (id < 0)
            return m_root;
        return size_t(id) < m_block_units.size() ? m_block_units[size_t(id)] : nullptr;
    }

    // ---- telemetry -------------------------------------------------------------
    CommTag tag(int unit) const { return CommTag{m_step, unit, m_microbatch}; }
    int64_t now() const { return m_telemetry.now(); }

    void span(EventKind kind, int64_t begin, int unit) {
        m_telemetry.span(kind).from(begin).step(m_step).unit(unit).microbatch(m_microbatch).emit();
    }

    void spanWithBytes(EventKind kind, int64_t begin, int64_t bytes) {
        m_telemetry.span(kind).from(begin).step(m_step).unit(-1).microbatch(-1).bytes(bytes).emit();
    }

    void unitEvent(EventKind kind, const FlatUnit& u, double value) {
        if (!m_telemetry.sink())
            return;
        m_telemetry.instant(kind)
            .step(m_step)
            .unit(u.id)
            .microbatch(m_microbatch)
            .bytes(u.padded * 4)
            .value(value)
            .emit();
        emitParameterCounters();
    }

    // The parameter bytes change at every gather and free: counters at each
    // change, so the memory bars and the summary's peaks see the materialized
    // units (parameters = shards + unsharded copies alive, allocated ones
    // waiting for their all-gather included).
    void emitParameterCounters() {
        if (!m_telemetry.sink())
            return;
        const auto counter = [&](EventKind kind, int64_t bytes) {
            m_telemetry.counter(kind).step(m_step).microbatch(m_microbatch).value(double(bytes)).emit();
        };
        counter(EventKind::MemParamsMaterialized, materializedBytes());
        counter(EventKind::MemParameters, memory().parameters);
        counter(EventKind::MemMeasuredParameters,
                trackedLiveBytes(MemoryOwner::Parameters)); // the allocator's
    }

    int64_t materializedBytes() const {
        int64_t n = 0;
        for (const auto& u : m_units)
            n += storageNbytes(u.full);
        return n;
    }

    const Scenario& m_scenario;
    const StrategyConfig& m_config;
    TrainableModel& m_model;
    Communicator& m_comm;
    Communicator* m_replicate;
    RankTelemetry m_telemetry; // no sink when telemetry is off: nothing is emitted
    int m_rank;
    int m_world_size;
    Stage m_stage;
    std::vector<FlatUnit> m_units;
    std::vector<FlatUnit*> m_block_units;
    FlatUnit* m_root = nullptr;
    std::vector<at::Tensor> m_params;
    std::vector<FlatUnit*> m_unit_of_param;
    std::vector<std::shared_ptr<torch::autograd::Node>> m_accumulators; // they own the hooks
    std::unique_ptr<torch::optim::AdamW> m_optimizer;
    std::vector<PendingReduce> m_pending;
    int m_gathers_in_flight = 0;
    int m_next_forward_block = 0;
    int m_step = -1;
    int m_microbatch = -1;
    bool m_last_microbatch = true;
    bool m_communicate = true;
    bool m_in_backward = false;
};

} // namespace

std::unique_ptr<TrainingStrategy> makeShardedStrategy(const StrategyContext& context) {
    return std::make_unique<ShardedStrategy>(context);
}

} // namespace dt
