// ft_training.cpp: one replica of fault-tolerant DDP (TorchFT's
// OptimizerWrapper around its Manager, in C++). One replica group = one rank
// here; the quorum protocol itself is ft::Manager (ft_manager.cpp).
//
// One step; s = the steps this replica has committed so far, P = parameters:
//  1. startQuorum(s) on a helper thread, which also does 2 and 3 as soon as
//     the quorum is in; quorum_mode "async" (TorchFT's default): forward and
//     backward run meanwhile on this replica's batch (step s, shard = replica
//     index): the flat gradient, P fp32. waitQuorum joins the thread.
//  2. configure: a new quorum id rebuilds the cross-replica group.
//  3. heal: the state a healer receives is replica_state.hpp's one message
//     (committed steps, AdamW step, parameters, exp_avg, exp_avg_sq:
//     4 (3P + 2) bytes); adopting it moves the healer to the source's step.
//     "sync": the healer adopts it now, then every replica computes.
//  4. allReduce the gradient (ring: 2 (N-1)/N x 4P bytes sent per replica),
//     averaged over the participants (async: a healer sends zeros and does
//     not count).
//  5. shouldCommit: a healer adopts the received state (if not yet), then the
//     vote (participants >= min_replicas); on commit everyone runs the same
//     AdamW step on the same average, so the replicas stay bit-identical
//     (ParamsChecksum after every commit); on abort nothing is applied and
//     the step is retried.
//  6. On a checkpoint step the quorum's lowest replica writes the committed
//     state (replica_checkpoint.hpp); a new job can resume from it.
#include "ft/ft_training.hpp"

#include "checkpoint/checkpoint_meta.hpp"
#include "checkpoint/params_io.hpp"
#include "checkpoint/replica_checkpoint.hpp"
#include "checkpoint/replica_state.hpp"
#include "checkpoint/sharded_checkpoint.hpp"
#include "dtlab/checkpoint.hpp"
#include "dtlab/errors.hpp"
#include "ft/ft_manager.hpp"
#include "ft/replica_loop.hpp"
#include "memory/tracking_allocator.hpp"
#include "telemetry/telemetry_sender.hpp"

#include <torch/optim/adamw.h>

#include <cmath>

