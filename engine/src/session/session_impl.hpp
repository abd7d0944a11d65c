// session_impl.hpp: the state of one Session and the rooms that work on it.
//
// Session::Impl is one object (one mutex, so the rooms see one consistent
// run), but each concern lives in its own file:
//
//   session.cpp           the public API, start() and the monitor tick
//   rank_table.cpp        telemetry in -> rank progress; silent ranks; failure notes
//   rank_processes.cpp    spawn, signal, mpirun, kill-all, and what a process exit means
//   fault_injector.cpp    scenario, timed and chaos faults; deferred undo
//   replica_restarts.cpp  fault tolerance: dead replicas restarted, the job's end, the lighthouse
//   run_gate.cpp          pause, step, pace: the step gates the ranks wait at
//   session_recording.cpp the run streamed to its recording as it goes
//
// The monitor tick (session.cpp), every 20 ms:
//   1. fault injector: run deferred actions, fire timed faults and chaos
//   2. replica restarts: start the replicas whose restart time has come
//   3. rank processes: reap exited children
//   4. run gate: greet new ranks with the gate, delay and link; advance the pace
//   5. rank table: note silent ranks; rank processes: account for the exits
//   6. decide the end of the run (ok, failed, or still going)
//   7. recording: take what is new (mutex held), write it (no mutex); at the
//      end close the recording, then say finished
//
// Locks: `mutex` guards the run's state; `proc_mutex` guards the supervisor.
// Only one order is allowed: `proc_mutex` may be taken while `mutex` is held
// (a kill decided from telemetry, the end of the job), never the other way
// round (a spawn holds `proc_mutex` alone, then records the pid under `mutex`).
// `lighthouse_mutex` is never taken with `mutex` held. Methods say "(mutex
// held)" when the caller must hold `mutex`, "(no mutex)" when it must not.
#pragma once

#include "dtlab/clock.hpp"
#include "dtlab/session.hpp"
#include "session/supervisor.hpp"
#include "store/store_server.hpp"
#include "telemetry/event_sink.hpp"
#include "telemetry/telemetry_collector.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace dt {

struct Session::Impl final : TelemetrySink {
    SessionOptions options;
    int world = 0;
    // Supervised: a dead rank may be restarted and the run ends when the job
    // is done ([fault_tolerance], or a swarm's servers). quorum: the
    // lighthouse and its replicas ([fault_tolerance] only).
    bool ft_enabled = false;
    bool quorum = false;
    bool swarm = false;
    struct RestartPolicy {
        std::string mode; // "auto" | "manual" | "never"
        double delay_ms = 0;
        int max_per_minute = 0;
        std::string table; // where it was set, for messages
    };
    [[nodiscard]] RestartPolicy restartPolicy() const;
    [[nodiscard]] bool everyTrainerFinished() const; // a swarm's trainers (rank_table.cpp)
    // Whether a rank takes training steps: not a swarm's server (it serves calls).
    [[nodiscard]] bool takesSteps(int rank) const;

    mutable std::mutex mutex; // guards everything below unless said otherwise
    std::condition_variable finished_cv;
    RunRecord record;
    bool finished = false;      // the run's end is decided: its state no longer changes
    bool end_published = false; // ... and its recording is closed: Session::finished() says so
    bool stop_requested = false;
    std::string stop_reason;
    // A fault-tolerant ddp run without [run] checkpoint_dir keeps durable
    // checkpoints here (made by start(), removed by ~Session): when every
    // replica is down at once, the restarted ones resume from the newest.
    std::string temp_checkpoint_dir;
    void makeTemporaryCheckpointDir();   // start(): sets scenario.run.checkpoint_dir when it applies
    std::string default_checkpoint_note; // logged once the log exists
    static constexpr int kDefaultFtCheckpointEvery = 10;
    int64_t first_failure_ns = 0;
    bool failure_is_consequence = false; // failure_reason is a rank that lost its peer: a cause replaces it
    int64_t give_up_ns = 0;              // external ranks: stop waiting for them after this
    bool grace_logged = false;

    std::unique_ptr<store::StoreServer> store;
    std::unique_ptr<TelemetryCollector> collector;
    std::thread monitor;
    std::atomic<bool> monitor_stop{false};

    // [rank_table.cpp] ------------------------------------------------------
    std::vector<RankProgress> progress;
    std::vector<bool> rank_finished;     // said RankFinished
    std::vector<bool> rank_gone;         // exited (spawned) or disconnected (joined)
    std::vector<int64_t> last_heard_ns;  // per rank: its last telemetry frame (0 = no hello yet)
    std::vector<bool> silent;            // per rank: no frame for wire::kSilentNs (logged once)
    std::vector<bool> lost_peer;         // per rank: its RankFailed said it only lost a peer
    std::vector<int> pending_hello_sync; // said hello since the last tick: the run gate greets them
    std::vector<bool> waiting_at_gate;   // per rank: said GateWait and has not ended that wait (Paused)
    std::vector<int64_t> waiting_step;   // ... the step it waits to start
    std::vector<bool> waiting_retry;     // ... and whether that is a retry (GateWait value 1)
    int64_t max_started_step = -1;       // the furthest step any rank has an event of
    uint32_t gate_orders = 0;            // gate orders broadcast so far (each one's number: StepGate)

