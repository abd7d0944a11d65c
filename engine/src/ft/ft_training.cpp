// ft_training.cpp: one replica of fault-tolerant DDP (TorchFT's Manager and
// OptimizerWrapper, in C++). One replica group = one rank here.
//
// One step; s = the steps this replica has committed so far:
//  1. Ask the lighthouse for a quorum (QUORUM s failures) on a helper thread,
//     while forward and backward run on this replica's batch (step s, shard =
//     replica index): the quorum overlaps compute, as in TorchFT. (A
//     restarted replica asks first and skips the compute when it heals.)
//  2. Quorum in hand: role = computeQuorumRole (lighthouse.hpp). A new quorum
//     id rebuilds the cross-replica Gloo group on a fresh store prefix
//     ft/q<id>/<members> (a Reconfigure span), so no stale key is ever read.
//  3. Heal, over that group: an up-to-date replica posts a copy of its state
//     (replica_state.hpp: 4 (3P + 2) bytes, P = parameters) to each healer it
//     serves and goes on; a healer posts the receive.
//  4. All-reduce the flat gradient (P fp32; ring: 2 (N-1)/N x 4P bytes sent
//     per replica). A healer contributes zeros (its gradient came from stale
//     parameters); the sum is divided by the replicas that are up to date.
//  5. Vote and commit. Commit iff the group was built, the all-reduce and the
//     heal succeeded, the averaged gradient is finite and the quorum has at
//     least min_replicas. Commit: the healer adopts the received state and the
//     step, then everyone runs the same AdamW step on the same average, so the
//     replicas stay bit-identical (a ParamsChecksum after every commit shows
//     it). Abort: nothing is applied, commit_failures += 1 (the lighthouse
//     then issues a new quorum id), and after a collective failure the group
//     is dropped so that the next step rebuilds it.
//  6. On a checkpoint step ([run] checkpoint_dir, checkpoint_every) the lowest
//     replica id of the quorum writes a durable checkpoint of the committed
//     state (replica_checkpoint.hpp); a new job can resume from it.
// With one rank per replica the vote is this rank's alone. Every replica sees
// the same all-reduce result, so they agree; one left behind by a collective
// that failed part-way is behind at the next quorum, and heals.
#include "ft/ft_training.hpp"

#include "comm/gloo_communicator.hpp"
#include "data/data_source.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/lighthouse.hpp"
#include "ft/ft_replica_common.hpp"
#include "ft/replica_checkpoint.hpp"
#include "ft/replica_state.hpp"
#include "strategy/sharded_checkpoint.hpp"
#include "memory/memory_accounting.hpp"
#include "model/model.hpp"
#include "telemetry/telemetry_sender.hpp"
#include "worker/params_io.hpp"
#include "rank/rank_groups.hpp"
#include "rank/step_gate.hpp"

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/optim/adamw.h>

#include <cmath>
#include <future>
#include <thread>

namespace dt {

void FtFaultSwitches::setPartitioned(bool partitioned) {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_partitioned = partitioned;
    if (m_client) m_client->setPartitioned(partitioned);
}

void FtFaultSwitches::attach(ft::LighthouseClient* client) {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_client = client;
    if (m_client && m_partitioned) m_client->setPartitioned(true);
}

namespace {

// After every k-th step and the last, as the other strategies do.
bool isReplicaCheckpointStep(const RunConfig& run, int64_t step) {
    if (run.checkpoint_dir.empty()) return false;
    if (step == run.steps - 1) return true;
    return run.checkpoint_every > 0 && (step + 1) % run.checkpoint_every == 0;
}

} // namespace

int trainFaultTolerant(const FtRankContext& c) {
    const Scenario& scenario = *c.scenario;
    const FaultToleranceConfig& ftc = scenario.fault_tolerance;
    const int replica = c.env.rank, replicas = c.env.world;
    TelemetrySender& sender = *c.sender;
    ReplicaTelemetry telemetry(sender, replica, scenario.telemetry.enabled);
    EventSink* sink = telemetry.detailed() ? static_cast<EventSink*>(&sender) : nullptr;

    auto data = makeDataSource(scenario.data, scenario.model, scenario.run.seed);
    auto model = makeModel(scenario.model, scenario.run.seed); // the same seed: every replica starts identical
    std::vector<at::Tensor> params;
    for (const auto& p : model->trainableParameters()) params.push_back(p.tensor);
    int64_t P = 0;
    for (const auto& p : params) P += p.numel();
    const OptimizerConfig& o = scenario.optimizer;
    torch::optim::AdamW optimizer(
        params, torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay));
    if (replica == 0 && c.incarnation == 0)
        sender.log(LogLevel::Info, model->describe() + "; " + data->describe() + "; fault tolerant: " +
                                       std::to_string(replicas) + " replica groups of 1 rank");

