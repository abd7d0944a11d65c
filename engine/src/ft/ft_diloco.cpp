// ft_diloco.cpp: one replica of fault-tolerant DiLoCo (TorchFT's DiLoCo
// wrapper, in C++): inner steps need no quorum; each outer sync runs the
// quorum protocol of ft_training.cpp with pseudo-gradients instead of
// gradients. One replica group = one rank; classic DiLoCo (one fragment, no
// sync delay, fp32 pseudo-gradients).
//
// Per step s (s counts inner steps; H = [diloco] inner_steps; P = parameters):
//  1. Inner step: forward, backward and AdamW on this replica's batch (shard =
//     replica index). No communication, no lighthouse.
//  2. After every H-th step and the last (a sync):
//     a. ask the lighthouse for a quorum (reporting s + 1 steps done); a new
//        quorum id rebuilds the cross-replica Gloo group (fresh store prefix).
//     b. heal: a restarted replica asks for the quorum before computing
//        anything; an up-to-date peer sends it its AdamW state and local model
//        (4 (3P + 2) bytes) and the global model with the outer momentum (8P).
//     c. all-reduce delta = global - local (P fp32; ring 2 (N-1)/N x 4P bytes
//        sent); a healer sends zeros; divide by the replicas up to date.
//     d. vote and commit, as ft_training.cpp: commit iff the group was built,
//        the all-reduce and the heal succeeded, delta is finite and the quorum
//        has min_replicas. Commit: the healer adopts the received state; every
//        replica applies the outer Nesterov step (outer_optimizer.hpp) to the
//        same global model with the same delta and sets local = global (one
//        Commit event per inner step of the round). Abort: local = global
//        again, the round's inner steps are lost (an Abort event per step).
// A replica that dies mid-round simply is not in the next quorum: the others'
// outer step averages over the replicas that are there.
#include "ft/ft_training.hpp"

#include "comm/gloo_communicator.hpp"
#include "data/data_source.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/lighthouse.hpp"
#include "ft/ft_replica_common.hpp"
#include "ft/replica_state.hpp"
#include "memory/memory_accounting.hpp"
#include "model/model.hpp"
#include "strategy/outer_optimizer.hpp"
#include "telemetry/telemetry_sender.hpp"
#include "rank/rank_groups.hpp"
#include "worker/params_io.hpp"
#include "rank/step_gate.hpp"

#include <torch/optim/adamw.h>

#include <cmath>
#include <future>
#include <thread>

namespace dt {

namespace {

at::Tensor flatten(const std::vector<at::Tensor>& params) {
    std::vector<at::Tensor> parts;
    for (const auto& p : params) parts.push_back(p.detach().reshape({-1}));
    return at::cat(parts).contiguous();
}

void copyInto(const std::vector<at::Tensor>& params, const at::Tensor& flat) {
    at::NoGradGuard no_grad;
    int64_t offset = 0;
    for (const auto& p : params) {
        p.detach().copy_(flat.narrow(0, offset, p.numel()).view(p.sizes()));
        offset += p.numel();
    }
}

} // namespace

int trainFaultTolerantDiloco(const FtRankContext& c) {
    const Scenario& scenario = *c.scenario;
    const FaultToleranceConfig& ftc = scenario.fault_tolerance;
    const DilocoConfig& dc = scenario.diloco;
    const int replica = c.env.rank, replicas = c.env.world;
    const int H = dc.inner_steps;
    TelemetrySender& sender = *c.sender;
    ReplicaTelemetry telemetry(sender, replica, scenario.telemetry.enabled);
    EventSink* sink = telemetry.detailed() ? static_cast<EventSink*>(&sender) : nullptr;

    auto data = makeDataSource(scenario.data, scenario.model, scenario.run.seed);
    auto model = makeModel(scenario.model, scenario.run.seed); // the same seed: every replica starts identical
    std::vector<at::Tensor> params;
    for (const auto& p : model->trainableParameters()) params.push_back(p.tensor);
    const OptimizerConfig& o = scenario.optimizer;
    torch::optim::AdamW optimizer(
        params, torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay));
    at::Tensor global = flatten(params);          // the outer parameters, equal on every replica after a commit
    at::Tensor momentum = at::zeros_like(global); // the outer Nesterov buffer
    const int64_t P = global.numel();
    if (replica == 0 && c.incarnation == 0)
        sender.log(LogLevel::Info, model->describe() + "; " + data->describe() + "; fault-tolerant DiLoCo: " +
                                       std::to_string(replicas) + " replica groups of 1 rank, H = " + std::to_string(H));

