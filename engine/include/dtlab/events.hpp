// events.hpp: the seam between the engine and everything that shows a run.
//
// A rank emits plain Event records; the Session collects them from every rank
// on one clock; trace export, the summary and the GUI views read them. No torch
// types here, so the app can include this header without LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dt {

enum class EventCategory : uint8_t { Compute, Comm, Counter, Lifecycle };

enum class EventKind : uint16_t {
#define DT_EVENT_KIND(name, label, category) name,
#include "dtlab/event_kinds.def"
#undef DT_EVENT_KIND
    Count
};

// How to read an event's times and value.
//   Span           t_ns .. t_ns + dur_ns (compute; emitted when it ends)
//   Instant        t_ns
//   Counter        value at t_ns
//   Work*          one c10d-like Work record per collective, correlated by
//                  (kind, seq): Scheduled -> Started -> Completed | Failed.
//                  A Work that started and never completed is a hang.
enum class EventPhase : uint8_t {
    Span,
    Instant,
    Counter,
    WorkScheduled,
    WorkStarted,
    WorkCompleted,
    WorkFailed,
};

// The library that moved a collective's bytes (Event::backend of Work records).
enum class CommBackend : uint8_t { Gloo = 0, Mpi = 1, Nccl = 2 };
[[nodiscard]] std::string_view commBackendLabel(CommBackend backend);

struct Event {
    int64_t t_ns = 0;        // Session clock (CLOCK_MONOTONIC of the Session host)
    int64_t dur_ns = 0;      // Span only
    double value = 0.0;      // Counter value; pid for RankStarted; exit status for ProcessExited
    int64_t bytes = 0;       // payload bytes of a collective (per rank, input size)
    uint64_t seq = 0;        // collective sequence number in its group; checksum for ParamsChecksum
    int32_t rank = -1;       // global rank; -1 = the Session itself
    int32_t step = -1;       // training step, -1 = outside a step
    int16_t microbatch = -1; // -1 = none
    int16_t unit = -1;       // block / bucket / stage index, -1 = none
    int16_t peer = -1;       // send/recv peer rank, -1 = the whole group
    uint16_t group_size = 0; // ranks taking part in a collective
    EventKind kind = EventKind::Step;
    EventPhase phase = EventPhase::Instant;
    uint8_t group = 0; // process group of a collective: kGroupWorld, or see groupId* below
    CommBackend backend = CommBackend::Gloo; // Work records: the communicator's backend
    uint8_t reserved1 = 0;
    uint16_t reserved2 = 0;
};
static_assert(sizeof(Event) == 64, "Event is a fixed 64-byte wire record");

// Process-group ids carried in Event::group, so that the parts of one
// collective are matched by (group, kind, seq) when a rank is in several
// groups (HSDP: a shard group inside each replica, a replicate group across).
inline constexpr uint8_t kGroupWorld = 0;
[[nodiscard]] inline constexpr uint8_t groupIdShard(int replica) {
    return uint8_t(1 + replica);
} // 1..127
[[nodiscard]] inline constexpr uint8_t groupIdReplicate(int shard) {
    return uint8_t(128 + shard);
} // 128..255
// A stage's pipelines side by side inside a fault-tolerant replica group
// ([topology] replicas with stages x d ranks per group): k = replica x stages
// + stage. Such runs have at most 16 groups, so shard ids stay below 64.
[[nodiscard]] inline constexpr uint8_t groupIdStage(int k) {
    return uint8_t(64 + k);
} // 64..127

// Event::value of an Optimizer span that is AdamW alone, run on the host
// (offload_optimizer); the worker's Optimizer span around the whole optimizer
// step (copies and all-gather included) has value 0.
inline constexpr double kOptimizerOnHost = 1.0;

[[nodiscard]] std::string_view eventKindLabel(EventKind kind);
[[nodiscard]] EventCategory eventKindCategory(EventKind kind);
[[nodiscard]] std::string_view eventPhaseLabel(EventPhase phase);
[[nodiscard]] bool isWorkPhase(EventPhase phase);

// A line of text from a rank or the Session (errors, lifecycle notes).
enum class LogLevel : uint8_t { Info, Warning, Error };
struct LogRecord {
    int64_t t_ns = 0;
    int32_t rank = -1;
    LogLevel level = LogLevel::Info;
    std::string text;
};

} // namespace dt
