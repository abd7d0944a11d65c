// ft_group_training.cpp: one rank of a fault-tolerant replica group of G
// ranks (TorchFT over FSDP: HSDP whose replicate dimension the quorum
// manages; or over a pipeline). Inside the group the strategy is zero1, zero2
// or fsdp over the group's own Gloo group (sharded_strategy.cpp), ddp, or a
// pipeline (pipeline_strategy.cpp): one of G stages, or with [topology]
// replicas G / stages pipelines side by side whose stages stay equal over a
// stage group (pipeline_data_parallel: ddp, zero1 or fsdp shards of the
// stage, reduced inside the group before the quorum); across groups rank i of each
// member averages its shard (its stage) through its ft::Manager
// (ft_manager.cpp). R = replica groups, G = ranks per group, S = this rank's
// shard (the sum of its units' shards, about P / G fp32; a pipeline: its
// stage's parameters).
//
// Set-up: the group's Gloo group (prefix dtlab/ft/r<replica>/i<incarnation>/,
// G ranks) and a second one of the same ranks for the group's agreements (one
// int per call, off the timeline); the model (same seed everywhere), sharded
// over the G ranks; a Manager per rank (the group's rank 0 talks to the
// lighthouse).
//
// One step; s = the steps this group has committed:
//  0. The group agrees to go on (a rank told "the job finished" leaves with
//     its group, so no rank is left waiting in a collective), and its ranks
//     pass the Session's step gate together (replica_loop.hpp).
//  1. startQuorum(s) on the manager's quorum thread, which also does 2 and 3
//     once the quorum is in; async (TorchFT's default): forward and backward
//     run meanwhile, with the strategy's in-group collectives (fsdp:
//     all-gathers, reduce-scatters; ~3 (G-1)/G 4P bytes per rank), leaving
//     this rank's shard gradient (S) summed over the group; a pipeline runs
//     its whole schedule (activations and gradients between the stages,
//     (B/m) x T x C fp32 per message), leaving each stage's gradient.
//     waitQuorum joins it (the group agrees it has one).
//  2. configure: rank i builds the cross-group group of rank i of every member.
//  3. heal: rank i of a healing group receives rank i's shard state from its
//     source group (4 (3S + 2) bytes: replica_state.hpp over the shard): all
//     G shards at once, each on its own pair of ranks. Sync mode: adopted
//     before compute, once every rank of the group has its shard.
//  4. The shard gradient averaged over the participants (ring: 2 (R-1)/R 4S
//     bytes per rank); a healer sends zeros (async).
//  5. shouldCommit: the vote, agreed inside the group; on commit each rank
//     runs AdamW on its shard (the strategy divides the group's sum by G),
//     so rank i of every group holds the same bits: ParamsChecksum of the
//     shard after every commit. On abort nothing is applied.
//  6. On a checkpoint step the ranks of the quorum's lowest group write a
//     sharded checkpoint together (sharded_checkpoint.hpp: one file per
//     shard, rank 0 renames the directory; a pipeline: one per stage; ddp:
//     the group's rank 0 writes its whole replica, replica_checkpoint.hpp,
//     which every rank of a group reads back). When every group was down at
//     once, the restarted groups (a quorum all at step 0) load the job's
//     newest one instead of going back to step 0.
// At the end each rank's full parameters (fsdp gathers them) go to
// params_out, as the other loops do.
#include "ft/ft_training.hpp"

#include "checkpoint/checkpoint_meta.hpp"
#include "checkpoint/params_io.hpp"
#include "checkpoint/replica_checkpoint.hpp"
#include "checkpoint/replica_state.hpp"
#include "checkpoint/sharded_checkpoint.hpp"
#include "comm/gloo_communicator.hpp"
#include "dtlab/checkpoint.hpp"
#include "dtlab/errors.hpp"
#include "ft/ft_manager.hpp"
#include "ft/replica_loop.hpp"
#include "memory/memory_accounting.hpp"
#include "memory/tracking_allocator.hpp"
#include "rank/rank_groups.hpp"
#include "rank/step_gate.hpp"
#include "strategy/training_strategy.hpp"
#include "telemetry/telemetry_sender.hpp"

