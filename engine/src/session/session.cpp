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
#include "dtlab/session.hpp"

#include "dtlab/clock.hpp"
#include "dtlab/errors.hpp"
#include "session/supervisor.hpp"
#include "telemetry/telemetry_collector.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <algorithm>
#include <climits>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <mutex>
#include <thread>

namespace dt {

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
    int64_t last_event_ns = 0;

    std::mutex proc_mutex;                  // guards supervisor
    Supervisor supervisor;

    RunControl control;                     // guarded by mutex
    int64_t last_pace_tick_ns = 0;

    std::unique_ptr<c10d::TCPStore> store;
    std::unique_ptr<TelemetryCollector> collector;
    std::thread monitor;
    std::atomic<bool> monitor_stop{false};

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
            sent = supervisor.signal(rank, signo);
        }
        if (!sent) return;
        std::lock_guard<std::mutex> lock(mutex);
        emitSessionEvent(EventKind::FaultInjected, rank, signo);
        record.logs.push_back({monotonicNowNs(), -1, LogLevel::Warning, std::string(what) + " rank " + std::to_string(rank)});
        if (state != RankState::Pending) progress[size_t(rank)].state = state;
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
        if (progress[size_t(rank)].state == RankState::Pending) progress[size_t(rank)].state = RankState::Starting;
        progress[size_t(rank)].host = host;
        pending_hello_sync.push_back(rank);
        return true;
    }

    // Ranks that said hello since the last monitor tick get the current gate
    // and delay (sent from the monitor thread, never from a reader thread).
    std::vector<int> pending_hello_sync;

    void maybeInjectFault(const Event& e) { // mutex held
        for (size_t i = 0; i < record.scenario.faults.size(); ++i) {
            const auto& f = record.scenario.faults[i];
            if (fault_fired[i] || e.rank != f.rank || e.step < f.step) continue;
            const bool at_allreduce = f.when == "allreduce" && e.kind == EventKind::AllReduce &&
                                      e.phase == EventPhase::WorkStarted && e.step == f.step;
            const bool at_step = f.when == "step";
            if (!at_allreduce && !at_step) continue;
            fault_fired[i] = true;
            const int signo = f.action == "hang" ? SIGSTOP : SIGKILL;
            bool sent = false;
            {
                std::lock_guard<std::mutex> plock(proc_mutex);
                sent = supervisor.signal(f.rank, signo);
            }
            if (!sent && options.spawn_ranks) continue;
            emitSessionEvent(EventKind::FaultInjected, f.rank, signo);
            const std::string what = std::string(f.action == "hang" ? "SIGSTOP" : "SIGKILL") + " to rank " +
                                     std::to_string(f.rank) + " at step " + std::to_string(e.step) +
                                     (at_allreduce ? ", as its all-reduce started" : "");
            record.logs.push_back({monotonicNowNs(), -1, LogLevel::Warning, "scenario fault: " + what});
            if (signo == SIGSTOP) progress[size_t(f.rank)].state = RankState::Hung;
            noteFailure("rank " + std::to_string(f.rank) + (signo == SIGKILL ? " was killed" : " was hung") +
                        " by a scenario fault: " + what);
        }
    }

    void onEvents(int rank, const Event* events, size_t count) override {
        std::lock_guard<std::mutex> lock(mutex);
        last_event_ns = monotonicNowNs();
        auto& p = progress[size_t(rank)];
        for (size_t i = 0; i < count; ++i) {
            const Event& e = events[i];
            record.events.push_back(e);
            if (e.kind == EventKind::RankStarted && p.state == RankState::Starting) p.state = RankState::Running;
            if (e.kind == EventKind::RankReady && p.state == RankState::Starting) p.state = RankState::Running;
            if (e.kind == EventKind::Step && e.phase == EventPhase::Span) {
                p.step = e.step;
                p.last_step_ms = double(e.dur_ns) / 1e6;
            }
            if (e.kind == EventKind::LossValue) p.last_loss = e.value;
            if (e.kind == EventKind::RankFinished) rank_finished[size_t(rank)] = true;
            if (!record.scenario.faults.empty()) maybeInjectFault(e);
        }
    }

    void onLog(int rank, LogLevel level, const std::string& text) override {
        std::lock_guard<std::mutex> lock(mutex);
        record.logs.push_back({monotonicNowNs(), rank, level, text});
        if (level == LogLevel::Error && rank >= 0 && rank < world) {
            record.ranks[size_t(rank)].error = text;
            noteFailure("rank " + std::to_string(rank) + " failed: " + text);
        }
    }

    void onDisconnect(int rank, bool clean) override {
        std::lock_guard<std::mutex> lock(mutex);
        if (rank < 0 || rank >= world) return;
        if (!options.spawn_ranks) {
            // Joined ranks are not our children: the stream's end is their end.
            rank_gone[size_t(rank)] = true;
            auto& p = progress[size_t(rank)];
            p.state = rank_finished[size_t(rank)] ? RankState::Finished : RankState::Failed;
            if (!clean || !rank_finished[size_t(rank)])
                noteFailure("rank " + std::to_string(rank) + " disconnected before finishing");
        }
    }

    void onProtocolError(const std::string& what) override {
        std::lock_guard<std::mutex> lock(mutex);
        record.logs.push_back({monotonicNowNs(), -1, LogLevel::Warning, what});
    }

    // [SECTION] Monitor thread ----------------------------------------------
    void syncNewRanksAndPace() {
        std::vector<int> hello;
        RunControl gate;
        std::vector<double> delays;
        bool tick = false;
        {
            std::lock_guard<std::mutex> lock(mutex);
            hello.swap(pending_hello_sync);
            for (const auto& p : progress) delays.push_back(p.delay_ms);
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
        for (int r : hello) {
            collector->sendControl(r, {uint32_t(wire::ControlCommand::SetAllowedStep), 0, gate.allowed_step, 0.0});
            if (delays[size_t(r)] > 0)
                collector->sendControl(r, {uint32_t(wire::ControlCommand::SetDelayMs), 0, 0, delays[size_t(r)]});
        }
        if (tick) broadcastGate(gate.allowed_step);
    }

    void monitorLoop() {
        const int64_t grace_ns = int64_t((record.scenario.run.timeout_s + 5.0) * 1e9);
        while (!monitor_stop.load()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            std::vector<ChildExit> exits;
            {
                std::lock_guard<std::mutex> plock(proc_mutex);
                exits = supervisor.reap();
            }
            syncNewRanksAndPace();
            std::lock_guard<std::mutex> lock(mutex);
            for (const auto& x : exits) {
                auto& info = record.ranks[size_t(x.rank)];
                info.exited = true;
                info.exit_code = x.exit_code;
                info.term_signal = x.signal;
                rank_gone[size_t(x.rank)] = true;
                emitSessionEvent(EventKind::ProcessExited, x.rank, x.signal ? -x.signal : x.exit_code);
                auto& p = progress[size_t(x.rank)];
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
            bool all_gone = true;
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
                    supervisor.killAll();
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
            if (all_gone) {
                bool ok = record.failure_reason.empty() && !stop_requested;
                for (size_t r = 0; r < rank_finished.size(); ++r) ok = ok && rank_finished[r];
                if (ok)
                    for (const auto& info : record.ranks) ok = ok && (!options.spawn_ranks || info.exit_code == 0);
                if (stop_requested && record.failure_reason.empty()) record.failure_reason = stop_reason;
                if (!ok && record.failure_reason.empty()) record.failure_reason = "a rank did not finish";
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
    if (m_impl->collector) m_impl->collector->stop();
    std::lock_guard<std::mutex> plock(m_impl->proc_mutex);
    m_impl->supervisor.killAll();
}

void Session::start() {
    Impl& s = *m_impl;
    const Scenario& scenario = s.options.scenario;
    validateScenario(scenario, "");
    const int world = s.world;
    s.record.scenario = scenario;
    s.record.ranks.resize(size_t(world));
    for (int r = 0; r < world; ++r) s.record.ranks[size_t(r)].rank = r;
    s.progress.resize(size_t(world));
    for (int r = 0; r < world; ++r) s.progress[size_t(r)].rank = r;
    s.rank_finished.assign(size_t(world), false);
    s.rank_gone.assign(size_t(world), false);
    s.fault_fired.assign(scenario.faults.size(), false);
    s.record.t_start_ns = monotonicNowNs();

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
    s.collector = std::make_unique<TelemetryCollector>(s.options.listen_host, 0, s);
    s.collector->start();
    auto put = [&](const std::string& key, const std::string& value) {
        s.store->set(key, std::vector<uint8_t>(value.begin(), value.end()));
    };
    put("dtlab/scenario", scenarioToJson(scenario));
    put("dtlab/telemetry", s.options.listen_host + ":" + std::to_string(s.collector->port()));
    put("dtlab/world", std::to_string(world));
    if (!s.options.params_out_dir.empty()) put("dtlab/params_out", s.options.params_out_dir);

    if (s.options.spawn_ranks) {
        const std::string join = storeAddress();
        const std::map<std::string, std::string> env = {{"OPENBLAS_NUM_THREADS", "1"}, {"OMP_NUM_THREADS", "1"}};
        std::lock_guard<std::mutex> plock(s.proc_mutex);
        for (int r = 0; r < world; ++r) {
            const pid_t pid = s.supervisor.spawn(r, {s.options.worker_executable, "worker", "--rank", std::to_string(r),
                                                     "--world", std::to_string(world), "--join", join},
                                                 env);
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
    std::lock_guard<std::mutex> plock(m_impl->proc_mutex);
    m_impl->supervisor.killAll();
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