    const std::string lighthouse = ftc.lighthouse.empty() ? storeGet(*c.store, "dtlab/lighthouse") : ftc.lighthouse;
    ft::LighthouseClient client(lighthouse, replica, c.incarnation);
    if (telemetry.detailed())
        client.onHeartbeat([&telemetry] { telemetry.instant(EventKind::Heartbeat, -1); });
    c.faults->attach(&client);
    struct Detach {
        FtFaultSwitches* f;
        ~Detach() { f->attach(nullptr); }
    } detach{c.faults};
    client.startHeartbeats(int64_t(ftc.heartbeat_interval_ms));
    if (c.incarnation == 0) waitForInitialReplicas(*c.store, replicas, 60000);
    else sender.log(LogLevel::Info, "restarted (incarnation " + std::to_string(c.incarnation) + "): will heal from a live peer");
    telemetry.instant(EventKind::RankReady, -1);

    GlooOptions gloo;
    gloo.interface_host = glooInterfaceFor(c.env);
    gloo.timeout = std::chrono::milliseconds(int64_t(ftc.collective_timeout_ms));

    UnitTimer timer;
    timer.forward = [](int, bool) {};

    std::unique_ptr<Communicator> group;    // the cross-replica group of the current quorum
    int64_t group_quorum_id = -1;
    int64_t bytes_sent_before = 0;          // modeled bytes of groups already dropped
    int64_t step = 0;                       // committed steps
    if (!scenario.run.resume_from.empty() && c.incarnation == 0) {
        // A whole job resumes: every replica loads the same checkpoint, so
        // they start identical. (A restarted replica heals from a peer instead.)
        int64_t bytes = 0;
        step = loadReplicaCheckpoint(scenario.run.resume_from, params, optimizer, bytes);
        if (step >= scenario.run.steps)
            throw UsageError("checkpoint '" + scenario.run.resume_from + "' ends at step " + std::to_string(step - 1) +
                             " but the run has only " + std::to_string(scenario.run.steps) +
                             " steps: nothing left to train (raise [run] steps)");
        Event e = telemetry.make(EventKind::CheckpointLoaded, EventPhase::Instant, step - 1);
        e.bytes = bytes;
        telemetry.emit(e);
        if (replica == 0)
            sender.log(LogLevel::Info, "resumed from " + scenario.run.resume_from + " (step " + std::to_string(step - 1) +
                                           ", " + std::to_string(bytes) + " bytes read per replica)");
    }
    int commit_failures = 0;
    const int B = scenario.data.batch_per_rank;
    bool left_early = false;
    bool committed_once = false;            // this process committed a step

    while (step < scenario.run.steps) {
        if (c.faults->job_finished.load()) {
            left_early = true;
            break;
        }
        const int64_t gate_begin = telemetry.now();
        if (c.gate->waitToStart(step)) telemetry.span(EventKind::Paused, gate_begin, step);
        const int64_t step_begin = telemetry.now();

        // 1. The quorum request runs while this replica computes its gradient.
        const int64_t quorum_begin = telemetry.now();
        const int64_t reported_step = step;
        const int reported_failures = commit_failures;
        std::future<ft::Quorum> quorum_future = std::async(std::launch::async, [&] {
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(ftc.quorum_timeout_ms));
            for (;;) { // in slices, so that "the job finished" is noticed while waiting
                try {
                    return client.requestQuorum(reported_step, reported_failures, "", 2000);
                } catch (const CommError&) {
                    if (c.faults->job_finished.load() || std::chrono::steady_clock::now() > deadline) throw;
                }
            }
        });

