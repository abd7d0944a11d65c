// pipeline_strategy.cpp: pipeline parallelism, executed for real.
//
// Layout: world rank = replica * p + stage; ranks / p pipelines run
// data-parallel. The model's L blocks are cut into C = p * v chunks; this rank
// owns chunks g with g % p == stage (pipeline_schedule.hpp). The other
// chunks' parameters are freed at start (their bytes go; the tensors stay).
//
// One step = one schedule (makePipelineSchedule), executed action by action:
//   F(mb, g)    x = embed(tokens) for g = 0, else the received activation (a
//               leaf that requires grad); y = blocks of g; the last chunk
//               computes loss / m. Shapes: tokens (B/m, T), x and y (B/m, T, C).
//   B(mb, g)    backward from y with the received output gradient (the loss
//               for the last chunk); the input gradient x.grad goes to g - 1.
//   Bi(mb, g)   zero bubble: autograd gives the gradient w.r.t. the input and
//               w.r.t. every weight layer's output (dy), computing no weight
//               gradient; W(mb, g) forms the weight gradients from the layers'
//               recorded inputs and those dy (model.hpp, WeightGradTape).
//   SendAct / SendGrad  posted at once (asynchronous), waited at the step's end.
//   RecvAct / RecvGrad  posted one compute action ahead: when the action before
//               the compute that needs the data starts (so the message travels
//               while this rank computes); that compute waits for it.
// What a (microbatch, chunk) keeps between its forward and its backward (the
// received input, the output, the output gradient) is freed as soon as the
// schedule no longer names it, as torch.distributed.pipelining pops its
// forward cache at the backward: the output and its gradient after the
// backward, the input (and its gradient) after the gradient is sent, a zero
// bubble's tape after W. So a rank holds the boundary tensors of the
// microbatches in flight only: 1F1B's at most p - stage, GPipe's all m.
// Bytes per message: (B/m) x T x C x 4. After the schedule, with d pipelines
// side by side, a stage's copies are kept equal over its data-parallel group
// (pipeline_data_parallel):
//   ddp    the stage's gradients, one flat buffer (P_s floats), are all-reduced
//          and averaged; AdamW updates the owned parameters. 2 (d-1)/d x 4 P_s bytes.
//   zero1  (pipeline + ZeRO-1) the owned parameters live in one flat vector,
//          padded to a multiple of d (flat_unit.hpp); the gradients are
//          flattened and reduce-scattered into this rank's shard (P_s / d),
//          AdamW updates the shard only (its state is 8 P_s / d bytes instead
//          of 8 P_s), and the stage is all-gathered back. (d-1)/d x 4 P_s each
//          way: the same bytes as ddp.
//   fsdp   (pipeline + FSDP, as torchtitan runs it: no resharding between
//          microbatches) as zero1, but between steps only the shard is kept:
//          the stage is all-gathered when the step starts, stays whole for
//          all its microbatches, and after the reduce-scatter its gradients
//          and its whole vector are freed; AdamW updates the shard (its own
//          storage). Same bytes as zero1; parameters and gradients are 1/d
//          between steps.
// Under [fault_tolerance] (ft/ft_group_training.cpp) each replica group is
// one pipeline (m_world is its own group, no m_dp), or with [topology]
// replicas d pipelines side by side (m_world the group, m_dp the stage's d
// ranks in it). Then the stage's gradients are reduced inside the group as
// the schedule ends (ddp: all-reduced; zero1/fsdp: reduce-scattered into the
// shard, P_s / d), so that what the quorum's manager averages with the same
// rank of the other groups (replicaGradients) is what this rank optimizes;
// optimizerStep then only steps (and zero1 all-gathers, fsdp frees). A
// restarted group's rank heals from the same rank of a live one
// (optimizedTensors, the stage or its shard, and the AdamW state).
#include "checkpoint/stage_checkpoint.hpp"
#include "sharding/flat_unit.hpp"
#include "strategy/training_strategy.hpp"

#include "dtlab/pipeline_schedule.hpp"
#include "dtlab/scenario.hpp"
#include "memory/memory_accounting.hpp"
#include "memory/tracking_allocator.hpp"
#include "rank/rank_telemetry.hpp"

