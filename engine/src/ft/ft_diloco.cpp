// ft_diloco.cpp: one replica of fault-tolerant DiLoCo (TorchFT's DiLoCo
// wrapper, in C++): inner steps need no quorum; each outer sync is one round
// of ft::Manager (ft_manager.cpp) with pseudo-gradients instead of gradients.
// One replica group = one rank; classic DiLoCo (one fragment, no sync delay,
// fp32 pseudo-gradients).
//
// Per step s (s counts inner steps; H = [diloco] inner_steps; P = parameters):
//  1. Inner step: forward, backward and AdamW on this replica's batch (shard =
//     replica index). No communication, no lighthouse.
//  2. After every H-th step and the last (a sync):
//     a. startQuorum / waitQuorum (reporting s + 1 steps done); the quorum
//        thread configures (a new quorum id rebuilds the cross-replica Gloo
//        group) and posts the heal transfers of b.
//     b. heal: a restarted replica asks for the quorum before computing
//        anything; an up-to-date peer sends it two messages: its AdamW state
//        and local model (4 (3P + 2) bytes, replica_state.hpp) and the global
//        model with the outer momentum (8P).
//     c. allReduce delta = global - local (P fp32; ring 2 (N-1)/N x 4P bytes
//        sent); a healer sends zeros; divided by the replicas up to date.
//     d. shouldCommit, as for DDP. Commit: the healer adopts the received
//        state; every replica applies the outer Nesterov step
//        (outer_optimizer.hpp) to the same global model with the same delta
//        and sets local = global (one Commit event per inner step of the
//        round). Abort: local = global again, the round's inner steps are lost
//        (an Abort event per step).
// A replica that dies mid-round simply is not in the next quorum: the others'
// outer step averages over the replicas that are there.
//  3. After a committed outer sync whose inner steps include a checkpoint
//     step ([run] checkpoint_every, a temporary directory by default), the
//     quorum's lowest replica writes a durable checkpoint
//     (replica_checkpoint.hpp): its AdamW state and local model (equal to the
//     global one right after the outer step) and the global model with the
//     outer momentum, 4 (3P + 2) + 8P bytes. When every replica was down at
//     once, the restarted ones (a quorum all at step 0) load the newest one
//     and go on from the step after it; `resume_from` does the same at the
//     job's start.
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
#include "strategy/outer_optimizer.hpp"
#include "telemetry/telemetry_sender.hpp"

#include <torch/optim/adamw.h>

#include <cmath>