    const std::string lighthouse = ftc.lighthouse.empty() ? storeGet(*c.store, "dtlab/lighthouse") : ftc.lighthouse;
    ft::LighthouseClient client(lighthouse, replica, c.incarnation);
    if (telemetry.detailed()) client.onHeartbeat([&telemetry] { telemetry.instant(EventKind::Heartbeat, -1); });
    c.faults->attach(&client);
    struct Detach {
        FtFaultSwitches* f;
        ~Detach() { f->attach(nullptr); }
    } detach{c.faults};
    client.startHeartbeats(int64_t(ftc.heartbeat_interval_ms));
    if (c.incarnation == 0) waitForInitialReplicas(*c.store, replicas, 60000);
    else sender.log(LogLevel::Info, "restarted (incarnation " + std::to_string(c.incarnation) +
                                        "): will heal at the next outer sync");
    telemetry.instant(EventKind::RankReady, -1);

    GlooOptions gloo;
    gloo.interface_host = glooInterfaceFor(c.env);
    gloo.timeout = std::chrono::milliseconds(int64_t(ftc.collective_timeout_ms));
    UnitTimer timer;
    timer.forward = [](int, bool) {};

    std::unique_ptr<Communicator> group;
    int64_t group_quorum_id = -1;
    int64_t bytes_sent_before = 0;
    int64_t step = 0;        // the inner step this replica is at
    int64_t round_begin = 0; // first inner step of the current round
    int outer_steps = 0;
    int commit_failures = 0;
    bool committed_once = false;
    bool left_early = false;
    const int B = scenario.data.batch_per_rank;