    bool onHello(int rank, int pid, const std::string& host) override;
    void onEvents(int rank, const Event* events, size_t count) override;
    void onLog(int rank, LogLevel level, const std::string& text) override;
    void onDisconnect(int rank, int pid, bool clean) override;
    void onProtocolError(const std::string& what) override;
    void heardFrom(int rank);             // mutex held
    void checkSilentRanks(int64_t now);   // mutex held
    std::string silentRanksNote() const;  // mutex held
    std::string neverJoinedNote() const;  // mutex held
    int maxCompletedStep() const;         // mutex held
    int minSteppingCompletedStep() const; // mutex held; over ranks that step on their own (below)
    void log(LogLevel level, const std::string& text); // mutex held
    // The run failed; the first reason is kept, except that a consequence (a
    // rank that only lost its peer) gives way to the first cause. Mutex held.
    void noteFailure(const std::string& reason, bool consequence = false);
    void emitSessionEvent(EventKind kind, int rank, double value); // mutex held
    // Every event of the run goes in here: the record, then the holds at events (mutex held).
    void appendEvent(const Event& e);
    void killRestOfGroup(int dead_rank); // mutex held
    [[nodiscard]] std::string replicaName(int rank) const;

    // [rank_processes.cpp] --------------------------------------------------
    std::mutex proc_mutex; // guards supervisor
    Supervisor supervisor;
    // Backend "mpi": the Session starts one child, mpirun, which starts the
    // ranks; their pids come from their telemetry hello (same host).
    static constexpr int kMpirunChild = -1; // the supervisor's key for mpirun
    bool via_mpirun = false;
    bool mpirun_exited = false;
    std::vector<bool> sigkill_sent;
    std::unique_ptr<std::atomic<int>[]> rank_pids; // from hello; read under proc_mutex without mutex

    bool signalRankProcess(int rank, int signo); // proc_mutex held
    void killEverything();                       // proc_mutex held
    pid_t spawnRank(int rank, int incarnation);  // proc_mutex held
    void spawnMpirun();                          // proc_mutex held (the caller records the state after)
    std::map<std::string, std::string> rankEnvironment() const;
    std::string storeAddressLocked() const;
    // Send a kill, hang or resume to a rank's process and record it (no mutex).
    void signalRank(int rank, FaultAction action);
    void onRankExited(const ChildExit& exit);   // mutex held
    void onMpirunExited(const ChildExit& exit); // mutex held

    // [fault_injector.cpp] --------------------------------------------------
    std::vector<bool> fault_fired; // per scenario fault
    struct Deferred {
        int64_t at_ns;
        std::function<void()> run; // called by the monitor without the mutex
        bool job_clock = false;    // a timed one (delay > 0): it stands still while the job is frozen
    };
    std::vector<Deferred> deferred;
    int64_t last_injector_tick_ns = 0; // runFaultInjector: the monitor tick before this one
    std::mt19937_64 chaos_rng;
    int64_t next_chaos_ns = 0;

    void defer(int64_t delay_ns, std::function<void()> run);                      // mutex held
    void maybeInjectFault(const Event& e);                                        // mutex held
    void applyFault(const FaultConfig& f);                                        // no mutex
    void signalScheduledFault(const FaultConfig& f, int step, bool at_allreduce); // no mutex
    void holdBeforeSignal(int rank, int signo);                                   // no mutex
    void endHang(int rank, int incarnation); // no mutex: resume, or kill once the job is done
    int incarnationOf(int rank);             // no mutex: takes it
    void sendRankControl(int rank, wire::ControlCommand command, double value,
                         const std::string& what); // no mutex
    void setLighthouseRunning(bool running);       // no mutex
    void runFaultInjector();                       // no mutex: one monitor tick