#include <torch/csrc/autograd/autograd.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <thread>

namespace dt {
namespace {

bool isCompute(PipeOp op) {
    return op == PipeOp::Forward || op == PipeOp::Backward || op == PipeOp::BackwardInput ||
           op == PipeOp::BackwardWeight;
}
bool isReceive(PipeOp op) {
    return op == PipeOp::RecvAct || op == PipeOp::RecvGrad;
}

using StateKey = std::pair<int, int>; // (microbatch, chunk)

// What one (microbatch, chunk) keeps between its forward and its backward.
struct ChunkState {
    at::Tensor input;       // g > 0: the activation received (a leaf requiring grad)
    at::Tensor output;      // g < C-1: the chunk's output; g = C-1: the loss / m
    at::Tensor output_grad; // the gradient w.r.t. output (received or local)
    CommWorkPtr input_recv, grad_recv;
    WeightGradTape tape;                // zero bubble: weight layers' (input, output) from F
    std::vector<at::Tensor> tape_grads; // zero bubble: their output gradients from Bi
};

class PipelineStrategy final : public TrainingStrategy {
  public:
    explicit PipelineStrategy(const StrategyContext& c)
        : m_scenario(*c.scenario), m_model(*c.model), m_world(*c.world), m_dp(c.data_parallel_group),
          m_telemetry(c.sink, c.rank, c.sink != nullptr), m_rank(c.rank), m_slow_delay_ms(c.slow_delay_ms) {
        const StrategyConfig& st = m_scenario.strategy;
        m_shape = pipelineShapeOf(m_scenario);
        // Positions in m_world: all ranks, or a replica group under [fault_tolerance] (one pipeline, or
        // several side by side: m_replica is the pipeline's index in it).
        m_stage = m_world.rank() % m_shape.stages;
        m_replica = m_world.rank() / m_shape.stages;
        m_staged = m_model.staged();
        DT_ENFORCE(m_staged, "the pipeline needs a model with stages (tiny_gpt)");
        const PipelineSchedule schedule = makePipelineSchedule(st.schedule, m_shape);
        if (auto problem = validatePipelineSchedule(schedule, m_shape))
            throw UsageError("pipeline schedule " + st.schedule + " is invalid: " + problem->message());
        m_actions = schedule[size_t(m_stage)];
        // A schedule with Bi actions splits the backward (zero bubble): tape the weight layers.
        m_split_backward = std::any_of(m_actions.begin(), m_actions.end(),
                                       [](const PipeAction& x) { return x.op == PipeOp::BackwardInput; });

        auto named = m_model.trainableParameters();
        const std::vector<int> chunk_of = m_staged->parameterChunks(m_shape.chunks());
        for (size_t i = 0; i < named.size(); ++i) {
            const int g = chunk_of[i];
            if (m_shape.rankOfChunk(g) == m_stage) {
                m_owned.push_back(named[i]);
            } else {
                releaseStorage(named[i].tensor); // another stage's: its bytes go
            }
        }
        std::vector<at::Tensor> owned;
        m_fsdp = st.pipeline_data_parallel == "fsdp";
        if (st.pipeline_data_parallel != "ddp" && m_dp && m_dp->size() > 1) {
            // One flat unit of the owned parameters, sharded over the pipelines.
            std::vector<FlatUnit> units =
                buildFlatUnits(m_owned, std::vector<int>(m_owned.size(), 0), m_dp->size(), m_dp->rank());
            m_stage_unit = std::make_unique<FlatUnit>(std::move(units.front()));
            FlatUnit& u = *m_stage_unit;
            if (m_fsdp) { // keep only the shard (its own storage) until the first step gathers the stage
                u.shard = u.shard.clone();
                releaseStorage(u.full);
                u.materialized = false;
            }
            u.shard_grad = at::zeros({u.shard_numel}, at::kFloat);
            u.shard.requires_grad_(true);
            u.shard.mutable_grad() = u.shard_grad;
            owned.push_back(u.shard);
        } else {
            for (const auto& p : m_owned)
                owned.push_back(p.tensor);
        }
        m_reduce_in_step = m_scenario.fault_tolerance.enabled && m_dp && m_dp->size() > 1;
        const OptimizerConfig& o = m_scenario.optimizer;
        m_optimizer = std::make_unique<torch::optim::AdamW>(owned, torch::optim::AdamWOptions(o.lr)
                                                                       .betas({o.beta1, o.beta2})
                                                                       .eps(o.eps)
                                                                       .weight_decay(o.weight_decay));
        const int C = m_shape.chunks(), L = m_staged->blockCount();
        m_blocks_per_chunk = L / C;
    }

