// rank_table.cpp: the Session's table of ranks, kept from their telemetry.
//
// Collector threads call the TelemetrySink methods: a hello records the
// rank's pid and host; events move its progress (state, completed step, loss,
// commits); an error log or a disconnect notes a failure. Every frame also
// counts as "heard from": a rank that said hello, has not finished and was not
// stopped by the Session, yet sends nothing for wire::kSilentNs, is *silent*
// (its process is stopped, or its host or the link to it is down). That is
// logged once, and again when it is heard from; it is not a failure by itself
// (a link may come back), but a failed run's reason names the silent ranks.
#include "session/session_impl.hpp"

#include "dtlab/swarm_layout.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>

namespace dt {

std::string namedRanks(const std::vector<int>& ranks) {
    std::string out = ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < ranks.size(); ++i)
        out += (i ? ", " : "") + std::to_string(ranks[i]);
    return out;
}

std::string formatSeconds(int64_t ns) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f s", double(ns) / 1e9);
    return text;
}

void Session::Impl::log(LogLevel level, const std::string& text) {
    record.logs.push_back({monotonicNowNs(), -1, level, text});
}

void Session::Impl::noteFailure(const std::string& reason, bool consequence) {
    // When rank 1 fails, rank 0 sees its Gloo connection reset at once and may
    // report first: the room must read rank 1's reason, not rank 0's.
    if (record.failure_reason.empty() || (failure_is_consequence && !consequence)) {
        record.failure_reason = reason;
        failure_is_consequence = consequence;
    }
    if (first_failure_ns == 0)
        first_failure_ns = monotonicNowNs();
}

void Session::Impl::emitSessionEvent(EventKind kind, int rank, double value) {
    Event e;
    e.t_ns = monotonicNowNs();
    e.kind = kind;
    e.phase = EventPhase::Instant;
    e.rank = rank;
    e.value = value;
    appendEvent(e);
}

void Session::Impl::appendEvent(const Event& e) {
    record.events.push_back(e);
    checkEventHolds(e);
}

// Highest step any rank has completed (-1 before the first).
int Session::Impl::maxCompletedStep() const {
    int m = -1;
    for (const auto& p : progress)
        m = std::max(m, p.step);
    return m;
}

// Every rank that takes steps and is alive says it waits at its gate (its
// GateWait seen, its wait not yet let through): the job is held.
bool Session::Impl::everySteppingRankWaits() const {
    bool any = false;
    for (size_t r = 0; r < progress.size(); ++r) {
        const RankState state = progress[r].state;
        const bool steps = takesSteps(int(r)) && (state == RankState::Running || state == RankState::Paused);
        if (rank_gone[r] || rank_finished[r] || !steps)
            continue;
        if (!waiting_at_gate[r])
            return false;
        any = true;
    }
    return any;
}

// Lowest step completed by the ranks that step on their own: alive, not
// frozen, and not a restarted replica still starting or healing (it catches up
// by joining the others' next quorum, not by stepping through the gate, so a
// pace that waited for it would wait for ever). INT_MAX when there is none.
int Session::Impl::minSteppingCompletedStep() const {
    int m = INT_MAX;
    for (size_t r = 0; r < progress.size(); ++r) {
        const RankState state = progress[r].state;
        const bool steps =
            takesSteps(int(r)) && (state == RankState::Running || state == RankState::Paused ||
                                   (state == RankState::Starting && progress[r].incarnation == 0));
        if (!rank_gone[r] && !rank_finished[r] && steps)
            m = std::min(m, progress[r].step);
    }
    return m;
}

// [SECTION] Silent ranks -----------------------------------------------------
void Session::Impl::heardFrom(int rank) {
    const int64_t now = monotonicNowNs();
    if (silent[size_t(rank)]) {
        silent[size_t(rank)] = false;
        record.logs.push_back({now, -1, LogLevel::Info,
                               "rank " + std::to_string(rank) + " is heard from again after " +
                                   formatSeconds(now - last_heard_ns[size_t(rank)]) + " of silence"});
    }
    last_heard_ns[size_t(rank)] = now;
}

