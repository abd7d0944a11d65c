// telemetry_wire.hpp: the byte format between a rank and the Session.
//
// One TCP connection per rank. All integers little-endian (these are the
// machines' native order; a big-endian host is refused at handshake).
//
//   session -> rank   Challenge {magic "DTLC", u32 version, u8 session_nonce[16]}
//   rank -> session   Hello    {magic "DTLT", u32 version, i32 rank, i32 pid, char host[64],
//                               u8 rank_nonce[16], u8 proof[32]}
//                     proof = HMAC-SHA256(token, "dtlab rank" | session_nonce | rank_nonce | rank)
//   session -> rank   Welcome  {magic "DTLW", u32 0, u8 proof[32], u8 boot_id[16]}
//                     proof = HMAC-SHA256(token, "dtlab session" | session_nonce | rank_nonce)
//                     boot_id: the Session host's boot id; a rank with the same
//                     one shares its CLOCK_MONOTONIC and applies no offset
//                     A wrong rank proof: the Session logs the refusal and
//                     closes. A wrong session proof: the rank refuses the
//                     Session (its control messages can kill the rank).
//                     The token (empty on loopback unless given) never
//                     crosses the wire; nothing is encrypted.
//   rank -> session   Ping     t_rank (i64)        } repeated kClockPings times;
//   session -> rank   Pong     t_session (i64)     } offset from the least round trip
//   rank -> session   frames:  {u32 type, u32 length, payload[length]}
//                       Events:    length/64 Event records (64 bytes each, events.hpp)
//                       Log:       u8 level, text
//                       ClockPing: t_rank (i64): a re-sync (ranks on another host,
//                                  every ClockSync::kResyncNs; clock_sync.hpp)
//                       Bye:       empty (clean end of stream)
//   session -> rank   frames:  Control:   one ControlMessage (gates, per-rank delay)
//                              ClockPong: t_rank (i64) echoed, t_session (i64)
//
// Version rule: bump kWireVersion whenever Event's layout or the numeric
// values of EventKind change; a Session refuses a rank with another version.
#pragma once

#include "dtlab/events.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace dt::wire {

constexpr uint32_t kWireVersion =
    12; // 2: Event::group, FSDP unit and checkpoint kinds; 3: fault-tolerance kinds, control commands; 4:
        // DiLoCo kinds, SetLink; 5: Event::backend, BusBandwidth; 6: offload kinds; 7: measured memory kinds;
        // 8: Welcome's boot id, ClockPing/ClockPong frames, clock kinds; 9: GradReady; 10: EvalLoss kinds;
        // 11: SWARM kinds; 12: GateWait, SetAllowedStep's hold_retries
constexpr char kMagic[4] = {'D', 'T', 'L', 'T'};
constexpr int kClockPings = 8;
constexpr uint32_t kMaxFrameBytes = 16u << 20;
// A rank with nothing to send sends an empty Events frame this often; the
// Session calls a rank silent after kSilentNs without a frame.
constexpr int64_t kHeartbeatNs = 1'000'000'000;
constexpr int64_t kSilentNs = 3'000'000'000;

enum class FrameType : uint32_t { Events = 1, Log = 2, Bye = 3, Control = 4, ClockPing = 5, ClockPong = 6 };

