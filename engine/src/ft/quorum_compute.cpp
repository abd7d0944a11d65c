// quorum_compute.cpp: the lighthouse's two pure decisions (TorchFT's
// quorum_compute and compute_quorum_results), the quorum id rule, the QUORUM
// wire line and the status JSON.
//
// computeQuorum, step by step (the rules of dtlab/lighthouse.hpp):
//   1. Sort the members into: healthy (connected, heartbeat younger than
//      heartbeat_timeout_ms) and unhealthy; the healthy ones that have a quorum
//      request open are the candidates, the other healthy ones are stragglers.
//   2. Fast path: a previous quorum exists and every one of its members (same
//      replica AND same incarnation) is a candidate -> issue all candidates
//      now (a newcomer that is already waiting comes along).
//   3. Fewer candidates than min_replicas -> wait.
//   4. Split-brain guard: candidates must be more than half of the healthy
//      members (2 * candidates > healthy) -> else wait. Two halves of a
//      partitioned job can never both form a quorum.
//   5. Stragglers exist (healthy but not asking) -> wait for them, but only
//      until join_timeout_ms after the earliest open request.
//   5b. Fresh-start guard (dtlab's): no candidate holds a committed step
//      while an alive holder of committed steps is not a candidate -> wait
//      up to join_timeout_ms, then issue and fence the holders.
//   6. Otherwise issue the candidates.
//   Every decision carries a reason sentence that a teacher can show; the
//   "[2/3 joined]" tag means 2 candidates among 3 healthy members.
//
// The quorum id (nextQuorumId): +1 when the participants differ from the
// previous quorum's by (replica, incarnation), or when a participant reported
// commit_failures > 0; otherwise the id stays (the same group goes on).
//
// computeQuorumRole: max_step over the participants; those at max_step are
// up to date (they average gradients), the others heal: the i-th healer (in
// replica order) receives from up-to-date replica (i + group rank) % n
// (round-robin, offset by the rank in the group as TorchFT does). With
// init_sync at the job's first step (max_step 0, every member a first start)
// every member but the primary (the lowest member, for every group rank)
// heals from it: TorchFT's force_recover.
#include "ft/lighthouse_detail.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace dt::ft {

std::string QuorumMember::id() const {
    return std::to_string(replica) + "." + std::to_string(incarnation);
}