    std::string name() const override { return "pipeline " + m_scenario.strategy.schedule; }
    bool runsWholeStep() const override { return true; }

    double runStep(int step, const at::Tensor& inputs, const at::Tensor& targets) override {
        m_step = step;
        for (const auto& p : m_owned)
            p.tensor.mutable_grad() = at::Tensor();
        if (m_fsdp && m_stage_unit)
            gatherStage(/*telemetry=*/true);
        const int m = m_shape.microbatches;
        const int64_t rows = inputs.size(0) / m;
        std::map<StateKey, ChunkState> state; // (mb, g), while the schedule still names it
        std::vector<CommWorkPtr> sends;
        double loss_sum = 0.0;
        bool has_loss = false;
        const int C = m_shape.chunks();
        const int64_t T = inputs.size(1);
        const std::map<StateKey, size_t> last_use = lastUses();
        std::vector<bool> posted(m_actions.size(), false);
        const auto postOnce = [&](size_t k) {
            if (!posted[k])
                postReceive(m_actions[k], state, rows, T);
            posted[k] = true;
        };

        for (size_t i = 0; i < m_actions.size(); ++i) {
            const PipeAction& a = m_actions[i];
            const int mb = a.microbatch, g = a.chunk;
            if (isCompute(a.op)) // the next compute's receives: their data arrives while this one runs
                for (size_t k = i + 1; k < m_actions.size() && !isCompute(m_actions[k].op); ++k)
                    if (isReceive(m_actions[k].op))
                        postOnce(k);
            switch (a.op) {
            case PipeOp::RecvAct:
            case PipeOp::RecvGrad:
                postOnce(i); // unless posted during the compute before
                break;
            case PipeOp::Forward: {
                ChunkState& s = state[{mb, g}];
                at::Tensor x;
                if (g > 0) {
                    if (s.input_recv)
                        waitFor(s.input_recv, mb, g);
                    else
                        s.input = state[{mb, g - 1}].output.detach(); // the previous chunk is on this rank
                    s.input.requires_grad_(true);
                    x = s.input;
                }
                straggle(mb, g);
                const int64_t t = now();
                // What the forward leaves alive is what autograd saved for this chunk's backward.
                const AllocationOwnerScope owner(MemoryOwner::Activations);
                if (m_split_backward)
                    m_staged->recordWeightInputs(&s.tape);
                if (g == 0) { // the embeddings are part of chunk 0 (taped too)
                    x = m_staged->embed(inputs.narrow(0, mb * rows, rows));
                }
                at::Tensor y = m_staged->runBlocks(x, g * m_blocks_per_chunk, (g + 1) * m_blocks_per_chunk);
                if (g == C - 1) {
                    at::Tensor loss = m_staged->headLoss(y, targets.narrow(0, mb * rows, rows));
                    loss_sum += loss.item<double>();
                    has_loss = true;
                    y = loss / double(m);
                }
                m_staged->recordWeightInputs(nullptr);
                s.output = y;
                span(EventKind::Forward, t, mb, g);
                break;
            }
            case PipeOp::Backward:
            case PipeOp::BackwardInput: {
                ChunkState& s = state[{mb, g}];
                if (g + 1 < C) {
                    if (s.grad_recv)
                        waitFor(s.grad_recv, mb, g);
                    else
                        s.output_grad = state[{mb, g + 1}].input.grad(); // the next chunk is on this rank
                }
                straggle(mb, g);
                const int64_t t = now();
                const std::vector<at::Tensor> grads =
                    g + 1 < C ? std::vector<at::Tensor>{s.output_grad} : std::vector<at::Tensor>{};
                if (a.op == PipeOp::Backward) {
                    torch::autograd::backward({s.output}, grads);
                } else { // Bi: input gradient and each weight layer's output gradient
                    std::vector<at::Tensor> wrt;
                    if (g > 0)
                        wrt.push_back(s.input);
                    for (const auto& e : s.tape.entries)
                        wrt.push_back(e.output);
                    auto got = torch::autograd::grad({s.output}, wrt, grads, /*retain_graph=*/false,
                                                     /*create_graph=*/false, /*allow_unused=*/true);
                    if (g > 0)
                        s.input.mutable_grad() = got[0];
                    s.tape_grads.assign(got.begin() + (g > 0 ? 1 : 0), got.end());
                }
                s.output = at::Tensor(); // the graph it rooted is freed; so is its gradient
                s.output_grad = at::Tensor();
                span(a.op == PipeOp::Backward ? EventKind::Backward : EventKind::BackwardInput, t, mb, g);
                break;
            }
            case PipeOp::BackwardWeight: {
                ChunkState& s = state[{mb, g}];
                const int64_t t = now();
                accumulateWeightGradients(s.tape, s.tape_grads);
                s.tape = {}; // the layers' inputs and outputs can go now
                s.tape_grads.clear();
                span(EventKind::BackwardWeight, t, mb, g);
                break;
            }
            case PipeOp::SendAct:
                sends.push_back(m_world.postSend(state[{mb, g}].output.detach(), worldRank(a.peer),
                                                 messageTag(false, mb, g), tag(mb, g)));
                break;
            case PipeOp::SendGrad:
                sends.push_back(m_world.postSend(state[{mb, g}].input.grad(), worldRank(a.peer),
                                                 messageTag(true, mb, g - 1), tag(mb, g)));
                break;
            case PipeOp::Optimizer:
                break; // the worker calls optimizerStep()
            }
            // What the schedule names for the last time here goes now (a posted
            // send keeps its own reference until the message is out).
            for (const StateKey& key : statesUsed(a))
                if (last_use.at(key) == i)
                    state.erase(key);
            const bool computed =
                a.op == PipeOp::Forward || a.op == PipeOp::Backward || a.op == PipeOp::BackwardWeight;
            if (m_telemetry.sink() && computed)
                emitActivations();
        }
        const int64_t t = now();
        for (auto& w : sends)
            w->wait();
        if (!sends.empty())
            span(EventKind::Wait, t, -1, -1);
        m_world.reapPosted();
        if (m_reduce_in_step) // a replica group's pipelines: reduced before the quorum averages
            reduceOverPipelines(stageGradients());
        if (!has_loss)
            return std::numeric_limits<double>::quiet_NaN(); // a stage before the last: no loss here
        requireFiniteLoss(loss_sum / m, step);
        return loss_sum / m;
    }