        // Forward and backward on this replica's batch: the flat gradient (P fp32).
        int64_t t = 0;
        at::Tensor gradient = at::zeros({P}, at::kFloat);
        double step_loss = std::nan("");
        const auto computeGradient = [&] {
            t = telemetry.now();
            const Batch batch = data->batch(step, replica, replicas, B);
            telemetry.span(EventKind::Data, t, step);
            for (auto& p : params)
                if (p.grad().defined()) p.mutable_grad().zero_();
            t = telemetry.now();
            at::Tensor loss = model->loss(batch.inputs, batch.targets, timer);
            telemetry.span(EventKind::Forward, t, step, 0, 0, -1, 0, -2);
            step_loss = loss.item<double>();
            t = telemetry.now();
            loss.backward();
            telemetry.span(EventKind::Backward, t, step, 0, 0, -1, 0, -2);
            int64_t offset = 0;
            for (const auto& p : params) {
                gradient.narrow(0, offset, p.numel()).copy_(p.grad().reshape({-1}));
                offset += p.numel();
            }
            if (c.faults->nan_gradients.exchange(false)) {
                gradient.fill_(std::nan(""));
                sender.log(LogLevel::Warning, "fault: this replica's gradients are NaN at step " + std::to_string(step));
            }
        };
        // A restarted replica will heal, and a healer's gradient is thrown
        // away: it asks for the quorum first and computes only if it need
        // not heal (TorchFT's use_async_quorum=False). Everyone else
        // overlaps the quorum with compute.
        const bool quorum_first = c.incarnation > 0 && !committed_once;
        if (!quorum_first) computeGradient();

        // 2. Wait for the quorum.
        t = telemetry.now();
        ft::Quorum quorum;
        try {
            quorum = quorum_future.get();
        } catch (const CommError&) {
            if (c.faults->job_finished.load()) {
                left_early = true;
                break;
            }
            throw; // no lighthouse for quorum_timeout_ms: the rank fails (and the supervisor may restart it)
        }
        telemetry.span(EventKind::QuorumWait, quorum_begin, step, double(quorum.quorum_id));
        const ft::QuorumRole role = ft::computeQuorumRole(quorum, replica, c.incarnation);
        if (quorum_first && !role.heal) computeGradient();
        emitQuorumFormed(telemetry, quorum, role, step);

        // Rebuild the cross-replica group when the quorum changed.
        AbortReason abort = rebuildReplicaGroupIfNeeded(group, group_quorum_id, bytes_sent_before, quorum, role, c.store, gloo,
                                                        c.link, sink, sender, telemetry, step);

        // 3. Heal: sources post their state, a healer posts the receive.
        struct HealSend {
            CommWorkPtr work;
            at::Tensor state;
            int peer_replica;
            int64_t begin;
        };
        std::vector<HealSend> heal_sends;
        CommWorkPtr heal_receive;
        at::Tensor heal_state;
        const int heal_tag = 1000 + int(role.quorum_id % 1000);
        int64_t heal_begin = 0;
        if (abort == AbortReason::None) {
            for (int destination : role.heal_destinations) {
                HealSend s;
                s.begin = telemetry.now();
                s.state = packReplicaState(params, optimizer, step);
                s.peer_replica = quorum.members[size_t(destination)].replica;
                s.work = group->postSend(s.state, destination, heal_tag, {int(step), -1, -1});
                heal_sends.push_back(s);
            }
            if (role.heal) {
                heal_begin = telemetry.now();
                heal_state = at::empty({replicaStateNumel(params)}, at::kFloat);
                heal_receive = group->postRecv(heal_state, role.heal_source, heal_tag, {int(step), -1, -1});
            }
        }