void Session::Impl::checkSilentRanks(int64_t now) {
    // Ranks started by someone else (mpirun, torchrun, by hand) that never come.
    if (!options.spawn_ranks && first_failure_ns == 0 && !stop_requested && !join_timeout_reported &&
        now - record.t_start_ns > int64_t(options.join_timeout_s * 1e9)) {
        std::vector<int> missing;
        for (int r = 0; r < world; ++r)
            if (!record.ranks[size_t(r)].started)
                missing.push_back(r);
        if (!missing.empty()) {
            join_timeout_reported = true;
            noteFailure(namedRanks(missing) + " did not join within " +
                        formatSeconds(now - record.t_start_ns) + " (start them with `dtrun worker --join " +
                        options.listen_host + ":" + std::to_string(store ? store->port() : 0) +
                        "`, mpirun or torchrun)");
        }
    }
    for (int r = 0; r < world; ++r) {
        const size_t i = size_t(r);
        const RankState state = progress[i].state;
        const bool alive = state == RankState::Starting || state == RankState::Running ||
                           state == RankState::Paused || state == RankState::Healing; // not hung by us
        const bool watched =
            alive && last_heard_ns[i] != 0 && !rank_gone[i] && !rank_finished[i] && !silent[i];
        if (!watched || now - last_heard_ns[i] < wire::kSilentNs)
            continue;
        silent[i] = true;
        const std::string& host = record.ranks[i].host;
        record.logs.push_back({now, -1, LogLevel::Warning,
                               "no word from rank " + std::to_string(r) +
                                   (host.empty() ? "" : " on " + host) + " for " +
                                   formatSeconds(now - last_heard_ns[i]) +
                                   ": its process is stopped, or its host or the link to it is down"});
    }
}

// " (no word from ranks 2, 3 on hostB since 6.1 s into the run: a host or link down?)" or "".
std::string Session::Impl::silentRanksNote() const {
    std::vector<int> ranks;
    std::string hosts;
    int64_t since = 0;
    for (int r = 0; r < world; ++r) {
        if (!silent[size_t(r)])
            continue;
        ranks.push_back(r);
        const std::string& host = record.ranks[size_t(r)].host;
        if (!host.empty() && hosts.find(host) == std::string::npos)
            hosts += (hosts.empty() ? "" : ", ") + host;
        if (since == 0 || last_heard_ns[size_t(r)] < since)
            since = last_heard_ns[size_t(r)];
    }
    if (ranks.empty())
        return "";
    return " (no word from " + namedRanks(ranks) + (hosts.empty() ? "" : " on " + hosts) + " since " +
           formatSeconds(since - record.t_start_ns) + " into the run: a host or link down?)";
}

// " (ranks 2, 3 never joined)" or "": joined ranks the Session waited for in vain.
std::string Session::Impl::neverJoinedNote() const {
    if (options.spawn_ranks)
        return "";
    std::vector<int> ranks;
    for (int r = 0; r < world; ++r)
        if (!record.ranks[size_t(r)].started)
            ranks.push_back(r);
    if (ranks.empty())
        return "";
    return " (" + namedRanks(ranks) + " never joined)";
}

// [SECTION] Telemetry sink (collector threads) -------------------------------
bool Session::Impl::onHello(int rank, int pid, const std::string& host) {
    std::lock_guard<std::mutex> lock(mutex);
    if (rank < 0 || rank >= world) {
        log(LogLevel::Warning,
            "refused a rank " + std::to_string(rank) + " outside the world of " + std::to_string(world));
        return false;
    }
    auto& info = record.ranks[size_t(rank)];
    info.pid = pid;
    info.host = host;
    info.started = true;
    telemetry_closed[size_t(rank)] = false; // a new stream is open (a restarted incarnation's)
    progress[size_t(rank)].pid = pid;
    if (via_mpirun)
        rank_pids[size_t(rank)].store(pid);
    RankState& state = progress[size_t(rank)].state;
    if (state == RankState::Pending || state == RankState::Restarting)
        state = RankState::Starting;
    progress[size_t(rank)].host = host;
    heardFrom(rank);
    pending_hello_sync.push_back(rank);
    return true;
}

