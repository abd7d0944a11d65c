// lighthouse.hpp: the quorum server of fault-tolerant training (TorchFT's
// Lighthouse, in C++), its client, and the two pure decisions behind them.
//
// Who is who
//   replica      one replica group: the failure domain. Its ranks die and
//                restart together. In dtlab's fault-tolerant DDP one replica
//                = one rank. Replicas are numbered 0..R-1.
//   incarnation  how many times that replica's process was restarted. A
//                restarted process is a new member (TorchFT gives it a new
//                uuid), so a restart always changes membership.
//   member       (replica, incarnation) + what it reports: its step (steps
//                committed so far), its commit failures since the last quorum
//                and an address peers can fetch its state from.
//
// The quorum rules (computeQuorum, run every tick and on every request):
//   1. healthy = connected and heartbeat younger than heartbeat_timeout_ms;
//      candidates = healthy members waiting in a quorum request, by replica.
//   2. fast path: every member of the previous quorum is healthy and waiting
//      -> issue at once (a newcomer already waiting is included).
//   3. fewer than min_replicas candidates -> wait.
//   4. split-brain guard: candidates must be more than half of the healthy
//      (heartbeating) members -> else wait.
//   5. some healthy member is not waiting yet -> wait for it, but no longer
//      than join_timeout_ms after the first request of this round.
//   5b. (dtlab's, not TorchFT's) fresh-start guard: every candidate is a
//      member with no committed step, while a replica its supervisor reports
//      alive with committed steps is not a candidate -> wait for it, up to
//      join_timeout_ms after the first request; then issue and name it
//      `fenced`: its supervisor kills it, and may restart it to heal from the
//      new quorum. A quorum of fresh members alone starts over (from step 0
//      or the job's durable checkpoint); beside a replica that holds newer
//      steps, the two histories would meet at the same step numbers when it
//      came back (no heal, different parameters). TorchFT's lighthouse knows
//      nothing of a supervisor and has no such rule; only the lighthouse a
//      Session hosts is told (setAliveHolders).
//   6. otherwise issue.
//   The quorum id increases only when the member list changes (a restarted
//   replica counts as a change) or a member reports commit_failures > 0.
//   Waiting requests are answered together; a member whose request was not
//   part of the quorum asks again.
//
// Wire (one TCP connection per client, text lines, '\n'-terminated):
//   client -> lighthouse  HELLO <replica> <incarnation>
//                         HB                                     (heartbeat, no reply)
//                         BYE                                    (done: leaving, no reply)
//                         QUORUM <step> <commit_failures> <address|->
//                         STATUS
//   lighthouse -> client  QUORUM <id> <highest_step> <n> {<replica>.<incarnation>:<step>:<address|->}*n
//                         STATUS <one line of JSON: see LighthouseStatus>
//                         ERROR <text>
// A closed connection marks its member unhealthy at once (a SIGKILLed rank is
// seen within a millisecond); a stopped (SIGSTOP) or partitioned one only when
// its heartbeats are older than heartbeat_timeout_ms. A member that said BYE
// (the job finished) left: its closing connection is not reported lost.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dt::ft {

struct LighthouseOptions {
    std::string host = "127.0.0.1";
    int port = 0; // 0 = any free port
    int min_replicas = 1;
    int64_t join_timeout_ms = 1000;
    int64_t heartbeat_timeout_ms = 1000;
    int64_t quorum_tick_ms = 10;
    // true: a closed connection loses its member at once (dtlab's fast path);
    // false: only heartbeats count, as TorchFT's lighthouse (the member stays
    // healthy until its last heartbeat is heartbeat_timeout_ms old).
    bool lost_on_close = true;
    // Every HELLO must prove this token (the run's: the Session's own token,
    // or dtrun lighthouse --token-file); "" = an empty key, which anyone can
    // compute: only for a lighthouse nobody else can reach.
    std::string token;
};