        // A source waits for its sends before it drops the group or ends the step
        // (the healer may be slow; the others are not held up by it).
        const auto finishHealSends = [&] {
            for (auto& s : heal_sends) {
                bool sent = true;
                try {
                    s.work->wait();
                } catch (const CommError& e) {
                    sent = false;
                    sender.log(LogLevel::Warning, "heal of replica " + std::to_string(s.peer_replica) + " failed: " + e.what());
                }
                telemetry.span(EventKind::Heal, s.begin, step, 1.0, sent ? s.state.numel() * 4 : 0, s.peer_replica, 0, 1);
            }
            heal_sends.clear();
            if (group) group->reapPosted();
        };

        // 4. Average the gradients over the replicas that are up to date.
        if (abort == AbortReason::None) {
            const double delay = c.faults->traffic_delay_ms.load();
            if (delay > 0) {
                t = telemetry.now();
                std::this_thread::sleep_for(std::chrono::microseconds(int64_t(delay * 1000)));
                telemetry.span(EventKind::SlowDelay, t, step, delay, 0, -1, 0, -3);
            }
            if (role.heal) gradient.zero_();
            if (c.faults->fail_next_collective.exchange(false)) {
                // Dropping our end of the group closes its connections: the
                // peers' all-reduce fails at once, as with a real broken link.
                sender.log(LogLevel::Warning, "fault: this replica's all-reduce fails at step " + std::to_string(step));
                finishHealSends();
                bytes_sent_before += group->modeledBytesSent();
                group.reset();
                abort = AbortReason::CollectiveFailed;
            } else {
                try {
                    group->allReduceNow(gradient, {int(step), -1, -1});
                    gradient.div_(double(std::max(1, role.up_to_date)));
                } catch (const CommError& e) {
                    abort = AbortReason::CollectiveFailed;
                    sender.log(LogLevel::Warning, std::string("step ") + std::to_string(step) + ": " + e.what());
                }
            }
        }
        if (abort == AbortReason::None && heal_receive) {
            try {
                heal_receive->wait();
            } catch (const CommError& e) {
                abort = AbortReason::HealFailed;
                sender.log(LogLevel::Warning, std::string("heal from replica ") +
                                                  std::to_string(quorum.members[size_t(role.heal_source)].replica) +
                                                  " failed: " + e.what());
            }
        }
        finishHealSends();
        if (abort == AbortReason::None && !at::isfinite(gradient).all().item<bool>()) abort = AbortReason::NanGradients;
        if (abort == AbortReason::None && role.replica_world < ftc.min_replicas) abort = AbortReason::TooFewReplicas;

