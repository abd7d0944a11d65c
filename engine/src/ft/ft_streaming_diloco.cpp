// ft_streaming_diloco.cpp: one replica of fault-tolerant Streaming DiLoCo
// (TorchFT's DiLoCo class with several model fragments, torchft/local_sgd.py,
// in C++). One replica group = one rank. F = [diloco] fragments, H =
// inner_steps, period = H / F inner steps, tau = sync_delay, alpha = mixing;
// fragment f holds the blocks b with b mod F = f (and fragment 0 the
// embeddings, final norm and head: diloco_schedule.hpp); P_f = its parameters.
//
// State: the local model and its AdamW (4P + 8P), and per fragment the global
// parameters and the outer momentum (2 x 4P_f), equal on every replica after
// each commit.
//
// Per inner step s (local_step counts the inner steps since the last round,
// TorchFT's _local_step):
//  1. forward, backward and AdamW on this replica's batch: no communication.
//  2. local_step = period - tau: a round starts (TorchFT's prepare_sync):
//     a. startQuorum / waitQuorum (sync mode: a healer adopts the state now,
//        before its pseudo-gradient);
//     b. the fragment k = rounds % F, where rounds counts the committed
//        rounds (TorchFT's manager.current_step(): an aborted fragment is
//        retried next period); its pseudo-gradient delta_k = global_k -
//        local_k (P_f fp32; a healer's is zeros) starts its all-reduce
//        (2 (N-1)/N x 4 P_f bytes sent) and stays in flight for tau steps;
//        quantized (bf16, int8, int4: pseudo_gradient_codec.hpp) it is
//        encoded and all-gathered instead ((N-1) x encoded(P_f) bytes sent),
//        then every member's bytes are decoded and summed in fp32 in
//        replica-rank order (the same bits everywhere) and divided by the
//        participants.
//  3. local_step = period (tau steps later; at once when tau = 0): the round
//     ends (TorchFT's perform_sync): wait for the average, the vote; commit:
//     the outer Nesterov step on global_k, then local_k = alpha local_k +
//     (1 - alpha) global_k; abort: local_k = global_k (back to the last sync
//     of that fragment; the other fragments keep their inner progress).
//     local_step = 0.
//  4. After a committed round whose inner steps include a checkpoint step
//     ([run] checkpoint_every, a temporary directory by default), the
//     quorum's lowest replica writes a durable checkpoint
//     (replica_checkpoint.hpp): its local model and AdamW (as a heal sends
//     them), the global model and momentum in model order (2P) and the
//     rounds committed. Nothing is in flight then (local_step = 0). When
//     every replica was down at once, the restarted ones (a quorum all at
//     step 0) load the newest one and go on from the step after it, each
//     with the writer's local model, as healers would.
// A restarted replica asks for the quorum at once; once it heals it is at its
// source's inner step and local_step, so it starts and ends the rounds with
// the others. The run's last step ends a round in flight (everyone is at the
// same local_step, so everyone does), and nothing more: as in TorchFT there
// is no extra sync at the end. The replicas' global models are equal (the
// ParamsChecksum after every commit is the global model's, and params_out
// holds it); their local models are not, by design.
#include "ft/ft_training.hpp"

#include "checkpoint/checkpoint_meta.hpp"
#include "checkpoint/params_io.hpp"
#include "checkpoint/replica_checkpoint.hpp"
#include "checkpoint/replica_state.hpp"
#include "checkpoint/sharded_checkpoint.hpp"
#include "dtlab/checkpoint.hpp"
#include "dtlab/diloco_schedule.hpp"
#include "ft/ft_manager.hpp"
#include "ft/replica_loop.hpp"
#include "memory/tracking_allocator.hpp"
#include "strategy/outer_optimizer.hpp"
#include "strategy/pseudo_gradient_codec.hpp"
#include "telemetry/telemetry_sender.hpp"

#include <torch/optim/adamw.h>

#include <cmath>
#include <optional>

