// fault_injector.cpp: every fault the Session injects, and their undoing.
//
// Three sources, one path (applyFault):
//   [[faults]] with when = "allreduce" or "step"  fired by maybeInjectFault, as
//                                                the rank's telemetry shows that moment;
//                                                a kill or hang finds the rank stopped
//                                                there (rank/fault_points.hpp)
//   [[faults]] with when = "time"                 fired by the monitor tick, at_s into the run
//   [chaos]                                       drawn by the monitor tick: an action from
//                                                the list, a live rank, an exponential gap
//   the GUI's buttons                             through the public Session API
// A fault with a duration (hang, slow, partition, delay_traffic,
// kill_lighthouse) schedules its undo as a Deferred action, which the monitor
// runs when it is due. Every injection is a FaultInjected event whose value is
// the action's event code (fault_actions.def), and one log line.
#include "session/session_impl.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>

namespace dt {

// The fault list keeps each control command's negated number as the FaultInjected value.
static_assert(faultActionTraits(FaultAction::Slow).event_code == -int(wire::ControlCommand::SetDelayMs));
static_assert(faultActionTraits(FaultAction::FailCollective).event_code ==
              -int(wire::ControlCommand::FailNextCollective));
static_assert(faultActionTraits(FaultAction::NanGradients).event_code ==
              -int(wire::ControlCommand::NanGradients));
static_assert(faultActionTraits(FaultAction::Partition).event_code == -int(wire::ControlCommand::Partition));
static_assert(faultActionTraits(FaultAction::DelayTraffic).event_code ==
              -int(wire::ControlCommand::TrafficDelayMs));

void Session::Impl::defer(int64_t delay_ns, std::function<void()> run) {
    deferred.push_back({monotonicNowNs() + delay_ns, std::move(run), delay_ns > 0});
}

// A scenario fault whose moment is this event (collector thread, mutex held).
// Kill and hang find the rank stopped exactly there (rank/fault_points.hpp)
// and are signalled by the monitor at once; the others go through
// applyFault from the monitor.
void Session::Impl::maybeInjectFault(const Event& e) {
    for (size_t i = 0; i < record.scenario.faults.size(); ++i) {
        const auto& f = record.scenario.faults[i];
        if (fault_fired[i] || e.rank != f.rank || e.step < f.step || f.when == FaultWhen::Time)
            continue;
        const bool at_allreduce = f.when == FaultWhen::AllReduce && e.kind == EventKind::AllReduce &&
                                  e.phase == EventPhase::WorkStarted && e.step == f.step;
        const bool at_step = f.when == FaultWhen::Step;
        if (!at_allreduce && !at_step)
            continue;
        fault_fired[i] = true;
        if (f.action != FaultAction::Kill && f.action != FaultAction::Hang) {
            log(LogLevel::Warning, std::string("scenario fault: ") + faultActionName(f.action) + " on rank " +
                                       std::to_string(f.rank) + " at step " + std::to_string(e.step));
            defer(0, [this, f] { applyFault(f); });
            continue;
        }
        // Signalled from the monitor, woken now: a hold armed at this kill
        // or hang reaches the other ranks before the signal does. The rank
        // itself waits at this moment meanwhile (rank/fault_points.hpp).
        defer(0, [this, f, step = e.step, at_allreduce] { signalScheduledFault(f, step, at_allreduce); });
        wakeMonitor();
    }
}

// A scheduled kill or hang, from the monitor (no mutex).
void Session::Impl::signalScheduledFault(const FaultConfig& f, int step, bool at_allreduce) {
    const int signo = faultActionTraits(f.action).event_code; // SIGSTOP or SIGKILL
    holdBeforeSignal(f.rank, signo);
    bool sent = false;
    {
        std::lock_guard<std::mutex> plock(proc_mutex);
        sent = signalRankProcess(f.rank, signo);
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (!sent && options.spawn_ranks)
        return;
    if (f.action == FaultAction::Hang && f.duration_s > 0)
        defer(int64_t(f.duration_s * 1e9),
              [this, rank = f.rank, incarnation = progress[size_t(f.rank)].incarnation] {
                  endHang(rank, incarnation);
              });
    if (signo == SIGKILL)
        sigkill_sent[size_t(f.rank)] = true;
    emitSessionEvent(EventKind::FaultInjected, f.rank, signo);
    const std::string what = std::string(f.action == FaultAction::Hang ? "SIGSTOP" : "SIGKILL") +
                             " to rank " + std::to_string(f.rank) + " at step " + std::to_string(step) +
                             (at_allreduce ? ", as its all-reduce started" : "");
    log(LogLevel::Warning, "scenario fault: " + what);
    if (signo == SIGSTOP) {
        progress[size_t(f.rank)].state = RankState::Hung;
        // The rank stopped itself at this moment (rank/fault_points.hpp):
        // it goes on from there once SIGCONT comes.
        defer(0, [this, rank = f.rank] {
            collector->sendControl(rank, {uint32_t(wire::ControlCommand::ReleaseFaultPoint), 0, 0, 0.0});
        });
    }
    if (!ft_enabled && first_failure_ns == 0)
        first_failure_is_hang = signo == SIGSTOP;
    if (!ft_enabled)
        noteFailure("rank " + std::to_string(f.rank) + (signo == SIGKILL ? " was killed" : " was hung") +
                    " by a scenario fault: " + what);
}

// A kill or hang is about to be sent: a hold armed at it pauses the run
// first, and the gate goes out from this thread now, so the other ranks
// have it before they can notice the death (no mutex).
void Session::Impl::holdBeforeSignal(int rank, int signo) {
    RunControl gate;
    {
        std::lock_guard<std::mutex> lock(mutex);
        if (event_holds.empty())
            return;
        Event e;
        e.t_ns = monotonicNowNs();
        e.kind = EventKind::FaultInjected;
        e.phase = EventPhase::Instant;
        e.rank = rank;
        e.value = signo;
        checkEventHolds(e); // the event itself is recorded once the signal is sent
        if (!gate_broadcast_due)
            return;
        gate_broadcast_due = false;
        gate = control;
    }
    broadcastGate(gate);
}

int Session::Impl::incarnationOf(int rank) {
    std::lock_guard<std::mutex> lock(mutex);
    return rank >= 0 && rank < world ? progress[size_t(rank)].incarnation : 0;
}

void Session::Impl::applyFault(const FaultConfig& f) {
    const int64_t duration_ns = int64_t(f.duration_s * 1e9);
    const auto later = [&](std::function<void()> undo) {
        if (duration_ns <= 0)
            return;
        std::lock_guard<std::mutex> lock(mutex);
        defer(duration_ns, std::move(undo));
    };
    const int r = f.rank;
    using wire::ControlCommand;
    switch (f.action) {
    case FaultAction::Kill:
        signalRank(r, FaultAction::Kill);
        break;
    case FaultAction::Hang:
        signalRank(r, FaultAction::Hang);
        later([this, r, incarnation = incarnationOf(r)] { endHang(r, incarnation); });
        break;
    case FaultAction::Resume:
        signalRank(r, FaultAction::Resume);
        break;
    case FaultAction::Slow:
        sendRankControl(r, ControlCommand::SetDelayMs, f.delay_ms,
                        "slowed by " + std::to_string(int(f.delay_ms)) + " ms per step");
        later([this, r] { sendRankControl(r, ControlCommand::SetDelayMs, 0.0, "back to normal speed"); });
        break;
    case FaultAction::FailCollective:
        sendRankControl(r, ControlCommand::FailNextCollective, 0.0, "its next collective will fail");
        break;
    case FaultAction::NanGradients:
        sendRankControl(r, ControlCommand::NanGradients, 0.0, "its next gradients will be NaN");
        break;
    case FaultAction::Partition:
        sendRankControl(r, ControlCommand::Partition, 1.0,
                        "partitioned from the lighthouse (heartbeats lost)");
        later([this, r] { sendRankControl(r, ControlCommand::Partition, 0.0, "partition healed"); });
        break;
    case FaultAction::DelayTraffic:
        sendRankControl(r, ControlCommand::TrafficDelayMs, f.delay_ms,
                        "traffic delayed by " + std::to_string(int(f.delay_ms)) + " ms per collective");
        later(
            [this, r] { sendRankControl(r, ControlCommand::TrafficDelayMs, 0.0, "traffic delay removed"); });
        break;
    case FaultAction::KillLighthouse:
        setLighthouseRunning(false);
        later([this] { setLighthouseRunning(true); });
        break;
    }
}

// The end of a timed hang: SIGCONT, unless the job finished while the rank
// was stopped. Then it is killed instead, as onJobDone would kill it later:
// resumed, it would find a quorum of itself alone (the others have left) and
// train on by itself, past the step every other replica ended at. Nothing
// when the stopped process is gone (killed, fenced, restarted: `incarnation`
// is the one that was stopped), so a new incarnation is never "resumed".
void Session::Impl::endHang(int rank, int incarnation) {
    bool retire = false;
    {
        std::lock_guard<std::mutex> lock(mutex);
        if (rank < 0 || rank >= world || progress[size_t(rank)].incarnation != incarnation)
            return;
        const bool hung = progress[size_t(rank)].state == RankState::Hung;
        retire = job_done && hung && options.spawn_ranks;
        if (retire)
            log(LogLevel::Warning,
                "rank " + std::to_string(rank) +
                    " was hung when the job finished: killed instead of resumed, so that it "
                    "cannot train on alone");
    }
    if (!retire) {
        signalRank(rank, FaultAction::Resume);
        return;
    }
    std::lock_guard<std::mutex> plock(proc_mutex);
    signalRankProcess(rank, SIGKILL);
    signalRankProcess(rank, SIGCONT);
}

// A fault a rank carries out itself, sent over its control channel. Undoing
// (value 0 for a lasting one) is logged but is not a FaultInjected event.
void Session::Impl::sendRankControl(int rank, wire::ControlCommand command, double value,
                                    const std::string& what) {
    if (rank < 0 || rank >= world)
        return;
    {
        std::lock_guard<std::mutex> lock(mutex);
        auto& p = progress[size_t(rank)];
        if (command == wire::ControlCommand::SetDelayMs)
            p.delay_ms = value;
        if (command == wire::ControlCommand::Partition)
            p.partitioned = value > 0;
        const bool one_shot = command == wire::ControlCommand::FailNextCollective ||
                              command == wire::ControlCommand::NanGradients;
        FaultAction action = FaultAction::Kill;
        if ((one_shot || value > 0) && faultActionFromEventCode(-int(command), action))
            emitSessionEvent(EventKind::FaultInjected, rank, faultActionTraits(action).event_code);
        log(LogLevel::Warning, "rank " + std::to_string(rank) + ": " + what);
    }
    collector->sendControl(rank, {uint32_t(command), 0, 0, value});
}

void Session::Impl::setLighthouseRunning(bool running) {
    {
        std::lock_guard<std::mutex> llock(lighthouse_mutex);
        if (!lighthouse || lighthouse->running() == running)
            return;
        if (running)
            lighthouse->start();
        else
            lighthouse->stop();
    }
    std::lock_guard<std::mutex> lock(mutex);
    emitSessionEvent(running ? EventKind::LighthouseUp : EventKind::LighthouseDown, -1, 0);
    log(LogLevel::Warning, running ? "lighthouse started again: replicas can form a quorum"
                                   : "lighthouse stopped: no replica can get a quorum until it is back");
}

// One monitor tick: due deferred actions, timed scenario faults, chaos.
void Session::Impl::runFaultInjector() {
    std::vector<std::function<void()>> due;
    std::vector<FaultConfig> faults_due;
    const int64_t now = monotonicNowNs();
    {
        std::lock_guard<std::mutex> lock(mutex);
        // A timed action (a hang's end, a slow-down's end, the lighthouse's return) counts on the
        // job's clock: while a pause or a hold freezes the job, its moment moves on with the wall.
        const int64_t tick_ns = last_injector_tick_ns == 0 ? 0 : now - last_injector_tick_ns;
        last_injector_tick_ns = now;
        if (job_frozen)
            for (Deferred& d : deferred)
                if (d.job_clock)
                    d.at_ns += tick_ns;
        for (auto it = deferred.begin(); it != deferred.end();) {
            if (it->at_ns <= now) {
                due.push_back(std::move(it->run));
                it = deferred.erase(it);
            } else {
                ++it;
            }
        }
        for (size_t i = 0; i < record.scenario.faults.size(); ++i) {
            const FaultConfig& f = record.scenario.faults[i];
            if (fault_fired[i] || f.when != FaultWhen::Time ||
                now - record.t_start_ns < int64_t(f.at_s * 1e9))
                continue;
            fault_fired[i] = true;
            faults_due.push_back(f);
            log(LogLevel::Warning,
                "scenario fault at " + std::to_string(f.at_s).substr(0, 4) +
                    " s: " + faultActionName(f.action) +
                    (f.action == FaultAction::KillLighthouse ? "" : " on rank " + std::to_string(f.rank)));
        }
        const ChaosConfig& chaos = record.scenario.chaos;
        if (chaos.enabled && !job_done && !stop_requested && now >= next_chaos_ns) {
            std::exponential_distribution<double> gap(1.0 / chaos.mean_interval_s);
            if (next_chaos_ns != 0) {
                std::vector<int> live;
                for (int r = 0; r < world; ++r)
                    if (progress[size_t(r)].state == RankState::Running)
                        live.push_back(r);
                if (!live.empty() && !chaos.actions.empty()) {
                    FaultConfig f;
                    f.action = chaos.actions[chaos_rng() % chaos.actions.size()];
                    f.rank = live[chaos_rng() % live.size()];
                    f.duration_s = f.action == FaultAction::Hang   ? chaos.hang_s
                                   : f.action == FaultAction::Slow ? chaos.slow_s
                                                                   : 1.0;
                    f.delay_ms = chaos.slow_ms;
                    faults_due.push_back(f);
                    log(LogLevel::Warning, "chaos (seed " + std::to_string(chaos.seed) +
                                               "): " + faultActionName(f.action) + " on rank " +
                                               std::to_string(f.rank));
                }
            }
            next_chaos_ns = now + int64_t(gap(chaos_rng) * 1e9);
        }
    }
    for (auto& run : due)
        run();
    for (const FaultConfig& f : faults_due)
        applyFault(f);
}

// [SECTION] Public API ---------------------------------------------------------
void Session::killRank(int rank) {
    m_impl->signalRank(rank, FaultAction::Kill);
}
void Session::hangRank(int rank) {
    m_impl->signalRank(rank, FaultAction::Hang);
}
void Session::resumeRank(int rank) {
    m_impl->signalRank(rank, FaultAction::Resume);
}

void Session::slowRank(int rank, double delay_ms) {
    if (rank < 0 || rank >= m_impl->world)
        return;
    {
        std::lock_guard<std::mutex> lock(m_impl->mutex);
        m_impl->progress[size_t(rank)].delay_ms = delay_ms;
        m_impl->log(LogLevel::Warning, "rank " + std::to_string(rank) + " slowed by " +
                                           std::to_string(int(delay_ms)) + " ms per step");
    }
    m_impl->collector->sendControl(rank, {uint32_t(wire::ControlCommand::SetDelayMs), 0, 0, delay_ms});
}

void Session::setLink(int rank, double bandwidth_mbit_s, double latency_ms) {
    const int first = rank < 0 ? 0 : rank, last = rank < 0 ? m_impl->world - 1 : rank;
    if (first < 0 || last >= m_impl->world)
        return;
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
        if (bandwidth_mbit_s > 0)
            std::snprintf(text, sizeof text, "%s: link %.0f Mbit/s, %.0f ms latency", who.c_str(),
                          bandwidth_mbit_s, latency_ms);
        else
            std::snprintf(text, sizeof text, "%s: link uncapped, %.0f ms latency", who.c_str(), latency_ms);
        m_impl->log(LogLevel::Info, text);
    }
    for (int r = first; r <= last; ++r)
        m_impl->collector->sendControl(
            r, {uint32_t(wire::ControlCommand::SetLink), 0, int64_t(bandwidth_mbit_s * 1000.0), latency_ms});
}

void Session::failNextCollective(int rank) {
    FaultConfig f;
    f.action = FaultAction::FailCollective;
    f.rank = rank;
    if (m_impl->quorum)
        m_impl->applyFault(f);
}

void Session::nanGradients(int rank) {
    FaultConfig f;
    f.action = FaultAction::NanGradients;
    f.rank = rank;
    if (m_impl->quorum)
        m_impl->applyFault(f);
}

void Session::partitionRank(int rank, bool on) {
    if (!m_impl->quorum)
        return;
    m_impl->sendRankControl(rank, wire::ControlCommand::Partition, on ? 1.0 : 0.0,
                            on ? "partitioned from the lighthouse (heartbeats lost)" : "partition healed");
}

void Session::delayTraffic(int rank, double delay_ms) {
    m_impl->sendRankControl(rank, wire::ControlCommand::TrafficDelayMs, delay_ms,
                            delay_ms > 0
                                ? "traffic delayed by " + std::to_string(int(delay_ms)) + " ms per collective"
                                : "traffic delay removed");
}

void Session::killLighthouse() {
    m_impl->setLighthouseRunning(false);
}
void Session::startLighthouse() {
    m_impl->setLighthouseRunning(true);
}

} // namespace dt