    while (step < scenario.run.steps) {
        if (c.faults->job_finished.load()) {
            left_early = true;
            break;
        }
        const int64_t gate_begin = telemetry.now();
        if (c.gate->waitToStart(int(step))) telemetry.span(EventKind::Paused, gate_begin, step);
        const int64_t step_begin = telemetry.now();

        // 1. The inner step (a restarted replica skips it: it will heal).
        const bool heal_first = c.incarnation > 0 && !committed_once;
        double step_loss = std::nan("");
        if (!heal_first) {
            int64_t t = telemetry.now();
            const Batch batch = data->batch(int(step), replica, replicas, B);
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
            t = telemetry.now();
            optimizer.step();
            telemetry.span(EventKind::Optimizer, t, step);
            if (!std::isnan(step_loss)) telemetry.counter(EventKind::LossValue, step, step_loss);
        }

        const bool sync = heal_first || (step + 1) % H == 0 || step == scenario.run.steps - 1;
        bool advanced = true;
        if (sync) {
            // 2a. The quorum.
            const int64_t quorum_begin = telemetry.now();
            const int64_t reported = heal_first ? step : step + 1;
            ft::Quorum quorum;
            try {
                const auto deadline =
                    std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(ftc.quorum_timeout_ms));
                for (;;) {
                    try {
                        quorum = client.requestQuorum(reported, commit_failures, "", 2000);
                        break;
                    } catch (const CommError&) {
                        if (c.faults->job_finished.load() || std::chrono::steady_clock::now() > deadline) throw;
                    }
                }
            } catch (const CommError&) {
                if (c.faults->job_finished.load()) {
                    left_early = true;
                    break;
                }
                throw;
            }
            telemetry.span(EventKind::QuorumWait, quorum_begin, step, double(quorum.quorum_id));
            const ft::QuorumRole role = ft::computeQuorumRole(quorum, replica, c.incarnation);
            emitQuorumFormed(telemetry, quorum, role, step);
            // Rebuild the cross-replica group when the quorum changed.
            AbortReason abort = rebuildReplicaGroupIfNeeded(group, group_quorum_id, bytes_sent_before, quorum, role, c.store, gloo,
                                                            c.link, sink, sender, telemetry, step);

            // 2b. Heal: two messages per healer, the inner state and the outer state.
            struct HealSend {
                std::vector<CommWorkPtr> works;
                std::vector<at::Tensor> payload;
                int peer_replica;
                int64_t begin;
            };
            std::vector<HealSend> heal_sends;
            std::vector<CommWorkPtr> heal_receives;
            at::Tensor heal_inner, heal_outer;
            const int heal_tag = 2000 + 2 * int(role.quorum_id % 1000);
            int64_t heal_begin = 0;
            if (abort == AbortReason::None) {
                for (int destination : role.heal_destinations) {
                    HealSend s;
                    s.begin = telemetry.now();
                    s.payload = {packReplicaState(params, optimizer, step + 1), at::cat({global, momentum})};
                    s.peer_replica = quorum.members[size_t(destination)].replica;
                    s.works.push_back(group->postSend(s.payload[0], destination, heal_tag, {int(step), -1, -1}));
                    s.works.push_back(group->postSend(s.payload[1], destination, heal_tag + 1, {int(step), -1, -1}));
                    heal_sends.push_back(std::move(s));
                }
                if (role.heal) {
                    heal_begin = telemetry.now();
                    heal_inner = at::empty({replicaStateNumel(params)}, at::kFloat);
                    heal_outer = at::empty({2 * P}, at::kFloat);
                    heal_receives.push_back(group->postRecv(heal_inner, role.heal_source, heal_tag, {int(step), -1, -1}));
                    heal_receives.push_back(group->postRecv(heal_outer, role.heal_source, heal_tag + 1, {int(step), -1, -1}));
                }
            }
            const auto finishHealSends = [&] {
                for (auto& s : heal_sends) {
                    bool sent = true;
                    for (auto& w : s.works) {
                        try {
                            w->wait();
                        } catch (const CommError& e) {
                            sent = false;
                            sender.log(LogLevel::Warning,
                                       "heal of replica " + std::to_string(s.peer_replica) + " failed: " + e.what());
                        }
                    }
                    const int64_t bytes = sent ? (s.payload[0].numel() + s.payload[1].numel()) * 4 : 0;
                    telemetry.span(EventKind::Heal, s.begin, step, 1.0, bytes, s.peer_replica, 0, 1);
                }
                heal_sends.clear();
                if (group) group->reapPosted();
            };

            // 2c. The pseudo-gradient, averaged over the replicas up to date.
            at::Tensor delta = at::zeros({P}, at::kFloat);
            if (abort == AbortReason::None) {
                int64_t t = telemetry.now();
                if (!role.heal) delta = global - flatten(params);
                if (c.faults->nan_gradients.exchange(false)) {
                    delta.fill_(std::nan(""));
                    sender.log(LogLevel::Warning, "fault: this replica's pseudo-gradient is NaN at step " + std::to_string(step));
                }
                telemetry.span(EventKind::PseudoGradient, t, step, double(outer_steps), 4 * P, -1, 0, /*fragment*/ 0);
                const double delay = c.faults->traffic_delay_ms.load();
                if (delay > 0) {
                    t = telemetry.now();
                    std::this_thread::sleep_for(std::chrono::microseconds(int64_t(delay * 1000)));
                    telemetry.span(EventKind::SlowDelay, t, step, delay, 0, -1, 0, -3);
                }
                if (c.faults->fail_next_collective.exchange(false)) {
                    sender.log(LogLevel::Warning, "fault: this replica's all-reduce fails at step " + std::to_string(step));
                    finishHealSends();
                    bytes_sent_before += group->modeledBytesSent();
                    group.reset();
                    abort = AbortReason::CollectiveFailed;
                } else {
                    try {
                        group->allReduceNow(delta, {int(step), 0, -1});
                        delta.div_(double(std::max(1, role.up_to_date)));
                    } catch (const CommError& e) {
                        abort = AbortReason::CollectiveFailed;
                        sender.log(LogLevel::Warning, std::string("step ") + std::to_string(step) + ": " + e.what());
                    }
                }
            }
            if (abort == AbortReason::None) {
                for (auto& w : heal_receives) {
                    try {
                        w->wait();
                    } catch (const CommError& e) {
                        abort = AbortReason::HealFailed;
                        sender.log(LogLevel::Warning, std::string("heal failed: ") + e.what());
                        break;
                    }
                }
            }
            finishHealSends();
            if (abort == AbortReason::None && !at::isfinite(delta).all().item<bool>()) abort = AbortReason::NanGradients;
            if (abort == AbortReason::None && role.replica_world < ftc.min_replicas) abort = AbortReason::TooFewReplicas;

            // 2d. Commit or abort.
            if (abort == AbortReason::None) {
                if (role.heal) {
                    const int64_t source_steps = unpackReplicaState(heal_inner, params, optimizer);
                    global.copy_(heal_outer.narrow(0, 0, P));
                    momentum.copy_(heal_outer.narrow(0, P, P));
                    const int source = quorum.members[size_t(role.heal_source)].replica;
                    sender.log(LogLevel::Info, "healed from replica " + std::to_string(source) + ": step " +
                                                   std::to_string(step) + " -> " + std::to_string(source_steps) + ", " +
                                                   std::to_string((heal_inner.numel() + heal_outer.numel()) * 4) +
                                                   " bytes");
                    telemetry.span(EventKind::Heal, heal_begin, source_steps - 1, 0.0,
                                   (heal_inner.numel() + heal_outer.numel()) * 4, source, 0, 0);
                    step = source_steps - 1;
                    round_begin = step;
                }
                const int64_t t = telemetry.now();
                outerSgdStep(global, momentum, delta, dc);
                copyInto(params, global); // every replica continues from the new global model
                outer_steps += 1;
                telemetry.span(EventKind::OuterStep, t, step, double(outer_steps), 4 * P, -1, 0, /*fragment*/ 0);
                for (int64_t k = round_begin; k <= step; ++k)
                    telemetry.instant(EventKind::Commit, k, 0, 0, role.up_to_date);
                telemetry.instant(EventKind::ParamsChecksum, step, 0, parametersChecksum(model->trainableParameters()));
                commit_failures = 0;
                committed_once = true;
            } else {
                for (int64_t k = round_begin; k <= step; ++k) telemetry.instant(EventKind::Abort, k, double(int(abort)));
                sender.log(LogLevel::Warning, "outer sync at step " + std::to_string(step) + " not committed: " +
                                                  abortText(abort) + "; the round's inner steps are lost");
                copyInto(params, global); // back to the last committed global model
                commit_failures += 1;
                if (abort == AbortReason::CollectiveFailed || abort == AbortReason::HealFailed) {
                    if (group) bytes_sent_before += group->modeledBytesSent();
                    group.reset();
                }
                advanced = !heal_first; // a healer asks again; the others move on to the next round
            }
            round_begin = step + 1;
        }