namespace dt {

namespace {

struct Fragment {
    std::vector<int> params; // indices into the model's parameters
    int64_t numel = 0;       // P_f
    at::Tensor global;       // P_f fp32, equal on every replica after a commit
    at::Tensor momentum;     // P_f fp32, the outer Nesterov buffer
};

std::vector<at::Tensor> paramsOf(const Fragment& f, const std::vector<at::Tensor>& params) {
    std::vector<at::Tensor> out;
    for (int i : f.params)
        out.push_back(params[size_t(i)]);
    return out;
}

} // namespace

int trainFaultTolerantStreamingDiloco(const RankContext& c) {
    const Scenario& scenario = *c.scenario;
    const DilocoConfig& dc = scenario.diloco;
    const int replica = c.env.rank, replicas = c.env.world;
    const int F = dc.fragments, period = dc.inner_steps / dc.fragments, tau = dc.sync_delay;
    const int prepare_at = period - tau; // the local step at which a round starts
    TelemetrySender& sender = *c.sender;
    const RankTelemetry telemetry(&sender, replica, scenario.telemetry.enabled);
    ft::ReplicaModel m(scenario);
    const std::vector<at::Tensor>& params = m.params();
    torch::optim::AdamW& optimizer = m.optimizer();

    std::vector<Fragment> fragments(static_cast<size_t>(F));
    {
        const std::vector<int> units = m.model().parameterUnits();
        for (size_t i = 0; i < params.size(); ++i) {
            Fragment& f = fragments[size_t(diloco::fragmentOfUnit(units[i], F))];
            f.params.push_back(int(i));
            f.numel += params[i].numel();
        }
        for (Fragment& f : fragments) {
            f.global = ft::flatten(paramsOf(f, params));
            f.momentum = at::zeros_like(f.global);
        }
    }
    const int64_t P = m.numel();
    if (replica == 0 && c.incarnation == 0)
        sender.log(LogLevel::Info,
                   m.describe() + "; fault-tolerant Streaming DiLoCo: " + std::to_string(replicas) +
                       " replica groups of 1 rank, H = " + std::to_string(dc.inner_steps) + ", " +
                       std::to_string(F) + " fragments (one round every " + std::to_string(period) +
                       " steps), sync_delay " + std::to_string(tau) + ", alpha " + std::to_string(dc.alpha));

    int64_t step = 0;        // the inner step this replica trains next
    int local_step = 0;      // inner steps since the last round ended
    int64_t rounds = 0;      // committed rounds: the next round's fragment is rounds % F
    int64_t round_first = 0; // the first inner step the current round covers
    // Inner steps up to the last committed round: what this replica reports
    // to the lighthouse (TorchFT's current_step counts commits), so a replica
    // whose round aborted while the others committed is behind, and heals.
    int64_t committed_upto = 0;
    bool must_heal = c.incarnation > 0; // restarted: asks for the quorum before any inner step
    bool adopted = false;               // this round's quorum healed this replica
    const PseudoGradientFormat format = parsePseudoGradientFormat(dc.pseudo_gradient);
    const bool quantized = format != PseudoGradientFormat::Fp32;
    struct InFlight {
        int fragment = -1;
        at::Tensor delta;             // fp32: averaged in place by the manager
        at::Tensor encoded, gathered; // quantized: this replica's bytes, every member's (as fp32 words)
        int64_t wire_bytes = 0;
        int outer_step = 0;
    };
    std::optional<InFlight> flight;

    // The heal: the local model and AdamW (replica_state.hpp, 4 (3P + 2)
    // bytes), then every fragment's global parameters and momentum and the
    // round position (rounds, local_step, committed_upto): 4 (2P + 3) bytes.
    ft::ReplicaStateTransfer state;
    state.message_numels = {replicaStateNumel(params), 2 * P + 3};
    state.save = [&] {
        std::vector<at::Tensor> outer;
        for (const Fragment& f : fragments) {
            outer.push_back(f.global);
            outer.push_back(f.momentum);
        }
        outer.push_back(at::tensor({float(rounds), float(local_step), float(committed_upto)}, at::kFloat));
        return std::vector<at::Tensor>{packReplicaState(params, optimizer, step + 1), at::cat(outer)};
    };
    state.load = [&](const std::vector<at::Tensor>& messages) {
        const int64_t source_steps = unpackReplicaState(messages[0], params, optimizer);
        int64_t offset = 0;
        for (Fragment& f : fragments) {
            f.global.copy_(messages[1].narrow(0, offset, f.numel));
            f.momentum.copy_(messages[1].narrow(0, offset + f.numel, f.numel));
            offset += 2 * f.numel;
        }
        rounds = int64_t(messages[1][offset].item<float>());
        local_step = int(messages[1][offset + 1].item<float>());
        committed_upto = int64_t(messages[1][offset + 2].item<float>());
        must_heal = false;
        adopted = true;
        // The source is at inner step source_steps - 1, which started this round.
        step = source_steps;
        // With tau = 0 the round ends at that same step: it covers it.
        round_first = tau == 0 ? source_steps - 1 : source_steps;
        return source_steps - 1;
    };
    ft::Manager manager(c, telemetry, std::move(state));
    if (c.incarnation > 0)
        sender.log(LogLevel::Info, "restarted (incarnation " + std::to_string(c.incarnation) +
                                       "): will heal at the next fragment's round");

    // A checkpoint's outer state: the global model, then the momentum, each
    // in model order (2P), as classic DiLoCo lays out its one fragment.
    const auto outerInModelOrder = [&] {
        std::vector<at::Tensor> global(params.size()), momentum(params.size());
        for (const Fragment& f : fragments) {
            int64_t offset = 0;
            for (int i : f.params) {
                const int64_t n = params[size_t(i)].numel();
                global[size_t(i)] = f.global.narrow(0, offset, n);
                momentum[size_t(i)] = f.momentum.narrow(0, offset, n);
                offset += n;
            }
        }
        return at::cat({at::cat(global), at::cat(momentum)});
    };
    const auto loadCheckpoint = [&](const std::string& step_dir) {
        int64_t bytes = 0;
        at::Tensor outer = at::empty({2 * P}, at::kFloat);
        const int64_t next = loadReplicaCheckpoint(step_dir, params, optimizer, bytes, &outer, &rounds);
        std::vector<int64_t> offset_of(params.size()); // each parameter's place in model order
        for (size_t i = 1; i < params.size(); ++i)
            offset_of[i] = offset_of[i - 1] + params[i - 1].numel();
        for (Fragment& f : fragments) {
            int64_t offset = 0;
            for (int i : f.params) {
                const int64_t n = params[size_t(i)].numel();
                f.global.narrow(0, offset, n).copy_(outer.narrow(0, offset_of[size_t(i)], n));
                f.momentum.narrow(0, offset, n).copy_(outer.narrow(0, P + offset_of[size_t(i)], n));
                offset += n;
            }
        }
        step = round_first = committed_upto = next;
        local_step = 0;
        must_heal = false;
        telemetry.instant(EventKind::CheckpointLoaded).step(next - 1).bytes(bytes).emit();
    };
    if (!scenario.run.resume_from.empty() && c.incarnation == 0) {
        // A whole job resumes: every replica loads the same checkpoint.
        loadCheckpoint(scenario.run.resume_from);
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
        loadCheckpoint(choice->step_dir);
        sender.log(LogLevel::Warning,
                   "no live replica was ahead: resumed from the job's durable checkpoint " +
                       choice->step_dir + " (step " + std::to_string(step - 1) +
                       "); the steps after it are redone, from the writer's local model");
        return true;
    };

    // 2. A round starts: the quorum (a healer adopts here), then fragment k's
    // pseudo-gradient goes out and stays in flight.
    const auto startRound = [&](int64_t event_step, int64_t steps_done) {
        adopted = false;
        manager.startQuorum(event_step, steps_done);
        if (!manager.waitQuorum())
            return false;
        manager.healBeforeCompute();
        InFlight fl;
        fl.fragment = int(rounds % F);
        const Fragment& f = fragments[size_t(fl.fragment)];
        const int64_t t = telemetry.now();
        fl.delta = at::zeros({f.numel}, at::kFloat);
        if (!manager.healing()) // a healer's stays zeros, and it is not counted
            fl.delta = f.global - ft::flatten(paramsOf(f, params));
        if (c.faults->nan_gradients.exchange(false)) {
            fl.delta.fill_(std::nan(""));
            sender.log(LogLevel::Warning,
                       "fault: this replica's pseudo-gradient is NaN at step " + std::to_string(event_step));
        }
        fl.outer_step = int(rounds);
        fl.wire_bytes = quantized ? encodedBytes(f.numel, format) : 4 * f.numel;
        if (quantized) {
            const int64_t words = (fl.wire_bytes + 3) / 4;
            fl.encoded = at::zeros({words}, at::kFloat);
            encodePseudoGradient(fl.delta, format, reinterpret_cast<uint8_t*>(fl.encoded.data_ptr<float>()));
            fl.gathered = at::empty({words * std::max(1, manager.quorumSize())}, at::kFloat);
        }
        telemetry.span(EventKind::PseudoGradient)
            .from(t)
            .step(event_step)
            .value(double(rounds))
            .bytes(fl.wire_bytes)
            .unit(fl.fragment)
            .emit();
        if (quantized)
            manager.startAllGather(fl.gathered, fl.encoded, {int(event_step), fl.fragment, -1});
        else
            manager.startAllReduce(fl.delta, {int(event_step), fl.fragment, -1});
        flight = std::move(fl);
        return true;
    };

    // The global model as named parameters (what every replica agrees on).
    const auto globalModel = [&] {
        std::vector<NamedParameter> named = m.model().trainableParameters();
        for (const Fragment& f : fragments) {
            int64_t offset = 0;
            for (int i : f.params) {
                at::Tensor& t = named[size_t(i)].tensor;
                t = f.global.narrow(0, offset, t.numel()).view(t.sizes()).clone();
                offset += t.numel();
            }
        }
        return named;
    };

    // 3. The round ends: the average, the vote, the outer step or the revert.
    const auto endRound = [&](int64_t event_step) {
        int64_t checkpoint_due_from = -1; // committed: the round's first inner step
        InFlight fl = std::move(*flight);
        flight.reset();
        Fragment& f = fragments[size_t(fl.fragment)];
        const std::vector<at::Tensor> local = paramsOf(f, params);
        at::NoGradGuard no_grad;
        if (quantized) {
            manager.finishAllGather();
            if (manager.abortReason() == ft::AbortReason::None) {
                // Every member's bytes, decoded and summed in replica-rank order, then averaged.
                fl.delta = at::zeros({f.numel}, at::kFloat);
                const auto* bytes = reinterpret_cast<const uint8_t*>(fl.gathered.data_ptr<float>());
                const int64_t stride = fl.encoded.numel() * 4;
                for (int member = 0; member < manager.quorumSize(); ++member)
                    decodeAddPseudoGradient(bytes + member * stride, format, fl.delta);
                fl.delta.div_(double(std::max(1, manager.participants())));
                manager.checkFinite(fl.delta);
            }
        } else {
            manager.finishAllReduce();
        }
        if (manager.shouldCommit(/*adopt_before_vote=*/false)) {
            const int64_t t = telemetry.now();
            outerSgdStep(f.global, f.momentum, fl.delta, dc);
            if (dc.alpha == 0.0) {
                ft::copyInto(local, f.global);
            } else { // local = alpha local + (1 - alpha) global
                at::Tensor mixed = ft::flatten(local).mul_(dc.alpha).add_(f.global, 1.0 - dc.alpha);
                ft::copyInto(local, mixed);
            }
            rounds += 1;
            committed_upto = event_step + 1;
            telemetry.span(EventKind::OuterStep)
                .from(t)
                .step(event_step)
                .value(double(rounds))
                .bytes(fl.wire_bytes)
                .unit(fl.fragment)
                .emit();
            manager.committed(round_first, event_step);
            telemetry.instant(EventKind::ParamsChecksum)
                .step(event_step)
                .seq(parametersChecksum(globalModel()))
                .emit();
            checkpoint_due_from = round_first; // 4. once the round is closed (below)
        } else {
            ft::copyInto(local, f.global); // back to this fragment's last sync
            manager.aborted(round_first, event_step);
            sender.log(LogLevel::Warning, "fragment " + std::to_string(fl.fragment) + "'s round at step " +
                                              std::to_string(event_step) +
                                              " not committed: " + ft::abortText(manager.abortReason()) +
                                              "; the fragment goes back to its last sync and is retried");
        }
        round_first = event_step + 1;
        local_step = 0;
        // 4. A durable checkpoint of the committed round: nothing in flight now.
        if (checkpoint_due_from >= 0)
            manager.checkpointIfDue(
                event_step,
                [&](int64_t s) {
                    const std::string dir = checkpointStepDir(scenario.run.checkpoint_dir, int(s));
                    if (replicaCheckpointSavedByRun(dir, int(s), scenario.run.run_id))
                        return int64_t(-1); // saved before this job went back to an older step
                    return saveReplicaCheckpoint(dir, int(s), scenario, params, optimizer, replica,
                                                 c.incarnation, outerInModelOrder(), rounds);
                },
                checkpoint_due_from);
    };

    // Just healed, this replica is where its source is in the round (its step
    // is the source's next): a round that ends there (tau = 0, or one started
    // on the run's last step) ends now.
    const auto endHealedRoundIfDue = [&] {
        if (local_step == period || step >= scenario.run.steps)
            endRound(step - 1);
    };

    bool left_early = false;
    markStartupEnd(); // the allocator's peak from here on is the step peak
    while (step < scenario.run.steps) {
        // The job finished: leave, unless this replica's round in flight is
        // the finisher's last (it ended it tau steps ahead of this replica,
        // whose contribution it already had): then do those steps and end it.
        if (flight ? manager.jobFinishedWithoutThisRound() : c.faults->job_finished.load()) {
            left_early = true;
            break;
        }
        const int64_t step_begin = beginReplicaStep(c, telemetry, step);

        if (must_heal) {
            // A restarted replica: no inner step; it asks for the quorum now
            // and, once healed, is where its source is in the round.
            const int64_t asked_at = step;
            if (!startRound(asked_at, committed_upto)) {
                left_early = true;
                break;
            }
            if (adopted) {
                endHealedRoundIfDue();
            } else {
                // Not healed: nobody ahead (every replica restarted), or the heal
                // failed. Close the round; a replica still behind asks again.
                manager.finishAllReduce();
                manager.finishAllGather();
                if (manager.healing())
                    manager.aborted(asked_at, asked_at);
                flight.reset();
                must_heal = manager.healing();
                // Every member restarted at step 0, none to heal from: the newest
                // durable checkpoint instead (every member loads the same one).
                const bool resume = may_resume_from_checkpoint && !manager.healing() &&
                                    manager.quorumMaxStep() == 0 && manager.quorumAllRestarted();
                may_resume_from_checkpoint = false;
                if (resume && resumeFromNewestCheckpoint())
                    manager.markUpToDate(); // its next round is an ordinary one
            }
            endReplicaStep(c, telemetry, asked_at, step_begin, manager.modeledBytesSent());
            continue;
        }

        // 1. The inner step.
        const double step_loss = m.forwardBackward(step, replica, replicas, telemetry);
        {
            const int64_t t = telemetry.now();
            {
                const AllocationOwnerScope owner(
                    MemoryOwner::OptimizerState); // the inner AdamW's moments, made at its first step
                optimizer.step();
            }
            telemetry.span(EventKind::Optimizer).from(t).step(step).emit();
        }
        if (!std::isnan(step_loss))
            telemetry.counter(EventKind::LossValue).step(step).value(step_loss).emit();
        local_step += 1;

        // 2. and 3.: a round starts, a round ends (the last step ends one in flight).
        const bool last = step == scenario.run.steps - 1;
        if (local_step == prepare_at && !flight) {
            const int64_t done = step;
            if (!startRound(done, committed_upto)) {
                left_early = true;
                break;
            }
            if (adopted) {
                // Behind (a hang or a partition) and healed from a peer: this
                // replica is now at the peer's step and place in the round.
                endHealedRoundIfDue();
                endReplicaStep(c, telemetry, done, step_begin, manager.modeledBytesSent());
                continue;
            }
        }
        if (flight && (local_step == period || last))
            endRound(step);

        endReplicaStep(c, telemetry, step, step_begin, manager.modeledBytesSent());
        if (telemetry.detailed()) // (+ 4P each: the global model and the outer momentum)
            ft::emitReplicaMemory(telemetry, step,
                                  sampleMemory(storageBytes(params) + 4 * P, storageBytes(m.grads()),
                                               adamStateBytes(optimizer) + 4 * P,
                                               flight ? 4 * flight->delta.numel() : 0),
                                  /*comm_buffers=*/false);
        step += 1;
    }
    if (flight) { // left while a round was in flight
        manager.finishAllReduce();
        manager.finishAllGather();
    }

    if (!left_early && !c.params_out_dir.empty())
        saveParameters(c.params_out_dir + "/rank" + std::to_string(replica) + ".params", globalModel());
    manager.finish(step, left_early);
    return 0;
}

} // namespace dt