namespace {

bool isHealthy(const MemberHealth& m, const LighthouseOptions& options) {
    return m.connected && m.heartbeat_age_ms < options.heartbeat_timeout_ms;
}

// "replica 1 not connected" / "replica 1 not healthy: heartbeat 1200 ms old"
std::string whyUnhealthy(const MemberHealth& m) {
    if (!m.connected)
        return "replica " + std::to_string(m.member.replica) + " not connected";
    return "replica " + std::to_string(m.member.replica) + " not healthy: heartbeat " +
           std::to_string(m.heartbeat_age_ms) + " ms old";
}

// "2", "2 and 3", "1, 2 and 3"
// "0", "0 and 2", "0, 1 and 2"
std::string listReplicaIds(const std::vector<int>& replicas) {
    std::string text;
    for (size_t i = 0; i < replicas.size(); ++i) {
        if (i > 0)
            text += (i + 1 == replicas.size()) ? " and " : ", ";
        text += std::to_string(replicas[i]);
    }
    return text;
}

std::string listReplicas(const std::vector<const MemberHealth*>& members) {
    std::vector<int> replicas;
    for (const MemberHealth* m : members)
        replicas.push_back(m->member.replica);
    return listReplicaIds(replicas);
}

std::string joinedTag(size_t candidates, size_t healthy) {
    return "[" + std::to_string(candidates) + "/" + std::to_string(healthy) + " joined]";
}

std::string joinSentences(const std::vector<std::string>& parts) {
    std::string text;
    for (const auto& part : parts)
        text += (text.empty() ? "" : "; ") + part;
    return text;
}

bool sameMembership(std::vector<QuorumMember> a, std::vector<QuorumMember> b) {
    if (a.size() != b.size())
        return false;
    const auto byReplica = [](const QuorumMember& x, const QuorumMember& y) { return x.replica < y.replica; };
    std::sort(a.begin(), a.end(), byReplica);
    std::sort(b.begin(), b.end(), byReplica);
    for (size_t i = 0; i < a.size(); ++i)
        if (!a[i].sameMember(b[i]))
            return false;
    return true;
}

// How long the earliest open request of this round has waited (rules 5 and 5b).
int64_t waitedSinceFirstRequestMs(int64_t now_ms, const std::vector<const MemberHealth*>& candidates) {
    int64_t first_request_ms = now_ms;
    for (const MemberHealth* c : candidates)
        first_request_ms = std::min(first_request_ms, c->waiting_since_ms);
    return now_ms - first_request_ms;
}

// Rule 5b (dtlab's fresh-start guard): when every candidate holds no
// committed step, a quorum of them alone would start the job over. While a
// replica the supervisor reports alive with committed steps is not among
// them, wait for it up to join_timeout_ms after the first request; then issue
// and fence it (its supervisor kills it). The wait is bounded even for a
// holder that is not stopped: an unbounded one stalled chaos runs (fresh
// replicas timing out their quorum requests again and again).
struct FreshStartGuard {
    bool applies = false;
    bool issue = false;
    std::string reason;
    std::vector<int> fenced;
};

FreshStartGuard freshStartGuard(int64_t now_ms, const std::vector<const MemberHealth*>& candidates,
                                const std::vector<AliveHolder>& alive_holders,
                                const LighthouseOptions& options, const std::string& tag) {
    FreshStartGuard guard;
    const bool all_fresh = std::all_of(candidates.begin(), candidates.end(),
                                       [](const MemberHealth* c) { return c->member.step == 0; });
    std::vector<int> outside;
    bool all_stopped = true;
    for (const AliveHolder& h : alive_holders)
        if (std::none_of(candidates.begin(), candidates.end(),
                         [&](const MemberHealth* c) { return c->member.replica == h.replica; })) {
            outside.push_back(h.replica);
            all_stopped = all_stopped && h.stopped;
        }
    if (!all_fresh || outside.empty() || candidates.empty())
        return guard;
    guard.applies = true;
    const std::string holders = std::string(outside.size() == 1 ? "replica " : "replicas ") +
                                listReplicaIds(outside) + (outside.size() == 1 ? " is" : " are") +
                                (all_stopped ? " stopped (hung or partitioned)" : " alive") +
                                " with committed steps";
    const int64_t waited_ms = waitedSinceFirstRequestMs(now_ms, candidates);
    if (waited_ms < options.join_timeout_ms) {
        guard.reason = "waiting: no candidate holds a committed step, and " + holders +
                       ": a quorum now would start the job over beside it (join timeout in " +
                       std::to_string(options.join_timeout_ms - waited_ms) + " ms) " + tag;
        return guard;
    }
    guard.issue = true;
    guard.fenced = outside;
    guard.reason =
        "issued: a fresh start of " + std::to_string(candidates.size()) + " " +
        (candidates.size() == 1 ? "replica" : "replicas") + " holding no step; " + holders +
        " and did not join within the " + std::to_string(options.join_timeout_ms) +
        " ms join timeout, so it is fenced (killed by its supervisor, which may restart it to heal "
        "from this quorum; its newer steps are rolled back) " +
        tag;
    return guard;
}

} // namespace

