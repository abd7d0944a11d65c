// session.hpp: one run of a scenario, as seen from dtrun or the dtlab GUI.
//
// The Session hosts the rendezvous store (store/store_server.hpp: TCPStore's
// operations, one address, token-checked), a telemetry collector
// (TCP; every rank streams its events here), and a supervisor that starts the
// rank processes (`dtrun worker`), injects faults (SIGKILL, SIGSTOP, SIGCONT)
// and reaps them. When the Session ends, or its owner is interrupted, every
// process it started is killed: no orphans. Ranks started elsewhere (mpirun,
// torchrun) join through the store address instead of being spawned.
//
// Threading: start() returns at once; all getters are thread-safe snapshots,
// so a GUI can poll every frame without ever blocking on a rank.
#pragma once

#include "dtlab/events.hpp"
#include "dtlab/lighthouse.hpp"
#include "dtlab/recording.hpp"
#include "dtlab/run_record.hpp"
#include "dtlab/scenario.hpp"

#include <climits>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace dt {

// True for 127.0.0.0/8, ::1 and "localhost": addresses no other host reaches.
[[nodiscard]] bool isLoopbackAddress(const std::string& host);

struct SessionOptions {
    Scenario scenario;
    std::string worker_executable; // path of dtrun (spawned as `dtrun worker ...`)
    bool spawn_ranks = true;       // false: wait for ranks started by mpirun/torchrun
    // spawn_ranks false: a rank that has not joined this long after start()
    // fails the run ("ranks 2, 3 did not join within 60 s").
    double join_timeout_s = 60.0;
    // Where the store, telemetry/control and lighthouse ports listen. Loopback
    // by default; any other address needs a `token` (the Session refuses to
    // start without one), because the control channel can kill processes.
    std::string listen_host = "127.0.0.1";
    // Shared secret every rank must prove it holds (telemetry_wire.hpp's
    // handshake); ranks the Session starts get it in DTLAB_TOKEN. "" = none.
    std::string token;
    int store_port = 0;         // 0 = pick a free port
    std::string params_out_dir; // if set, each rank writes its final parameters here
    // If set, the run is recorded as it goes: streamed to RECORD_PATH.partial,
    // renamed onto RECORD_PATH when the run ends (recording.hpp). start()
    // refuses a path that is not a regular file (UsageError).
    std::string record_path;
    // Lowers every rank process's CPU priority by this much (nice), 0 = as the
    // Session's own. dtlab sets it when the ranks far outnumber the cores, so
    // that its window keeps drawing (ranksCrowdTheCores below).
    int rank_niceness = 0;
};

// More than 4 rank processes per core: a window beside them gets about one
// 1/(ranks + 1) share of a core and draws a few frames a second at best.
[[nodiscard]] bool ranksCrowdTheCores(int ranks, unsigned cores);
inline constexpr int kCrowdedRankNiceness = 5; // CFS weight 335 against the window's 1024

// Live per-rank state for progress lines and the topology view.
// Fault tolerance adds Restarting (dead, the supervisor starts it again after
// restart_delay_ms or on request) and Healing (restarted, not yet committed a
// step: waiting for a quorum and the state of a live peer).
enum class RankState : uint8_t {
    Pending,
    Starting,
    Running,
    Paused,
    Hung,
    Finished,
    Failed,
    Killed,
    Restarting,
    Healing
};
[[nodiscard]] std::string_view rankStateLabel(RankState state);

struct RankProgress {
    int rank = -1;
    int pid = 0;
    RankState state = RankState::Pending;
    int step = -1; // last completed step
    double last_loss =
        std::numeric_limits<double>::quiet_NaN(); // NaN: none yet (a pipeline's first stages never have one)
    double last_step_ms = 0.0;
    double delay_ms = 0.0;    // "slow rank" delay added to each of its steps
    double link_mbit_s = 0.0; // its modelled link ([network], setLink): 0 = no cap
    double link_latency_ms = 0.0;
    std::string host;
    // Fault tolerance only:
    int incarnation = 0;   // restarts so far
    int64_t committed = 0; // steps this replica committed (its last Commit's step + 1)
    bool process_committed =
        false;           // its current process (this incarnation) committed a step or healed to one
    int64_t aborted = 0; // steps it attempted and did not commit
    bool partitioned = false;
};

// Step gates: ranks start step s only while s <= allowed_step.
enum class RunMode : uint8_t { Run, Paused, Paced };
struct RunControl {
    RunMode mode = RunMode::Run;
    int64_t allowed_step = INT64_MAX;
    double pace_steps_per_s = 0.0; // Paced mode only
    // holdBefore(): no rank starts this step (or a later one) whatever the
    // mode, until it is lifted (INT64_MAX = no hold). The ranks' gate is
    // effectiveGate().
    int64_t hold_before_step = INT64_MAX;
    // A hold at a step count armed ahead (EventHold::before_step): no rank
    // starts this step whatever the mode, so the ranks stop there however
    // late their telemetry comes; the hold then turns into a pause.
    int64_t pause_before_step = INT64_MAX;
    [[nodiscard]] int64_t effectiveGate() const {
        int64_t gate = allowed_step;
        for (const int64_t before : {hold_before_step, pause_before_step})
            if (before != INT64_MAX && before - 1 < gate)
                gate = before - 1;
        return gate;
    }
    // Ranks may be waiting at the gate (paused, paced, or a hold ahead).
    [[nodiscard]] bool gated() const {
        return mode != RunMode::Run || hold_before_step != INT64_MAX || pause_before_step != INT64_MAX;
    }
    // Paused (pause, step, a hold at an event): a step that aborted and is
    // tried again (fault tolerance) waits too, so a held run never forms a
    // new quorum behind the presenter's back. Paced runs and the end hold let it through.
    [[nodiscard]] bool holdsRetries() const {
        return mode == RunMode::Paused &&
               (hold_before_step == INT64_MAX || allowed_step < hold_before_step - 1);
    }
};

