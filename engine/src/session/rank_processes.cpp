// rank_processes.cpp: the rank processes of a run: start, signal, kill, reap.
//
// Gloo runs: the supervisor forks `dtrun worker --rank R --world N --join
// HOST:PORT` per rank (PR_SET_PDEATHSIG = SIGKILL, so no orphans). Backend
// "mpi": one child, `mpirun ... -np N dtrun worker --join HOST:PORT`, starts
// every rank; their pids arrive in their telemetry hello and the Session
// signals them by pid. Joined ranks (started by mpirun or torchrun elsewhere)
// are not our children: a kill goes over their authenticated control channel.
// onRankExited turns a reaped child into the rank's state and, for a run that
// is not fault tolerant, the run's failure reason.
#include "dtlab/errors.hpp"
#include "session/session_impl.hpp"

#include "comm/mpi_communicator.hpp"

#include <algorithm>
#include <csignal>
#include <cstring>

#include <unistd.h>

namespace dt {

// The fault list keeps each signal's number as the FaultInjected value.
static_assert(faultActionTraits(FaultAction::Kill).event_code == SIGKILL);
static_assert(faultActionTraits(FaultAction::Hang).event_code == SIGSTOP);
static_assert(faultActionTraits(FaultAction::Resume).event_code == SIGCONT);

bool Session::Impl::signalRankProcess(int rank, int signo) {
    if (supervisor.signal(rank, signo))
        return true;
    if (rank < 0 || rank >= world)
        return false;
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

// SIGKILL every process of the run: under mpirun the ranks first (they also
// die with mpirun: PR_SET_PDEATHSIG), then mpirun.
void Session::Impl::killEverything() {
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

void Session::Impl::signalRank(int rank, FaultAction action) {
    const int signo = faultActionTraits(action).event_code; // SIGKILL, SIGSTOP or SIGCONT
    if (action != FaultAction::Resume)
        holdBeforeSignal(rank, signo);
    bool sent = false;
    {
        std::lock_guard<std::mutex> plock(proc_mutex);
        sent = signalRankProcess(rank, signo);
    }
    if (!sent)
        return;
    std::lock_guard<std::mutex> lock(mutex);
    if (action == FaultAction::Kill)
        sigkill_sent[size_t(rank)] = true;
    emitSessionEvent(EventKind::FaultInjected, rank, signo);
    const char* what = action == FaultAction::Kill   ? "SIGKILL sent to"
                       : action == FaultAction::Hang ? "SIGSTOP sent to"
                                                     : "SIGCONT sent to";
    log(LogLevel::Warning, std::string(what) + " rank " + std::to_string(rank));
    if (action == FaultAction::Hang)
        progress[size_t(rank)].state = RankState::Hung;
    if (action == FaultAction::Resume)
        progress[size_t(rank)].state = RankState::Running;
}

// The environment of a rank the Session starts: one BLAS thread, and the
// token in the environment (not on the command line, which ps shows).
std::map<std::string, std::string> Session::Impl::rankEnvironment() const {
    return {{"OPENBLAS_NUM_THREADS", "1"}, {"OMP_NUM_THREADS", "1"}, {"DTLAB_TOKEN", options.token}};
}

std::string Session::Impl::storeAddressLocked() const {
    return options.listen_host + ":" + std::to_string(store->port());
}

// Start (or restart) rank `rank` as `dtrun worker`.
pid_t Session::Impl::spawnRank(int rank, int incarnation) {
    const std::map<std::string, std::string> env = rankEnvironment();
    std::vector<std::string> argv = {options.worker_executable,
                                     "worker",
                                     "--rank",
                                     std::to_string(rank),
                                     "--world",
                                     std::to_string(world),
                                     "--join",
                                     storeAddressLocked()};
    if (incarnation > 0)
        argv.insert(argv.end(), {"--incarnation", std::to_string(incarnation)});
    return supervisor.spawn(rank, argv, env, options.rank_niceness);
}

// Backend "mpi": one mpirun starts every rank. The ranks learn rank and world
// from Open MPI's environment (launch_env.hpp).
void Session::Impl::spawnMpirun() {
    std::vector<std::string> argv = {mpirunPath()};
    if (::geteuid() == 0)
        argv.push_back("--allow-run-as-root"); // Open MPI refuses root without it
    for (const char* a : {"--oversubscribe", "--bind-to", "none", "-x", "OPENBLAS_NUM_THREADS", "-x",
                          "OMP_NUM_THREADS", "-x", "DTLAB_TOKEN", "-np"})
        argv.push_back(a);
    argv.push_back(std::to_string(world));
    for (const std::string& a :
         {options.worker_executable, std::string("worker"), std::string("--join"), storeAddressLocked()})
        argv.push_back(a);
    supervisor.spawn(kMpirunChild, argv, rankEnvironment(), options.rank_niceness);
}

// A reaped child: its exit recorded, its state set, and (not fault tolerant)
// the run's failure noted. A fault-tolerant replica that died goes to
// onReplicaDied, which may restart it.
void Session::Impl::onRankExited(const ChildExit& x) {
    if (x.rank == kMpirunChild) {
        onMpirunExited(x);
        return;
    }
    auto& info = record.ranks[size_t(x.rank)];
    info.exited = true;
    info.exit_code = x.exit_code;
    info.term_signal = x.signal;
    rank_gone[size_t(x.rank)] = true;
    waiting_at_gate[size_t(x.rank)] = false;
    emitSessionEvent(EventKind::ProcessExited, x.rank, x.signal ? -x.signal : x.exit_code);
    auto& p = progress[size_t(x.rank)];
    if (ft_enabled && x.signal == 0 && x.exit_code == kExitDiverged) {
        // Every replica holds the same weights: restarting one (or healing it
        // from a peer) would only diverge again. The job fails, saying where.
        p.state = RankState::Failed;
        noteFailure("replica " + std::to_string(x.rank) + ": " + info.error);
        return;
    }
    if (ft_enabled && !(x.exit_code == 0 && x.signal == 0 && rank_finished[size_t(x.rank)])) {
        onReplicaDied(x, info.error);
        return;
    }
    if (ft_enabled) {
        p.state = RankState::Finished;
        return;
    }
    if (x.signal == SIGKILL) {
        p.state = RankState::Killed;
        noteFailure("rank " + std::to_string(x.rank) + " was killed by SIGKILL");
    } else if (x.signal != 0) {
        p.state = RankState::Failed;
        noteFailure("rank " + std::to_string(x.rank) + " died of signal " + std::to_string(x.signal) + " (" +
                    strsignal(x.signal) + ")");
    } else if (x.exit_code == 0 && rank_finished[size_t(x.rank)]) {
        p.state = RankState::Finished;
    } else {
        p.state = RankState::Failed;
        noteFailure("rank " + std::to_string(x.rank) + " exited with code " + std::to_string(x.exit_code) +
                        (info.error.empty() ? "" : ": " + info.error),
                    lost_peer[size_t(x.rank)]);
    }
}

// mpirun ended: every rank it started is gone with it. When one MPI rank dies
// Open MPI aborts the others, which is why the MPI backend serves fixed
// dimensions only.
void Session::Impl::onMpirunExited(const ChildExit& x) {
    mpirun_exited = true;
    const bool clean = x.signal == 0 && x.exit_code == 0;
    bool all_finished = true;
    for (int r = 0; r < world; ++r) {
        all_finished = all_finished && rank_finished[size_t(r)];
        auto& info = record.ranks[size_t(r)];
        info.exited = true;
        info.exit_code = rank_finished[size_t(r)] && clean ? 0 : (x.signal ? -1 : std::max(1, x.exit_code));
        if (rank_gone[size_t(r)])
            continue;
        rank_gone[size_t(r)] = true;
        progress[size_t(r)].state = rank_finished[size_t(r)] ? RankState::Finished : RankState::Failed;
    }
    const std::string how = x.signal ? "was killed by signal " + std::to_string(x.signal)
                                     : "exited with code " + std::to_string(x.exit_code);
    log(clean ? LogLevel::Info : LogLevel::Warning, "mpirun " + how);
    if (!clean || !all_finished)
        noteFailure("mpirun " + how +
                    " before every rank finished (when one MPI rank dies, Open MPI aborts the whole job)");
}

} // namespace dt