        // 5. Commit or abort.
        if (abort == AbortReason::None) {
            if (role.heal) {
                const int64_t source_step = unpackReplicaState(heal_state, params, optimizer);
                sender.log(LogLevel::Info, "healed from replica " +
                                               std::to_string(quorum.members[size_t(role.heal_source)].replica) +
                                               ": step " + std::to_string(step) + " -> " + std::to_string(source_step) +
                                               ", " + std::to_string(heal_state.numel() * 4) + " bytes");
                telemetry.span(EventKind::Heal, heal_begin, source_step, 0.0, heal_state.numel() * 4,
                               quorum.members[size_t(role.heal_source)].replica, 0, 0);
                step = source_step;
            }
            t = telemetry.now();
            {
                at::NoGradGuard no_grad;
                int64_t offset = 0;
                for (auto& p : params) {
                    // (a healer that skipped its compute has no .grad yet)
                    if (!p.grad().defined()) p.mutable_grad() = at::zeros_like(p);
                    p.mutable_grad().copy_(gradient.narrow(0, offset, p.numel()).view(p.sizes()));
                    offset += p.numel();
                }
            }
            optimizer.step();
            telemetry.span(EventKind::Optimizer, t, step);
            telemetry.instant(EventKind::Commit, step, 0, 0, role.up_to_date);
            std::vector<NamedParameter> named = model->trainableParameters();
            telemetry.instant(EventKind::ParamsChecksum, step, 0, parametersChecksum(named));
            if (!role.heal && !std::isnan(step_loss)) telemetry.counter(EventKind::LossValue, step, step_loss);
            commit_failures = 0;
            committed_once = true;
            if (isReplicaCheckpointStep(scenario.run, step) && quorum.members.front().replica == replica) {
                // Durable checkpoint: every replica holds these bits now; the
                // lowest replica id of the quorum writes them.
                t = telemetry.now();
                try {
                    const int64_t bytes = saveReplicaCheckpoint(checkpointStepDir(scenario.run.checkpoint_dir, int(step)),
                                                                int(step), scenario, params, optimizer, replica,
                                                                c.incarnation);
                    Event e = telemetry.make(EventKind::CheckpointSaved, EventPhase::Instant, step);
                    e.value = double(telemetry.now() - t) / 1e6; // ms saving
                    e.bytes = bytes;
                    telemetry.emit(e);
                } catch (const UsageError& e) {
                    // Training goes on: a lost checkpoint is a warning, not a failed step.
                    sender.log(LogLevel::Warning, std::string("checkpoint of step ") + std::to_string(step) +
                                                      " not saved: " + e.what());
                }
            }
            step += 1;
        } else {
            telemetry.instant(EventKind::Abort, step, double(int(abort)));
            sender.log(LogLevel::Warning, "step " + std::to_string(step) + " not committed: " + abortText(abort));
            commit_failures += 1;
            if (abort == AbortReason::CollectiveFailed || abort == AbortReason::HealFailed) {
                if (group) bytes_sent_before += group->modeledBytesSent();
                group.reset(); // rebuilt at the next quorum
            }
        }

        const double slow_ms = scenario.run.step_delay_ms + c.gate->delayMs();
        if (slow_ms > 0) {
            t = telemetry.now();
            std::this_thread::sleep_for(std::chrono::microseconds(int64_t(slow_ms * 1000)));
            telemetry.span(EventKind::SlowDelay, t, step - (abort == AbortReason::None ? 1 : 0));
        }
        const int64_t attempted = abort == AbortReason::None ? step - 1 : step;
        telemetry.span(EventKind::Step, step_begin, attempted);
        telemetry.counter(EventKind::StepTimeMs, attempted, double(telemetry.now() - step_begin) / 1e6);
        telemetry.counter(EventKind::BytesSent, attempted,
                          double(bytes_sent_before + (group ? group->modeledBytesSent() : 0)));
        if (telemetry.detailed()) { // memory by category, as the other strategies report it
            std::vector<at::Tensor> grads;
            for (const auto& p : params) grads.push_back(p.grad());
            const MemorySample m = sampleMemory(storageBytes(params), storageBytes(grads), adamStateBytes(optimizer),
                                                gradient.numel() * 4);
            telemetry.counter(EventKind::MemParameters, attempted, double(m.parameters));
            telemetry.counter(EventKind::MemGradients, attempted, double(m.gradients));
            telemetry.counter(EventKind::MemOptimizer, attempted, double(m.optimizer_state));
            telemetry.counter(EventKind::MemActivations, attempted, double(m.activations));
            telemetry.counter(EventKind::MemCommBuffers, attempted, double(m.comm_buffers));
            telemetry.counter(EventKind::MemLive, attempted, double(m.live));
            telemetry.counter(EventKind::MemPeak, attempted, double(m.peak));
        }
    }

    const int64_t last = step - 1;
    if (left_early) {
        sender.log(LogLevel::Info, "the other replicas finished every step while this one was at step " +
                                       std::to_string(step) + ": leaving");
    } else {
        if (!c.params_out_dir.empty())
            saveParameters(c.params_out_dir + "/rank" + std::to_string(replica) + ".params", model->trainableParameters());
    }
    telemetry.counter(EventKind::DroppedEvents, last, double(sender.dropped()));
    telemetry.instant(EventKind::RankFinished, last, left_early ? 1.0 : 0.0);
    return 0;
}

} // namespace dt
