// worker.cpp: the life of one rank.
//
//  1. Resolve rank, world and the Session address (flags, mpirun or torchrun).
//  2. One torch thread, one OpenBLAS thread; install the tracking allocator
//     (allocations are tagged by owner: the scopes below say whose they are).
//  3. Join the Session's rendezvous store (authenticated); read the resolved scenario (JSON) and the
//     telemetry address from it; connect telemetry (clock offset measured).
//  4. Build data, model (seeded), Gloo communicators (hsdp: two sub-groups),
//     broadcast rank 0's parameters so every replica starts identical, then
//     the strategy (ddp, zero1, zero2, fsdp, hsdp: training_strategy.hpp),
//     and load a checkpoint when the scenario resumes from one.
//  5. Each step: data -> per microbatch: forward (spans per block; fsdp
//     gathers and frees units) -> backward (gradient collectives launch as
//     units / buckets fill) -> wait; then the optimizer, a checkpoint when
//     due, counters (loss, step time, bytes, memory by category).
//     The allocator's peak until here is the start-up peak; it is reset, and
//     from here on it is the step peak.
//  6. Report the parameter checksum, optionally write the parameters, say Bye.
// A CommError (peer lost, timeout) is reported to the Session with its text
// and the rank exits with kExitRankFailed.
#include "dtlab/worker.hpp"

#include "checkpoint/checkpoint_meta.hpp"
#include "checkpoint/params_io.hpp"
#include "checkpoint/sharded_checkpoint.hpp"
#include "comm/mpi_communicator.hpp"
#include "data/data_source.hpp"
#include "dtlab/clock.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/scenario.hpp"
#include "ft/ft_training.hpp"
#include "memory/memory_accounting.hpp"
#include "memory/memory_events.hpp"
#include "memory/tracking_allocator.hpp"
#include "model/model.hpp"
#include "model/tensor_parallel_model.hpp"
#include "rank/fault_points.hpp"
#include "rank/rank_groups.hpp"
#include "rank/rank_telemetry.hpp"
#include "rank/step_gate.hpp"
#include "store/c10d_store.hpp"
#include "strategy/training_strategy.hpp"
#include "swarm/swarm.hpp"
#include "telemetry/clock_sync.hpp"
#include "telemetry/telemetry_sender.hpp"
#include "telemetry/telemetry_wire.hpp"
#include "worker/collectives_run.hpp"