struct QuorumMember {
    int replica = -1;
    int incarnation = 0;
    int64_t step = 0;        // steps committed so far
    int commit_failures = 0; // since its last quorum
    std::string address;     // "" = none
    [[nodiscard]] bool sameMember(const QuorumMember& o) const {
        return replica == o.replica && incarnation == o.incarnation;
    }
    [[nodiscard]] std::string id() const; // "<replica>.<incarnation>"
};

struct Quorum {
    int64_t quorum_id = 0;             // 0 = none yet; the first quorum is 1
    int64_t highest_step = 0;          // highest step any member ever reported to this lighthouse
    std::vector<QuorumMember> members; // sorted by replica
};

// What the lighthouse knows about one member when it decides.
struct MemberHealth {
    QuorumMember member; // as last reported (HELLO, then its latest QUORUM request)
    int64_t heartbeat_age_ms = 0;
    bool connected = true;
    bool waiting = false;         // has a quorum request open
    int64_t waiting_since_ms = 0; // lighthouse clock, when waiting
};

struct QuorumDecision {
    bool issue = false;
    std::vector<QuorumMember> participants; // when issue, sorted by replica
    bool membership_changed = false;        // -> new quorum id (with any commit_failures > 0)
    // Rule 5b gave up waiting: these alive holders of committed steps are left
    // out of a fresh start, and their supervisor must stop them (fencing).
    std::vector<int> fenced;
    // Why, e.g. "fast path: every member of quorum 3 is back [2/2]" or
    // "waiting: 1 of 3 healthy replicas joined, need more than half".
    std::string reason;
};

// A replica its supervisor knows to be alive with committed steps (rule 5b).
struct AliveHolder {
    int replica = -1;
    // Stopped (SIGSTOP) or partitioned (said in the reason; the wait and the
    // fence are the same for every holder).
    bool stopped = false;
};

// The pure quorum rules above. `now_ms` is the lighthouse clock; `previous`
// the last quorum issued (members empty = none yet); `alive_holders` what the
// supervisor knows (rule 5b; empty: no supervisor told, the rule never waits).
[[nodiscard]] QuorumDecision computeQuorum(int64_t now_ms, const std::vector<MemberHealth>& members,
                                           const Quorum& previous, const LighthouseOptions& options,
                                           const std::vector<AliveHolder>& alive_holders = {});

// What one replica does with a quorum (TorchFT's compute_quorum_results):
//   max_step = the highest step among participants; replicas below it heal.
//   Up-to-date replicas in replica order u[0..n-1]; healing replicas in
//   replica order h[0..k-1]; h[i] receives from u[i % n] (round-robin).
struct QuorumRole {
    int64_t quorum_id = 0;
    int replica_rank = -1; // position among the participants
    int replica_world = 0; // participants
    int64_t max_step = 0;
    int up_to_date = 0;                 // participants at max_step: they average gradients
    bool heal = false;                  // this replica is behind: it receives state first
    int heal_source = -1;               // replica_rank of the peer it receives from
    std::vector<int> heal_destinations; // replica_ranks this replica sends its state to
    std::vector<QuorumMember> members;
};
// Throws std::invalid_argument if (replica, incarnation) is not a participant.
// group_rank: this rank's place in its replica group. As TorchFT's, healer
// h[i] of rank g receives from u[(i + g) % n], so the shards of a healing
// group come from different up-to-date groups when there are several.
// init_sync (TorchFT's): when max_step is 0 and every member is a first
// start (incarnation 0), every member but the primary heals from it; the
// primary is the lowest member, for every group rank (TorchFT offsets it by
// the rank: a dtlab group agrees its heal as one). The healers
// still count in up_to_date (TorchFT's max_world_size: they are at max_step).
[[nodiscard]] QuorumRole computeQuorumRole(const Quorum& quorum, int replica, int incarnation,
                                           int group_rank = 0, bool init_sync = false);