QuorumDecision computeQuorum(int64_t now_ms, const std::vector<MemberHealth>& members, const Quorum& previous,
                             const LighthouseOptions& options,
                             const std::vector<AliveHolder>& alive_holders) {
    // Step 1: healthy, candidates (healthy and waiting), stragglers (healthy, not waiting).
    std::vector<const MemberHealth*> sorted;
    for (const auto& m : members)
        sorted.push_back(&m);
    std::sort(sorted.begin(), sorted.end(), [](const MemberHealth* a, const MemberHealth* b) {
        return a->member.replica < b->member.replica;
    });

    std::vector<const MemberHealth*> healthy, candidates, stragglers, unhealthy;
    for (const MemberHealth* m : sorted) {
        if (!isHealthy(*m, options)) {
            unhealthy.push_back(m);
            continue;
        }
        healthy.push_back(m);
        (m->waiting ? candidates : stragglers).push_back(m);
    }
    const std::string tag = joinedTag(candidates.size(), healthy.size());

    // Why each known member that is not a candidate stays out (for the reasons).
    const auto outsiders = [&](const std::string& straggler_why) {
        std::vector<std::string> why;
        for (const MemberHealth* m : sorted) {
            if (!isHealthy(*m, options))
                why.push_back(whyUnhealthy(*m));
            else if (!m->waiting)
                why.push_back("replica " + std::to_string(m->member.replica) + " " + straggler_why);
        }
        return why;
    };

    QuorumDecision decision;
    const auto issue = [&](std::string reason) {
        decision.issue = true;
        for (const MemberHealth* m : candidates)
            decision.participants.push_back(m->member);
        decision.membership_changed =
            previous.members.empty() || !sameMembership(decision.participants, previous.members);
        decision.reason = std::move(reason);
        return decision;
    };
    const auto wait = [&](std::string reason) {
        decision.reason = std::move(reason);
        return decision;
    };

    // Step 2: fast path, every member of the previous quorum is back and waiting.
    if (!previous.members.empty()) {
        bool everyone_back = true;
        for (const QuorumMember& old : previous.members) {
            const bool back = std::any_of(candidates.begin(), candidates.end(),
                                          [&](const MemberHealth* c) { return c->member.sameMember(old); });
            everyone_back = everyone_back && back;
        }
        if (everyone_back) {
            std::string reason = "fast path: every member of quorum " + std::to_string(previous.quorum_id) +
                                 " is healthy and waiting";
            std::vector<const MemberHealth*> newcomers;
            for (const MemberHealth* c : candidates) {
                const bool was_member =
                    std::any_of(previous.members.begin(), previous.members.end(),
                                [&](const QuorumMember& old) { return old.sameMember(c->member); });
                if (!was_member)
                    newcomers.push_back(c);
            }
            if (!newcomers.empty())
                reason += (newcomers.size() == 1 ? ", with newcomer replica " : ", with newcomer replicas ") +
                          listReplicas(newcomers);
            reason += " " + tag;
            const auto left_out = outsiders("has not asked to join");
            if (!left_out.empty())
                reason += " (" + joinSentences(left_out) + ")";
            return issue(reason);
        }
    }

    // Step 3: min_replicas.
    if (int(candidates.size()) < options.min_replicas)
        return wait("waiting: " + std::to_string(candidates.size()) + " of min_replicas " +
                    std::to_string(options.min_replicas) + " joined " + tag);

    // Step 4: split-brain guard, more than half of the healthy members.
    if (2 * candidates.size() <= healthy.size())
        return wait("waiting: " + std::to_string(candidates.size()) + " of " +
                    std::to_string(healthy.size()) +
                    " healthy replicas joined; a quorum needs more than half (split-brain guard)");

    // Step 5: wait for healthy stragglers, up to join_timeout_ms after the first request.
    if (!stragglers.empty()) {
        const int64_t waited_ms = waitedSinceFirstRequestMs(now_ms, candidates);
        if (waited_ms < options.join_timeout_ms)
            return wait(std::string("waiting for ") + (stragglers.size() == 1 ? "replica " : "replicas ") +
                        listReplicas(stragglers) + " to join (join timeout in " +
                        std::to_string(options.join_timeout_ms - waited_ms) + " ms) " + tag);
    }

    // Step 5b: no fresh start beside a live replica that holds committed steps.
    const FreshStartGuard fresh = freshStartGuard(now_ms, candidates, alive_holders, options, tag);
    if (fresh.applies) {
        decision.fenced = fresh.fenced;
        return fresh.issue ? issue(fresh.reason) : wait(fresh.reason);
    }

    // Step 6: issue.
    std::string reason =
        "issued: " + std::to_string(candidates.size()) + " of " + std::to_string(sorted.size()) + " replicas";
    const auto left_out =
        outsiders("did not join within the " + std::to_string(options.join_timeout_ms) + " ms join timeout");
    if (!left_out.empty())
        reason += " (" + joinSentences(left_out) + ")";
    return issue(reason);
}

