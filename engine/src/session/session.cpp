// session.cpp: one run: store, collector, supervisor, monitor.
//
// [SECTION] Monitor thread: one tick every 20 ms, and the end of the run
// [SECTION] Public API: start, stop, the thread-safe getters
// The other rooms of the Session are listed in session_impl.hpp.
//
// End of a run:
//   ok      every rank finished every step (RankFinished) and exited 0
//   failed  a rank failed or died: the others get min(timeout_s, 5) + 5 s
//           to notice (timeout_s + 5 s after an injected hang, which they
//           can only notice at their own timeout)
//           and exit on their own (they should, via Gloo's error or timeout),
//           then whatever is left is SIGKILLed. failure_reason names the
//           first cause (the injected fault or the first rank error).
// With [fault_tolerance] a dead rank is not the end: the Session also runs the
// lighthouse (a thread), restarts dead ranks per policy (a restarted rank is a
// new incarnation that heals from a live peer), and the run is ok once one
// replica committed every step; the others are then told to leave.
#include "session/session_impl.hpp"

#include "comm/mpi_communicator.hpp"
#include "core/replica_agreement.hpp"
#include "core/sha256.hpp"
#include "dtlab/checkpoint.hpp"
#include "dtlab/errors.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace dt {

bool isLoopbackAddress(const std::string& host) {
    return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

bool ranksCrowdTheCores(int ranks, unsigned cores) {
    return cores > 0 && ranks > 4 * int(cores);
}

std::string_view rankStateLabel(RankState state) {
    switch (state) {
    case RankState::Pending:
        return "pending";
    case RankState::Starting:
        return "starting";
    case RankState::Running:
        return "running";
    case RankState::Paused:
        return "paused";
    case RankState::Hung:
        return "hung";
    case RankState::Finished:
        return "finished";
    case RankState::Failed:
        return "failed";
    case RankState::Killed:
        return "killed";
    case RankState::Restarting:
        return "restarting";
    case RankState::Healing:
        return "healing";
    }
    return "unknown";
}

// [SECTION] Monitor thread -----------------------------------------------------

// A rank that exited on its own before its last telemetry (RankFinished, or
// its error line, then Bye) was read is not judged yet: the reap can come
// first, e.g. when this process was stopped (SIGSTOP, a debugger) and both
// threads resume at once, or when a failing rank's error is still in flight.
// It waits until its stream closed or said it finished, 5 s at most. A rank
// killed by a signal said nothing more: it is judged at once. Mutex held.
void Session::Impl::judgeExits(const std::vector<ChildExit>& exits, int64_t now) {
    for (const ChildExit& x : exits) {
        const bool awaits = x.rank != kMpirunChild && x.rank >= 0 && x.rank < world && x.signal == 0 &&
                            !rank_finished[size_t(x.rank)] && !telemetry_closed[size_t(x.rank)] &&
                            last_heard_ns[size_t(x.rank)] != 0; // a rank that never said hello sent nothing
        if (awaits)
            exits_awaiting_telemetry.push_back({x, now + 5'000'000'000LL});
        else
            onRankExited(x);
    }
    for (size_t i = 0; i < exits_awaiting_telemetry.size();) {
        const auto& [x, deadline] = exits_awaiting_telemetry[i];
        if (rank_finished[size_t(x.rank)] || telemetry_closed[size_t(x.rank)] || now >= deadline) {
            const ChildExit exit = x;
            exits_awaiting_telemetry.erase(exits_awaiting_telemetry.begin() + ptrdiff_t(i));
            onRankExited(exit);
        } else {
            ++i;
        }
    }
}
void Session::Impl::monitorLoop() {
    while (!monitor_stop.load()) {
        {
            // A hold at an event wakes the monitor at once, to tell the ranks.
            std::unique_lock<std::mutex> wake(monitor_wake_mutex);
            monitor_wake.wait_for(wake, std::chrono::milliseconds(20), [this] { return monitor_woken; });
            monitor_woken = false;
        }
        if (ft_enabled || !record.scenario.faults.empty())
            runFaultInjector();
        if (ft_enabled)
            restartDueReplicas();
        std::vector<ChildExit> exits;
        {
            std::lock_guard<std::mutex> plock(proc_mutex);
            exits = supervisor.reap();
        }
        syncNewRanksAndPace();
        bool ended = false;
        {
            std::lock_guard<std::mutex> lock(mutex);
            checkSilentRanks(monotonicNowNs());
            judgeExits(exits, monotonicNowNs());
            ended = decideEnd(monotonicNowNs());
            takeRecordingBatch(ended);
        }
        writeRecordingBatch(ended); // no mutex: the disk never holds up a collector thread
        if (ft_enabled)
            tellLighthouseAliveHolders(); // after the exits were judged: the dead hold nothing
        if (ended) {
            std::lock_guard<std::mutex> lock(mutex);
            end_published = true;
            finished_cv.notify_all();
            return;
        }
    }
}

// An ok run whose replicas end with different parameters is not ok
// (core/replica_agreement.hpp). Mutex held.
void Session::Impl::noteReplicaDisagreement() {
    if (!record.ok)
        return;
    const std::string why = replicaDisagreement(record.scenario, record.events, int(record.ranks.size()));
    if (why.empty())
        return;
    record.ok = false;
    record.failure_reason = why;
    log(LogLevel::Error, why);
}

// Whether the run is over, and how (mutex held). After a failure or a stop,
// whatever still runs past the grace period is killed. The grace: the other
// ranks' own timeouts fire within a step of the first failure's (they waited
// in the same collective), so min(timeout_s, 5 s) + 5 s is enough for them to
// report, and a hang ends the run within timeout_s + 10 s, not 2 x timeout_s.
bool Session::Impl::decideEnd(int64_t now) {
    // An injected hang is noted when the SIGSTOP is sent: the survivors notice
    // it only at their own timeout, so they get all of it.
    const double grace_s = first_failure_is_hang ? record.scenario.run.timeout_s + 5.0
                                                 : std::min(record.scenario.run.timeout_s, 5.0) + 5.0;
    const int64_t grace_ns = int64_t(grace_s * 1e9);
    bool all_gone = !via_mpirun || mpirun_exited; // mpirun reports the job's end
    for (bool g : rank_gone)
        all_gone = all_gone && g;
    const bool grace_over = first_failure_ns != 0 && now - first_failure_ns > grace_ns;
    if (stop_requested || grace_over) {
        if (grace_over && !stop_requested && !grace_logged) {
            grace_logged = true;
            log(LogLevel::Warning, "ranks still running " + std::to_string(grace_ns / 1000000000) +
                                       " s after the first failure: killing them");
        }
        {
            std::lock_guard<std::mutex> plock(proc_mutex);
            killEverything();
        }
        // Joined ranks (mpirun, torchrun) are not our children: we cannot kill them.
        // One that never joined is gone now; one still connected gets 3 s to leave.
        if (!options.spawn_ranks) {
            if (give_up_ns == 0)
                give_up_ns = now + 3000000000LL;
            for (size_t r = 0; r < rank_gone.size(); ++r)
                if (!record.ranks[r].started || now >= give_up_ns)
                    rank_gone[r] = true;
            all_gone = std::all_of(rank_gone.begin(), rank_gone.end(), [](bool g) { return g; });
        }
    }
    if (!all_gone)
        return false;
    if (ft_enabled && !stop_requested) {
        if (!job_done && record.failure_reason.empty())
            record.failure_reason =
                (swarm ? std::string("every rank is gone before every trainer finished its steps")
                       : std::string("every replica is gone before any committed every step")) +
                " (restart = \"" + restartPolicy().mode + "\")" + restart_budget_note;
        record.ok = job_done && record.failure_reason.empty();
        noteReplicaDisagreement();
    } else {
        bool ok = record.failure_reason.empty() && !stop_requested;
        for (size_t r = 0; r < rank_finished.size(); ++r)
            ok = ok && rank_finished[r];
        if (ok)
            for (const auto& info : record.ranks)
                ok = ok && (!options.spawn_ranks || info.exit_code == 0);
        if (stop_requested && record.failure_reason.empty())
            record.failure_reason = stop_reason;
        if (!ok && record.failure_reason.empty())
            record.failure_reason = "a rank did not finish";
        if (!ok)
            record.failure_reason += silentRanksNote() + neverJoinedNote();
        record.ok = ok;
        noteReplicaDisagreement();
    }
    record.t_end_ns = now;
    finished = true; // published by the monitor once the recording is closed
    return true;
}

// [SECTION] Public API -----------------------------------------------------------
Session::Session(SessionOptions options) : m_impl(std::make_unique<Impl>()) {
    m_impl->options = std::move(options);
    m_impl->world = m_impl->options.scenario.topology.ranks;
}

Session::~Session() {
    if (m_impl->monitor.joinable()) {
        if (!finished())
            stop("the Session was closed");
        m_impl->monitor.join();
    } else if (m_impl->recorder) {
        m_impl->recorder->discard(); // start() failed: nothing ran
    }
    {
        std::lock_guard<std::mutex> lock(m_impl->lighthouse_mutex);
        m_impl->lighthouse.reset(); // its callbacks use the Impl
    }
    if (m_impl->store)
        m_impl->store->stop(); // its refusal callback uses the Impl
    if (m_impl->collector)
        m_impl->collector->stop();
    std::lock_guard<std::mutex> plock(m_impl->proc_mutex);
    m_impl->killEverything();
    if (!m_impl->temp_checkpoint_dir.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(m_impl->temp_checkpoint_dir, ec);
    }
}

// Durable checkpoints by default for a fault-tolerant ddp run (one rank per
// group, or groups), DiLoCo (classic or streaming), zero1/zero2/fsdp or pipeline
// replica groups (one pipeline, or several, whole or sharded stages) whose ranks
// this Session starts (a directory on this host would not reach ranks on
// others), unless restarts are off: without them, when every replica is down
// at once the job would go back to step 0.
void Session::Impl::makeTemporaryCheckpointDir() {
    Scenario& sc = options.scenario;
    const bool writes_checkpoints = sc.strategy.kind == StrategyKind::Ddp ||
                                    sc.strategy.kind == StrategyKind::Diloco ||
                                    strategyTraits(sc.strategy.kind).shards_optimizer ||
                                    sc.strategy.kind == StrategyKind::Pipeline; // stage_checkpoint.hpp
    if (!sc.fault_tolerance.enabled || !writes_checkpoints || !sc.run.checkpoint_dir.empty() ||
        sc.fault_tolerance.restart == "never" || !options.spawn_ranks)
        return;
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/dtlab-ft-checkpoints-XXXXXX";
    if (!::mkdtemp(pattern.data()))
        return; // no checkpoints then: as before
    temp_checkpoint_dir = pattern;
    sc.run.checkpoint_dir = pattern;
    if (sc.run.checkpoint_every == 0)
        sc.run.checkpoint_every = kDefaultFtCheckpointEvery;
    default_checkpoint_note = "durable checkpoints every " + std::to_string(sc.run.checkpoint_every) +
                              " steps in " + pattern +
                              " (temporary, removed at the end; [run] checkpoint_dir keeps them): if every "
                              "replica is down at once, the restarted ones resume from the newest";
}

void Session::start() {
    Impl& s = *m_impl;
    validateScenario(s.options.scenario, "");
    // resume_from may name a checkpoint directory: the ranks get the newest
    // valid checkpoint in it; the ones skipped are logged with the reason.
    std::vector<std::string> skipped_checkpoints;
    if (!s.options.scenario.run.resume_from.empty()) {
        CheckpointChoice choice = chooseCheckpoint(s.options.scenario.run.resume_from, s.options.scenario);
        s.options.scenario.run.resume_from = choice.step_dir;
        skipped_checkpoints = std::move(choice.skipped);
        checkCheckpointsNotOverwritten(s.options.scenario, choice.step + 1);
    }
    {
        const auto id = randomNonce(); // this run's identity, written into its checkpoints
        s.options.scenario.run.run_id = toHex(id.data(), 8);
    }
    s.makeTemporaryCheckpointDir();
    const Scenario& scenario = s.options.scenario;
    const int world = s.world;
    s.record.scenario = scenario;
    s.record.ranks.resize(size_t(world));
    for (int r = 0; r < world; ++r)
        s.record.ranks[size_t(r)].rank = r;
    s.progress.resize(size_t(world));
    for (int r = 0; r < world; ++r) {
        s.progress[size_t(r)].rank = r;
        s.progress[size_t(r)].link_mbit_s = scenario.network.bandwidth_mbit_s;
        s.progress[size_t(r)].link_latency_ms = scenario.network.latency_ms;
    }
    s.rank_finished.assign(size_t(world), false);
    s.rank_gone.assign(size_t(world), false);
    s.last_heard_ns.assign(size_t(world), 0);
    s.silent.assign(size_t(world), false);
    s.lost_peer.assign(size_t(world), false);
    s.waiting_at_gate.assign(size_t(world), false);
    s.waiting_step.assign(size_t(world), -1);
    s.waiting_retry.assign(size_t(world), false);
    s.fault_fired.assign(scenario.faults.size(), false);
    s.quorum = scenario.fault_tolerance.enabled;
    s.swarm = scenario.strategy.kind == StrategyKind::Swarm;
    s.ft_enabled = s.quorum || s.swarm;
    s.sigkill_sent.assign(size_t(world), false);
    s.rank_pids = std::make_unique<std::atomic<int>[]>(size_t(world));
    for (int r = 0; r < world; ++r)
        s.rank_pids[size_t(r)].store(0);
    s.via_mpirun = s.options.spawn_ranks && scenarioUsesMpi(scenario);
    if (!isLoopbackAddress(s.options.listen_host) && s.options.token.empty())
        throw UsageError(
            "listening on " + s.options.listen_host +
            " opens the Session's control port, which can kill processes, to the network: give a shared "
            "token (dtrun --token-file FILE, or DTLAB_TOKEN) that every worker must also present");
    if (s.options.token.empty() && s.options.spawn_ranks && scenario.fault_tolerance.lighthouse.empty()) {
        // Ranks this Session starts get a token of this run's own (DTLAB_TOKEN
        // in their environment): another local process cannot join as a rank,
        // nor speak to the lighthouse as a replica. (Not with an external
        // lighthouse: it knows only the token it was started with, so the
        // run and `dtrun lighthouse` must be given the same one.)
        const auto a = randomNonce(), b = randomNonce();
        s.options.token = toHex(a.data(), a.size()) + toHex(b.data(), b.size());
    }
    if (s.via_mpirun) {
        if (!mpiAvailable())
            throw UsageError("this scenario uses the mpi backend, but " + mpiUnavailableReason() +
                             "; or use backend = \"gloo\"");
        if (mpirunPath().empty())
            throw UsageError(
                "this scenario uses the mpi backend, but mpirun is not on PATH (install openmpi-bin, "
                "or use backend = \"gloo\")");
    }
    s.restart_at_ns.assign(size_t(world), 0);
    s.restart_asked.assign(size_t(world), false);
    s.recent_restarts_ns.assign(size_t(world), {});
    s.telemetry_closed.assign(size_t(world), false);
    s.rank_left.assign(size_t(world), false);
    s.chaos_rng.seed(scenario.chaos.seed);
    s.record.t_start_ns = monotonicNowNs();
    s.startRecording(); // RECORD_PATH.partial from here on
    {
        std::lock_guard<std::mutex> lock(s.mutex);
        for (const std::string& why : skipped_checkpoints)
            s.log(LogLevel::Warning, "skipped checkpoint " + why);
        if (!s.default_checkpoint_note.empty())
            s.log(LogLevel::Info, s.default_checkpoint_note);
        if (!scenario.run.resume_from.empty())
            s.log(LogLevel::Info, "resuming from checkpoint " + scenario.run.resume_from);
    }

    // The collector first: it binds listen_host itself, so an address this
    // machine does not have is a UsageError here.
    s.collector = std::make_unique<TelemetryCollector>(s.options.listen_host, 0, s, s.options.token);
    s.collector->start();
    // Rendezvous store: ranks find the scenario and the collector here. It
    // binds listen_host only and admits only holders of the token
    // (store/store_server.hpp); LibTorch's TCPStore would bind every interface
    // and admit anyone.
    store::StoreServerOptions store_options;
    store_options.host = s.options.listen_host;
    store_options.port = s.options.store_port;
    store_options.token = s.options.token;
    // A refused connection is logged as an error (dtrun prints those even for
    // an ok run): something without the token tried to reach this run.
    s.store = std::make_unique<store::StoreServer>(store_options, [&s](const std::string& why) {
        std::lock_guard<std::mutex> lock(s.mutex);
        s.log(LogLevel::Error, why);
    });
    try {
        s.store->start();
    } catch (const std::exception& e) {
        throw UsageError("cannot start the rendezvous store: " + std::string(e.what()));
    }
    auto put = [&](const std::string& key, const std::string& value) { s.store->set(key, value); };
    const std::string scenario_json = scenarioToJson(scenario);
    put("dtlab/scenario", scenario_json);
    // Defence in depth: the store admits only token holders, and a rank also
    // checks that the scenario it reads is the one a token holder wrote.
    put("dtlab/scenario_proof", wire::textProofHex(s.options.token, scenario_json));
    put("dtlab/telemetry", s.options.listen_host + ":" + std::to_string(s.collector->port()));
    put("dtlab/world", std::to_string(world));
    if (!s.options.params_out_dir.empty())
        put("dtlab/params_out", s.options.params_out_dir);
    if (s.ft_enabled && scenario.fault_tolerance.lighthouse.empty()) {
        s.hostLighthouse();
        put("dtlab/lighthouse", s.lighthouse->address());
    }

    if (s.via_mpirun) {
        {
            std::lock_guard<std::mutex> plock(s.proc_mutex);
            s.spawnMpirun();
        }
        std::lock_guard<std::mutex> lock(s.mutex);
        s.log(LogLevel::Info, "started " + std::to_string(world) + " ranks through mpirun (backend mpi)");
        for (int r = 0; r < world; ++r)
            s.progress[size_t(r)].state = RankState::Starting;
    } else if (s.options.spawn_ranks) {
        for (int r = 0; r < world; ++r) {
            pid_t pid = 0;
            {
                std::lock_guard<std::mutex> plock(s.proc_mutex);
                pid = s.spawnRank(r, 0);
            }
            std::lock_guard<std::mutex> lock(s.mutex);
            s.progress[size_t(r)].pid = pid;
            s.progress[size_t(r)].state = RankState::Starting;
            s.record.ranks[size_t(r)].pid = pid;
            s.record.ranks[size_t(r)].started = true;
        }
    }
    s.monitor = std::thread([&s] { s.monitorLoop(); });
}

bool Session::finished() const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    return m_impl->end_published;
}

void Session::waitUntilFinished() {
    std::unique_lock<std::mutex> lock(m_impl->mutex);
    m_impl->finished_cv.wait(lock, [this] { return m_impl->end_published; });
}

void Session::stop(const std::string& reason) {
    {
        std::lock_guard<std::mutex> lock(m_impl->mutex);
        if (m_impl->finished || m_impl->stop_requested)
            return;
        m_impl->stop_requested = true;
        m_impl->stop_reason = reason;
        m_impl->record.logs.push_back({monotonicNowNs(), -1, LogLevel::Warning, "stopping: " + reason});
        m_impl->noteFailure(reason); // the cause, not the SIGKILLs that follow it
    }
    std::vector<bool> running(size_t(m_impl->world), false);
    {
        std::lock_guard<std::mutex> plock(m_impl->proc_mutex);
        m_impl->killEverything();
        for (int r = 0; r < m_impl->world; ++r)
            running[size_t(r)] = m_impl->supervisor.pidOf(r) != 0;
    }
    // Replicas dead and waiting for a restart will not get one.
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    for (int r = 0; r < m_impl->world; ++r)
        if (m_impl->ft_enabled && !running[size_t(r)]) {
            m_impl->restart_at_ns[size_t(r)] = 0;
            m_impl->rank_gone[size_t(r)] = true;
        }
}

size_t Session::copyLogsSince(size_t from, std::vector<LogRecord>& out) const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    const auto& logs = m_impl->record.logs;
    if (from < logs.size())
        out.insert(out.end(), logs.begin() + std::ptrdiff_t(from), logs.end());
    return logs.size();
}

std::string Session::storeAddress() const {
    if (!m_impl->store)
        return "";
    return m_impl->options.listen_host + ":" + std::to_string(m_impl->store->port());
}

std::vector<RankProgress> Session::progress() const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    std::vector<RankProgress> out = m_impl->progress;
    // A running rank that completed every step the gate allows waits at the gate.
    if (m_impl->control.gated())
        for (auto& p : out)
            if (p.state == RankState::Running &&
                (p.step >= m_impl->control.effectiveGate() || m_impl->waiting_at_gate[size_t(p.rank)]))
                p.state = RankState::Paused;
    return out;
}

size_t Session::eventCount() const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    return m_impl->record.events.size();
}

size_t Session::copyEventsSince(size_t from, std::vector<Event>& out) const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    const auto& events = m_impl->record.events;
    if (from < events.size())
        out.insert(out.end(), events.begin() + std::ptrdiff_t(from), events.end());
    return events.size();
}

RunRecord Session::snapshot() const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    return m_impl->record;
}

RecordingStatus Session::recordingStatus() const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    return m_impl->recording;
}

} // namespace dt