    void optimizerStep() override {
        if (!m_reduce_in_step && m_dp && m_dp->size() > 1)
            reduceOverPipelines(stageGradients());
        if (m_stage_unit)
            stepShard();
        else
            m_optimizer->step();
    }

    // Unused: the pipeline runs whole steps (runStep).
    void beginStep(int) override {}
    void beginMicrobatch(int, bool) override {}
    void finishMicrobatch() override {}

    StrategyMemory memory() const override {
        StrategyMemory m;
        std::vector<at::Tensor> params, grads;
        for (const auto& p : m_owned) {
            params.push_back(p.tensor);
            if (p.tensor.grad().defined())
                grads.push_back(p.tensor.grad());
        }
        m.parameters = storageBytes(params);
        if (m_stage_unit) {
            grads.push_back(m_stage_unit->shard_grad);
            if (m_fsdp) { // the shard has its own storage; the whole stage is alive only during a step
                m.parameters += storageNbytes(m_stage_unit->shard);
                m.parameters_materialized = storageNbytes(m_stage_unit->full);
            }
        }
        m.gradients = storageBytes(grads);
        m.optimizer_state = adamStateBytes(*m_optimizer);
        return m;
    }

    // This stage's parameters only (each stage owns a different part of the model).
    std::vector<NamedParameter> fullParameters() override {
        if (!m_fsdp || !m_stage_unit)
            return m_owned;
        gatherStage(/*telemetry=*/false); // a collective: every rank of the stage's group asks at the end
        std::vector<NamedParameter> out = m_owned;
        for (auto& p : out)
            p.tensor = p.tensor.detach().clone();
        releaseStage();
        return out;
    }
    int64_t modeledBytesSent() const override {
        return m_world.modeledBytesSent() + (m_dp ? m_dp->modeledBytesSent() : 0);
    }
    int64_t modeledBytesReceived() const override {
        return m_world.modeledBytesReceived() + (m_dp ? m_dp->modeledBytesReceived() : 0);
    }
    // ---- under a quorum: one replica group (a pipeline, or d side by side) -------
    // The stage's gradients (a healer that skipped its compute: zeros), or the shard's.
    std::vector<at::Tensor> replicaGradients() override {
        if (m_stage_unit)
            return {m_stage_unit->shard_grad};
        return stageGradients();
    }
    std::vector<at::Tensor> optimizedTensors() override {
        if (m_stage_unit)
            return {m_stage_unit->shard};
        std::vector<at::Tensor> tensors;
        for (const auto& p : m_owned)
            tensors.push_back(p.tensor);
        return tensors;
    }
    torch::optim::AdamW* adamW() override { return m_optimizer.get(); }
    // A healed zero1 shard: the stage is all-gathered from the new shards (every
    // rank of the group adopts together); fsdp drops a stage still gathered
    // (an aborted step's) and gathers at its next step.
    void afterStateLoaded() override {
        if (!m_stage_unit)
            return;
        if (m_fsdp) { // a stage gathered for an aborted step is stale now: the next step gathers it again
            if (m_stage_unit->materialized)
                releaseStage();
            return;
        }
        m_dp->allGatherNow(m_stage_unit->full, m_stage_unit->shard.detach(), CommTag{m_step, -1, -1});
    }