struct LighthouseStatus {
    bool running = false;
    int64_t quorum_id = 0;
    int64_t highest_step = 0;
    int64_t quorums_issued = 0;
    std::vector<QuorumMember> quorum_members; // the last quorum issued
    std::vector<MemberHealth> members;        // everyone known, by replica
    std::string last_reason;                  // reason of the last decision (issued or waiting)
};
[[nodiscard]] std::string statusToJson(const LighthouseStatus& status);
[[nodiscard]] LighthouseStatus statusFromJson(const std::string& json); // throws std::runtime_error

// The server: a thread with a poll() loop. Thread-safe.
class LighthouseServer {
  public:
    explicit LighthouseServer(LighthouseOptions options);
    ~LighthouseServer(); // stop()
    LighthouseServer(const LighthouseServer&) = delete;
    LighthouseServer& operator=(const LighthouseServer&) = delete;

    // Binds host:port and starts the thread. After stop(), start() again binds
    // the same port (the "lighthouse restarted" fault) with empty state but
    // the next quorum id continues from the last one issued.
    void start(); // throws std::runtime_error when it cannot bind
    void stop();  // closes every connection ("lighthouse killed")
    [[nodiscard]] bool running() const;
    [[nodiscard]] int port() const;
    [[nodiscard]] std::string address() const; // "host:port"
    [[nodiscard]] LighthouseStatus status() const;
    // The Session holds the job (paused or paced, every replica that steps
    // waiting at its gate): the join timeout does not run, so a replica that
    // asks while the others are held is not issued a quorum without them.
    void setJobHeld(bool held);
    // The Session paused the job (held in Paused mode, not between a paced
    // run's ticks): the lighthouse's clock stands still, so a dead replica's
    // last heartbeat is as old when the room resumes as when it paused, and
    // detection by heartbeat still takes heartbeat_timeout_ms of run time.
    // (TorchFT's lighthouse has no pause; in a run that is never paused the
    // two clocks are one.)
    void setJobFrozen(bool frozen);
    // The replicas whose processes are alive and hold committed steps, as the
    // supervisor (the Session) knows them: rule 5b waits for them before a
    // quorum of fresh members alone, then fences them. Never called: the rule
    // never waits.
    void setAliveHolders(std::vector<AliveHolder> holders);

    // Called on the server thread after each quorum is issued (keep it short).
    void onQuorum(std::function<void(const Quorum&, const QuorumDecision&)> callback);
    // Called on the server thread when a member disconnects or its heartbeat times out.
    void onMemberLost(std::function<void(const QuorumMember&, const std::string& why)> callback);
    // Called on the server thread when a HELLO did not prove the token.
    void onRefused(std::function<void(const std::string& why)> callback);

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

// The client, one per replica. Thread-safe: a heartbeat thread shares the
// connection (writes under a mutex); requestQuorum and status are called from
// one thread at a time. A lost lighthouse is reconnected to with backoff.
class LighthouseClient {
  public:
    // `token`: the run's token, proved in every HELLO (see LighthouseOptions::token).
    LighthouseClient(std::string address, int replica, int incarnation, std::string token = "");
    ~LighthouseClient();
    LighthouseClient(const LighthouseClient&) = delete;
    LighthouseClient& operator=(const LighthouseClient&) = delete;

    void startHeartbeats(int64_t interval_ms);
    // Partition fault: while paused no heartbeat (and no request) reaches the lighthouse.
    void setPartitioned(bool partitioned);
    // Called on the heartbeat thread after each heartbeat sent (for telemetry).
    void onHeartbeat(std::function<void()> callback);
    // The replica is done (the job finished): says BYE, so the lighthouse does
    // not report it lost when its connection closes. Best effort, no reply.
    void leave();

    // Blocks until a quorum that includes this member is issued. Throws
    // CommError(Timeout) after timeout_ms; while the lighthouse is down it
    // keeps reconnecting until the timeout (training waits for it).
    [[nodiscard]] Quorum requestQuorum(int64_t step, int commit_failures, const std::string& address,
                                       int64_t timeout_ms);
    [[nodiscard]] LighthouseStatus status(int64_t timeout_ms);

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace dt::ft
