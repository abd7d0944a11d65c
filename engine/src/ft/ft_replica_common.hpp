// ft_replica_common.hpp: pieces shared by the fault-tolerant training loops
// (ft_training.cpp: DDP, one quorum per step; ft_diloco.cpp: DiLoCo, one
// quorum per outer sync): abort reasons, the telemetry of a replica's lane,
// the start-up barrier, the quorum's member mask and process-group prefix, and
// the rebuild of the cross-replica group on a new quorum.
#pragma once

#include "dtlab/errors.hpp"
#include "dtlab/events.hpp"
#include "dtlab/lighthouse.hpp"
#include "comm/gloo_communicator.hpp"
#include "comm/link_shaper.hpp"
#include "telemetry/telemetry_sender.hpp"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace dt {

// Why a step was not committed (the Abort event's value).
enum class AbortReason { None = 0, CollectiveFailed = 1, NanGradients = 2, TooFewReplicas = 3, HealFailed = 4 };

inline const char* abortText(AbortReason reason) {
    switch (reason) {
    case AbortReason::CollectiveFailed: return "a cross-replica collective failed";
    case AbortReason::NanGradients: return "the averaged gradients are not finite";
    case AbortReason::TooFewReplicas: return "the quorum has fewer than min_replicas replicas";
    case AbortReason::HealFailed: return "the heal transfer failed";
    case AbortReason::None: break;
    }
    return "";
}

class ReplicaTelemetry {
public:
    ReplicaTelemetry(TelemetrySender& sender, int rank, bool detailed) : m_sender(sender), m_rank(rank), m_detailed(detailed) {}
    int64_t now() const { return m_sender.now(); }
    bool detailed() const { return m_detailed; }

    Event make(EventKind kind, EventPhase phase, int64_t step) const {
        Event e;
        e.kind = kind;
        e.phase = phase;
        e.rank = m_rank;
        e.step = int32_t(step);
        e.t_ns = now();
        return e;
    }
    void span(EventKind kind, int64_t begin, int64_t step, double value = 0, int64_t bytes = 0, int peer = -1,
              int group_size = 0, int unit = -1) {
        Event e = make(kind, EventPhase::Span, step);
        e.dur_ns = e.t_ns - begin;
        e.t_ns = begin;
        e.value = value;
        e.bytes = bytes;
        e.peer = int16_t(peer);
        e.group_size = uint16_t(group_size);
        e.unit = int16_t(unit);
        m_sender.emit(e);
    }
    void instant(EventKind kind, int64_t step, double value = 0, uint64_t seq = 0, int group_size = 0) {
        Event e = make(kind, EventPhase::Instant, step);
        e.value = value;
        e.seq = seq;
        e.group_size = uint16_t(group_size);
        m_sender.emit(e);
    }
    void counter(EventKind kind, int64_t step, double value) {
        Event e = make(kind, EventPhase::Counter, step);
        e.value = value;
        m_sender.emit(e);
    }
    void emit(const Event& e) { m_sender.emit(e); }

private:
    TelemetrySender& m_sender;
    int m_rank;
    bool m_detailed;
};

inline std::string storeGet(c10d::Store& store, const std::string& key) {
    const auto bytes = store.get(key);
    return std::string(bytes.begin(), bytes.end());
}

// Every replica of the first start waits for the others here, so that the
// first quorum holds them all (a restarted replica skips it and heals).
inline void waitForInitialReplicas(c10d::Store& store, int replicas, int64_t timeout_ms) {
    store.add("dtlab/ft/started", 1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (store.add("dtlab/ft/started", 0) < replicas) {
        if (std::chrono::steady_clock::now() > deadline)
            throw CommError(CommErrorKind::Timeout, "not every replica started within " + std::to_string(timeout_ms) + " ms");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

inline uint64_t memberMask(const ft::Quorum& quorum) {
    uint64_t mask = 0;
    for (const auto& m : quorum.members)
        if (m.replica >= 0 && m.replica < 64) mask |= uint64_t(1) << m.replica;
    return mask;
}

inline std::string groupPrefix(const ft::Quorum& quorum) {
    std::string prefix = "dtlab/ft/q" + std::to_string(quorum.quorum_id) + "/";
    for (const auto& m : quorum.members) prefix += m.id() + ",";
    return prefix;
}

// This replica's view of a new quorum, as a QuorumFormed instant: value = the
// quorum id, group_size = replicas in it, seq = the member mask, unit = the
// replicas already up to date, bytes = the max step, peer = the heal source
// (-1 when this replica does not heal).
inline void emitQuorumFormed(ReplicaTelemetry& telemetry, const ft::Quorum& quorum, const ft::QuorumRole& role,
                             int64_t step) {
    Event e = telemetry.make(EventKind::QuorumFormed, EventPhase::Instant, step);
    e.value = double(role.quorum_id);
    e.group_size = uint16_t(role.replica_world);
    e.seq = memberMask(quorum);
    e.unit = int16_t(role.up_to_date);
    e.bytes = role.max_step;
    e.peer = int16_t(role.heal ? quorum.members[size_t(role.heal_source)].replica : -1);
    telemetry.emit(e);
}

// The cross-replica group of this replica for the quorum in `role`: kept while
// the quorum id is the same, else rebuilt on a fresh TCPStore prefix
// (groupPrefix), with the replica's modelled link. The old group's bytes go to
// `bytes_sent_before`; a Reconfigure span covers the rebuild. A group that
// cannot be built is logged and gives CollectiveFailed (the step aborts).
inline AbortReason rebuildReplicaGroupIfNeeded(std::unique_ptr<Communicator>& group, int64_t& group_quorum_id,
                                               int64_t& bytes_sent_before, const ft::Quorum& quorum,
                                               const ft::QuorumRole& role, c10::intrusive_ptr<c10d::Store> store,
                                               const GlooOptions& gloo, const LinkShaper* link, EventSink* sink,
                                               TelemetrySender& sender, ReplicaTelemetry& telemetry, int step) {
    if (group && group_quorum_id == role.quorum_id) return AbortReason::None;
    AbortReason abort = AbortReason::None;
    const int64_t t = telemetry.now();
    if (group) bytes_sent_before += group->modeledBytesSent();
    group.reset();
    try {
        GlooOptions options = gloo;
        options.prefix = groupPrefix(quorum);
        group = makeGlooCommunicator(std::move(store), role.replica_rank, role.replica_world, options, sink);
        group->setGroupId(uint8_t(1 + role.quorum_id % 127));
        group->shareLink(link);
        group_quorum_id = role.quorum_id;
    } catch (const std::exception& e) {
        group.reset();
        abort = AbortReason::CollectiveFailed;
        sender.log(LogLevel::Warning, std::string("could not build the group of quorum ") +
                                          std::to_string(role.quorum_id) + ": " + e.what());
    }
    telemetry.span(EventKind::Reconfigure, t, step, double(role.quorum_id), 0, -1, role.replica_world);
    return abort;
}

} // namespace dt
