// session.cpp: one run: store, collector, supervisor, monitor, fault triggers.
//
// [SECTION] Impl state
// [SECTION] Telemetry sink (collector threads)
// [SECTION] Monitor thread: reap, decide the end, enforce deadlines
// [SECTION] Public API
//
// End of a run:
//   ok      every rank finished every step (RankFinished) and exited 0
//   failed  a rank failed or died: the others get timeout_s + 5 s to notice
//           and exit on their own (they should, via Gloo's error or timeout),
//           then whatever is left is SIGKILLed. failure_reason names the
//           first cause (the injected fault or the first rank error).
// With [fault_tolerance] a dead rank is not the end: the Session also runs the
// lighthouse (a thread), restarts dead ranks per policy (a restarted rank is a
// new incarnation that heals from a live peer), and the run is ok once one
// replica committed every step; the others are then told to leave.
// Faults (scenario [[faults]], [chaos], the GUI's buttons) all go through
// applyFault; the ones that take effect later (resume after a hang, the end of
// a partition, the lighthouse coming back) are Deferred actions the monitor runs.
#include "dtlab/session.hpp"

#include "dtlab/checkpoint.hpp"
#include "dtlab/clock.hpp"
#include "dtlab/errors.hpp"
#include "session/supervisor.hpp"
#include "comm/mpi_communicator.hpp"
#include "telemetry/telemetry_collector.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <algorithm>
#include <cstdio>
#include <climits>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <thread>