int64_t nextQuorumId(int64_t last_issued_id, const QuorumDecision& decision) {
    if (!decision.issue)
        return last_issued_id;
    const bool some_commit_failed = std::any_of(decision.participants.begin(), decision.participants.end(),
                                                [](const QuorumMember& m) { return m.commit_failures > 0; });
    return (decision.membership_changed || some_commit_failed) ? last_issued_id + 1 : last_issued_id;
}

QuorumRole computeQuorumRole(const Quorum& quorum, int replica, int incarnation, int group_rank,
                             bool init_sync) {
    QuorumRole role;
    role.quorum_id = quorum.quorum_id;
    role.members = quorum.members;
    std::sort(role.members.begin(), role.members.end(),
              [](const QuorumMember& a, const QuorumMember& b) { return a.replica < b.replica; });
    role.replica_world = int(role.members.size());

    for (int rank = 0; rank < role.replica_world; ++rank) {
        const QuorumMember& m = role.members[size_t(rank)];
        if (m.replica == replica && m.incarnation == incarnation)
            role.replica_rank = rank;
        role.max_step = std::max(role.max_step, m.step);
    }
    if (role.replica_rank < 0)
        throw std::invalid_argument("replica " + std::to_string(replica) + " incarnation " +
                                    std::to_string(incarnation) + " is not a participant of quorum " +
                                    std::to_string(quorum.quorum_id));

    // Up-to-date replicas u[0..n-1] and healing replicas h[0..k-1], both in replica order.
    std::vector<int> up_to_date, healing;
    for (int rank = 0; rank < role.replica_world; ++rank)
        (role.members[size_t(rank)].step == role.max_step ? up_to_date : healing).push_back(rank);
    role.up_to_date = int(up_to_date.size());
    // init_sync at the job's start: all but the primary heal from it (TorchFT's force_recover).
    const bool first_start = std::all_of(role.members.begin(), role.members.end(),
                                         [](const QuorumMember& m) { return m.incarnation == 0; });
    if (init_sync && role.max_step == 0 && first_start && up_to_date.size() > 1) {
        // One primary for every rank of a group (TorchFT offsets it by the
        // rank in the group; a dtlab group agrees its heal as one, so its
        // ranks must all heal or all not).
        const int primary = up_to_date.front();
        healing.clear();
        for (int rank : up_to_date)
            if (rank != primary)
                healing.push_back(rank);
        up_to_date = {primary};
    }

    // h[i] receives from u[(i + group_rank) % n] (TorchFT's offset by the rank
    // in the group: a healing group's shards come from different sources).
    for (size_t i = 0; i < healing.size(); ++i) {
        const int source = up_to_date[(i + size_t(std::max(0, group_rank))) % up_to_date.size()];
        if (healing[i] == role.replica_rank) {
            role.heal = true;
            role.heal_source = source;
        }
        if (source == role.replica_rank)
            role.heal_destinations.push_back(healing[i]);
    }
    return role;
}

// ---- the QUORUM wire line ----

std::string helloProof(const std::string& token, const std::string& nonce_hex, int replica, int incarnation) {
    return wire::textProofHex(token, "dtlab lighthouse " + nonce_hex + " " + std::to_string(replica) + " " +
                                         std::to_string(incarnation));
}

std::string formatQuorumLine(const Quorum& quorum) {
    std::string line = "QUORUM " + std::to_string(quorum.quorum_id) + " " +
                       std::to_string(quorum.highest_step) + " " + std::to_string(quorum.members.size());
    for (const QuorumMember& m : quorum.members)
        line += " " + m.id() + ":" + std::to_string(m.step) + ":" + (m.address.empty() ? "-" : m.address);
    return line;
}