#include <torch/optim/adamw.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace dt {

namespace {

uint64_t shardChecksum(const std::vector<at::Tensor>& shards) {
    std::vector<NamedParameter> named;
    for (size_t i = 0; i < shards.size(); ++i)
        named.push_back({"shard" + std::to_string(i), shards[i].detach()});
    return parametersChecksum(named);
}

} // namespace

int trainFaultTolerantGroup(const RankContext& c) {
    const Scenario& scenario = *c.scenario;
    const int rank = c.env.rank;
    const int G = ftGroupSize(scenario), R = ftReplicaGroups(scenario);
    const int replica = rank / G, group_rank = rank % G;
    TelemetrySender& sender = *c.sender;
    const RankTelemetry telemetry(&sender, rank, scenario.telemetry.enabled);
    EventSink* sink = telemetry.detailed() ? &sender : nullptr;

    // The group's own groups: a restart is a new incarnation, so a new prefix.
    GlooOptions gloo;
    gloo.interface_host = glooInterfaceFor(c.env);
    gloo.timeout = std::chrono::milliseconds(int64_t(scenario.fault_tolerance.collective_timeout_ms));
    const std::string prefix =
        "dtlab/ft/r" + std::to_string(replica) + "/i" + std::to_string(c.incarnation) + "/";
    gloo.prefix = prefix + "inner/";
    std::unique_ptr<Communicator> inner = makeGlooCommunicator(c.store, group_rank, G, gloo, sink);
    inner->setGroupId(groupIdShard(replica)); // as hsdp's: "shard group of replica k"
    inner->shareLink(c.link);
    // Several pipelines in the group (G = stages x d): the d ranks of each
    // stage keep it equal over their own group (pipeline_data_parallel).
    const bool staged = strategyTraits(scenario.strategy.kind).uses_stages;
    const int S = staged ? std::max(1, scenario.topology.stages) : G;
    const int pipelines = G / S, pipeline_in_group = group_rank / S;
    std::unique_ptr<Communicator> stage_group;
    if (staged && pipelines > 1) {
        gloo.prefix = prefix + "stage" + std::to_string(group_rank % S) + "/";
        stage_group = makeGlooCommunicator(c.store, pipeline_in_group, pipelines, gloo, sink);
        stage_group->setGroupId(groupIdStage(replica * S + group_rank % S));
        stage_group->shareLink(c.link);
    }
    gloo.prefix = prefix + "agree/";
    std::unique_ptr<Communicator> agree_group = makeGlooCommunicator(c.store, group_rank, G, gloo, nullptr);
    // AND over the group's ranks (one int32 all-reduce).
    const auto agree = [&](bool yes) {
        at::Tensor flag = at::full({1}, yes ? 1 : 0, at::kInt);
        agree_group->allReduceNow(flag);
        return flag.item<int>() == G;
    };
    // The gates' looks over the group (one int32 all-reduce of G + 1: each
    // rank's order number in its own slot, and the open gates counted).
    const auto agree_gate = [&](const GateLook& look) {
        at::Tensor t = at::zeros({G + 1}, at::kInt);
        t[group_rank] = int(look.version);
        t[G] = look.open ? 1 : 0;
        agree_group->allReduceNow(t);
        const auto a = t.accessor<int, 1>();
        GroupGateLook group{a[G] == G, 0};
        for (int i = 0; i < G; ++i)
            group.newest_order = std::max(group.newest_order, uint32_t(a[i]));
        return group;
    };

    auto data = makeDataSource(scenario.data, scenario.model, scenario.run.seed);
    std::optional<AllocationOwnerScope> setup_owner(std::in_place, MemoryOwner::Parameters);
    auto model = makeModel(scenario.model, scenario.run.seed); // the same seed: every group starts identical
    StrategyContext sc;
    sc.scenario = &scenario;
    sc.model = model.get();
    sc.world = inner.get();
    sc.data_parallel_group = stage_group.get();
    sc.sink = sink;
    sc.rank = rank;
    sc.slow_delay_ms = [&c] { return c.gate->delayMs(); };
    auto strategy = makeStrategy(sc);
    setup_owner.reset();
    if (strategy->replicaGradients().empty() || !strategy->adamW())
        throw UsageError(strategy->name() + " cannot run in a replica group under [fault_tolerance]");
    if (rank == 0 && c.incarnation == 0)
        sender.log(LogLevel::Info, model->describe() + "; " + data->describe() +
                                       "; fault tolerant: " + std::to_string(R) + " replica groups of " +
                                       std::to_string(G) + " ranks, " + strategy->name() + " inside each");

    const std::vector<at::Tensor> shards = strategy->optimizedTensors();
    torch::optim::AdamW& optimizer = *strategy->adamW();
    int64_t step = 0; // committed steps: the step this group trains next
    ft::ReplicaStateTransfer state;
    state.message_numels = {replicaStateNumel(shards)};
    state.save = [&] { return std::vector<at::Tensor>{packReplicaState(shards, optimizer, step)}; };
    state.live = [&] { return replicaStateViews(shards, optimizer, step); }; // nothing steps before the vote
    state.live_numels = replicaStateViewNumels(shards);
    state.load = [&](const std::vector<at::Tensor>& messages) {
        step = unpackReplicaState(messages[0], shards, optimizer);
        strategy->afterStateLoaded(); // every rank of the group adopts together (the manager agreed it)
        return step;
    };
    ft::Manager manager(c, telemetry, std::move(state), agree);
    if (c.incarnation > 0 && group_rank == 0)
        sender.log(LogLevel::Info,
                   "replica group " + std::to_string(replica) + " restarted (incarnation " +
                       std::to_string(c.incarnation) +
                       "): each of its ranks heals its shard from the same rank of a live group, or the "
                       "group resumes from the job's newest durable checkpoint if no live group is ahead");

    // A checkpoint loaded by the whole group: `resume_from` when the job
    // starts, or the job's newest when every group was down at once. Returns
    // the step it ended at.
    // ddp groups: every rank holds the whole replica, so the job's checkpoint
    // is one replica's (replica_checkpoint.hpp), written by the group's rank 0
    // and read by every rank; the others write one file per shard or stage.
    const bool replicated = scenario.strategy.kind == StrategyKind::Ddp;
    const auto loadGroupCheckpoint = [&](const std::string& step_dir) {
        int64_t bytes = 0;
        const AllocationOwnerScope owner(MemoryOwner::OptimizerState); // the AdamW moments it reads
        const int last = replicated ? int(loadReplicaCheckpoint(step_dir, shards, optimizer, bytes)) - 1
                                    : strategy->loadCheckpoint(step_dir, bytes);
        telemetry.instant(EventKind::CheckpointLoaded).step(last).bytes(bytes).emit();
        return last;
    };
    if (!scenario.run.resume_from.empty() && c.incarnation == 0) {
        const int last = loadGroupCheckpoint(scenario.run.resume_from);
        step = last + 1;
        refuseWhenNothingLeftToTrain(scenario.run.resume_from, last, scenario.run.steps);
        if (rank == 0)
            sender.log(LogLevel::Info,
                       "resumed from " + scenario.run.resume_from + " (step " + std::to_string(last) + ")");
    }
    // Only at a restarted group's first quorum, and only when every member of
    // it is at step 0 (all restarted: every group decides the same).
    bool may_resume_from_checkpoint = c.incarnation > 0 && !scenario.run.checkpoint_dir.empty();
    const auto resumeFromNewestCheckpoint = [&] {
        CheckpointChoice choice = newestCheckpointOfThisJob(scenario, step).value_or(CheckpointChoice{});
        // The group's ranks load the same checkpoint or none (a collective:
        // the sum of the chosen steps is G times each rank's own).
        at::Tensor sum = at::full({1}, choice.step, at::kInt);
        agree_group->allReduceNow(sum);
        if (!agree(sum.item<int>() == G * choice.step) || choice.step < 0)
            return;
        step = loadGroupCheckpoint(choice.step_dir) + 1;
        if (group_rank == 0)
            sender.log(LogLevel::Warning,
                       "no live replica group was ahead: group " + std::to_string(replica) +
                           " resumed from the job's durable checkpoint " + choice.step_dir + " (step " +
                           std::to_string(choice.step) + "); the steps after it are redone");
    };

    // Forward and backward call the strategy's unit hooks (fsdp's all-gathers);
    // the timeline gets one Forward and one Backward span per step (unit -2).
    UnitTimer timer;
    timer.forward = [&](int unit, bool begin) {
        if (begin)
            strategy->beforeUnitForward(unit);
        else
            strategy->afterUnitForward(unit);
    };
    timer.backward = [&](int unit, bool begin) {
        if (begin)
            strategy->beforeUnitBackward(unit);
    };

    const int B = scenario.data.batch_per_rank, M = scenario.strategy.microbatches;
    const bool pipeline = strategy->runsWholeStep();
    bool left_early = false;
    markStartupEnd();
    while (step < scenario.run.steps) {
        // 0. Go on together.
        if (!agree(!c.faults->job_finished.load())) {
            left_early = true;
            break;
        }
        const int64_t step_begin = beginGroupReplicaStep(c, telemetry, step, agree_gate);

        // 1. The quorum request runs while the group computes.
        manager.startQuorum(step, step);
        double step_loss = std::nan("");
        const auto injectNanGradients = [&] {
            if (!c.faults->nan_gradients.exchange(false))
                return;
            for (auto& g : strategy->replicaGradients())
                g.fill_(std::nan(""));
            sender.log(LogLevel::Warning,
                       "fault: this rank's gradient shard is NaN at step " + std::to_string(step));
        };
        const auto computeGradient = [&] {
            int64_t t = telemetry.now();
            // A pipeline's stages read its batch (one of R x pipelines); sharded ranks each their own.
            const Batch batch =
                pipeline ? data->batch(int(step), replica * pipelines + pipeline_in_group, R * pipelines, B)
                         : data->batch(int(step), rank, scenario.topology.ranks, B);
            telemetry.span(EventKind::Data).from(t).step(step).emit();
            if (pipeline) {
                // The whole schedule; NaN on the stages before the last (no loss there;
                // the last checks its own).
                step_loss = strategy->runStep(int(step), batch.inputs, batch.targets);
                injectNanGradients();
                return;
            }
            strategy->beginStep(int(step));
            step_loss = 0.0;
            for (int mb = 0; mb < M; ++mb) {
                const int64_t rows = B / M;
                const at::Tensor inputs = M == 1 ? batch.inputs : batch.inputs.narrow(0, mb * rows, rows);
                const at::Tensor targets = M == 1 ? batch.targets : batch.targets.narrow(0, mb * rows, rows);
                strategy->beginMicrobatch(mb, mb == M - 1);
                t = telemetry.now();
                at::Tensor loss;
                {
                    const AllocationOwnerScope owner(MemoryOwner::Activations);
                    loss = model->loss(inputs, targets, timer);
                }
                telemetry.span(EventKind::Forward).from(t).step(step).unit(-2).emit();
                step_loss += loss.item<double>() / M;
                if (M > 1)
                    loss = loss / double(M);
                t = telemetry.now();
                loss.backward();
                telemetry.span(EventKind::Backward).from(t).step(step).unit(-2).emit();
                strategy->finishMicrobatch(); // the group's reduce-scatters: the shard gradient
            }
            requireFiniteLoss(step_loss, int(step));
            injectNanGradients();
        };
        const bool async = manager.asyncQuorum();
        const bool compute_first = async && !manager.healsBeforeCompute();
        if (compute_first)
            computeGradient();

        // 2. - 4. The quorum (the same on every rank of the group), the heal, the average.
        if (!agree(manager.waitQuorum())) {
            left_early = true;
            break;
        }
        if (may_resume_from_checkpoint && !manager.healing() && manager.quorumMaxStep() == 0 &&
            manager.quorumAllRestarted())
            resumeFromNewestCheckpoint();
        may_resume_from_checkpoint = false;
        const bool healing = manager.healing();
        if (!compute_first) {
            if (!async)
                manager.healBeforeCompute();
            if (!(async && healing))
                computeGradient();
        }
        const std::vector<at::Tensor> grads = strategy->replicaGradients();
        at::Tensor gradient = ft::flatten(grads); // one all-reduce instead of one per unit
        manager.allReduce(gradient, {int(step), -1, -1});
        ft::copyInto(grads, gradient);

        // 5. Commit or abort, as one group (leave, as ft_training.cpp does, when
        // the job finished without this step).
        if (!agree(!manager.jobFinishedWithoutThisRound())) {
            left_early = true;
            break;
        }
        const bool commit = manager.shouldCommit();
        if (commit) {
            const int64_t t = telemetry.now();
            {
                const AllocationOwnerScope owner(MemoryOwner::OptimizerState);
                strategy->optimizerStep();
            }
            telemetry.span(EventKind::Optimizer).from(t).step(step).emit();
            manager.committed(step, step);
            telemetry.instant(EventKind::ParamsChecksum).step(step).seq(shardChecksum(shards)).emit();
            if (!(healing && async) && !std::isnan(step_loss))
                telemetry.counter(EventKind::LossValue).step(step).value(step_loss).emit();
            // 6. A durable checkpoint of the committed state, written by the whole group.
            manager.checkpointIfDue(step, [&](int64_t s) {
                const std::string dir = checkpointStepDir(scenario.run.checkpoint_dir, int(s));
                // Every rank of the group decides the same: a collective follows.
                if (!agree(!checkpointSavedByRun(dir, int(s), scenario.run.run_id)))
                    return int64_t(-1); // saved before this job went back to an older step
                if (replicated)         // rank 0 writes the whole replica; the others have nothing to add
                    return group_rank == 0 ? saveReplicaCheckpoint(dir, int(s), scenario, shards, optimizer,
                                                                   replica, c.incarnation)
                                           : int64_t(-1);
                return strategy->saveCheckpoint(dir, int(s));
            });
            step += 1;
        } else {
            manager.aborted(step, step);
            sender.log(LogLevel::Warning, "step " + std::to_string(step) +
                                              " not committed: " + ft::abortText(manager.abortReason()));
        }

        const int64_t attempted = commit ? step - 1 : step;
        endReplicaStep(c, telemetry, attempted, step_begin,
                       strategy->modeledBytesSent() + manager.modeledBytesSent());
        if (telemetry.detailed()) {
            const StrategyMemory m = strategy->memory();
            ft::emitReplicaMemory(telemetry, attempted,
                                  sampleMemory(m.parameters, m.gradients, m.optimizer_state, m.comm_buffers),
                                  /*comm_buffers=*/true);
        }
    }

    if (!left_early && !c.params_out_dir.empty()) // a collective inside the group (fsdp gathers)
        saveParameters(c.params_out_dir + "/rank" + std::to_string(rank) + ".params",
                       strategy->fullParameters());
    manager.finish(step, left_early);
    return 0;
}

} // namespace dt