// A moment to hold the run at (a narration step's event, a breakpoint). The
// Session tests every event as it arrives, from a rank's telemetry or its own
// (a kill it sent, a process exit, the lighthouse's quorum), and at the first
// match pauses the run there: no rank starts a step past the furthest one any
// rank has begun, so the ranks finish what they are in and wait; nobody waits
// in a collective for a held peer. This is the moment itself, not the frame
// (a GUI frame and a telemetry batch later) at which a viewer noticed it.
struct EventHold {
    // Called on a collector thread with the Session's lock held: quick, and
    // no calls back into the Session. Holds its own state (copied in).
    std::function<bool(const Event&)> matches;
    std::string what; // "rank 1 dies", for the log
    // A moment that is a step count ("step >= N": the end of step N-1) is
    // known ahead: with before_step = N the gate closes before step N at
    // once (RunControl::pause_before_step), since a rank ending step N-1
    // starts step N long before its telemetry of it arrives. INT64_MAX: an
    // event nobody can foresee (a death, a quorum, a heal), held at the
    // ranks' next gate after it.
    int64_t before_step = INT64_MAX;
};
struct EventHoldHit {
    std::string slot;    // the name it was armed under
    std::string what;    // EventHold::what
    Event event;         // the event that matched
    RunControl before;   // the run control just before the hold: what Next restores
    int64_t held_at = 0; // the allowed step of the hold: no rank starts a later one
};

class Session {
  public:
    explicit Session(SessionOptions options);
    ~Session(); // stops every process this Session started
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    void start(); // throws UsageError / std::runtime_error
    [[nodiscard]] bool finished() const;
    void waitUntilFinished();
    void stop(const std::string& reason); // SIGKILL every rank, then finish

    // Fault injection and control (no-ops on ranks that are not running).
    void killRank(int rank);                  // SIGKILL
    void hangRank(int rank);                  // SIGSTOP
    void resumeRank(int rank);                // SIGCONT
    void slowRank(int rank, double delay_ms); // 0 = back to normal speed
    // The modelled network link of a rank (rank -1 = every rank): each of its
    // collectives takes at least latency + bytes / bandwidth; 0 = no cap / no latency.
    void setLink(int rank, double bandwidth_mbit_s, double latency_ms);

    // Fault tolerance ([fault_tolerance] enabled; no-ops otherwise).
    [[nodiscard]] bool faultTolerant() const;
    void restartRank(int rank);                   // start a dead rank again (restart = "manual")
    void failNextCollective(int rank);            // its next cross-replica collective fails
    void nanGradients(int rank);                  // its next gradients are NaN
    void partitionRank(int rank, bool on);        // its heartbeats and quorum requests are lost
    void delayTraffic(int rank, double delay_ms); // added before each of its collectives
    void killLighthouse();                        // training waits for a quorum ...
    void startLighthouse();                       // ... and goes on when it is back
    // The lighthouse's view (false when there is none: not fault tolerant, or external).
    bool lighthouseStatus(ft::LighthouseStatus& out) const;

    // Run control: gates at step boundaries.
    void pause();                     // every rank stops before its next step
    void resume();                    // run freely
    void stepOnce();                  // let every rank through one more step
    void setPace(double steps_per_s); // presentation pace; 0 = back to Run
    // Ranks do not start `step` or any later one until holdBefore(INT64_MAX),
    // whatever pause/run/pace say (dtlab holds a run's last step until its
    // narration's last step, so the run never ends before the story does).
    void holdBefore(int64_t step);
    [[nodiscard]] RunControl runControl() const;
    // Holds at an event (EventHold above). One hold per slot ("narration",
    // "breakpoints"); arming a slot again replaces it; a hold fires once and
    // is then disarmed. takeEventHoldHits() returns the hits since the last call.
    void armEventHold(const std::string& slot, EventHold hold);
    void disarmEventHold(const std::string& slot);
    [[nodiscard]] std::vector<EventHoldHit> takeEventHoldHits();

    [[nodiscard]] std::string storeAddress() const; // "host:port" for ranks to join
    [[nodiscard]] std::vector<RankProgress> progress() const;
    [[nodiscard]] size_t eventCount() const;
    // Append events [from, eventCount()) to `out`; returns the new count.
    size_t copyEventsSince(size_t from, std::vector<Event>& out) const;
    size_t copyLogsSince(size_t from, std::vector<LogRecord>& out) const;
    [[nodiscard]] RunRecord snapshot() const; // a full copy (end of run, export)
    // Where the recording goes and how far it got (SessionOptions::record_path).
    [[nodiscard]] RecordingStatus recordingStatus() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace dt
