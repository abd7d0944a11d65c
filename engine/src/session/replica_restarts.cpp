// replica_restarts.cpp: the Session's part in fault tolerance ([fault_tolerance]).
//
// - The lighthouse: unless the scenario names an external one, the Session
//   runs the quorum server as a thread, publishes its address in the store
//   (dtlab/lighthouse), and turns each new quorum and each lost member into an
//   event and a log line.
// - A replica group is the failure domain: when one of its ranks dies, the
//   Session kills the group's other ranks (zero1/zero2/fsdp groups of
//   ftGroupSize ranks), and each is restarted as below; the new incarnation
//   of the group rebuilds its own Gloo groups and heals shard by shard.
// - A replica whose process died before it finished is restarted per
//   `restart`: "auto" after restart_delay_ms, "manual" when the GUI asks,
//   "never" not at all. A restart is a new incarnation (`dtrun worker
//   --incarnation K`) that heals from a live peer.
// - The job is done when one replica committed every step: the others are
//   told to leave (JobFinished), and killed if they have not left after the
//   collective timeout + 5 s (a stopped one cannot hear it).
#include "session/session_impl.hpp"

#include "dtlab/errors.hpp"
#include "dtlab/swarm_layout.hpp"

#include <algorithm>
#include <csignal>
#include <cstring>