        const double slow_ms = scenario.run.step_delay_ms + c.gate->delayMs();
        if (slow_ms > 0) {
            const int64_t t = telemetry.now();
            std::this_thread::sleep_for(std::chrono::microseconds(int64_t(slow_ms * 1000)));
            telemetry.span(EventKind::SlowDelay, t, step);
        }
        telemetry.span(EventKind::Step, step_begin, step);
        telemetry.counter(EventKind::StepTimeMs, step, double(telemetry.now() - step_begin) / 1e6);
        telemetry.counter(EventKind::BytesSent, step, double(bytes_sent_before + (group ? group->modeledBytesSent() : 0)));
        if (telemetry.detailed()) {
            std::vector<at::Tensor> grads;
            for (const auto& p : params) grads.push_back(p.grad());
            const MemorySample m = sampleMemory(storageBytes(params) + 4 * P, storageBytes(grads),
                                                adamStateBytes(optimizer) + 4 * P, 0);
            telemetry.counter(EventKind::MemParameters, step, double(m.parameters));
            telemetry.counter(EventKind::MemGradients, step, double(m.gradients));
            telemetry.counter(EventKind::MemOptimizer, step, double(m.optimizer_state));
            telemetry.counter(EventKind::MemActivations, step, double(m.activations));
            telemetry.counter(EventKind::MemLive, step, double(m.live));
            telemetry.counter(EventKind::MemPeak, step, double(m.peak));
        }
        if (advanced) step += 1;
    }

    const int64_t last = step - 1;
    if (left_early) {
        sender.log(LogLevel::Info, "the other replicas finished every step while this one was at step " +
                                       std::to_string(step) + ": leaving");
    } else if (!c.params_out_dir.empty()) {
        saveParameters(c.params_out_dir + "/rank" + std::to_string(replica) + ".params", model->trainableParameters());
    }
    telemetry.counter(EventKind::DroppedEvents, last, double(sender.dropped()));
    telemetry.instant(EventKind::RankFinished, last, left_early ? 1.0 : 0.0);
    return 0;
}

} // namespace dt