    // [replica_restarts.cpp] ------------------------------------------------
    std::vector<int64_t> restart_at_ns; // when to start a dead rank again; 0 = not scheduled
    std::vector<bool> restart_asked;    // a person pressed Restart: not held back by a held job
    // restart = "auto": each replica's automatic restarts of the last minute;
    // one more than max_restarts_per_minute and it stays down (a kill storm ends).
    std::vector<std::deque<int64_t>> recent_restarts_ns;
    std::vector<bool> telemetry_closed; // the rank's telemetry stream ended (Bye or EOF)
    bool join_timeout_reported = false; // spawn_ranks false: some rank never joined in time
    bool first_failure_is_hang = false; // the first failure was an injected SIGSTOP (decideEnd's grace)
    std::vector<std::pair<ChildExit, int64_t>> exits_awaiting_telemetry; // judgeExits: (exit, deadline)
    std::string restart_budget_note; // "; replica 1 stayed down: ..." for the failure reason
    std::vector<bool> rank_left;     // left because the job finished without it
    bool job_done = false;           // some replica committed every step
    int64_t job_done_ns = 0;
    int64_t last_quorum_id = -1;         // the last quorum id logged
    mutable std::mutex lighthouse_mutex; // guards lighthouse (never taken with mutex held)
    std::unique_ptr<ft::LighthouseServer> lighthouse;

    void hostLighthouse(); // start(): the Session's own lighthouse, published in the store
    void onReplicaDied(const ChildExit& x, const std::string& error); // mutex held
    void onJobDone(int64_t quorum_id);                                // mutex held
    void tellLighthouseAliveHolders();       // no mutex: one monitor tick (the fresh-start guard)
    void fenceReplica(int replica, int pid); // no mutex: kill a holder a fresh start went ahead without
    [[nodiscard]] bool holdsCommittedSteps(int rank) const; // mutex held
    void restartDueReplicas();                              // no mutex: one monitor tick

    // [run_gate.cpp] --------------------------------------------------------
    RunControl control;
    int64_t last_pace_tick_ns = 0;
    bool job_held = false;   // every rank that steps waits at the gate (told to ranks and the lighthouse)
    bool job_frozen = false; // held and Paused: the job's clock stands still (JobHeld)
    // Paused by an order (Pause, a hold at an event) or held: pending
    // restarts wait (replica_restarts.cpp); since when.
    bool restarts_wait_from_order = false;
    bool restarts_frozen = false;
    int64_t restarts_frozen_since_ns = 0;

    // Holds at events (Session::armEventHold): tested by appendEvent; a hit
    // pauses at once and wakes the monitor, which tells the ranks.
    std::map<std::string, EventHold> event_holds;
    std::vector<EventHoldHit> event_hold_hits; // since the last takeEventHoldHits
    bool gate_broadcast_due = false;           // the gate changed off the monitor thread
    std::mutex monitor_wake_mutex;             // with monitor_wake: cut the monitor's 20 ms sleep
    std::condition_variable monitor_wake;
    bool monitor_woken = false; // guarded by monitor_wake_mutex
    void wakeMonitor();
    void checkEventHolds(const Event& e);              // mutex held
    [[nodiscard]] int64_t earliestPauseBefore() const; // mutex held: RunControl::pause_before_step
    // Every rank that takes steps and is alive waits at its gate (GateWait seen). Mutex held.
    [[nodiscard]] bool everySteppingRankWaits() const;

    void broadcastGate(const RunControl& control); // no mutex
    // no mutex; pause_ordered: a Pause (pending restarts wait from now on)
    void setGate(RunMode mode, int64_t allowed_step, double pace, bool pause_ordered = false);
    void syncNewRanksAndPace(); // no mutex: one monitor tick

    // [session_recording.cpp] -----------------------------------------------
    // Only the monitor thread touches `recorder` and `recording_batch`: what
    // is new is copied under `mutex` and written to disk without it, so no
    // collector thread ever waits on the disk.
    struct RecordingBatch {
        std::vector<Event> events;
        std::vector<LogRecord> logs;
        bool ranks_changed = false;
        std::vector<RankInfo> ranks;
        RunRecord end; // the run's end state (no events), when it ended
    };
    std::unique_ptr<RecordingWriter> recorder;
    RecordingBatch recording_batch;
    size_t recorded_events = 0;           // mutex held: events handed to the recorder
    size_t recorded_logs = 0;             // mutex held
    std::vector<RankInfo> recorded_ranks; // mutex held: the ranks of the last META
    int64_t last_recording_flush_ns = 0;
    RecordingStatus recording; // mutex held

    void startRecording();                // start(): throws UsageError
    void takeRecordingBatch(bool ended);  // mutex held
    void writeRecordingBatch(bool ended); // no mutex: the monitor writes what it took

    // [session.cpp] ---------------------------------------------------------
    void monitorLoop();
    bool decideEnd(int64_t now);    // mutex held: true when the run has ended
    void noteReplicaDisagreement(); // mutex held: an ok run whose replicas differ is not ok
    void judgeExits(const std::vector<ChildExit>& exits, int64_t now); // mutex held
};

// "rank 2" or "ranks 2, 3"
std::string namedRanks(const std::vector<int>& ranks);
// "1.5 s"
std::string formatSeconds(int64_t ns);

} // namespace dt
