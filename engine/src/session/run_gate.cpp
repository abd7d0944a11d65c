// run_gate.cpp: pause, step and pace, through step gates, and holds at events.
//
// The Session sends SetAllowedStep(k) to every rank; a rank starts step s
// only while s <= k (rank side: step_gate.hpp), and its wait is a `paused`
// span. Run sends a huge k; Pause sends the step in progress, so ranks finish
// it and wait; Step adds one; Pace adds one at a capped rate, once every rank
// still alive has reached the gate (held: the job's timeouts stand still
// meanwhile; pending restarts from a pause's order on). A rank that says hello later (a restarted
// replica, a late joiner) is greeted with the current gate, its slow-down and
// its modelled link.
//
// A hold at an event (armEventHold) is tested against each event as it is
// recorded (appendEvent, under the lock): a match sets the gate to the
// furthest step any rank has begun, in Paused mode (retries wait), and
// wakes the monitor, which sends it within a millisecond instead of after a
// GUI frame. Ranks say GateWait when they begin to wait, so the Session
// knows a rank held before a retried step is held (its committed step alone
// would not show it).
#include "session/session_impl.hpp"

#include <algorithm>
#include <climits>

namespace dt {

// The gate as one control message: RunControl::effectiveGate() (the
// pause/pace gate, or the hold ahead when that comes first) and whether a
// retried step waits too (RunControl::holdsRetries).
static wire::ControlMessage gateMessage(const RunControl& control, uint32_t order) {
    return {uint32_t(wire::ControlCommand::SetAllowedStep), control.holdsRetries() ? 1 : 0,
            control.effectiveGate(), double(order)};
}

// Tell every connected rank the gate. A rank that waited and that this gate
// lets through is no longer counted as waiting (the rank's own rule,
// step_gate.hpp), so a held picture is never judged from a wait that ended
// before its Paused span arrived.
void Session::Impl::broadcastGate(const RunControl& control) {
    uint32_t order = 0;
    {
        std::lock_guard<std::mutex> lock(mutex);
        order = ++gate_orders;
        const int64_t gate = control.effectiveGate();
        for (size_t r = 0; r < waiting_at_gate.size(); ++r) {
            const int64_t s = waiting_step[r];
            if (waiting_at_gate[r] &&
                (s < gate || (s == gate && !(waiting_retry[r] && control.holdsRetries()))))
                waiting_at_gate[r] = false;
        }
    }
    const wire::ControlMessage message = gateMessage(control, order);
    for (int r = 0; r < world; ++r)
        collector->sendControl(r, message);
}

void Session::Impl::wakeMonitor() {
    {
        std::lock_guard<std::mutex> wake(monitor_wake_mutex);
        monitor_woken = true;
    }
    monitor_wake.notify_one();
}

// An armed hold that matches `e` pauses the run here and now (mutex held):
// no rank starts a step past the furthest one begun, and a retried step
// waits (holdsRetries). The monitor, woken at once, tells the ranks; the
// hit waits for takeEventHoldHits (the app's Next restores `before`).
void Session::Impl::checkEventHolds(const Event& e) {
    if (event_holds.empty() || finished)
        return;
    for (auto it = event_holds.begin(); it != event_holds.end();) {
        if (!it->second.matches || !it->second.matches(e)) {
            ++it;
            continue;
        }
        EventHoldHit hit{it->first, it->second.what, e, control, 0};
        hit.before.pause_before_step = INT64_MAX; // what Next restores: the run as it went before the hold
        control.allowed_step = std::min<int64_t>(control.allowed_step, max_started_step);
        control.mode = RunMode::Paused;
        control.pace_steps_per_s = 0.0;
        restarts_wait_from_order = true;
        hit.held_at = control.allowed_step;
        log(LogLevel::Info, "held at the moment " + it->second.what + ": no rank starts a step after " +
                                std::to_string(hit.held_at) + " (ranks finish what they are in)");
        event_hold_hits.push_back(std::move(hit));
        it = event_holds.erase(it);
        control.pause_before_step = earliestPauseBefore();
        gate_broadcast_due = true;
        wakeMonitor();
    }
}

// The earliest before_step of the armed holds (mutex held).
int64_t Session::Impl::earliestPauseBefore() const {
    int64_t before = INT64_MAX;
    for (const auto& [slot, hold] : event_holds)
        before = std::min(before, hold.before_step);
    return before;
}

void Session::Impl::setGate(RunMode mode, int64_t allowed_step, double pace, bool pause_ordered) {
    RunControl gate;
    {
        std::lock_guard<std::mutex> lock(mutex);
        restarts_wait_from_order = pause_ordered;
        control.mode = mode;
        control.allowed_step = allowed_step;
        control.pace_steps_per_s = pace;
        last_pace_tick_ns = monotonicNowNs();
        gate = control;
    }
    broadcastGate(gate);
}

// One monitor tick: ranks that said hello since the last tick get the gate,
// delay and link (sent from the monitor thread, never from a reader thread);
// a paced run lets every rank through one more step when its time has come.
void Session::Impl::syncNewRanksAndPace() {
    std::vector<int> hello;
    RunControl gate;
    uint32_t gate_order = 0; // the number of the last gate order sent: a newcomer's gate is that one
    std::vector<double> delays;
    std::vector<std::pair<double, double>> links; // (mbit/s, latency ms) per rank
    bool tick = false;
    bool done = false;
    bool held = false;
    bool held_changed = false;
    bool frozen_changed = false;
    bool frozen_now = false;
    bool broadcast = false;
    {
        std::lock_guard<std::mutex> lock(mutex);
        broadcast = gate_broadcast_due;
        gate_broadcast_due = false;
        hello.swap(pending_hello_sync);
        for (const auto& p : progress)
            delays.push_back(p.delay_ms);
        for (const auto& p : progress)
            links.emplace_back(p.link_mbit_s, p.link_latency_ms);
        const int64_t now = monotonicNowNs();
        const int64_t stepping_min = minSteppingCompletedStep();
        // Held: every stepping rank completed the steps the gate allows, or
        // says it waits at its gate (a retried step, held by holdsRetries).
        const bool all_at_gate = control.mode != RunMode::Run && stepping_min != INT_MAX &&
                                 (stepping_min >= control.allowed_step || everySteppingRankWaits());
        if (control.mode == RunMode::Paced && control.pace_steps_per_s > 0 &&
            now - last_pace_tick_ns >= int64_t(1e9 / control.pace_steps_per_s) &&
            (stepping_min == INT_MAX || stepping_min >= control.allowed_step)) {
            control.allowed_step += 1;
            last_pace_tick_ns = now;
            tick = true;
        }
        held = all_at_gate && !tick;
        held_changed = held != job_held;
        job_held = held;
        // A paused job's clock stands still (JobHeld: the stopwatch leaves
        // the time out; the lighthouse's heartbeat ages stop) once every rank
        // is held. (A paced run is held between its ticks: that is a slow
        // clock, not a pause.)
        const bool frozen = held && control.mode == RunMode::Paused;
        if (frozen != job_frozen) { // the recording says when the job's clock stood still
            Event e;
            e.t_ns = now;
            e.kind = EventKind::JobHeld;
            e.phase = EventPhase::Instant;
            e.value = frozen ? 1.0 : 0.0;
            appendEvent(e);
        }
        frozen_changed = frozen != job_frozen;
        frozen_now = frozen;
        job_frozen = frozen;
        // Pending restarts (a replica or swarm server that died just before
        // a pause) stand still from the pause's order on, while the ranks
        // still finish their step: the room looks at the paused run before
        // it is back; its delay runs on after the resume. A step-once runs
        // them while its step runs, as a paced run does.
        const bool restarts_wait = control.mode == RunMode::Paused && (held || restarts_wait_from_order);
        if (restarts_wait && !restarts_frozen)
            restarts_frozen_since_ns = now;
        if (!restarts_wait && restarts_frozen) { // each delay stood still from the pause or its death on
            const int64_t delay_ns = int64_t(restartPolicy().delay_ms * 1e6);
            for (int64_t& at : restart_at_ns)
                if (at != 0)
                    at += now - std::max(restarts_frozen_since_ns, at - delay_ns);
        }
        restarts_frozen = restarts_wait;
        gate = control;
        gate_order = gate_orders;
        done = job_done;
    }
    if (held_changed) {
        // The job's clock stands still while held: ranks stop counting their
        // quorum timeout, the lighthouse its join timeout.
        const wire::ControlMessage message{uint32_t(wire::ControlCommand::SetJobHeld), 0, held ? 1 : 0, 0.0};
        for (int r = 0; r < world; ++r)
            collector->sendControl(r, message);
        std::lock_guard<std::mutex> lock(lighthouse_mutex);
        if (lighthouse)
            lighthouse->setJobHeld(held);
    }
    if (frozen_changed) { // paused: the lighthouse's heartbeat ages stand still too
        std::lock_guard<std::mutex> lock(lighthouse_mutex);
        if (lighthouse)
            lighthouse->setJobFrozen(frozen_now);
    }
    for (int r : hello) {
        // A replica restarted just before the job finished is not needed any more.
        if (done)
            collector->sendControl(r, {uint32_t(wire::ControlCommand::JobFinished), 0, -1, 0.0});
        collector->sendControl(r, gateMessage(gate, gate_order));
        if (held)
            collector->sendControl(r, {uint32_t(wire::ControlCommand::SetJobHeld), 0, 1, 0.0});
        if (delays[size_t(r)] > 0)
            collector->sendControl(r, {uint32_t(wire::ControlCommand::SetDelayMs), 0, 0, delays[size_t(r)]});
        const auto [mbit, latency] = links[size_t(r)];
        collector->sendControl(r,
                               {uint32_t(wire::ControlCommand::SetLink), 0, int64_t(mbit * 1000.0), latency});
    }
    if (tick || broadcast)
        broadcastGate(gate);
}

// [SECTION] Public API ---------------------------------------------------------
void Session::pause() {
    int64_t allowed = 0;
    {
        std::lock_guard<std::mutex> lock(m_impl->mutex);
        // Ranks finish the step they are in, then wait at the next gate.
        allowed = std::min<int64_t>(m_impl->control.allowed_step, m_impl->maxCompletedStep() + 1);
    }
    m_impl->setGate(RunMode::Paused, allowed, 0.0, true);
}

void Session::resume() {
    m_impl->setGate(RunMode::Run, INT64_MAX, 0.0);
}

void Session::stepOnce() {
    int64_t allowed = 0;
    {
        std::lock_guard<std::mutex> lock(m_impl->mutex);
        const int64_t current = m_impl->maxCompletedStep() + 1;
        allowed = m_impl->control.mode == RunMode::Run
                      ? current
                      : std::max<int64_t>(m_impl->control.allowed_step, current - 1) + 1;
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

void Session::holdBefore(int64_t step) {
    RunControl gate;
    {
        std::lock_guard<std::mutex> lock(m_impl->mutex);
        m_impl->control.hold_before_step = step;
        gate = m_impl->control;
    }
    m_impl->broadcastGate(gate);
}

void Session::armEventHold(const std::string& slot, EventHold hold) {
    RunControl gate;
    {
        std::lock_guard<std::mutex> lock(m_impl->mutex);
        if (hold.before_step != INT64_MAX && hold.before_step <= m_impl->max_started_step)
            hold.before_step = INT64_MAX; // a rank is past it already: no gate ahead, only the event
        m_impl->event_holds[slot] = std::move(hold);
        m_impl->control.pause_before_step = m_impl->earliestPauseBefore();
        gate = m_impl->control;
    }
    m_impl->broadcastGate(gate);
}

void Session::disarmEventHold(const std::string& slot) {
    RunControl gate;
    {
        std::lock_guard<std::mutex> lock(m_impl->mutex);
        if (m_impl->event_holds.erase(slot) == 0)
            return;
        m_impl->control.pause_before_step = m_impl->earliestPauseBefore();
        gate = m_impl->control;
    }
    m_impl->broadcastGate(gate);
}

std::vector<EventHoldHit> Session::takeEventHoldHits() {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    std::vector<EventHoldHit> hits;
    hits.swap(m_impl->event_hold_hits);
    return hits;
}

RunControl Session::runControl() const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    return m_impl->control;
}

} // namespace dt