bool parseQuorumLine(const std::string& line, Quorum& out) {
    std::istringstream in(line);
    std::string word;
    size_t count = 0;
    Quorum quorum;
    if (!(in >> word) || word != "QUORUM" || !(in >> quorum.quorum_id >> quorum.highest_step >> count))
        return false;
    for (size_t i = 0; i < count; ++i) {
        // <replica>.<incarnation>:<step>:<address|->   (the address may contain ':')
        std::string entry;
        if (!(in >> entry))
            return false;
        const auto dot = entry.find('.');
        const auto colon1 = entry.find(':');
        const auto colon2 = colon1 == std::string::npos ? std::string::npos : entry.find(':', colon1 + 1);
        if (dot == std::string::npos || colon2 == std::string::npos || dot > colon1)
            return false;
        QuorumMember m;
        try {
            m.replica = std::stoi(entry.substr(0, dot));
            m.incarnation = std::stoi(entry.substr(dot + 1, colon1 - dot - 1));
            m.step = std::stoll(entry.substr(colon1 + 1, colon2 - colon1 - 1));
        } catch (const std::exception&) {
            return false;
        }
        m.address = entry.substr(colon2 + 1);
        if (m.address == "-")
            m.address.clear();
        quorum.members.push_back(m);
    }
    if (in >> word)
        return false; // trailing garbage
    out = quorum;
    return true;
}

// ---- the status JSON ----

namespace {

using Json = nlohmann::ordered_json; // keeps fields in the documented order

Json memberToJson(const QuorumMember& m) {
    return Json{{"replica", m.replica},
                {"incarnation", m.incarnation},
                {"step", m.step},
                {"commit_failures", m.commit_failures},
                {"address", m.address}};
}

QuorumMember memberFromJson(const Json& j) {
    QuorumMember m;
    m.replica = j.at("replica").get<int>();
    m.incarnation = j.at("incarnation").get<int>();
    m.step = j.at("step").get<int64_t>();
    m.commit_failures = j.at("commit_failures").get<int>();
    m.address = j.at("address").get<std::string>();
    return m;
}

} // namespace

std::string statusToJson(const LighthouseStatus& status) {
    Json quorum_members = Json::array();
    for (const auto& m : status.quorum_members)
        quorum_members.push_back(memberToJson(m));
    Json members = Json::array();
    for (const auto& h : status.members) {
        Json j = memberToJson(h.member);
        j["heartbeat_age_ms"] = h.heartbeat_age_ms;
        j["connected"] = h.connected;
        j["waiting"] = h.waiting;
        j["waiting_since_ms"] = h.waiting_since_ms;
        members.push_back(j);
    }
    const Json j{{"running", status.running},           {"quorum_id", status.quorum_id},
                 {"highest_step", status.highest_step}, {"quorums_issued", status.quorums_issued},
                 {"quorum_members", quorum_members},    {"members", members},
                 {"last_reason", status.last_reason}};
    return j.dump(); // one line: strings with newlines are escaped
}

LighthouseStatus statusFromJson(const std::string& json) {
    try {
        const Json j = Json::parse(json);
        LighthouseStatus status;
        status.running = j.at("running").get<bool>();
        status.quorum_id = j.at("quorum_id").get<int64_t>();
        status.highest_step = j.at("highest_step").get<int64_t>();
        status.quorums_issued = j.at("quorums_issued").get<int64_t>();
        for (const auto& m : j.at("quorum_members"))
            status.quorum_members.push_back(memberFromJson(m));
        for (const auto& m : j.at("members")) {
            MemberHealth h;
            h.member = memberFromJson(m);
            h.heartbeat_age_ms = m.at("heartbeat_age_ms").get<int64_t>();
            h.connected = m.at("connected").get<bool>();
            h.waiting = m.at("waiting").get<bool>();
            h.waiting_since_ms = m.at("waiting_since_ms").get<int64_t>();
            status.members.push_back(h);
        }
        status.last_reason = j.at("last_reason").get<std::string>();
        return status;
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(std::string("malformed lighthouse status JSON: ") + e.what());
    }
}

} // namespace dt::ft