#include <torch/optim/adamw.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace dt {
namespace {

void useOneBlasThread() {
    // OpenBLAS reads OPENBLAS_NUM_THREADS when it loads; the Session sets it,
    // but a rank started by mpirun or torchrun may not have it, so ask too.
    using SetThreads = void (*)(int);
    if (auto fn = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
        fn(1);
    at::set_num_threads(1);
}

std::string storeGetString(c10d::Store& store, const std::string& key) {
    const auto bytes = store.get(key);
    return std::string(bytes.begin(), bytes.end());
}

// Bytes this process wrote with write/writev (/proc/self/io wchar; Gloo sends that way).
struct ProcIo {
    int64_t written = 0;
};
ProcIo readProcIo() {
    ProcIo io;
    std::ifstream in("/proc/self/io");
    std::string key;
    int64_t value = 0;
    while (in >> key >> value) {
        if (key == "wchar:")
            io.written = value;
    }
    return io;
}

// Forward/backward unit timing -> spans. Backward spans are opened and closed
// by autograd hooks on the main thread.
struct UnitSpans {
    const RankTelemetry* telemetry = nullptr;
    int step = -1;
    std::vector<int64_t> forward_begin = std::vector<int64_t>(256, 0);
    std::vector<int64_t> backward_begin = std::vector<int64_t>(256, 0);
    int64_t recompute_begin = 0;
    static size_t slot(int unit) { return size_t(unit + 1) & 255; }

    UnitTimer timer() {
        UnitTimer t;
        if (!telemetry->detailed()) {
            t.forward = [](int, bool) {};
            return t;
        }
        t.forward = [this](int unit, bool begin) {
            int64_t& t0 = forward_begin[slot(unit)];
            if (begin)
                t0 = telemetry->now();
            else
                telemetry->span(EventKind::Forward).from(t0).step(step).unit(unit).emitIfDetailed();
        };
        t.backward = [this](int unit, bool begin) {
            int64_t& t0 = backward_begin[slot(unit)];
            if (begin)
                t0 = telemetry->now();
            else
                telemetry->span(EventKind::Backward).from(t0).step(step).unit(unit).emitIfDetailed();
        };
        return t;
    }
};

bool isCheckpointStep(const RunConfig& run, int step) {
    if (run.checkpoint_dir.empty())
        return false;
    if (step == run.steps - 1)
        return true;
    return run.checkpoint_every > 0 && (step + 1) % run.checkpoint_every == 0;
}

int train(const LaunchEnv& env, const Scenario& scenario, TelemetrySender& sender, StepGate& gate,
          c10::intrusive_ptr<c10d::Store> store, const std::string& params_out_dir, const LinkShaper& link) {
    const int rank = env.rank, world = env.world;
    const RankTelemetry telemetry(&sender, rank, scenario.telemetry.enabled);
    EventSink* sink = telemetry.detailed() ? &sender : nullptr;

    auto data = makeDataSource(scenario.data, scenario.model, scenario.run.seed);
    RankGroups groups = makeGroups(env, scenario, store, sink);
    Communicator& comm = *groups.world;
    std::unique_ptr<TrainableModel> model;
    // Everything set-up allocates is a parameter unless a narrower scope says
    // otherwise (DDP's buckets and the shard gradients are gradients).
    std::optional<AllocationOwnerScope> setup_owner(std::in_place, MemoryOwner::Parameters);
    if (scenario.strategy.kind == StrategyKind::TensorParallel) {
        // Each rank keeps its shards of the same seeded model (nothing to broadcast).
        model = makeTensorParallelGpt(scenario.model, scenario.run.seed, comm);
    } else { // every replica starts from rank 0's parameters
        model = makeModel(scenario.model, scenario.run.seed);
        at::NoGradGuard no_grad;
        for (const auto& p : model->trainableParameters())
            comm.broadcastNow(p.tensor, 0);
    }
    model->setActivationCheckpointing(scenario.strategy.activation_checkpointing);
    if (rank == 0)
        sender.log(LogLevel::Info, model->describe() + "; " + data->describe());
    // The modelled link ([network]) shapes training traffic, not the start-up broadcast.
    for (Communicator* group :
         {groups.world.get(), groups.shard.get(), groups.replicate.get(), groups.data_parallel.get()})
        if (group)
            group->shareLink(&link);
    StrategyContext context;
    context.scenario = &scenario;
    context.model = model.get();
    context.world = groups.world.get();
    context.shard_group = groups.shard.get();
    context.replicate_group = groups.replicate.get();
    context.data_parallel_group = groups.data_parallel.get();
    context.sink = sink;
    context.rank = rank;
    context.slow_delay_ms = [&gate] { return gate.delayMs(); };
    auto strategy = makeStrategy(context);
    setup_owner.reset();
    // A gradient is made by autograd (a temporary of the backward) and handed to
    // the parameter's .grad: from then on its bytes are gradient memory.
    for (const auto& p : model->trainableParameters())
        if (p.tensor.requires_grad())
            p.tensor.register_hook(
                [](const at::Tensor& grad) { retagStorage(grad, MemoryOwner::Gradients); });
    int first_step = 0;
    if (!scenario.run.resume_from.empty()) {
        int64_t bytes = 0;
        const AllocationOwnerScope owner(MemoryOwner::OptimizerState); // the AdamW moments it reads
        const int last = strategy->loadCheckpoint(scenario.run.resume_from, bytes);
        first_step = last + 1;
        refuseWhenNothingLeftToTrain(scenario.run.resume_from, last, scenario.run.steps);
        telemetry.instant(EventKind::CheckpointLoaded).step(last).bytes(bytes).emit();
        if (rank == 0)
            sender.log(LogLevel::Info, "resumed from " + scenario.run.resume_from + " (step " +
                                           std::to_string(last) + ", " + std::to_string(bytes) +
                                           " bytes read per rank)");
    }
    markStartupEnd();
    telemetry.instant(EventKind::RankReady).step(-1).emit();

    const ProcIo io_start = readProcIo();
    // Count training traffic only: the start-up broadcast is not part of a step.
    const int64_t modeled_sent_at_start = strategy->modeledBytesSent();
    const int64_t modeled_received_at_start = strategy->modeledBytesReceived();

    const auto emitMemory = [&](int step, bool activations_only) {
        const StrategyMemory sm = strategy->memory();
        const MemorySample m = sampleMemory(sm.parameters, sm.gradients, sm.optimizer_state, sm.comm_buffers);
        const auto memory = [&](EventKind kind, int64_t bytes) {
            telemetry.counter(kind).step(step).value(double(bytes)).emitIfDetailed();
        };
        emitMeasuredMemory(telemetry, step,
                           m.measured); // the allocator's tags (the caller checked detailed())
        memory(EventKind::MemActivations, m.activations);
        if (activations_only)
            return;
        memory(EventKind::MemParameters, m.parameters);
        memory(EventKind::MemParamsMaterialized, sm.parameters_materialized);
        memory(EventKind::MemGradients, m.gradients);
        memory(EventKind::MemOptimizer, m.optimizer_state);
        memory(EventKind::MemCommBuffers, m.comm_buffers);
        memory(EventKind::MemLive, m.live);
        if (scenario.strategy.offload_optimizer)
            memory(EventKind::MemHost, sm.host);
    };

    UnitSpans unit_spans;
    unit_spans.telemetry = &telemetry;
    const UnitTimer spans = unit_spans.timer();
    // Strategy hooks around the telemetry spans: the all-gather a unit waits
    // for is not part of its forward span.
    UnitTimer timer;
    timer.forward = [&](int unit, bool begin) {
        if (begin)
            strategy->beforeUnitForward(unit);
        if (spans.forward)
            spans.forward(unit, begin);
        if (!begin)
            strategy->afterUnitForward(unit);
    };
    timer.backward = [&](int unit, bool begin) {
        if (begin)
            strategy->beforeUnitBackward(unit);
        if (spans.backward)
            spans.backward(unit, begin);
    };
    if (telemetry.detailed())
        timer.recompute = [&](int unit, bool begin) {
            if (begin)
                unit_spans.recompute_begin = telemetry.now();
            else
                telemetry.span(EventKind::Recompute)
                    .from(unit_spans.recompute_begin)
                    .step(unit_spans.step)
                    .unit(unit)
                    .emitIfDetailed();
        };

    const int B = scenario.data.batch_per_rank;
    // [run] eval_every: rank 0's loss on one fixed batch that no step trains on
    // (the data source's batch of step 2^40: other windows of the same text,
    // not a held-out split), with the model as it trains and,
    // under QAT, with fake quantization off (the same weights in fp32). No
    // graph, no hooks, outside the step's span.
    const int eval_every = rank == 0 ? scenario.run.eval_every : 0;
    const Batch eval_batch = eval_every > 0 ? data->batch(int64_t(1) << 40, 0, 1, B) : Batch{};
    const auto evaluate = [&](int step) {
        at::NoGradGuard no_grad;
        const AllocationOwnerScope owner(MemoryOwner::Activations);
        const UnitTimer untimed;
        const double loss = model->loss(eval_batch.inputs, eval_batch.targets, untimed).item<double>();
        telemetry.counter(EventKind::EvalLoss).step(step).value(loss).emit();
        if (!model->fakeQuantized())
            return;
        model->setFakeQuantization(false);
        const double fp32 = model->loss(eval_batch.inputs, eval_batch.targets, untimed).item<double>();
        model->setFakeQuantization(true);
        telemetry.counter(EventKind::EvalLossFp32).step(step).value(fp32).emit();
    };
    // Every stage of a pipeline reads the same batch (stage 0 its tokens, the
    // last stage its targets); the pipelines side by side read different shards.
    // Tensor parallel ranks all read the same batch: they split the model, not the data.
    const int stages = strategyTraits(scenario.strategy.kind).uses_stages       ? scenario.topology.stages
                       : scenario.strategy.kind == StrategyKind::TensorParallel ? world
                                                                                : 1;
    const int data_rank = rank / stages, data_world = world / stages;
    const int M = scenario.strategy.microbatches;
    for (int step = first_step; step < scenario.run.steps; ++step) {
        const int64_t gate_begin = telemetry.now();
        if (gate.waitToStart(step, [&](bool retry) {
                telemetry.instant(EventKind::GateWait).step(step).value(retry ? 1.0 : 0.0).emit();
            }))
            telemetry.span(EventKind::Paused).from(gate_begin).step(step).emit();
        const int64_t step_begin = telemetry.now();
        unit_spans.step = step;

        int64_t t = telemetry.now();
        const Batch batch = data->batch(step, data_rank, data_world, B);
        telemetry.span(EventKind::Data).from(t).step(step).emitIfDetailed();

        double step_loss = 0.0;
        if (strategy->runsWholeStep()) { // a pipeline: the schedule runs every microbatch
            step_loss = strategy->runStep(step, batch.inputs, batch.targets);
        } else {
            strategy->beginStep(step);
            for (int mb = 0; mb < M; ++mb) {
                const int64_t rows = B / M;
                const at::Tensor inputs = M == 1 ? batch.inputs : batch.inputs.narrow(0, mb * rows, rows);
                const at::Tensor targets = M == 1 ? batch.targets : batch.targets.narrow(0, mb * rows, rows);
                strategy->beginMicrobatch(mb, mb == M - 1);
                at::Tensor loss;
                {
                    // What forward leaves alive is what autograd saved for backward.
                    const AllocationOwnerScope owner(MemoryOwner::Activations);
                    loss = model->loss(inputs, targets, timer);
                }
                if (telemetry.detailed())
                    emitMemory(step, /*activations_only=*/true);
                step_loss += loss.item<double>() / M;
                if (M > 1)
                    loss = loss / double(M); // the mean over the whole batch

                t = telemetry.now();
                loss.backward();
                // The whole backward: unit -2.
                telemetry.span(EventKind::Backward).from(t).step(step).unit(-2).emitIfDetailed();
                strategy->finishMicrobatch();
                // Between microbatches without communication the unsharded gradients are alive.
                if (telemetry.detailed() && mb + 1 < M)
                    emitMemory(step, false);
            }
            // Diverged: stop before the optimizer applies it (a pipeline's last
            // stage checks its own loss in runStep; the other stages have none).
            requireFiniteLoss(step_loss, step);
        }

        t = telemetry.now();
        {
            // AdamW creates its moments at its first step: optimizer state.
            const AllocationOwnerScope owner(MemoryOwner::OptimizerState);
            strategy->optimizerStep();
        }
        telemetry.span(EventKind::Optimizer).from(t).step(step).emitIfDetailed();

        if (isCheckpointStep(scenario.run, step)) {
            t = telemetry.now();
            const int64_t bytes =
                strategy->saveCheckpoint(checkpointStepDir(scenario.run.checkpoint_dir, step), step);
            const double ms_saving = double(telemetry.now() - t) / 1e6;
            telemetry.instant(EventKind::CheckpointSaved).step(step).value(ms_saving).bytes(bytes).emit();
        }

        // (a pipeline spends the rank's live slow-down inside its forwards and backwards)
        const double delay_ms =
            scenario.run.step_delay_ms + (strategy->runsWholeStep() ? 0.0 : gate.delayMs());
        if (delay_ms > 0) {
            t = telemetry.now();
            std::this_thread::sleep_for(std::chrono::microseconds(int64_t(delay_ms * 1000)));
            telemetry.span(EventKind::SlowDelay).from(t).step(step).emitIfDetailed();
        }

        const int64_t step_end = telemetry.now();
        // Kept without detailed telemetry: the Step span and the loss (the summary needs them).
        telemetry.span(EventKind::Step).from(step_begin).to(step_end).step(step).emit();
        // A pipeline's loss is known on its last stage only.
        if (!std::isnan(step_loss))
            telemetry.counter(EventKind::LossValue).step(step).value(step_loss).emit();
        const double step_ms = double(step_end - step_begin) / 1e6;
        telemetry.counter(EventKind::StepTimeMs).step(step).value(step_ms).emitIfDetailed();
        if (eval_every > 0 && ((step + 1) % eval_every == 0 || step == scenario.run.steps - 1))
            evaluate(step);
        if (telemetry.detailed()) {
            const ProcIo io = readProcIo();
            const int64_t sent = strategy->modeledBytesSent() - modeled_sent_at_start;
            const int64_t received = strategy->modeledBytesReceived() - modeled_received_at_start;
            telemetry.counter(EventKind::BytesSent).step(step).value(double(sent)).emitIfDetailed();
            telemetry.counter(EventKind::BytesReceived).step(step).value(double(received)).emitIfDetailed();
            const double measured = double(io.written - io_start.written);
            telemetry.counter(EventKind::BytesSentMeasured).step(step).value(measured).emitIfDetailed();
            emitMemory(step, false);
            const double dropped = double(sender.dropped());
            telemetry.counter(EventKind::DroppedEvents).step(step).value(dropped).emitIfDetailed();
        }
    }

    const auto named = strategy->fullParameters();
    const int last_step = scenario.run.steps - 1;
    telemetry.instant(EventKind::ParamsChecksum).step(last_step).seq(parametersChecksum(named)).emit();
    if (!params_out_dir.empty())
        saveParameters(params_out_dir + "/rank" + std::to_string(rank) + ".params", named);
    telemetry.counter(EventKind::DroppedEvents).step(last_step).value(double(sender.dropped())).emit();
    // Leave together: no rank tears down its Gloo pairs while a peer still reads.
    comm.barrierNow();
    telemetry.instant(EventKind::RankFinished).step(last_step).emit();
    return 0;
}

} // namespace

int runWorker(const WorkerArgs& args) {
    LaunchEnv env;
    try {
        env = resolveLaunchEnv(args.flags, processEnvironment());
    } catch (const UsageError& e) {
        std::cerr << "dtrun worker: " << e.what() << "\n";
        return kExitUsage;
    }
    // Under mpirun the launcher is our parent: die with it, so a Session that
    // kills mpirun (or an mpirun that aborts) leaves no orphan ranks.
    if (env.launcher == "mpirun")
        prctl(PR_SET_PDEATHSIG, SIGKILL);
    useOneBlasThread();
    installTrackingAllocator();

    std::string token;
    try {
        token = readSessionToken(args.token_file);
    } catch (const UsageError& e) {
        std::cerr << "dtrun worker: " << e.what() << "\n";
        return kExitUsage;
    }
    c10::intrusive_ptr<c10d::Store> store;
    Scenario scenario;
    std::string telemetry_address;
    std::string params_out_dir = args.params_out_dir;
    try {
        // The Session's rendezvous store: this rank proves the token and the
        // store proves it back (store/store_client.hpp).
        store::StoreClientOptions opts;
        opts.host = env.master_host;
        opts.port = env.master_port;
        opts.token = token;
        opts.connect_timeout_ms = 60'000;
        store = c10::make_intrusive<store::C10dStore>(opts, std::chrono::seconds(60));
        const std::string scenario_json = storeGetString(*store, "dtlab/scenario");
        // Defence in depth: only run a scenario a token holder wrote.
        if (storeGetString(*store, "dtlab/scenario_proof") != wire::textProofHex(token, scenario_json))
            throw UsageError(
                "the scenario in the store at " + env.master_host + ":" + std::to_string(env.master_port) +
                " is not signed with this rank's token (wrong or missing DTLAB_TOKEN / --token-file, "
                "or someone else wrote it)");
        scenario = scenarioFromJson(scenario_json);
        telemetry_address = storeGetString(*store, "dtlab/telemetry");
        if (params_out_dir.empty() && store->check({"dtlab/params_out"}))
            params_out_dir = storeGetString(*store, "dtlab/params_out");
        const int expected_world = std::stoi(storeGetString(*store, "dtlab/world"));
        if (expected_world != env.world)
            throw UsageError("this rank was started with world size " + std::to_string(env.world) +
                             " but the Session runs " + std::to_string(expected_world) + " ranks");
    } catch (const UsageError& e) {
        std::cerr << "dtrun worker (rank " << env.rank << "): " << e.what() << "\n";
        return kExitUsage;
    } catch (const std::exception& e) {
        std::string what = e.what();
        std::cerr << "dtrun worker (rank " << env.rank << "): cannot join the Session at " << env.master_host
                  << ":" << env.master_port << ": " << what.substr(0, what.find('\n')) << "\n";
        return kExitRankFailed;
    }

    TelemetrySender sender(env.rank, size_t(scenario.telemetry.queue_capacity));
    StepGate gate;
    RankFaultSwitches ft_faults;
    LinkShaper link; // the rank's modelled link, shared by its communicators
    link.set(scenario.network.bandwidth_mbit_s, scenario.network.latency_ms);
    // A scheduled kill or hang of this rank stops it at that moment itself (fault_points.hpp).
    FaultPoints fault_points(scenario, env.rank, args.incarnation);
    if (!fault_points.empty())
        sender.stopAt([&fault_points](const Event& e) { return fault_points.reached(e); },
                      [&fault_points, &sender] {
                          if (!fault_points.waitForRelease())
                              sender.log(LogLevel::Warning,
                                         "stopped for a scheduled fault that the Session did "
                                         "not carry out within 10 s: going on");
                      });
    sender.onControl([&gate, &ft_faults, &link, &fault_points](const wire::ControlMessage& m) {
        using wire::ControlCommand;
        switch (ControlCommand(m.command)) {
        case ControlCommand::SetAllowedStep:
            gate.setAllowedStep(m.allowed_step, m.reserved != 0,
                                uint32_t(m.delay_ms)); // delay_ms: the order's number
            ft_faults.greeted = true;
            break;
        case ControlCommand::SetDelayMs:
            gate.setDelayMs(m.delay_ms);
            break;
        case ControlCommand::FailNextCollective:
            ft_faults.fail_next_collective = true;
            break;
        case ControlCommand::NanGradients:
            ft_faults.nan_gradients = true;
            break;
        case ControlCommand::Partition:
            ft_faults.setPartitioned(m.delay_ms > 0);
            break;
        case ControlCommand::TrafficDelayMs:
            ft_faults.traffic_delay_ms = m.delay_ms;
            break;
        case ControlCommand::JobFinished:
            ft_faults.finished_quorum_id = m.allowed_step;
            ft_faults.job_finished = true;
            break;
        case ControlCommand::SetLink:
            link.set(double(m.allowed_step) / 1000.0, m.delay_ms);
            break;
        case ControlCommand::SetJobHeld:
            ft_faults.job_held = m.allowed_step != 0;
            break;
        case ControlCommand::KillSelf:
            ::raise(SIGKILL);
            break; // only ever from the authenticated Session
        case ControlCommand::ReleaseFaultPoint:
            fault_points.release();
            break;
        }
    });
    try {
        if (const char* skew = std::getenv("DTLAB_CLOCK_SKEW")) {
            const ClockSkew s = parseClockSkew(skew);
            sender.simulateClockSkew(s.offset_ns, s.drift_ppm);
        }
    } catch (const UsageError& e) {
        std::cerr << "dtrun worker (rank " << env.rank << "): " << e.what() << "\n";
        return kExitUsage;
    }
    try {
        std::string host;
        int port = 0;
        wire::splitAddress(telemetry_address, host, port);
        sender.connect(host, port, 30000, token);
    } catch (const std::exception& e) {
        std::cerr << "dtrun worker (rank " << env.rank << "): " << e.what() << "\n";
        return kExitRankFailed;
    }
    const RankTelemetry lifecycle(&sender, env.rank, scenario.telemetry.enabled);
    lifecycle.instant(EventKind::RankStarted).value(double(::getpid())).emit();

    int code = 0;
    std::string error;
    bool lost_peer = false; // failed only because a peer went away: the Session prefers the peer's reason
    try {
        if (scenario.fault_tolerance.enabled || scenario.strategy.kind == StrategyKind::Swarm) {
            RankContext context;
            context.env = env;
            context.scenario = &scenario;
            context.sender = &sender;
            context.gate = &gate;
            context.store = store;
            context.params_out_dir = params_out_dir;
            context.incarnation = args.incarnation;
            context.faults = &ft_faults;
            context.link = &link;
            context.token = token;
            code = scenario.strategy.kind == StrategyKind::Swarm ? runSwarmRank(context)
                   : dilocoStreamsUnderQuorum(scenario)          ? trainFaultTolerantStreamingDiloco(context)
                   : scenario.strategy.kind == StrategyKind::Diloco ? trainFaultTolerantDiloco(context)
                   : strategyTraits(scenario.strategy.kind).shards_optimizer ||
                           strategyTraits(scenario.strategy.kind).uses_stages || ftGroupSize(scenario) > 1
                       ? trainFaultTolerantGroup(context)
                       : trainFaultTolerant(context);
        } else if (!strategyTraits(scenario.strategy.kind).trains_model) {
            code = runCollectives(env, scenario, sender, gate, store);
        } else {
            code = train(env, scenario, sender, gate, store, params_out_dir, link);
        }
    } catch (const CommError& e) {
        code = kExitRankFailed;
        error = e.what();
        lost_peer = e.kind() == CommErrorKind::PeerLost;
    } catch (const UsageError& e) {
        code = kExitUsage;
        error = e.what();
    } catch (const TrainingDiverged& e) {
        code = kExitDiverged;
        error = e.what();
    } catch (const std::exception& e) {
        code = kExitRankFailed;
        const std::string what = e.what();
        error = what.substr(0, what.find('\n'));
    }
    if (code != 0) {
        // value: the exit code; seq 1: a consequence (a peer was lost), not a cause.
        lifecycle.instant(EventKind::RankFailed).value(double(code)).seq(lost_peer ? 1 : 0).emit();
        sender.log(LogLevel::Error, error);
        // A Session that started this rank prints the error itself; under mpirun
        // or torchrun this line is the only place a person sees it.
        if (env.launcher != "dtlab")
            std::cerr << "dtrun worker (rank " << env.rank << "): " << error << "\n";
    }
    // A rank that finished cleanly has destroyed its communicators: finalise
    // MPI so mpirun sees a normal end. (A failed rank exits without it, and
    // mpirun then aborts the job, as MPI does when a rank dies.)
    if (code == 0)
        finalizeMpi();
    sender.close();
    // Skip destructors: a process group whose peers died can block in its
    // destructor; everything worth keeping has been sent.
    std::fflush(nullptr);
    std::_Exit(code);
}

std::string readSessionToken(const std::string& token_file) {
    if (token_file.empty()) {
        const char* value = std::getenv("DTLAB_TOKEN");
        return value ? value : "";
    }
    struct stat st {};
    if (::stat(token_file.c_str(), &st) != 0)
        throw UsageError("--token-file: cannot read '" + token_file + "': " + std::strerror(errno));
    if (st.st_mode & (S_IRWXG | S_IRWXO))
        throw UsageError("--token-file: '" + token_file + "' can be read by other users; chmod 600 it");
    std::ifstream in(token_file);
    std::string token;
    std::getline(in, token);
    const auto first = token.find_first_not_of(" \t\r");
    const auto last = token.find_last_not_of(" \t\r");
    token = first == std::string::npos ? "" : token.substr(first, last - first + 1);
    if (token.empty())
        throw UsageError("--token-file: '" + token_file + "' holds no token on its first line");
    return token;
}

} // namespace dt