namespace dt {

bool isLoopbackAddress(const std::string& host) {
    return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

std::string_view rankStateLabel(RankState state) {
    switch (state) {
    case RankState::Pending: return "pending";
    case RankState::Starting: return "starting";
    case RankState::Running: return "running";
    case RankState::Paused: return "paused";
    case RankState::Hung: return "hung";
    case RankState::Finished: return "finished";
    case RankState::Failed: return "failed";
    case RankState::Killed: return "killed";
    case RankState::Restarting: return "restarting";
    case RankState::Healing: return "healing";
    }
    return "unknown";
}

// [SECTION] Impl state --------------------------------------------------------
struct Session::Impl final : TelemetrySink {
    SessionOptions options;
    int world = 0;

    mutable std::mutex mutex;               // guards everything below
    std::condition_variable finished_cv;
    RunRecord record;
    std::vector<RankProgress> progress;
    std::vector<bool> rank_finished;        // said RankFinished
    std::vector<bool> rank_gone;            // exited (spawned) or disconnected (joined)
    std::vector<bool> fault_fired;
    bool finished = false;
    bool stop_requested = false;
    std::string stop_reason;
    int64_t first_failure_ns = 0;
    int64_t give_up_ns = 0;                 // external ranks: stop waiting for them after this
    bool grace_logged = false;
    std::vector<int64_t> last_heard_ns;     // per rank: its last telemetry frame (0 = no hello yet)
    std::vector<bool> silent;               // per rank: no frame for wire::kSilentNs (logged once)

    std::mutex proc_mutex;                  // guards supervisor
    Supervisor supervisor;

    // Backend "mpi": the Session starts one child, mpirun, which starts the
    // ranks; their pids come from their telemetry hello (same host).
    static constexpr int kMpirunChild = -1; // the supervisor's key for mpirun
    bool via_mpirun = false;
    bool mpirun_exited = false;             // guarded by mutex
    std::vector<bool> sigkill_sent;         // guarded by mutex
    std::unique_ptr<std::atomic<int>[]> rank_pids; // from hello; read under proc_mutex without mutex

    // Signal one rank's process (proc_mutex held): the supervisor's child, or
    // under mpirun the pid the rank reported. False if it is not running.
    bool signalRankProcess(int rank, int signo) {
        if (supervisor.signal(rank, signo)) return true;
        if (rank < 0 || rank >= world) return false;
        if (via_mpirun) {
            const int pid = rank_pids[size_t(rank)].load();
            return pid > 0 && ::kill(pid, signo) == 0;
        }
        // A joined rank (mpirun or torchrun we did not start, maybe on
        // another host): a kill goes over its authenticated control channel.
        if (!options.spawn_ranks && signo == SIGKILL)
            return collector->sendControl(rank, {uint32_t(wire::ControlCommand::KillSelf), 0, 0, 0.0});
        return false;
    }
    // SIGKILL every process of the run (proc_mutex held): under mpirun the
    // ranks first (they also die with mpirun: PR_SET_PDEATHSIG), then mpirun.
    void killEverything() {
        if (via_mpirun)
            for (int r = 0; r < world; ++r) {
                const int pid = rank_pids[size_t(r)].load();
                if (pid > 0) {
                    ::kill(pid, SIGKILL);
                    ::kill(pid, SIGCONT);
                }
            }
        supervisor.killAll();
    }

    RunControl control;                     // guarded by mutex
    int64_t last_pace_tick_ns = 0;

    std::unique_ptr<c10d::TCPStore> store;
    std::unique_ptr<TelemetryCollector> collector;
    std::thread monitor;
    std::atomic<bool> monitor_stop{false};

    // Fault tolerance (all guarded by mutex unless said otherwise).
    bool ft_enabled = false;
    std::vector<int64_t> restart_at_ns;     // when to start a dead rank again; 0 = not scheduled
    std::vector<bool> rank_left;            // left because the job finished without it
    bool job_done = false;                  // some replica committed every step
    int64_t job_done_ns = 0;
    bool job_done_cleanup = false;
    struct Deferred {
        int64_t at_ns;
        std::function<void()> run;          // called by the monitor without the mutex
    };
    std::vector<Deferred> deferred;
    std::mt19937_64 chaos_rng;
    int64_t next_chaos_ns = 0;
    int64_t last_quorum_id = -1;            // the last quorum id logged
    mutable std::mutex lighthouse_mutex;    // guards lighthouse (never taken with mutex held)
    std::unique_ptr<ft::LighthouseServer> lighthouse;

    void defer(int64_t delay_ns, std::function<void()> run) { // mutex held
        deferred.push_back({monotonicNowNs() + delay_ns, std::move(run)});
    }
    void log(LogLevel level, const std::string& text) { // mutex held
        record.logs.push_back({monotonicNowNs(), -1, level, text});
    }

    void noteFailure(const std::string& reason) { // mutex held
        if (record.failure_reason.empty()) record.failure_reason = reason;
        if (first_failure_ns == 0) first_failure_ns = monotonicNowNs();
    }

    void emitSessionEvent(EventKind kind, int rank, double value) { // mutex held
        Event e;
        e.t_ns = monotonicNowNs();
        e.kind = kind;
        e.phase = EventPhase::Instant;
        e.rank = rank;
        e.value = value;
        record.events.push_back(e);
    }

    // Highest step any rank has completed (-1 before the first).
    int maxCompletedStep() const { // mutex held
        int m = -1;
        for (const auto& p : progress) m = std::max(m, p.step);
        return m;
    }
    int minCompletedStep() const { // mutex held; over ranks still alive
        int m = INT_MAX;
        for (size_t r = 0; r < progress.size(); ++r)
            if (!rank_gone[r]) m = std::min(m, progress[r].step);
        return m == INT_MAX ? -1 : m;
    }

    // Tell every connected rank the current gate (call without the mutex).
    void broadcastGate(int64_t allowed_step) {
        wire::ControlMessage message{uint32_t(wire::ControlCommand::SetAllowedStep), 0, allowed_step, 0.0};
        for (int r = 0; r < world; ++r) collector->sendControl(r, message);
    }

    void setGate(RunMode mode, int64_t allowed_step, double pace) {
        {
            std::lock_guard<std::mutex> lock(mutex);
            control.mode = mode;
            control.allowed_step = allowed_step;
            control.pace_steps_per_s = pace;
            last_pace_tick_ns = monotonicNowNs();
        }
        broadcastGate(allowed_step);
    }

    void signalRank(int rank, int signo, RankState state, const char* what) {
        bool sent = false;
        {
            std::lock_guard<std::mutex> plock(proc_mutex);
            sent = signalRankProcess(rank, signo);
        }
        if (!sent) return;
        std::lock_guard<std::mutex> lock(mutex);
        if (signo == SIGKILL) sigkill_sent[size_t(rank)] = true;
        emitSessionEvent(EventKind::FaultInjected, rank, signo);
        record.logs.push_back({monotonicNowNs(), -1, LogLevel::Warning, std::string(what) + " rank " + std::to_string(rank)});
        if (state != RankState::Pending) progress[size_t(rank)].state = state;
    }

    // [SECTION] Silent ranks ------------------------------------------------
    // Every rank's sender sends at least one frame per wire::kHeartbeatNs. A
    // rank that has said hello and not finished, and that the Session did not
    // stop itself (hang), yet sends nothing for wire::kSilentNs, is "silent":
    // its process is stopped, or its host or the link to it is down. That is
    // logged once, and again when it is heard from; it is not a failure by
    // itself (a link may come back), but it is named in the failure reason.
    void heardFrom(int rank) { // mutex held
        const int64_t now = monotonicNowNs();
        if (silent[size_t(rank)]) {
            silent[size_t(rank)] = false;
            record.logs.push_back({now, -1, LogLevel::Info,
                                   "rank " + std::to_string(rank) + " is heard from again after " +
                                       formatSeconds(now - last_heard_ns[size_t(rank)]) + " of silence"});
        }
        last_heard_ns[size_t(rank)] = now;
    }

    void checkSilentRanks(int64_t now) { // mutex held
        for (int r = 0; r < world; ++r) {
            const size_t i = size_t(r);
            const RankState state = progress[i].state;
            const bool alive = state == RankState::Starting || state == RankState::Running ||
                               state == RankState::Paused || state == RankState::Healing; // not hung by us
            const bool watched = alive && last_heard_ns[i] != 0 && !rank_gone[i] && !rank_finished[i] && !silent[i];
            if (!watched || now - last_heard_ns[i] < wire::kSilentNs) continue;
            silent[i] = true;
            const std::string& host = record.ranks[i].host;
            record.logs.push_back({now, -1, LogLevel::Warning,
                                   "no word from rank " + std::to_string(r) + (host.empty() ? "" : " on " + host) +
                                       " for " + formatSeconds(now - last_heard_ns[i]) +
                                       ": its process is stopped, or its host or the link to it is down"});
        }
    }

    // " (ranks 2, 3 on hostB silent since 6.1 s into the run)" or "".
    std::string silentRanksNote() const { // mutex held
        std::vector<int> ranks;
        std::string hosts;
        int64_t since = 0;
        for (int r = 0; r < world; ++r) {
            if (!silent[size_t(r)]) continue;
            ranks.push_back(r);
            const std::string& host = record.ranks[size_t(r)].host;
            if (!host.empty() && hosts.find(host) == std::string::npos) hosts += (hosts.empty() ? "" : ", ") + host;
            if (since == 0 || last_heard_ns[size_t(r)] < since) since = last_heard_ns[size_t(r)];
        }
        if (ranks.empty()) return "";
        return " (no word from " + namedRanks(ranks) + (hosts.empty() ? "" : " on " + hosts) + " since " +
               formatSeconds(since - record.t_start_ns) + " into the run: a host or link down?)";
    }

    // " (ranks 2, 3 never joined)" or "": joined ranks the Session waited for in vain.
    std::string neverJoinedNote() const { // mutex held
        if (options.spawn_ranks) return "";
        std::vector<int> ranks;
        for (int r = 0; r < world; ++r)
            if (!record.ranks[size_t(r)].started) ranks.push_back(r);
        if (ranks.empty()) return "";
        return " (" + namedRanks(ranks) + " never joined)";
    }

    // "rank 2" or "ranks 2, 3"
    static std::string namedRanks(const std::vector<int>& ranks) {
        std::string out = ranks.size() == 1 ? "rank " : "ranks ";
        for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
        return out;
    }

    static std::string formatSeconds(int64_t ns) {
        char text[32];
        std::snprintf(text, sizeof(text), "%.1f s", double(ns) / 1e9);
        return text;
    }

    // [SECTION] Telemetry sink ----------------------------------------------
    bool onHello(int rank, int pid, const std::string& host) override {
        std::lock_guard<std::mutex> lock(mutex);
        if (rank < 0 || rank >= world) {
            record.logs.push_back({monotonicNowNs(), -1, LogLevel::Warning,
                                   "refused a rank " + std::to_string(rank) + " outside the world of " +
                                       std::to_string(world)});
            return false;
        }
        auto& info = record.ranks[size_t(rank)];
        info.pid = pid;
        info.host = host;
        info.started = true;
        progress[size_t(rank)].pid = pid;
        if (via_mpirun) rank_pids[size_t(rank)].store(pid);
        RankState& state = progress[size_t(rank)].state;
        if (state == RankState::Pending || state == RankState::Restarting) state = RankState::Starting;
        progress[size_t(rank)].host = host;
        heardFrom(rank);
        pending_hello_sync.push_back(rank);
        return true;
    }

    // Ranks that said hello since the last monitor tick get the current gate
    // and delay (sent from the monitor thread, never from a reader thread).
    std::vector<int> pending_hello_sync;

    void maybeInjectFault(const Event& e) { // mutex held
        for (size_t i = 0; i < record.scenario.faults.size(); ++i) {
            const auto& f = record.scenario.faults[i];
            if (fault_fired[i] || e.rank != f.rank || e.step < f.step || f.when == "time") continue;
            const bool at_allreduce = f.when == "allreduce" && e.kind == EventKind::AllReduce &&
                                      e.phase == EventPhase::WorkStarted && e.step == f.step;
            const bool at_step = f.when == "step";
            if (!at_allreduce && !at_step) continue;
            fault_fired[i] = true;
            if (f.action != "kill" && f.action != "hang") {
                log(LogLevel::Warning, "scenario fault: " + f.action + " on rank " + std::to_string(f.rank) + " at step " +
                                           std::to_string(e.step));
                defer(0, [this, f] { applyFault(f); });
                continue;
            }
            if (f.action == "hang" && f.duration_s > 0)
                defer(int64_t(f.duration_s * 1e9), [this, rank = f.rank] { resumeRankNow(rank); });
            const int signo = f.action == "hang" ? SIGSTOP : SIGKILL;
            bool sent = false;
            {
                std::lock_guard<std::mutex> plock(proc_mutex);
                sent = signalRankProcess(f.rank, signo);
            }
            if (!sent && options.spawn_ranks) continue;
            if (signo == SIGKILL) sigkill_sent[size_t(f.rank)] = true;
            emitSessionEvent(EventKind::FaultInjected, f.rank, signo);
            const std::string what = std::string(f.action == "hang" ? "SIGSTOP" : "SIGKILL") + " to rank " +
                                     std::to_string(f.rank) + " at step " + std::to_string(e.step) +
                                     (at_allreduce ? ", as its all-reduce started" : "");
            record.logs.push_back({monotonicNowNs(), -1, LogLevel::Warning, "scenario fault: " + what});
            if (signo == SIGSTOP) progress[size_t(f.rank)].state = RankState::Hung;
            if (!ft_enabled)
                noteFailure("rank " + std::to_string(f.rank) + (signo == SIGKILL ? " was killed" : " was hung") +
                        " by a scenario fault: " + what);
        }
    }

    void onEvents(int rank, const Event* events, size_t count) override {
        std::lock_guard<std::mutex> lock(mutex);
        heardFrom(rank);
        auto& p = progress[size_t(rank)];
        for (size_t i = 0; i < count; ++i) {
            const Event& e = events[i];
            record.events.push_back(e);
            if (e.kind == EventKind::RankStarted && p.state == RankState::Starting) p.state = RankState::Running;
            if (e.kind == EventKind::RankReady && p.state == RankState::Starting)
                p.state = ft_enabled && p.incarnation > 0 ? RankState::Healing : RankState::Running;
            if (e.kind == EventKind::Step && e.phase == EventPhase::Span) {
                if (!ft_enabled) p.step = e.step; // fault tolerant: the committed step (below)
                p.last_step_ms = double(e.dur_ns) / 1e6;
            }
            if (e.kind == EventKind::Commit) {
                p.step = e.step;
                p.committed = e.step + 1;
                if (p.state == RankState::Healing) p.state = RankState::Running;
            }
            if (e.kind == EventKind::Abort) p.aborted += 1;
            if (e.kind == EventKind::LossValue) p.last_loss = e.value;
            if (e.kind == EventKind::RankFinished) {
                rank_finished[size_t(rank)] = true;
                if (ft_enabled && e.value != 0) rank_left[size_t(rank)] = true;
                if (ft_enabled && e.value == 0 && !job_done) onJobDone();
            }
            if (!record.scenario.faults.empty()) maybeInjectFault(e);
        }
    }

    void onLog(int rank, LogLevel level, const std::string& text) override {
        std::lock_guard<std::mutex> lock(mutex);
        if (rank >= 0 && rank < world) heardFrom(rank);
        record.logs.push_back({monotonicNowNs(), rank, level, text});
        if (level == LogLevel::Error && rank >= 0 && rank < world) {
            record.ranks[size_t(rank)].error = text;
            if (!ft_enabled) noteFailure("rank " + std::to_string(rank) + " failed: " + text);
        }
    }

    void onDisconnect(int rank, bool clean) override {
        std::lock_guard<std::mutex> lock(mutex);
        if (rank < 0 || rank >= world) return;
        if (!options.spawn_ranks || via_mpirun) {
            // Joined ranks and mpirun's ranks are not our children: the stream's end is their end.
            rank_gone[size_t(rank)] = true;
            if (via_mpirun) rank_pids[size_t(rank)].store(0);
            auto& p = progress[size_t(rank)];
            p.state = rank_finished[size_t(rank)] ? RankState::Finished
                      : sigkill_sent[size_t(rank)] ? RankState::Killed
                                                   : RankState::Failed;
            if (!clean || !rank_finished[size_t(rank)])
                noteFailure("rank " + std::to_string(rank) + " disconnected before finishing");
        }
    }

    void onProtocolError(const std::string& what) override {
        std::lock_guard<std::mutex> lock(mutex);
        record.logs.push_back({monotonicNowNs(), -1, LogLevel::Warning, what});
    }

    // [SECTION] Fault tolerance: restarts, deferred faults, chaos, the end ----
    // Start (or restart) rank `rank` as `dtrun worker`; proc_mutex held.
    pid_t spawnRank(int rank, int incarnation) {
        const std::map<std::string, std::string> env = rankEnvironment();
        std::vector<std::string> argv = {options.worker_executable, "worker", "--rank", std::to_string(rank),
                                         "--world", std::to_string(world), "--join", storeAddressLocked()};
        if (incarnation > 0) argv.insert(argv.end(), {"--incarnation", std::to_string(incarnation)});
        return supervisor.spawn(rank, argv, env);
    }
    // Backend "mpi": one mpirun starts every rank (proc_mutex held). The ranks
    // learn rank and world from Open MPI's environment (launch_env.hpp).
    void spawnMpirun() {
        std::vector<std::string> argv = {mpirunPath()};
        if (::geteuid() == 0) argv.push_back("--allow-run-as-root"); // Open MPI refuses root without it
        for (const char* a : {"--oversubscribe", "--bind-to", "none", "-x", "OPENBLAS_NUM_THREADS", "-x", "OMP_NUM_THREADS",
                              "-x", "DTLAB_TOKEN", "-np"})
            argv.push_back(a);
        argv.push_back(std::to_string(world));
        for (const std::string& a : {options.worker_executable, std::string("worker"), std::string("--join"), storeAddressLocked()})
            argv.push_back(a);
        supervisor.spawn(kMpirunChild, argv, rankEnvironment());
        std::lock_guard<std::mutex> lock(mutex);
        log(LogLevel::Info, "started " + std::to_string(world) + " ranks through mpirun (backend mpi)");
        for (int r = 0; r < world; ++r) progress[size_t(r)].state = RankState::Starting;
    }

    // The environment of a rank the Session starts: one BLAS thread, and the
    // token in the environment (not on the command line, which ps shows).
    std::map<std::string, std::string> rankEnvironment() const {
        return {{"OPENBLAS_NUM_THREADS", "1"}, {"OMP_NUM_THREADS", "1"}, {"DTLAB_TOKEN", options.token}};
    }

    std::string storeAddressLocked() const {
        return options.listen_host + ":" + std::to_string(store->getPort());
    }

    // A replica's process ended before it finished (mutex held).
    void onReplicaDied(const ChildExit& x, const std::string& error) {
        auto& p = progress[size_t(x.rank)];
        const std::string how = x.signal == SIGKILL ? "was killed (SIGKILL)"
                                : x.signal != 0    ? std::string("died of signal ") + strsignal(x.signal)
                                                   : "exited with code " + std::to_string(x.exit_code) +
                                                         (error.empty() ? "" : ": " + error);
        p.state = x.signal == SIGKILL ? RankState::Killed : RankState::Failed;
        const FaultToleranceConfig& ft = record.scenario.fault_tolerance;
        if (job_done || stop_requested) { // no restarts once the job is done or the Session stops
            restart_at_ns[size_t(x.rank)] = 0;
            rank_gone[size_t(x.rank)] = true;
            return;
        }
        if (ft.restart == "auto") {
            restart_at_ns[size_t(x.rank)] = monotonicNowNs() + int64_t(ft.restart_delay_ms * 1e6);
            p.state = RankState::Restarting;
            rank_gone[size_t(x.rank)] = false;
            log(LogLevel::Warning, "replica " + std::to_string(x.rank) + " " + how + "; restarting it in " +
                                       std::to_string(int(ft.restart_delay_ms)) + " ms");
        } else if (ft.restart == "manual") {
            rank_gone[size_t(x.rank)] = false; // until restarted or the job ends
            log(LogLevel::Warning, "replica " + std::to_string(x.rank) + " " + how + "; press Restart to start it again");
        } else {
            log(LogLevel::Warning, "replica " + std::to_string(x.rank) + " " + how + " (restart = \"never\")");
        }
    }

    // Some replica committed every step (mutex held): the others are told to
    // leave; a stopped (SIGSTOP) one cannot hear it and is killed later.
    void onJobDone() {
        job_done = true;
        job_done_ns = monotonicNowNs();
        log(LogLevel::Info, "a replica committed every step: the job is done; the others leave");
        for (int r = 0; r < world; ++r) {
            restart_at_ns[size_t(r)] = 0;
            if (!rank_finished[size_t(r)])
                defer(0, [this, r] {
                    collector->sendControl(r, {uint32_t(wire::ControlCommand::JobFinished), 0, 0, 0.0});
                });
        }
        const double wait_s = record.scenario.fault_tolerance.collective_timeout_ms / 1000.0 + 5.0;
        defer(int64_t(wait_s * 1e9), [this] {
            std::vector<int> late;
            {
                std::lock_guard<std::mutex> lock(mutex);
                for (int r = 0; r < world; ++r)
                    if (!rank_gone[size_t(r)] && !rank_finished[size_t(r)]) late.push_back(r);
                if (!late.empty()) log(LogLevel::Warning, std::to_string(late.size()) +
                                                          " replica(s) did not leave after the job finished: killing them");
            }
            std::lock_guard<std::mutex> plock(proc_mutex);
            for (int r : late) {
                supervisor.signal(r, SIGKILL);
                supervisor.signal(r, SIGCONT);
            }
        });
        // Dead replicas waiting for a restart are not needed any more.
        std::lock_guard<std::mutex> plock(proc_mutex);
        for (int r = 0; r < world; ++r)
            if (supervisor.pidOf(r) == 0 && !rank_finished[size_t(r)]) rank_gone[size_t(r)] = true;
    }

    // mpirun ended (mutex held): every rank it started is gone with it. When
    // one MPI rank dies Open MPI aborts the others, which is why the MPI
    // backend serves fixed dimensions only.
    void onMpirunExited(const ChildExit& x) {
        mpirun_exited = true;
        const bool clean = x.signal == 0 && x.exit_code == 0;
        bool all_finished = true;
        for (int r = 0; r < world; ++r) {
            all_finished = all_finished && rank_finished[size_t(r)];
            auto& info = record.ranks[size_t(r)];
            info.exited = true;
            info.exit_code = rank_finished[size_t(r)] && clean ? 0 : (x.signal ? -1 : std::max(1, x.exit_code));
            if (rank_gone[size_t(r)]) continue;
            rank_gone[size_t(r)] = true;
            progress[size_t(r)].state = rank_finished[size_t(r)] ? RankState::Finished : RankState::Failed;
        }
        const std::string how = x.signal ? "was killed by signal " + std::to_string(x.signal)
                                         : "exited with code " + std::to_string(x.exit_code);
        log(clean ? LogLevel::Info : LogLevel::Warning, "mpirun " + how);
        if (!clean || !all_finished)
            noteFailure("mpirun " + how + " before every rank finished (when one MPI rank dies, Open MPI aborts the "
                        "whole job)");
    }

    void resumeRankNow(int rank) { signalRank(rank, SIGCONT, RankState::Running, "SIGCONT sent to"); }

    // Every fault goes through here (no mutex held): scenario [[faults]], [chaos], the GUI.
    void applyFault(const FaultConfig& f);
    void sendRankControl(int rank, wire::ControlCommand command, double value, const std::string& what);
    void setLighthouseRunning(bool running);

    // Once per monitor tick (no mutex held): due deferred actions, restarts,
    // timed scenario faults and chaos.
    void runFaultTolerance() {
        std::vector<std::function<void()>> due;
        std::vector<FaultConfig> faults_due;
        std::vector<int> restarts;
        const int64_t now = monotonicNowNs();
        {
            std::lock_guard<std::mutex> lock(mutex);
            for (auto it = deferred.begin(); it != deferred.end();) {
                if (it->at_ns <= now) {
                    due.push_back(std::move(it->run));
                    it = deferred.erase(it);
                } else {
                    ++it;
                }
            }
            for (int r = 0; r < world; ++r)
                if (restart_at_ns[size_t(r)] != 0 && restart_at_ns[size_t(r)] <= now && !stop_requested) {
                    restart_at_ns[size_t(r)] = 0;
                    restarts.push_back(r);
                }
            for (size_t i = 0; i < record.scenario.faults.size(); ++i) {
                const FaultConfig& f = record.scenario.faults[i];
                if (fault_fired[i] || f.when != "time" || now - record.t_start_ns < int64_t(f.at_s * 1e9)) continue;
                fault_fired[i] = true;
                faults_due.push_back(f);
                log(LogLevel::Warning, "scenario fault at " + std::to_string(f.at_s).substr(0, 4) + " s: " + f.action +
                                           (f.action == "kill_lighthouse" ? "" : " on rank " + std::to_string(f.rank)));
            }
            const ChaosConfig& chaos = record.scenario.chaos;
            if (chaos.enabled && !job_done && !stop_requested && now >= next_chaos_ns) {
                std::exponential_distribution<double> gap(1.0 / chaos.mean_interval_s);
                if (next_chaos_ns != 0) {
                    std::vector<int> live;
                    for (int r = 0; r < world; ++r)
                        if (progress[size_t(r)].state == RankState::Running) live.push_back(r);
                    if (!live.empty() && !chaos.actions.empty()) {
                        FaultConfig f;
                        f.action = chaos.actions[chaos_rng() % chaos.actions.size()];
                        f.rank = live[chaos_rng() % live.size()];
                        f.duration_s = f.action == "hang" ? chaos.hang_s : f.action == "slow" ? chaos.slow_s : 1.0;
                        f.delay_ms = chaos.slow_ms;
                        faults_due.push_back(f);
                        log(LogLevel::Warning, "chaos (seed " + std::to_string(chaos.seed) + "): " + f.action +
                                                   " on rank " + std::to_string(f.rank));
                    }
                }
                next_chaos_ns = now + int64_t(gap(chaos_rng) * 1e9);
            }
        }
        for (auto& run : due) run();
        for (const FaultConfig& f : faults_due) applyFault(f);
        for (int r : restarts) {
            int incarnation = 0;
            pid_t pid = 0;
            {
                std::lock_guard<std::mutex> plock(proc_mutex);
                {
                    std::lock_guard<std::mutex> lock(mutex);
                    incarnation = ++progress[size_t(r)].incarnation;
                }
                pid = spawnRank(r, incarnation);
            }
            std::lock_guard<std::mutex> lock(mutex);
            auto& p = progress[size_t(r)];
            p.pid = pid;
            p.state = RankState::Starting;
            p.delay_ms = 0;
            p.partitioned = false;
            record.ranks[size_t(r)].pid = pid;
            record.ranks[size_t(r)].exited = false;
            rank_gone[size_t(r)] = false;
            rank_finished[size_t(r)] = false;
            emitSessionEvent(EventKind::RankRestarted, r, incarnation);
            log(LogLevel::Info, "replica " + std::to_string(r) + " restarted (incarnation " + std::to_string(incarnation) +
                                    ", pid " + std::to_string(pid) + ")");
        }
    }

    // [SECTION] Monitor thread ----------------------------------------------
    void syncNewRanksAndPace() {
        std::vector<int> hello;
        RunControl gate;
        std::vector<double> delays;
        std::vector<std::pair<double, double>> links; // (mbit/s, latency ms) per rank
        bool tick = false;
        {
            std::lock_guard<std::mutex> lock(mutex);
            hello.swap(pending_hello_sync);
            for (const auto& p : progress) delays.push_back(p.delay_ms);
            for (const auto& p : progress) links.emplace_back(p.link_mbit_s, p.link_latency_ms);
            const int64_t now = monotonicNowNs();
            if (control.mode == RunMode::Paced && control.pace_steps_per_s > 0 &&
                now - last_pace_tick_ns >= int64_t(1e9 / control.pace_steps_per_s) &&
                minCompletedStep() >= control.allowed_step) {
                control.allowed_step += 1;
                last_pace_tick_ns = now;
                tick = true;
            }
            gate = control;
        }
        bool done = false;
        {
            std::lock_guard<std::mutex> lock(mutex);
            done = job_done;
        }
        for (int r : hello) {
            // A replica restarted just before the job finished is not needed any more.
            if (done) collector->sendControl(r, {uint32_t(wire::ControlCommand::JobFinished), 0, 0, 0.0});
            collector->sendControl(r, {uint32_t(wire::ControlCommand::SetAllowedStep), 0, gate.allowed_step, 0.0});
            if (delays[size_t(r)] > 0)
                collector->sendControl(r, {uint32_t(wire::ControlCommand::SetDelayMs), 0, 0, delays[size_t(r)]});
            const auto [mbit, latency] = links[size_t(r)];
            collector->sendControl(r, {uint32_t(wire::ControlCommand::SetLink), 0, int64_t(mbit * 1000.0), latency});
        }
        if (tick) broadcastGate(gate.allowed_step);
    }

    void monitorLoop() {
        const int64_t grace_ns = int64_t((record.scenario.run.timeout_s + 5.0) * 1e9);
        while (!monitor_stop.load()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            if (ft_enabled || !record.scenario.faults.empty()) runFaultTolerance();
            std::vector<ChildExit> exits;
            {
                std::lock_guard<std::mutex> plock(proc_mutex);
                exits = supervisor.reap();
            }
            syncNewRanksAndPace();
            std::lock_guard<std::mutex> lock(mutex);
            checkSilentRanks(monotonicNowNs());
            for (const auto& x : exits) {
                if (x.rank == kMpirunChild) {
                    onMpirunExited(x);
                    continue;
                }
                auto& info = record.ranks[size_t(x.rank)];
                info.exited = true;
                info.exit_code = x.exit_code;
                info.term_signal = x.signal;
                rank_gone[size_t(x.rank)] = true;
                emitSessionEvent(EventKind::ProcessExited, x.rank, x.signal ? -x.signal : x.exit_code);
                auto& p = progress[size_t(x.rank)];
                if (ft_enabled && !(x.exit_code == 0 && x.signal == 0 && rank_finished[size_t(x.rank)])) {
                    onReplicaDied(x, info.error);
                    continue;
                }
                if (ft_enabled) {
                    p.state = RankState::Finished;
                    continue;
                }
                if (x.signal == SIGKILL) {
                    p.state = RankState::Killed;
                    noteFailure("rank " + std::to_string(x.rank) + " was killed by SIGKILL");
                } else if (x.signal != 0) {
                    p.state = RankState::Failed;
                    noteFailure("rank " + std::to_string(x.rank) + " died of signal " + std::to_string(x.signal) +
                                " (" + strsignal(x.signal) + ")");
                } else if (x.exit_code == 0 && rank_finished[size_t(x.rank)]) {
                    p.state = RankState::Finished;
                } else {
                    p.state = RankState::Failed;
                    noteFailure("rank " + std::to_string(x.rank) + " exited with code " + std::to_string(x.exit_code) +
                                (info.error.empty() ? "" : ": " + info.error));
                }
            }
            bool all_gone = !via_mpirun || mpirun_exited; // mpirun reports the job's end
            for (bool g : rank_gone) all_gone = all_gone && g;
            const int64_t now = monotonicNowNs();
            const bool grace_over = first_failure_ns != 0 && now - first_failure_ns > grace_ns;
            if (stop_requested || grace_over) {
                if (grace_over && !stop_requested && !grace_logged) {
                    grace_logged = true;
                    record.logs.push_back({now, -1, LogLevel::Warning,
                                           "ranks still running " + std::to_string(grace_ns / 1000000000) +
                                               " s after the first failure: killing them"});
                }
                {
                    std::lock_guard<std::mutex> plock(proc_mutex);
                    killEverything();
                }
                // Joined ranks (mpirun, torchrun) are not our children: we cannot kill them.
                // One that never joined is gone now; one still connected gets 3 s to leave.
                if (!options.spawn_ranks) {
                    if (give_up_ns == 0) give_up_ns = now + 3000000000LL;
                    for (size_t r = 0; r < rank_gone.size(); ++r)
                        if (!record.ranks[r].started || now >= give_up_ns) rank_gone[r] = true;
                    all_gone = std::all_of(rank_gone.begin(), rank_gone.end(), [](bool g) { return g; });
                }
            }
            if (all_gone && ft_enabled && !stop_requested) {
                if (!job_done && record.failure_reason.empty())
                    record.failure_reason = "every replica is gone before any committed every step (restart = \"" +
                                            record.scenario.fault_tolerance.restart + "\")";
                record.ok = job_done && record.failure_reason.empty();
                record.t_end_ns = now;
                finished = true;
                finished_cv.notify_all();
                return;
            }
            if (all_gone) {
                bool ok = record.failure_reason.empty() && !stop_requested;
                for (size_t r = 0; r < rank_finished.size(); ++r) ok = ok && rank_finished[r];
                if (ok)
                    for (const auto& info : record.ranks) ok = ok && (!options.spawn_ranks || info.exit_code == 0);
                if (stop_requested && record.failure_reason.empty()) record.failure_reason = stop_reason;
                if (!ok && record.failure_reason.empty()) record.failure_reason = "a rank did not finish";
                if (!ok) record.failure_reason += silentRanksNote() + neverJoinedNote();
                record.ok = ok;
                record.t_end_ns = now;
                finished = true;
                finished_cv.notify_all();
                return;
            }
        }
    }
};

// [SECTION] Public API ----------------------------------------------------------
Session::Session(SessionOptions options) : m_impl(std::make_unique<Impl>()) {
    m_impl->options = std::move(options);
    m_impl->world = m_impl->options.scenario.topology.ranks;
}

Session::~Session() {
    if (m_impl->monitor.joinable()) {
        if (!finished()) stop("the Session was closed");
        m_impl->monitor.join();
    }
    {
        std::lock_guard<std::mutex> lock(m_impl->lighthouse_mutex);
        m_impl->lighthouse.reset(); // its callbacks use the Impl
    }
    if (m_impl->collector) m_impl->collector->stop();
    std::lock_guard<std::mutex> plock(m_impl->proc_mutex);
    m_impl->killEverything();
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
    const Scenario& scenario = s.options.scenario;
    const int world = s.world;
    s.record.scenario = scenario;
    s.record.ranks.resize(size_t(world));
    for (int r = 0; r < world; ++r) s.record.ranks[size_t(r)].rank = r;
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
    s.fault_fired.assign(scenario.faults.size(), false);
    s.ft_enabled = scenario.fault_tolerance.enabled;
    s.sigkill_sent.assign(size_t(world), false);
    s.rank_pids = std::make_unique<std::atomic<int>[]>(size_t(world));
    for (int r = 0; r < world; ++r) s.rank_pids[size_t(r)].store(0);
    s.via_mpirun = s.options.spawn_ranks && scenarioUsesMpi(scenario);
    if (!isLoopbackAddress(s.options.listen_host) && s.options.token.empty())
        throw UsageError("listening on " + s.options.listen_host +
                         " opens the Session's control port, which can kill processes, to the network: give a shared "
                         "token (dtrun --token-file FILE, or DTLAB_TOKEN) that every worker must also present");
    if (s.via_mpirun) {
        if (!mpiAvailable())
            throw UsageError("this scenario uses the mpi backend, but " + mpiUnavailableReason() +
                             "; or use backend = \"gloo\"");
        if (mpirunPath().empty())
            throw UsageError("this scenario uses the mpi backend, but mpirun is not on PATH (install openmpi-bin, "
                             "or use backend = \"gloo\")");
    }
    s.restart_at_ns.assign(size_t(world), 0);
    s.rank_left.assign(size_t(world), false);
    s.chaos_rng.seed(scenario.chaos.seed);
    s.record.t_start_ns = monotonicNowNs();
    {
        std::lock_guard<std::mutex> lock(s.mutex);
        for (const std::string& why : skipped_checkpoints) s.log(LogLevel::Warning, "skipped checkpoint " + why);
        if (!scenario.run.resume_from.empty()) s.log(LogLevel::Info, "resuming from checkpoint " + scenario.run.resume_from);
    }

    // Rendezvous store: ranks find the scenario and the collector here.
    c10d::TCPStoreOptions store_options;
    store_options.port = uint16_t(s.options.store_port);
    store_options.isServer = true;
    store_options.waitWorkers = false;
    store_options.timeout = std::chrono::milliseconds(int64_t(scenario.run.timeout_s * 1000) + 30000);
    try {
        s.store = std::make_unique<c10d::TCPStore>(s.options.listen_host, store_options);
    } catch (const std::exception& e) {
        const std::string what = e.what();
        throw UsageError("cannot start the rendezvous store on " + s.options.listen_host + ":" +
                         std::to_string(s.options.store_port) + ": " + what.substr(0, what.find('\n')));
    }
    s.collector = std::make_unique<TelemetryCollector>(s.options.listen_host, 0, s, s.options.token);
    s.collector->start();
    auto put = [&](const std::string& key, const std::string& value) {
        s.store->set(key, std::vector<uint8_t>(value.begin(), value.end()));
    };
    const std::string scenario_json = scenarioToJson(scenario);
    put("dtlab/scenario", scenario_json);
    // The store has no authentication of its own: ranks check that the
    // scenario they read is the one a holder of the token wrote.
    put("dtlab/scenario_proof", wire::textProofHex(s.options.token, scenario_json));
    put("dtlab/telemetry", s.options.listen_host + ":" + std::to_string(s.collector->port()));
    put("dtlab/world", std::to_string(world));
    if (!s.options.params_out_dir.empty()) put("dtlab/params_out", s.options.params_out_dir);
    if (s.ft_enabled && scenario.fault_tolerance.lighthouse.empty()) {
        const FaultToleranceConfig& ftc = scenario.fault_tolerance;
        ft::LighthouseOptions lo;
        lo.host = s.options.listen_host;
        lo.min_replicas = ftc.min_replicas;
        lo.join_timeout_ms = int64_t(ftc.join_timeout_ms);
        lo.heartbeat_timeout_ms = int64_t(ftc.heartbeat_timeout_ms);
        s.lighthouse = std::make_unique<ft::LighthouseServer>(lo);
        s.lighthouse->onQuorum([&s](const ft::Quorum& quorum, const ft::QuorumDecision& decision) {
            std::lock_guard<std::mutex> lock(s.mutex);
            // The fast path hands out the same quorum every step: only a new id is news.
            if (quorum.quorum_id == s.last_quorum_id) return;
            s.last_quorum_id = quorum.quorum_id;
            Event e;
            e.t_ns = monotonicNowNs();
            e.kind = EventKind::QuorumFormed;
            e.phase = EventPhase::Instant;
            e.value = double(quorum.quorum_id);
            e.group_size = uint16_t(quorum.members.size());
            std::string members;
            for (const auto& m : quorum.members) {
                if (m.replica >= 0 && m.replica < 64) e.seq |= uint64_t(1) << m.replica;
                e.bytes = std::max<int64_t>(e.bytes, m.step);
                members += (members.empty() ? "" : ", ") + m.id() + "@" + std::to_string(m.step);
            }
            s.record.events.push_back(e);
            s.log(LogLevel::Info, "lighthouse: quorum " + std::to_string(quorum.quorum_id) + " = {" + members + "}: " +
                                      decision.reason);
        });
        s.lighthouse->onMemberLost([&s](const ft::QuorumMember& member, const std::string& why) {
            std::lock_guard<std::mutex> lock(s.mutex);
            const bool heartbeat = why.find("heartbeat") != std::string::npos;
            s.emitSessionEvent(EventKind::ReplicaLost, member.replica, heartbeat ? 1 : 0);
            s.log(LogLevel::Warning, "lighthouse: replica " + member.id() + " lost: " + why);
        });
        try {
            s.lighthouse->start();
        } catch (const std::exception& e) {
            throw UsageError(std::string("cannot start the lighthouse: ") + e.what());
        }
        put("dtlab/lighthouse", s.lighthouse->address());
    }

    if (s.via_mpirun) {
        std::lock_guard<std::mutex> plock(s.proc_mutex);
        s.spawnMpirun();
    } else if (s.options.spawn_ranks) {
        std::lock_guard<std::mutex> plock(s.proc_mutex);
        for (int r = 0; r < world; ++r) {
            const pid_t pid = s.spawnRank(r, 0);
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
    return m_impl->finished;
}

void Session::waitUntilFinished() {
    std::unique_lock<std::mutex> lock(m_impl->mutex);
    m_impl->finished_cv.wait(lock, [this] { return m_impl->finished; });
}

void Session::stop(const std::string& reason) {
    {
        std::lock_guard<std::mutex> lock(m_impl->mutex);
        if (m_impl->finished || m_impl->stop_requested) return;
        m_impl->stop_requested = true;
        m_impl->stop_reason = reason;
        m_impl->record.logs.push_back({monotonicNowNs(), -1, LogLevel::Warning, "stopping: " + reason});
        m_impl->noteFailure(reason); // the cause, not the SIGKILLs that follow it
    }
    std::vector<bool> running(size_t(m_impl->world), false);
    {
        std::lock_guard<std::mutex> plock(m_impl->proc_mutex);
        m_impl->killEverything();
        for (int r = 0; r < m_impl->world; ++r) running[size_t(r)] = m_impl->supervisor.pidOf(r) != 0;
    }
    // Replicas dead and waiting for a restart will not get one.
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    for (int r = 0; r < m_impl->world; ++r)
        if (m_impl->ft_enabled && !running[size_t(r)]) {
            m_impl->restart_at_ns[size_t(r)] = 0;
            m_impl->rank_gone[size_t(r)] = true;
        }
}

void Session::killRank(int rank) { m_impl->signalRank(rank, SIGKILL, RankState::Pending, "SIGKILL sent to"); }
void Session::hangRank(int rank) { m_impl->signalRank(rank, SIGSTOP, RankState::Hung, "SIGSTOP sent to"); }
void Session::resumeRank(int rank) { m_impl->signalRank(rank, SIGCONT, RankState::Running, "SIGCONT sent to"); }

void Session::slowRank(int rank, double delay_ms) {
    if (rank < 0 || rank >= m_impl->world) return;
    {
        std::lock_guard<std::mutex> lock(m_impl->mutex);
        m_impl->progress[size_t(rank)].delay_ms = delay_ms;
        m_impl->record.logs.push_back({monotonicNowNs(), -1, LogLevel::Warning,
                                       "rank " + std::to_string(rank) + " slowed by " + std::to_string(int(delay_ms)) +
                                           " ms per step"});
    }
    m_impl->collector->sendControl(rank, {uint32_t(wire::ControlCommand::SetDelayMs), 0, 0, delay_ms});
}

void Session::setLink(int rank, double bandwidth_mbit_s, double latency_ms) {
    const int first = rank < 0 ? 0 : rank, last = rank < 0 ? m_impl->world - 1 : rank;
    if (first < 0 || last >= m_impl->world) return;
    bandwidth_mbit_s = std::max(0.0, bandwidth_mbit_s);
    latency_ms = std::max(0.0, latency_ms);
    {
        std::lock_guard<std::mutex> lock(m_impl->mutex);
        for (int r = first; r <= last; ++r) {
            m_impl->progress[size_t(r)].link_mbit_s = bandwidth_mbit_s;
            m_impl->progress[size_t(r)].link_latency_ms = latency_ms;
        }
        const std::string who = rank < 0 ? "every rank" : "rank " + std::to_string(rank);
        char text[160];
        if (bandwidth_mbit_s > 0) std::snprintf(text, sizeof text, "%s: link %.0f Mbit/s, %.0f ms latency", who.c_str(), bandwidth_mbit_s, latency_ms);
        else std::snprintf(text, sizeof text, "%s: link uncapped, %.0f ms latency", who.c_str(), latency_ms);
        m_impl->record.logs.push_back({monotonicNowNs(), -1, LogLevel::Info, text});
    }
    for (int r = first; r <= last; ++r)
        m_impl->collector->sendControl(
            r, {uint32_t(wire::ControlCommand::SetLink), 0, int64_t(bandwidth_mbit_s * 1000.0), latency_ms});
}

void Session::pause() {
    int64_t allowed = 0;
    {
        std::lock_guard<std::mutex> lock(m_impl->mutex);
        // Ranks finish the step they are in, then wait at the next gate.
        allowed = std::min<int64_t>(m_impl->control.allowed_step, m_impl->maxCompletedStep() + 1);
    }
    m_impl->setGate(RunMode::Paused, allowed, 0.0);
}

void Session::resume() { m_impl->setGate(RunMode::Run, INT64_MAX, 0.0); }

void Session::stepOnce() {
    int64_t allowed = 0;
    {
        std::lock_guard<std::mutex> lock(m_impl->mutex);
        const int64_t current = m_impl->maxCompletedStep() + 1;
        allowed = m_impl->control.mode == RunMode::Run ? current : std::max<int64_t>(m_impl->control.allowed_step, current - 1) + 1;
    }
    m_impl->setGate(RunMode::Paused, allowed, 0.0);
}

void Session::setPace(double steps_per_s) {
    if (steps_per_s <= 0) {
        resume();
        return;
    }
    int64_t allowed = 0;
    {
        std::lock_guard<std::mutex> lock(m_impl->mutex);
        allowed = std::min<int64_t>(m_impl->control.allowed_step, m_impl->maxCompletedStep() + 1);
    }
    m_impl->setGate(RunMode::Paced, allowed, steps_per_s);
}

// [SECTION] Fault tolerance API -------------------------------------------------
void Session::Impl::applyFault(const FaultConfig& f) {
    const int64_t duration_ns = int64_t(f.duration_s * 1e9);
    Session::Impl& s = *this;
    const auto later = [&](std::function<void()> undo) {
        if (duration_ns <= 0) return;
        std::lock_guard<std::mutex> lock(s.mutex);
        s.defer(duration_ns, std::move(undo));
    };
    const int r = f.rank;
    if (f.action == "kill") {
        signalRank(r, SIGKILL, RankState::Pending, "SIGKILL sent to");
    } else if (f.action == "hang") {
        signalRank(r, SIGSTOP, RankState::Hung, "SIGSTOP sent to");
        later([this, r] { resumeRankNow(r); });
    } else if (f.action == "resume") {
        resumeRankNow(r);
    } else if (f.action == "slow") {
        sendRankControl(r, wire::ControlCommand::SetDelayMs, f.delay_ms, "slowed by " + std::to_string(int(f.delay_ms)) + " ms per step");
        later([this, r] { sendRankControl(r, wire::ControlCommand::SetDelayMs, 0.0, "back to normal speed"); });
    } else if (f.action == "fail_collective") {
        sendRankControl(r, wire::ControlCommand::FailNextCollective, 0.0, "its next collective will fail");
    } else if (f.action == "nan_gradients") {
        sendRankControl(r, wire::ControlCommand::NanGradients, 0.0, "its next gradients will be NaN");
    } else if (f.action == "partition") {
        sendRankControl(r, wire::ControlCommand::Partition, 1.0, "partitioned from the lighthouse (heartbeats lost)");
        later([this, r] { sendRankControl(r, wire::ControlCommand::Partition, 0.0, "partition healed"); });
    } else if (f.action == "delay_traffic") {
        sendRankControl(r, wire::ControlCommand::TrafficDelayMs, f.delay_ms,
                        "traffic delayed by " + std::to_string(int(f.delay_ms)) + " ms per collective");
        later([this, r] { sendRankControl(r, wire::ControlCommand::TrafficDelayMs, 0.0, "traffic delay removed"); });
    } else if (f.action == "kill_lighthouse") {
        setLighthouseRunning(false);
        later([this] { setLighthouseRunning(true); });
    }
}

void Session::Impl::sendRankControl(int rank, wire::ControlCommand command, double value, const std::string& what) {
    if (rank < 0 || rank >= world) return;
    {
        std::lock_guard<std::mutex> lock(mutex);
        auto& p = progress[size_t(rank)];
        if (command == wire::ControlCommand::SetDelayMs) p.delay_ms = value;
        if (command == wire::ControlCommand::Partition) p.partitioned = value > 0;
        const bool one_shot = command == wire::ControlCommand::FailNextCollective || command == wire::ControlCommand::NanGradients;
        if (one_shot || value > 0) emitSessionEvent(EventKind::FaultInjected, rank, -double(command)); // undoing is not a fault
        log(LogLevel::Warning, "rank " + std::to_string(rank) + ": " + what);
    }
    collector->sendControl(rank, {uint32_t(command), 0, 0, value});
}

void Session::Impl::setLighthouseRunning(bool running) {
    bool changed = false;
    {
        std::lock_guard<std::mutex> llock(lighthouse_mutex);
        if (!lighthouse || lighthouse->running() == running) return;
        if (running) lighthouse->start();
        else lighthouse->stop();
        changed = true;
    }
    if (!changed) return;
    std::lock_guard<std::mutex> lock(mutex);
    emitSessionEvent(running ? EventKind::LighthouseUp : EventKind::LighthouseDown, -1, 0);
    log(LogLevel::Warning, running ? "lighthouse started again: replicas can form a quorum"
                                   : "lighthouse stopped: no replica can get a quorum until it is back");
}

bool Session::faultTolerant() const { return m_impl->ft_enabled; }

void Session::restartRank(int rank) {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    if (!m_impl->ft_enabled || rank < 0 || rank >= m_impl->world || m_impl->job_done) return;
    const RankState state = m_impl->progress[size_t(rank)].state;
    if (state != RankState::Killed && state != RankState::Failed && state != RankState::Restarting) return;
    m_impl->restart_at_ns[size_t(rank)] = monotonicNowNs();
}

void Session::failNextCollective(int rank) {
    FaultConfig f;
    f.action = "fail_collective";
    f.rank = rank;
    if (m_impl->ft_enabled) m_impl->applyFault(f);
}

void Session::nanGradients(int rank) {
    FaultConfig f;
    f.action = "nan_gradients";
    f.rank = rank;
    if (m_impl->ft_enabled) m_impl->applyFault(f);
}

void Session::partitionRank(int rank, bool on) {
    if (!m_impl->ft_enabled) return;
    m_impl->sendRankControl(rank, wire::ControlCommand::Partition, on ? 1.0 : 0.0,
                            on ? "partitioned from the lighthouse (heartbeats lost)" : "partition healed");
}

void Session::delayTraffic(int rank, double delay_ms) {
    m_impl->sendRankControl(rank, wire::ControlCommand::TrafficDelayMs, delay_ms,
                            delay_ms > 0 ? "traffic delayed by " + std::to_string(int(delay_ms)) + " ms per collective"
                                         : "traffic delay removed");
}

void Session::killLighthouse() { m_impl->setLighthouseRunning(false); }
void Session::startLighthouse() { m_impl->setLighthouseRunning(true); }

bool Session::lighthouseStatus(ft::LighthouseStatus& out) const {
    std::lock_guard<std::mutex> lock(m_impl->lighthouse_mutex);
    if (!m_impl->lighthouse) return false;
    out = m_impl->lighthouse->status();
    return true;
}

RunControl Session::runControl() const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    return m_impl->control;
}

size_t Session::copyLogsSince(size_t from, std::vector<LogRecord>& out) const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    const auto& logs = m_impl->record.logs;
    if (from < logs.size()) out.insert(out.end(), logs.begin() + std::ptrdiff_t(from), logs.end());
    return logs.size();
}

std::string Session::storeAddress() const {
    if (!m_impl->store) return "";
    return m_impl->options.listen_host + ":" + std::to_string(m_impl->store->getPort());
}

std::vector<RankProgress> Session::progress() const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    std::vector<RankProgress> out = m_impl->progress;
    // A running rank that completed every step the gate allows waits at the gate.
    if (m_impl->control.mode != RunMode::Run)
        for (auto& p : out)
            if (p.state == RankState::Running && p.step >= m_impl->control.allowed_step) p.state = RankState::Paused;
    return out;
}

size_t Session::eventCount() const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    return m_impl->record.events.size();
}

size_t Session::copyEventsSince(size_t from, std::vector<Event>& out) const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    const auto& events = m_impl->record.events;
    if (from < events.size()) out.insert(out.end(), events.begin() + std::ptrdiff_t(from), events.end());
    return events.size();
}

RunRecord Session::snapshot() const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    return m_impl->record;
}

} // namespace dt