    // A replica group under [fault_tolerance] of one pipeline, or of several
    // side by side (stage_checkpoint.hpp): whole stages (ddp keeps the copies
    // equal) are one file per stage, written by the group's first pipeline;
    // stages sharded across the pipelines (zero1, fsdp) are one file per
    // shard, each rank writing its own. Every pipeline's stage i loads its
    // stage's file, or its shard of it.
    int64_t saveCheckpoint(const std::string& step_dir, int last_step) override {
        requireFaultTolerance();
        const int shards = checkpointShards();
        const int64_t written = saveStageCheckpoint(step_dir, last_step, m_scenario, optimizedTensors(),
                                                    *adamW(), m_world, m_shape.stages, shards);
        return shards > 1 || m_replica == 0 ? written : int64_t(-1); // -1: this rank saved nothing
    }
    int loadCheckpoint(const std::string& step_dir, int64_t& bytes_read) override {
        requireFaultTolerance();
        const int shards = checkpointShards();
        const int last = loadStageCheckpoint(step_dir, optimizedTensors(), *adamW(), m_stage,
                                             shards > 1 ? m_replica : 0, shards, bytes_read);
        afterStateLoaded(); // a sharded stage: zero1 gathers the whole stage, fsdp at its next step
        return last;
    }

  private:
    void requireFaultTolerance() const {
        if (!m_scenario.fault_tolerance.enabled)
            throw UsageError("checkpoints of kind = \"pipeline\" are written by replica groups under "
                             "[fault_tolerance]");
    }
    // Files per stage: the pipelines of the group when the stage is sharded over them.
    int checkpointShards() const {
        const int shards = stageCheckpointShards(m_scenario);
        DT_ENFORCE((shards > 1) == bool(m_stage_unit) && (!m_stage_unit || m_dp->rank() == m_replica),
                   "a sharded stage's shard index is its pipeline's index in the group");
        return shards;
    }
    // The owned parameters' gradients (zeros where a stage computed none).
    std::vector<at::Tensor> stageGradients() {
        std::vector<at::Tensor> grads;
        for (const auto& p : m_owned) {
            if (!p.tensor.grad().defined())
                p.tensor.mutable_grad() = at::zeros_like(p.tensor);
            grads.push_back(p.tensor.grad());
        }
        return grads;
    }