void Session::Impl::onEvents(int rank, const Event* events, size_t count) {
    std::lock_guard<std::mutex> lock(mutex);
    heardFrom(rank);
    auto& p = progress[size_t(rank)];
    for (size_t i = 0; i < count; ++i) {
        const Event& e = events[i];
        record.events.push_back(e);
        max_started_step = std::max<int64_t>(max_started_step, e.step);
        if (e.kind == EventKind::GateWait || e.kind == EventKind::RankStarted ||
            (e.kind == EventKind::Paused && e.phase == EventPhase::Span)) {
            waiting_at_gate[size_t(rank)] = e.kind == EventKind::GateWait;
            waiting_step[size_t(rank)] = e.step;
            waiting_retry[size_t(rank)] = e.kind == EventKind::GateWait && e.value != 0;
        }
        // A restarted replica is Healing from its start until its first commit
        // (it catches up from a live peer, it does not step on its own).
        if ((e.kind == EventKind::RankStarted || e.kind == EventKind::RankReady) &&
            p.state == RankState::Starting)
            p.state = quorum && p.incarnation > 0 ? RankState::Healing : RankState::Running;
        if (e.kind == EventKind::Step && e.phase == EventPhase::Span) {
            if (!quorum)
                p.step = e.step; // under a quorum: the committed step (below)
            p.last_step_ms = double(e.dur_ns) / 1e6;
        }
        if (e.kind == EventKind::Commit) {
            p.step = e.step;
            p.committed = e.step + 1;
            p.process_committed = true;
            if (p.state == RankState::Healing)
                p.state = RankState::Running;
        }
        if (e.kind == EventKind::Heal && e.value == 0)
            p.process_committed = true; // it holds the job's steps now, as a commit would
        if (e.kind == EventKind::Abort)
            p.aborted += 1;
        if (e.kind == EventKind::LossValue)
            p.last_loss = e.value;
        if (e.kind == EventKind::RankFailed && e.seq == 1)
            lost_peer[size_t(rank)] = true; // the worker's mark: a peer's failure, not its own
        if (e.kind == EventKind::RankFinished) {
            rank_finished[size_t(rank)] = true;
            if (ft_enabled && e.value != 0)
                rank_left[size_t(rank)] = true;
            if (quorum && e.value == 0 && !job_done)
                onJobDone(int64_t(e.seq));
            if (swarm && e.value == 0 && !job_done && everyTrainerFinished())
                onJobDone(-1);
        }
        checkEventHolds(e);
        if (!record.scenario.faults.empty())
            maybeInjectFault(e);
    }
}

void Session::Impl::onLog(int rank, LogLevel level, const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex);
    if (rank >= 0 && rank < world)
        heardFrom(rank);
    record.logs.push_back({monotonicNowNs(), rank, level, text});
    if (level == LogLevel::Error && rank >= 0 && rank < world) {
        record.ranks[size_t(rank)].error = text;
        if (!ft_enabled)
            noteFailure("rank " + std::to_string(rank) + " failed: " + text, lost_peer[size_t(rank)]);
    }
}

void Session::Impl::onDisconnect(int rank, int pid, bool clean) {
    std::lock_guard<std::mutex> lock(mutex);
    if (rank < 0 || rank >= world)
        return;
    // A restarted replica's previous incarnation can close its stream after
    // the new one said hello (restart_delay_ms = 0): that end is not the new
    // stream's.
    if (pid != progress[size_t(rank)].pid)
        return;
    telemetry_closed[size_t(rank)] = true;
    if (!options.spawn_ranks || via_mpirun) {
        // Joined ranks and mpirun's ranks are not our children: the stream's end is their end.
        rank_gone[size_t(rank)] = true;
        if (via_mpirun)
            rank_pids[size_t(rank)].store(0);
        auto& p = progress[size_t(rank)];
        p.state = rank_finished[size_t(rank)]  ? RankState::Finished
                  : sigkill_sent[size_t(rank)] ? RankState::Killed
                                               : RankState::Failed;
        if (!clean || !rank_finished[size_t(rank)])
            noteFailure("rank " + std::to_string(rank) + " disconnected before finishing",
                        lost_peer[size_t(rank)]);
    }
}

void Session::Impl::onProtocolError(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex);
    log(LogLevel::Warning, what);
}

bool Session::Impl::takesSteps(int rank) const {
    return !swarm || SwarmLayout::of(record.scenario).isTrainer(rank);
}

bool Session::Impl::everyTrainerFinished() const {
    const SwarmLayout layout = SwarmLayout::of(record.scenario);
    for (int r = 0; r < layout.trainers && r < world; ++r)
        if (!rank_finished[size_t(r)])
            return false;
    return true;
}

} // namespace dt