namespace dt {

void Session::Impl::hostLighthouse() {
    const FaultToleranceConfig& ftc = record.scenario.fault_tolerance;
    ft::LighthouseOptions lo;
    lo.host = options.listen_host;
    lo.min_replicas = ftc.min_replicas;
    lo.join_timeout_ms = int64_t(ftc.join_timeout_ms);
    lo.heartbeat_timeout_ms = int64_t(ftc.heartbeat_timeout_ms);
    lo.lost_on_close = ftc.detection != "heartbeat";
    lo.token = options.token;
    lighthouse = std::make_unique<ft::LighthouseServer>(lo);
    lighthouse->onRefused([this](const std::string& why) {
        std::lock_guard<std::mutex> lock(mutex);
        log(LogLevel::Warning, "lighthouse: " + why);
    });
    lighthouse->onQuorum([this](const ft::Quorum& quorum, const ft::QuorumDecision& decision) {
        std::lock_guard<std::mutex> lock(mutex);
        // The fast path hands out the same quorum every step: only a new id is news.
        if (quorum.quorum_id == last_quorum_id)
            return;
        last_quorum_id = quorum.quorum_id;
        Event e;
        e.t_ns = monotonicNowNs();
        e.kind = EventKind::QuorumFormed;
        e.phase = EventPhase::Instant;
        e.value = double(quorum.quorum_id);
        e.group_size = uint16_t(quorum.members.size());
        std::string members;
        for (const auto& m : quorum.members) {
            if (m.replica >= 0 && m.replica < 64)
                e.seq |= uint64_t(1) << m.replica;
            e.bytes = std::max<int64_t>(e.bytes, m.step);
            members += (members.empty() ? "" : ", ") + m.id() + "@" + std::to_string(m.step);
        }
        appendEvent(e);
        log(LogLevel::Info, "lighthouse: quorum " + std::to_string(quorum.quorum_id) + " = {" + members +
                                "}: " + decision.reason);
        const int G = ftGroupSize(record.scenario);
        for (int replica : decision.fenced)
            if (replica * G < world)
                defer(0, [this, replica, pid = progress[size_t(replica * G)].pid] {
                    fenceReplica(replica, pid);
                });
    });
    lighthouse->onMemberLost([this](const ft::QuorumMember& member, const std::string& why) {
        std::lock_guard<std::mutex> lock(mutex);
        // value: 0 its connection closed, 1 its heartbeat timed out, 2 a new incarnation replaced it
        // before either (detection by heartbeat, a quick restart).
        const int how = why.find("heartbeat") != std::string::npos  ? 1
                        : why.find("replaced") != std::string::npos ? 2
                                                                    : 0;
        // The lighthouse's member is the group's rank 0 (the one that talks to it).
        const int G = ftGroupSize(record.scenario);
        emitSessionEvent(EventKind::ReplicaLost, member.replica * G, how);
        log(LogLevel::Warning,
            "lighthouse: replica " + std::string(G > 1 ? "group " : "") + member.id() + " lost: " + why);
    });
    try {
        lighthouse->start();
    } catch (const std::exception& e) {
        throw UsageError(std::string("cannot start the lighthouse: ") + e.what());
    }
}

Session::Impl::RestartPolicy Session::Impl::restartPolicy() const {
    const Scenario& s = record.scenario;
    if (swarm)
        return {s.swarm.restart, s.swarm.restart_delay_ms, s.fault_tolerance.max_restarts_per_minute,
                "[swarm]"};
    return {s.fault_tolerance.restart, s.fault_tolerance.restart_delay_ms,
            s.fault_tolerance.max_restarts_per_minute, "[fault_tolerance]"};
}

// "replica 2", or "rank 3 (replica group 1)" when groups have several ranks,
// or "server 1 of stage 0 (rank 3)" in a swarm.
std::string Session::Impl::replicaName(int rank) const {
    if (swarm) {
        const SwarmLayout layout = SwarmLayout::of(record.scenario);
        return layout.isTrainer(rank)
                   ? "trainer " + std::to_string(rank)
                   : "server " + std::to_string(layout.serverIndexOf(rank)) + " of stage " +
                         std::to_string(layout.stageOf(rank)) + " (rank " + std::to_string(rank) + ")";
    }
    const int G = ftGroupSize(record.scenario);
    return G == 1 ? "replica " + std::to_string(rank)
                  : "rank " + std::to_string(rank) + " (replica group " + std::to_string(rank / G) + ")";
}

// A replica's process ended before it finished.
void Session::Impl::onReplicaDied(const ChildExit& x, const std::string& error) {
    auto& p = progress[size_t(x.rank)];
    const std::string how = x.signal == SIGKILL ? "was killed (SIGKILL)"
                            : x.signal != 0     ? std::string("died of signal ") + strsignal(x.signal)
                                                : "exited with code " + std::to_string(x.exit_code) +
                                                  (error.empty() ? "" : ": " + error);
    p.state = x.signal == SIGKILL ? RankState::Killed : RankState::Failed;
    const RestartPolicy ft = restartPolicy();
    // No restarts once the job is done or the Session stops, nor in a swarm
    // whose run already failed (a trainer died: the servers are being stopped).
    if (job_done || stop_requested || (swarm && !record.failure_reason.empty())) {
        restart_at_ns[size_t(x.rank)] = 0;
        rank_gone[size_t(x.rank)] = true;
        return;
    }
    auto& recent = recent_restarts_ns[size_t(x.rank)];
    const int64_t now = monotonicNowNs();
    while (!recent.empty() && now - recent.front() > 60'000'000'000LL)
        recent.pop_front();
    if (swarm && store && SwarmLayout::of(record.scenario).isServer(x.rank))
        // Its registration goes (swarm.hpp): trainers stop calling it, its
        // stage's next DiLoCo round does not wait for it.
        store->set(swarmRegistrationKey(x.rank), "");
    if (swarm && SwarmLayout::of(record.scenario).isTrainer(x.rank)) {
        // A trainer owns its data and its step count: dtlab restarts servers only.
        restart_at_ns[size_t(x.rank)] = 0;
        rank_gone[size_t(x.rank)] = true;
        noteFailure(
            replicaName(x.rank) + " " + how +
            " (a swarm restarts its servers, not its trainers: a trainer owns its data and its steps)");
        return;
    }
    if (ft.mode == "auto" && int(recent.size()) >= ft.max_per_minute) {
        // A kill storm: restarting again would only feed it. The job goes on
        // with the other replicas, or fails saying why.
        const std::string why = replicaName(x.rank) + " " + how + " after " + std::to_string(recent.size()) +
                                " restarts in the last minute: its restart budget ([fault_tolerance] "
                                "max_restarts_per_minute = " +
                                std::to_string(ft.max_per_minute) + ") is spent, so it stays down";
        restart_at_ns[size_t(x.rank)] = 0;
        rank_gone[size_t(x.rank)] = true;
        restart_budget_note += "; " + why;
        log(LogLevel::Error, why);
    } else if (ft.mode == "auto") {
        recent.push_back(now);
        restart_at_ns[size_t(x.rank)] = now + int64_t(ft.delay_ms * 1e6);
        p.state = RankState::Restarting;
        rank_gone[size_t(x.rank)] = false;
        log(LogLevel::Warning, replicaName(x.rank) + " " + how + "; restarting it in " +
                                   std::to_string(int(ft.delay_ms)) + " ms");
    } else if (ft.mode == "manual") {
        rank_gone[size_t(x.rank)] = false; // until restarted or the job ends
        log(LogLevel::Warning, replicaName(x.rank) + " " + how + "; press Restart to start it again");
    } else {
        log(LogLevel::Warning, replicaName(x.rank) + " " + how + " (" + ft.table + " restart = \"never\")");
    }
    killRestOfGroup(x.rank);
}

// The group's other ranks go down with it (one failure domain): a rank cannot
// go on without its shard peers, and the restarted group starts together.
void Session::Impl::killRestOfGroup(int dead_rank) {
    const int G = ftGroupSize(record.scenario);
    if (G == 1)
        return;
    const int first = dead_rank / G * G;
    std::vector<int> peers;
    {
        std::lock_guard<std::mutex> plock(proc_mutex);
        for (int r = first; r < first + G; ++r)
            if (r != dead_rank && supervisor.pidOf(r) != 0 && !rank_finished[size_t(r)]) {
                supervisor.signal(r, SIGKILL);
                supervisor.signal(r, SIGCONT);
                peers.push_back(r);
            }
    }
    if (peers.empty())
        return;
    std::string list;
    for (int r : peers)
        list += (list.empty() ? "" : ", ") + std::to_string(r);
    log(LogLevel::Warning, "replica group " + std::to_string(dead_rank / G) + " goes down with rank " +
                               std::to_string(dead_rank) + ": killing rank" +
                               (peers.size() > 1 ? "s " : " ") + list + " (one failure domain)");
}

// Some replica committed every step: the others are told to leave; a stopped
// (SIGSTOP) one cannot hear it and is killed later. `quorum_id`: the quorum of
// the finisher's last step; a replica in it still commits that step.
void Session::Impl::onJobDone(int64_t quorum_id) {
    job_done = true;
    job_done_ns = monotonicNowNs();
    log(LogLevel::Info, swarm ? "every trainer finished its steps: the job is done; the servers leave"
                              : "a replica committed every step: the job is done; the others leave");
    for (int r = 0; r < world; ++r) {
        restart_at_ns[size_t(r)] = 0;
        if (!rank_finished[size_t(r)])
            defer(0, [this, r, quorum_id] {
                collector->sendControl(r, {uint32_t(wire::ControlCommand::JobFinished), 0, quorum_id, 0.0});
            });
    }
    // A swarm's servers take a final DiLoCo round first: a leader's wait for
    // the others, then the followers' wait for its result.
    const double wait_s = swarm ? 2 * record.scenario.swarm.join_timeout_ms / 1000.0 + 10.0
                                : record.scenario.fault_tolerance.collective_timeout_ms / 1000.0 + 5.0;
    defer(int64_t(wait_s * 1e9), [this] {
        std::vector<int> late;
        {
            std::lock_guard<std::mutex> lock(mutex);
            for (int r = 0; r < world; ++r)
                if (!rank_gone[size_t(r)] && !rank_finished[size_t(r)])
                    late.push_back(r);
            if (!late.empty())
                log(LogLevel::Warning, std::to_string(late.size()) +
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
        if (supervisor.pidOf(r) == 0 && !rank_finished[size_t(r)])
            rank_gone[size_t(r)] = true;
}

// One monitor tick: start the replicas whose restart time has come.
void Session::Impl::restartDueReplicas() {
    std::vector<int> restarts;
    const int64_t now = monotonicNowNs();
    {
        std::lock_guard<std::mutex> lock(mutex);
        for (int r = 0; r < world; ++r) {
            // A paused job's clock stands still (run_gate.cpp), except for a Restart a person asked for.
            const bool due = restart_at_ns[size_t(r)] != 0 && restart_at_ns[size_t(r)] <= now &&
                             (!restarts_frozen || restart_asked[size_t(r)]);
            if (due && !stop_requested) {
                restart_at_ns[size_t(r)] = 0;
                restart_asked[size_t(r)] = false;
                restarts.push_back(r);
            }
        }
    }
    for (int r : restarts) {
        int incarnation = 0;
        pid_t pid = 0;
        {
            std::lock_guard<std::mutex> lock(mutex);
            incarnation = ++progress[size_t(r)].incarnation;
        }
        {
            std::lock_guard<std::mutex> plock(proc_mutex);
            pid = spawnRank(r, incarnation);
        }
        std::lock_guard<std::mutex> lock(mutex);
        auto& p = progress[size_t(r)];
        p.pid = pid;
        p.state = RankState::Starting;
        p.process_committed = false;
        p.delay_ms = 0;
        p.partitioned = false;
        record.ranks[size_t(r)].pid = pid;
        record.ranks[size_t(r)].exited = false;
        rank_gone[size_t(r)] = false;
        rank_finished[size_t(r)] = false;
        telemetry_closed[size_t(r)] = false;
        emitSessionEvent(EventKind::RankRestarted, r, incarnation);
        log(LogLevel::Info, replicaName(r) + " restarted (incarnation " + std::to_string(incarnation) +
                                ", pid " + std::to_string(pid) + ")");
    }
}

// The lighthouse's fresh-start guard (lighthouse.hpp, rule 5b) needs what only
// the supervisor knows: which replicas are alive and hold committed steps,
// even while the lighthouse cannot hear them, and which of those are stopped
// (SIGSTOP) or partitioned. A replica group counts by its rank 0, the member
// that talks to the lighthouse. No mutex.
void Session::Impl::tellLighthouseAliveHolders() {
    if (swarm)
        return;
    std::vector<ft::AliveHolder> holders;
    {
        std::lock_guard<std::mutex> lock(mutex);
        const int G = ftGroupSize(record.scenario);
        for (int first = 0; first < world; first += G)
            if (holdsCommittedSteps(first))
                holders.push_back({first / G, progress[size_t(first)].state == RankState::Hung ||
                                                  progress[size_t(first)].partitioned});
    }
    std::lock_guard<std::mutex> llock(lighthouse_mutex);
    if (lighthouse)
        lighthouse->setAliveHolders(std::move(holders));
}

// A live process that committed a step (or healed to one) in its current
// incarnation. Mutex held.
bool Session::Impl::holdsCommittedSteps(int rank) const {
    const RankProgress& p = progress[size_t(rank)];
    const bool dead = p.state == RankState::Killed || p.state == RankState::Failed ||
                      p.state == RankState::Restarting || p.state == RankState::Finished;
    return p.pid != 0 && !dead && !rank_gone[size_t(rank)] && !rank_finished[size_t(rank)] &&
           p.process_committed;
}

// A fresh start went ahead without this replica group, which is alive with
// committed steps the new quorum does not have (lighthouse.hpp, rule 5b): it
// is killed, as a supervisor fences a member that lost its lease, and then
// restarted by the usual rule (if its restart policy allows) to heal from the
// job. `pid`: the group's rank 0 when the quorum was issued; a process that
// has died or been replaced since is left alone. No mutex.
void Session::Impl::fenceReplica(int replica, int pid) {
    std::lock_guard<std::mutex> lock(mutex);
    const int G = ftGroupSize(record.scenario);
    const int first = replica * G;
    if (first >= world || progress[size_t(first)].pid != pid || !holdsCommittedSteps(first))
        return;
    {
        std::lock_guard<std::mutex> plock(proc_mutex); // (allowed with mutex held)
        for (int r = first; r < first + G && r < world; ++r) {
            if (signalRankProcess(r, SIGKILL))
                sigkill_sent[size_t(r)] = true;
            signalRankProcess(r, SIGCONT);
        }
    }
    log(LogLevel::Warning, replicaName(first) +
                               " fenced: it is alive with committed steps, and the replicas holding none "
                               "started over without it after the join timeout, so its newer steps cannot "
                               "come back beside theirs; it is killed (SIGKILL)");
}

// [SECTION] Public API ---------------------------------------------------------
bool Session::faultTolerant() const {
    return m_impl->ft_enabled;
}

void Session::restartRank(int rank) {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    if (!m_impl->ft_enabled || rank < 0 || rank >= m_impl->world || m_impl->job_done)
        return;
    if (m_impl->swarm && SwarmLayout::of(m_impl->record.scenario).isTrainer(rank))
        return; // trainers are not restarted
    // A replica group restarts whole: every dead rank of the rank's group.
    const int G = ftGroupSize(m_impl->record.scenario);
    for (int r = rank / G * G; r < rank / G * G + G; ++r) {
        const RankState state = m_impl->progress[size_t(r)].state;
        if (state == RankState::Killed || state == RankState::Failed || state == RankState::Restarting) {
            m_impl->restart_at_ns[size_t(r)] = monotonicNowNs();
            m_impl->restart_asked[size_t(r)] = true;
        }
    }
}

bool Session::lighthouseStatus(ft::LighthouseStatus& out) const {
    std::lock_guard<std::mutex> lock(m_impl->lighthouse_mutex);
    if (!m_impl->lighthouse)
        return false;
    out = m_impl->lighthouse->status();
    return true;
}

} // namespace dt