// Session -> rank. Gates sit at step boundaries: a rank starts step s only
// while s <= allowed_step. Run mode sends a huge allowed_step; pause sends the
// last step already started; "step once" sends one more. SetAllowedStep's
// `reserved` is hold_retries: 1 = a step tried again after an abort (fault
// tolerance) needs s < allowed_step (RunControl::holdsRetries); its
// `delay_ms` is the order's number (1, 2, ...: a rank ignores an older one,
// and a replica group's ranks start an attempt under the same one).
// Fault-tolerance faults (fault tolerance on) are control commands too:
//   FailNextCollective   the rank's next cross-replica collective fails
//   NanGradients         the rank's next gradients are NaN
//   Partition            delay_ms > 0: heartbeats and quorum requests are lost; 0: healed
//   TrafficDelayMs       delay_ms added before each of its collectives (0 = none)
//   JobFinished          the other replicas finished every step: stop waiting and leave;
//                        allowed_step = the quorum id of the finisher's last step (-1: none)
enum class ControlCommand : uint32_t {
    SetAllowedStep = 1,
    SetDelayMs = 2,
    FailNextCollective = 3,
    NanGradients = 4,
    Partition = 5,
    TrafficDelayMs = 6,
    JobFinished = 7,
    SetLink =
        8, // the rank's modelled link: delay_ms = latency, allowed_step = bandwidth in kbit/s (0 = no cap)
    KillSelf =
        9, // SIGKILL yourself: a kill fault for a rank the Session cannot signal (joined from another host)
    SetJobHeld = 10,        // allowed_step = 1: every rank that steps waits at the gate (paused or paced), so
                            // the job's clock stands still: a quorum wait does not time out; 0: it runs again
    ReleaseFaultPoint = 11, // the Session acted on the scheduled fault this rank stopped for
                            // (rank/fault_points.hpp): the stopped thread goes on
};
struct ControlMessage {
    uint32_t command;
    int32_t reserved;
    int64_t allowed_step; // SetAllowedStep
    double delay_ms;      // SetDelayMs: added to each of this rank's steps; Partition, TrafficDelayMs
};
static_assert(sizeof(ControlMessage) == 24);

constexpr char kChallengeMagic[4] = {'D', 'T', 'L', 'C'};
constexpr char kWelcomeMagic[4] = {'D', 'T', 'L', 'W'};
using Nonce = std::array<uint8_t, 16>;
using Proof = std::array<uint8_t, 32>;

struct Challenge {
    char magic[4];
    uint32_t version;
    Nonce session_nonce;
};
static_assert(sizeof(Challenge) == 24);

struct Hello {
    char magic[4];
    uint32_t version;
    int32_t rank;
    int32_t pid;
    char host[64];
    Nonce rank_nonce;
    Proof proof;
};
static_assert(sizeof(Hello) == 128);

struct Welcome {
    char magic[4];
    uint32_t reserved;
    Proof proof;
    uint8_t boot_id[16];
};
static_assert(sizeof(Welcome) == 56);

struct ClockPong {
    int64_t t_rank;    // the ClockPing's payload, echoed
    int64_t t_session; // the Session's clock when it answered
};
static_assert(sizeof(ClockPong) == 16);

// The two proofs of the handshake (HMAC-SHA256 keyed by the shared token).
[[nodiscard]] Proof rankProof(const std::string& token, const Nonce& session_nonce, const Nonce& rank_nonce,
                              int32_t rank);
[[nodiscard]] Proof sessionProof(const std::string& token, const Nonce& session_nonce,
                                 const Nonce& rank_nonce);
// Constant-time comparison of two proofs.
[[nodiscard]] bool proofsEqual(const Proof& a, const Proof& b);
// HMAC of a text (the scenario in the store) as 64 hex digits.
[[nodiscard]] std::string textProofHex(const std::string& token, const std::string& text);

struct FrameHeader {
    uint32_t type;
    uint32_t length;
};

// Blocking socket helpers; return false on EOF or error.
bool sendAll(int fd, const void* data, size_t size);
bool recvAll(int fd, void* data, size_t size);

// TCP helpers. listenTcp binds host:port (port 0 = any free port) and returns
// the fd and the bound port; connectTcp retries until timeout_ms.
int listenTcp(const std::string& host, int port, int* bound_port);
int connectTcp(const std::string& host, int port, int timeout_ms);
// One connect that gives up after timeout_ms (Linux applies SO_SNDTIMEO to
// connect), leaving the socket's send and receive timeouts at timeout_ms and
// TCP_NODELAY on; -1 when refused, unreachable or too slow (no retry: the
// HTTP heal and the swarm's calls treat a refused peer as gone).
int connectWithin(const std::string& host, int port, double timeout_ms);

// "host:port" -> parts; throws UsageError on a malformed address.
void splitAddress(const std::string& address, std::string& host, int& port);

} // namespace dt::wire