namespace dt {

namespace {} // namespace

int trainFaultTolerantDiloco(const RankContext& c) {
    const Scenario& scenario = *c.scenario;
    const DilocoConfig& dc = scenario.diloco;
    const int replica = c.env.rank, replicas = c.env.world;
    const int H = dc.inner_steps;
    TelemetrySender& sender = *c.sender;
    const RankTelemetry telemetry(&sender, replica, scenario.telemetry.enabled);
    ft::ReplicaModel m(scenario);
    const std::vector<at::Tensor>& params = m.params();
    torch::optim::AdamW& optimizer = m.optimizer();
    at::Tensor global = ft::flatten(params);      // the outer parameters, equal everywhere after a commit
    at::Tensor momentum = at::zeros_like(global); // the outer Nesterov buffer
    const int64_t P = global.numel();
    if (replica == 0 && c.incarnation == 0)
        sender.log(LogLevel::Info, m.describe() + "; fault-tolerant DiLoCo: " + std::to_string(replicas) +
                                       " replica groups of 1 rank, H = " + std::to_string(H));

    int64_t step = 0;        // the inner step this replica is at
    int64_t round_begin = 0; // first inner step of the current round
    ft::ReplicaStateTransfer state;
    state.message_numels = {replicaStateNumel(params), 2 * P};
    state.save = [&] {
        return std::vector<at::Tensor>{packReplicaState(params, optimizer, step + 1),
                                       at::cat({global, momentum})};
    };
    state.load = [&](const std::vector<at::Tensor>& messages) {
        const int64_t source_steps = unpackReplicaState(messages[0], params, optimizer);
        global.copy_(messages[1].narrow(0, 0, P));
        momentum.copy_(messages[1].narrow(0, P, P));
        step = round_begin = source_steps - 1; // the sync step of the source's round
        return step;
    };
    ft::Manager manager(c, telemetry, std::move(state));
    if (c.incarnation > 0)
        sender.log(LogLevel::Info, "restarted (incarnation " + std::to_string(c.incarnation) +
                                       "): will heal at the next outer sync");

    // The durable checkpoint: this replica's file, read into params, AdamW and
    // the outer state (global + momentum). Returns the next step to train.
    const auto loadCheckpoint = [&](const std::string& step_dir) {
        int64_t bytes = 0;
        at::Tensor outer = at::empty({2 * P}, at::kFloat);
        const int64_t next = loadReplicaCheckpoint(step_dir, params, optimizer, bytes, &outer);
        global.copy_(outer.narrow(0, 0, P));
        momentum.copy_(outer.narrow(0, P, P));
        telemetry.instant(EventKind::CheckpointLoaded).step(next - 1).bytes(bytes).emit();
        return next;
    };
    if (!scenario.run.resume_from.empty() && c.incarnation == 0) {
        // A whole job resumes: every replica loads the same checkpoint.
        step = round_begin = loadCheckpoint(scenario.run.resume_from);
        refuseWhenNothingLeftToTrain(scenario.run.resume_from, step - 1, scenario.run.steps);
        if (replica == 0)
            sender.log(LogLevel::Info, "resumed from " + scenario.run.resume_from + " (step " +
                                           std::to_string(step - 1) + ")");
    }
    // Every replica down at once: the restarted ones form a quorum all at
    // step 0 (they all decide the same) and load the job's newest checkpoint.
    bool may_resume_from_checkpoint = c.incarnation > 0 && !scenario.run.checkpoint_dir.empty();
    const auto resumeFromNewestCheckpoint = [&] {
        const std::optional<CheckpointChoice> choice = newestCheckpointOfThisJob(scenario, step);
        if (!choice)
            return false;
        step = round_begin = loadCheckpoint(choice->step_dir);
        sender.log(LogLevel::Warning,
                   "no live replica was ahead: resumed from the job's durable checkpoint " +
                       choice->step_dir + " (step " + std::to_string(step - 1) +
                       "); the steps after it are redone");
        return true;
    };

    int outer_steps = 0;
    bool left_early = false;
    markStartupEnd(); // the allocator's peak from here on is the step peak
    while (step < scenario.run.steps) {
        if (c.faults->job_finished.load()) {
            left_early = true;
            break;
        }
        const int64_t step_begin = beginReplicaStep(c, telemetry, step);

        // 1. The inner step (a restarted replica skips it: it will heal).
        const bool heal_first = manager.healsBeforeCompute();
        if (!heal_first) {
            const double step_loss = m.forwardBackward(step, replica, replicas, telemetry);
            const int64_t t = telemetry.now();
            {
                const AllocationOwnerScope owner(
                    MemoryOwner::OptimizerState); // the inner AdamW's moments, made at its first step
                optimizer.step();
            }
            telemetry.span(EventKind::Optimizer).from(t).step(step).emit();
            if (!std::isnan(step_loss))
                telemetry.counter(EventKind::LossValue).step(step).value(step_loss).emit();
        }

        const bool sync = heal_first || (step + 1) % H == 0 || step == scenario.run.steps - 1;
        bool advanced = true;
        if (sync) {
            // 2a, 2b. The quorum, the group, the heal.
            manager.startQuorum(step, heal_first ? step : step + 1);
            if (!manager.waitQuorum()) {
                left_early = true;
                break;
            }
            // Every member restarted at step 0, none to heal from: the newest
            // durable checkpoint instead. Every member loads the same one and
            // skips this round (nothing was trained in it).
            const bool resume = may_resume_from_checkpoint && !manager.healing() &&
                                manager.quorumMaxStep() == 0 && manager.quorumAllRestarted();
            may_resume_from_checkpoint = false;
            if (resume && resumeFromNewestCheckpoint()) {
                manager.markUpToDate(); // its next round is an ordinary outer sync
                continue;
            }

            // 2c. The pseudo-gradient, averaged over the replicas up to date.
            at::Tensor delta = at::zeros({P}, at::kFloat);
            if (manager.abortReason() == ft::AbortReason::None) {
                const int64_t t = telemetry.now();
                // (a healer's delta stays zeros: Manager::allReduce zeroes a healer's
                // contribution, so a NaN fault that lands in its heal round is dropped)
                if (!manager.healing())
                    delta = global - ft::flatten(params);
                if (c.faults->nan_gradients.exchange(false)) {
                    delta.fill_(std::nan(""));
                    sender.log(LogLevel::Warning, "fault: this replica's pseudo-gradient is NaN at step " +
                                                      std::to_string(step));
                }
                telemetry.span(EventKind::PseudoGradient)
                    .from(t)
                    .step(step)
                    .value(double(outer_steps))
                    .bytes(4 * P)
                    .unit(0) // the one fragment
                    .emit();
                manager.allReduce(delta, {int(step), 0, -1});
            }

            // 2d. Commit (a healer first adopts the received state) or abort.
            if (manager.shouldCommit(/*adopt_before_vote=*/false)) {
                const int64_t t = telemetry.now();
                outerSgdStep(global, momentum, delta, dc);
                ft::copyInto(params, global); // every replica continues from the new global model
                outer_steps += 1;
                telemetry.span(EventKind::OuterStep)
                    .from(t)
                    .step(step)
                    .value(double(outer_steps))
                    .bytes(4 * P)
                    .unit(0)
                    .emit();
                manager.committed(round_begin, step);
                const uint64_t checksum = parametersChecksum(m.model().trainableParameters());
                telemetry.instant(EventKind::ParamsChecksum).step(step).seq(checksum).emit();
                // 3. A durable checkpoint of the committed state (local = global now).
                manager.checkpointIfDue(
                    step,
                    [&](int64_t s) {
                        const std::string dir = checkpointStepDir(scenario.run.checkpoint_dir, int(s));
                        if (replicaCheckpointSavedByRun(dir, int(s), scenario.run.run_id))
                            return int64_t(-1); // saved before this job went back to an older step
                        return saveReplicaCheckpoint(dir, int(s), scenario, params, optimizer, replica,
                                                     c.incarnation, at::cat({global, momentum}));
                    },
                    round_begin);
            } else {
                manager.aborted(round_begin, step);
                sender.log(LogLevel::Warning, "outer sync at step " + std::to_string(step) +
                                                  " not committed: " + ft::abortText(manager.abortReason()) +
                                                  "; the round's inner steps are lost");
                ft::copyInto(params, global); // back to the last committed global model
                advanced = !heal_first;       // a healer asks again; the others move on to the next round
            }
            round_begin = step + 1;
        }

        endReplicaStep(c, telemetry, step, step_begin, manager.modeledBytesSent());
        if (telemetry.detailed()) // (+ 4P each: the global model and the outer momentum)
            ft::emitReplicaMemory(telemetry, step,
                                  sampleMemory(storageBytes(params) + 4 * P, storageBytes(m.grads()),
                                               adamStateBytes(optimizer) + 4 * P, 0),
                                  /*comm_buffers=*/false);
        if (advanced)
            step += 1;
    }

    if (!left_early && !c.params_out_dir.empty())
        saveParameters(c.params_out_dir + "/rank" + std::to_string(replica) + ".params",
                       m.model().trainableParameters());
    manager.finish(step, left_early);
    return 0;
}

} // namespace dt