    // The stage's gradients averaged over the pipelines side by side: ddp
    // all-reduces them in one flat buffer (P_s floats); zero1/fsdp
    // reduce-scatter them into this rank's shard gradient (P_s / d).
    void reduceOverPipelines(const std::vector<at::Tensor>& grads) {
        at::NoGradGuard no_grad;
        const CommTag tag{m_step, -1, -1};
        if (!m_stage_unit) {
            std::vector<at::Tensor> flat_parts;
            for (const auto& g : grads)
                flat_parts.push_back(g.reshape({-1}));
            at::Tensor flat = at::cat(flat_parts);
            m_dp->allReduceNow(flat, tag);
            flat.div_(double(m_dp->size()));
            int64_t offset = 0;
            for (const auto& g : grads) {
                g.copy_(flat.narrow(0, offset, g.numel()).view_as(g));
                offset += g.numel();
            }
            return;
        }
        FlatUnit& u = *m_stage_unit;
        at::Tensor flat = at::zeros({u.padded}, at::kFloat); // the padding stays zero
        for (size_t k = 0; k < u.params.size(); ++k)
            flat.narrow(0, u.offsets[k], grads[size_t(u.params[k])].numel())
                .copy_(grads[size_t(u.params[k])].reshape({-1}));
        m_dp->reduceScatterNow(u.shard_grad, flat, tag);
        u.shard_grad.div_(double(m_dp->size()));
    }

    // zero1/fsdp: AdamW on this rank's shard, then zero1 all-gathers the
    // updated stage (the parameters are views of it); fsdp frees the stage and
    // its gradients until the next step gathers it.
    void stepShard() {
        FlatUnit& u = *m_stage_unit;
        at::NoGradGuard no_grad;
        m_optimizer->step(); // inside the worker's optimizer span
        if (m_fsdp) {
            for (const auto& p : m_owned)
                p.tensor.mutable_grad() = at::Tensor();
            releaseStage();
            return;
        }
        m_dp->allGatherNow(u.full, u.shard.detach(), CommTag{m_step, -1, -1});
    }

    // fsdp: the whole stage back from the shards (the parameters are views of u.full).
    void gatherStage(bool telemetry) {
        FlatUnit& u = *m_stage_unit;
        if (u.materialized)
            return;
        allocateStorage(u.full);
        const int64_t t = now();
        m_dp->allGatherNow(u.full, u.shard.detach(), CommTag{m_step, -1, -1});
        u.materialized = true;
        if (!telemetry || !m_telemetry.sink())
            return;
        span(EventKind::Wait, t, -1, -1);
        const double materialized = double(storageNbytes(u.full)), parameters = double(memory().parameters);
        m_telemetry.counter(EventKind::MemParamsMaterialized).step(m_step).value(materialized).emit();
        m_telemetry.counter(EventKind::MemParameters).step(m_step).value(parameters).emit();
    }

    void releaseStage() {
        releaseStorage(m_stage_unit->full);
        m_stage_unit->materialized = false;
    }

    // The (microbatch, chunk) states action a reads or writes on this rank: its
    // own, and a neighbouring chunk's when that chunk is on this rank too (p = 1):
    // F reads the previous chunk's output, B / Bi the next chunk's input gradient.
    std::vector<StateKey> statesUsed(const PipeAction& a) const {
        if (a.op == PipeOp::Optimizer)
            return {};
        const int mb = a.microbatch, g = a.chunk;
        std::vector<StateKey> keys{{mb, g}};
        if (a.op == PipeOp::Forward && g > 0 && m_shape.rankOfChunk(g - 1) == m_stage)
            keys.push_back({mb, g - 1});
        if ((a.op == PipeOp::Backward || a.op == PipeOp::BackwardInput) && g + 1 < m_shape.chunks() &&
            m_shape.rankOfChunk(g + 1) == m_stage)
            keys.push_back({mb, g + 1});
        return keys;
    }

    // For every state, the index of the last action that names it: after that
    // action it goes.
    std::map<StateKey, size_t> lastUses() const {
        std::map<StateKey, size_t> last;
        for (size_t i = 0; i < m_actions.size(); ++i)
            for (const StateKey& key : statesUsed(m_actions[i]))
                last[key] = i;
        return last;
    }