namespace dt {

int trainFaultTolerant(const RankContext& c) {
    const Scenario& scenario = *c.scenario;
    const int replica = c.env.rank, replicas = c.env.world;
    TelemetrySender& sender = *c.sender;
    const RankTelemetry telemetry(&sender, replica, scenario.telemetry.enabled);
    ft::ReplicaModel m(scenario);
    const std::vector<at::Tensor>& params = m.params();
    torch::optim::AdamW& optimizer = m.optimizer();
    if (replica == 0 && c.incarnation == 0)
        sender.log(LogLevel::Info, m.describe() + "; fault tolerant: " + std::to_string(replicas) +
                                       " replica groups of 1 rank");

    int64_t step = 0; // committed steps: the step this replica trains next
    ft::ReplicaStateTransfer state;
    state.message_numels = {replicaStateNumel(params)};
    state.save = [&] { return std::vector<at::Tensor>{packReplicaState(params, optimizer, step)}; };
    state.live = [&] { return replicaStateViews(params, optimizer, step); }; // nothing steps before the vote
    state.live_numels = replicaStateViewNumels(params);
    state.load = [&](const std::vector<at::Tensor>& messages) {
        return step = unpackReplicaState(messages[0], params, optimizer);
    };
    ft::Manager manager(c, telemetry, std::move(state));
    if (c.incarnation > 0)
        sender.log(LogLevel::Info,
                   "restarted (incarnation " + std::to_string(c.incarnation) +
                       "): will heal from a live peer, or resume from the job's newest durable "
                       "checkpoint if no live replica is ahead of it");
    // A restarted replica's first quorum says whether any live replica is
    // ahead. If none is (every replica was down at once), the quorum's members
    // are all restarted ones at step 0: each loads the job's newest durable
    // checkpoint instead of going back to step 0 (they read the same one, so
    // they stay equal).
    bool may_resume_from_checkpoint = c.incarnation > 0 && !scenario.run.checkpoint_dir.empty();
    const auto resumeFromNewestCheckpoint = [&] {
        may_resume_from_checkpoint = false;
        const std::optional<CheckpointChoice> choice = newestCheckpointOfThisJob(scenario, step);
        if (!choice)
            return;
        int64_t bytes = 0;
        step = loadReplicaCheckpoint(choice->step_dir, params, optimizer, bytes);
        telemetry.instant(EventKind::CheckpointLoaded).step(step - 1).bytes(bytes).emit();
        sender.log(LogLevel::Warning,
                   "no live replica was ahead: resumed from the job's durable checkpoint " +
                       choice->step_dir + " (step " + std::to_string(step - 1) +
                       "); the steps after it are redone");
    };

    if (!scenario.run.resume_from.empty() && c.incarnation == 0) {
        // A whole job resumes: every replica loads the same checkpoint, so
        // they start identical. (A restarted replica heals from a peer instead.)
        int64_t bytes = 0;
        step = loadReplicaCheckpoint(scenario.run.resume_from, params, optimizer, bytes);
        refuseWhenNothingLeftToTrain(scenario.run.resume_from, step - 1, scenario.run.steps);
        telemetry.instant(EventKind::CheckpointLoaded).step(step - 1).bytes(bytes).emit();
        if (replica == 0)
            sender.log(LogLevel::Info, "resumed from " + scenario.run.resume_from + " (step " +
                                           std::to_string(step - 1) + ", " + std::to_string(bytes) +
                                           " bytes read per replica)");
    }

    bool left_early = false;
    markStartupEnd(); // the allocator's peak from here on is the step peak
    while (step < scenario.run.steps) {
        if (c.faults->job_finished.load()) {
            left_early = true;
            break;
        }
        const int64_t step_begin = beginReplicaStep(c, telemetry, step);

        // 1. The quorum request runs while this replica computes its gradient (P fp32).
        manager.startQuorum(step, step);
        at::Tensor gradient;
        {
            const AllocationOwnerScope owner(
                MemoryOwner::CommBuffers); // the flat gradient the all-reduce sends
            gradient = at::zeros({m.numel()}, at::kFloat);
        }
        double step_loss = std::nan("");
        const auto computeGradient = [&] {
            step_loss = m.forwardBackward(step, replica, replicas, telemetry);
            int64_t offset = 0;
            for (const auto& p : params) {
                gradient.narrow(0, offset, p.numel()).copy_(p.grad().reshape({-1}));
                offset += p.numel();
            }
            if (c.faults->nan_gradients.exchange(false)) {
                gradient.fill_(std::nan(""));
                sender.log(LogLevel::Warning,
                           "fault: this replica's gradients are NaN at step " + std::to_string(step));
            }
        };
        // Async (TorchFT's default): compute while the quorum is asked; a
        // healer's gradient (from stale weights) is replaced by zeros. A
        // restarted replica's first round asks first (it may heal, or resume
        // from a checkpoint; a healer's gradient would be zeros anyway).
        const bool async = manager.asyncQuorum();
        const bool compute_first = async && !manager.healsBeforeCompute();
        if (compute_first)
            computeGradient();

        // 2. - 4. The quorum, the group, the heal, the average.
        if (!manager.waitQuorum()) {
            left_early = true;
            break;
        }
        // Only when every member of the quorum is at step 0 (all restarted:
        // they all decide the same), and only at this process's first quorum.
        if (may_resume_from_checkpoint && !manager.healing() && manager.quorumMaxStep() == 0 &&
            manager.quorumAllRestarted())
            resumeFromNewestCheckpoint();
        may_resume_from_checkpoint = false;
        const bool healing = manager.healing();
        if (!compute_first) {
            // Sync: a healer adopts the received state first, then every
            // replica computes on up-to-date weights and contributes.
            if (!async)
                manager.healBeforeCompute();
            if (!(async && healing))
                computeGradient();
        }
        manager.allReduce(gradient, {int(step), -1, -1});

        // 5. Commit (a healer first adopts the received state and step) or abort.
        // The others finished every step while this replica computed this one
        // (restarted near the end, in a quorum of the few still here): a step
        // committed now would be past the job's end, diverging from every
        // finished replica. Leave without it. (A replica that was in the
        // finisher's last quorum commits that last step, as the finisher did.)
        if (manager.jobFinishedWithoutThisRound()) {
            left_early = true;
            break;
        }
        const bool commit = manager.shouldCommit();
        if (commit) {
            const int64_t t = telemetry.now();
            {
                at::NoGradGuard no_grad;
                int64_t offset = 0;
                for (const auto& p : params) {
                    // (a healer that skipped its compute has no .grad yet)
                    if (!p.grad().defined())
                        p.mutable_grad() = at::zeros_like(p);
                    p.mutable_grad().copy_(gradient.narrow(0, offset, p.numel()).view(p.sizes()));
                    offset += p.numel();
                }
            }
            {
                const AllocationOwnerScope owner(
                    MemoryOwner::OptimizerState); // AdamW's moments, made at its first step
                optimizer.step();
            }
            telemetry.span(EventKind::Optimizer).from(t).step(step).emit();
            manager.committed(step, step);
            const uint64_t checksum = parametersChecksum(m.model().trainableParameters());
            telemetry.instant(EventKind::ParamsChecksum).step(step).seq(checksum).emit();
            if (!(healing && async) && !std::isnan(step_loss)) // async: a healer's loss is of stale weights
                telemetry.counter(EventKind::LossValue).step(step).value(step_loss).emit();
            // 6. A durable checkpoint of the committed state.
            manager.checkpointIfDue(step, [&](int64_t s) {
                const std::string dir = checkpointStepDir(scenario.run.checkpoint_dir, int(s));
                if (replicaCheckpointSavedByRun(dir, int(s), scenario.run.run_id))
                    return int64_t(-1); // saved before this job went back to an older step
                return saveReplicaCheckpoint(dir, int(s), scenario, params, optimizer, replica,
                                             c.incarnation);
            });
            step += 1;
        } else {
            manager.aborted(step, step);
            sender.log(LogLevel::Warning, "step " + std::to_string(step) +
                                              " not committed: " + ft::abortText(manager.abortReason()));
        }

        const int64_t attempted = commit ? step - 1 : step;
        endReplicaStep(c, telemetry, attempted, step_begin, manager.modeledBytesSent());
        if (telemetry.detailed())
            ft::emitReplicaMemory(telemetry, attempted,
                                  sampleMemory(storageBytes(params), storageBytes(m.grads()),
                                               adamStateBytes(optimizer), gradient.numel() * 4),
                                  /*comm_buffers=*/true);
    }

    if (!left_early && !c.params_out_dir.empty())
        saveParameters(c.params_out_dir + "/rank" + std::to_string(replica) + ".params",
                       m.model().trainableParameters());
    manager.finish(step, left_early);
    return 0;
}

} // namespace dt