    void postReceive(const PipeAction& a, std::map<StateKey, ChunkState>& state, int64_t rows, int64_t T) {
        const int mb = a.microbatch, g = a.chunk;
        const int64_t C = m_scenario.model.d_model;
        if (a.op == PipeOp::RecvAct) {
            ChunkState& s = state[{mb, g}];
            s.input = at::empty({rows, T, C}, at::kFloat);
            s.input_recv =
                m_world.postRecv(s.input, worldRank(a.peer), messageTag(false, mb, g - 1), tag(mb, g));
        } else if (a.op == PipeOp::RecvGrad) {
            ChunkState& s = state[{mb, g}];
            s.output_grad = at::empty({rows, T, C}, at::kFloat);
            s.grad_recv =
                m_world.postRecv(s.output_grad, worldRank(a.peer), messageTag(true, mb, g), tag(mb, g));
        }
    }

    int worldRank(int stage) const { return m_replica * m_shape.stages + stage; }
    // A different Gloo tag per message of a step: (is gradient, microbatch, chunk boundary).
    int messageTag(bool grad, int mb, int boundary) const {
        return ((mb * m_shape.chunks() + boundary) * 2 + (grad ? 1 : 0)) + 1;
    }
    CommTag tag(int mb, int g) const { return CommTag{m_step, g, mb}; }
    int64_t now() const { return m_telemetry.now(); }

    void waitFor(const CommWorkPtr& work, int mb, int g) {
        const int64_t t = now();
        work->wait();
        if (now() - t > 100000)
            span(EventKind::Wait, t, mb, g); // > 0.1 ms: worth a wait span
    }

    void span(EventKind kind, int64_t begin, int mb, int g) {
        m_telemetry.span(kind).from(begin).step(m_step).unit(g).microbatch(mb).emit();
    }

    void emitActivations() {
        const StrategyMemory sm = memory();
        const MemorySample s = sampleMemory(sm.parameters, sm.gradients, sm.optimizer_state, 0);
        m_telemetry.counter(EventKind::MemActivations).step(m_step).value(double(s.activations)).emit();
    }

    const Scenario& m_scenario;
    TrainableModel& m_model;
    Communicator& m_world;
    Communicator* m_dp;
    RankTelemetry m_telemetry; // no sink when telemetry is off: nothing is emitted
    int m_rank;
    PipelineShape m_shape;
    int m_stage = 0, m_replica = 0, m_blocks_per_chunk = 1;
    StagedModel* m_staged = nullptr;
    std::vector<PipeAction> m_actions;
    bool m_split_backward = false;
    std::vector<NamedParameter> m_owned;
    std::unique_ptr<torch::optim::AdamW> m_optimizer;
    std::unique_ptr<FlatUnit>
        m_stage_unit;    // zero1/fsdp: the owned parameters, flat and sharded over the pipelines
    bool m_fsdp = false; // pipeline_data_parallel = "fsdp": only the shard between steps
    // Under [fault_tolerance] with pipelines side by side in a group: reduce at
    // the end of runStep, so the quorum averages the reduced gradients.
    bool m_reduce_in_step = false;
    int m_step = -1;
    std::function<double()> m_slow_delay_ms;

    // A straggler: the scenario's slow stage, or the rank slowed live, sleeps
    // in every forward and backward (a "slow delay" span), so everyone
    // downstream and upstream waits for it.
    void straggle(int mb, int g) {
        double ms = m_scenario.strategy.slow_stage == m_stage ? m_scenario.strategy.slow_stage_ms : 0.0;
        if (m_slow_delay_ms)
            ms += m_slow_delay_ms();
        if (ms <= 0)
            return;
        const int64_t t = now();
        std::this_thread::sleep_for(std::chrono::microseconds(int64_t(ms * 1000)));
        span(EventKind::SlowDelay, t, mb, g);
    }
};

} // namespace

std::unique_ptr<TrainingStrategy> makePipelineStrategy(const StrategyContext& context) {
    return std::make_unique<PipelineStrategy>(context);
}

} // namespace dt
