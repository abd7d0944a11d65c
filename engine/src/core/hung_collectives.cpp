// hung_collectives.cpp: hang diagnosis (definitions in dtlab/hung_collectives.hpp).
//
// Steps: 1. key every part by its collective: (group, kind, peer, seq), a
// send and its receive both as (group, Send, sender -> receiver, seq);
// 2. per key, keep each rank's latest part; drop keys some rank completed,
// and keys nobody started; 3. keep those open past the threshold, open when
// the run ended, or failed somewhere; 4. the group's ranks minus the ranks
// that started = the missing ranks. Cost: O(parts log parts).
#include "dtlab/hung_collectives.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>

namespace dt {

GroupMembers groupMembersFor(const Scenario& scenario, int world) {
    GroupMembers m;
    std::vector<int>& all = m[kGroupWorld];
    for (int r = 0; r < world; ++r)
        all.push_back(r);
    if (scenario.fault_tolerance.enabled) {
        // Replica groups of several ranks: each group's own (shard) group is
        // fixed; the quorum groups change with each quorum: taken from the events.
        const int G = ftGroupSize(scenario);
        for (int r = 0; G > 1 && r < world; ++r)
            m[groupIdShard(r / G)].push_back(r);
        // Several pipelines per group: each stage's ranks in a group form a stage group.
        const int S = std::max(1, scenario.topology.stages);
        if (strategyTraits(scenario.strategy.kind).uses_stages && G > S)
            for (int r = 0; r < world; ++r)
                m[groupIdStage((r / G) * S + (r % G) % S)].push_back(r);
        return m;
    }
    if (scenario.strategy.kind == StrategyKind::Hsdp && scenario.topology.replicas > 0) {
        const int replicas = scenario.topology.replicas, shards = world / replicas;
        for (int replica = 0; replica < replicas; ++replica)
            for (int shard = 0; shard < shards; ++shard) {
                m[groupIdShard(replica)].push_back(replica * shards + shard);
                m[groupIdReplicate(shard)].push_back(replica * shards + shard);
            }
    }
    const int stages = scenario.topology.stages;
    if (strategyTraits(scenario.strategy.kind).uses_stages && stages > 0 && world > stages)
        for (int r = 0; r < world; ++r)
            m[groupIdReplicate(r % stages)].push_back(r); // in replica order: r / stages
    return m;
}

const char* unitWordFor(StrategyKind kind) {
    switch (kind) {
    case StrategyKind::Ddp:
        return "bucket";
    case StrategyKind::Diloco:
        return "fragment";
    default:
        return strategyTraits(kind).uses_stages ? "chunk" : "unit";
    }
}

int64_t hangThresholdNs(const Scenario& scenario) {
    const int64_t timeout = int64_t(scenario.run.timeout_s * 1e9);
    return timeout > 0 ? std::min(kCollectiveHungAfterNs, timeout) : kCollectiveHungAfterNs;
}

HangQuery hangQueryFor(const Scenario& scenario, int64_t now_ns, bool run_ended) {
    HangQuery q;
    q.now_ns = now_ns;
    q.threshold_ns = hangThresholdNs(scenario);
    q.run_ended = run_ended;
    q.unit_word = unitWordFor(scenario.strategy.kind);
    q.name_microbatch = scenario.strategy.microbatches > 1;
    return q;
}

std::string rankSetText(const std::vector<int>& ranks) {
    std::string s = "{";
    for (size_t i = 0; i < ranks.size(); ++i)
        s += (i ? "," : "") + std::to_string(ranks[i]);
    return s + "}";
}

namespace {

bool isP2P(EventKind kind) {
    return kind == EventKind::Send || kind == EventKind::Recv;
}

// (group, kind, sender or -1, peer, seq): the same for every rank's part of one collective.
using CollectiveKey = std::tuple<uint8_t, EventKind, int, int, uint64_t>;

// The group rank of a global rank in a member list (-1 when not in it).
int localRankOf(const std::vector<int>& members, int rank) {
    const auto it = std::find(members.begin(), members.end(), rank);
    return it == members.end() ? -1 : int(it - members.begin());
}

// "ranks {0,2,3}" or "rank 1"
std::string ranksPhrase(const std::vector<int>& ranks) {
    return ranks.size() == 1 ? "rank " + std::to_string(ranks[0]) : "ranks " + rankSetText(ranks);
}

std::string describeWhat(const HungCollective& h, const HangQuery& query) {
    const char* unit_word = query.unit_word;
    std::string s(eventKindLabel(h.kind));
    if (isP2P(h.kind))
        s = "send from group rank " + std::to_string(h.sender) + " to " + std::to_string(h.peer);
    if (h.unit >= 0)
        s += std::string(" ") + unit_word + " " + std::to_string(h.unit);
    if (h.microbatch >= 0 && query.name_microbatch)
        s += " microbatch " + std::to_string(h.microbatch);
    if (h.step >= 0)
        s += " of step " + std::to_string(h.step);
    if (h.group != kGroupWorld)
        s += " in group " + std::to_string(int(h.group));
    return s;
}

std::string describeDiagnosis(const HungCollective& h) {
    std::string s = h.what + ": ";
    std::vector<std::string> clauses;
    if (!h.waiting_ranks.empty())
        clauses.push_back(ranksPhrase(h.waiting_ranks) + " waiting");
    if (!h.failed_ranks.empty())
        clauses.push_back(ranksPhrase(h.failed_ranks) + " gave up (failed)");
    if (!h.missing_ranks.empty()) {
        std::string c = ranksPhrase(h.missing_ranks) + " never joined";
        if (!h.queued_ranks.empty())
            c += " (" + ranksPhrase(h.queued_ranks) + " queued it behind an earlier collective)";
        clauses.push_back(c);
    } else {
        clauses.push_back("every rank of the group started it");
    }
    for (size_t i = 0; i < clauses.size(); ++i)
        s += (i ? ", " : "") + clauses[i];
    return s;
}

} // namespace

std::vector<HungCollective> findHungCollectives(const std::vector<WorkPart>& parts,
                                                const GroupMembers& members, const HangQuery& query) {
    // 1. Key each part by its collective; keep each rank's latest part per key.
    std::map<CollectiveKey, std::map<int, const WorkPart*>> by_key;
    std::map<uint8_t, std::set<int>> seen_in_group; // for groups not in `members`
    auto latest = [](const WorkPart& p) { return std::max(p.t_started, p.t_scheduled); };
    for (const WorkPart& p : parts) {
        if (p.rank < 0 || eventKindCategory(p.kind) != EventCategory::Comm)
            continue;
        seen_in_group[p.group].insert(p.rank);
        CollectiveKey key;
        if (isP2P(p.kind)) {
            // Global rank -> group rank of this part's own rank, to name the sender.
            const auto m = members.find(p.group);
            const int self = m != members.end() ? localRankOf(m->second, p.rank) : p.rank;
            const int sender = p.kind == EventKind::Send ? self : p.peer;
            const int receiver = p.kind == EventKind::Send ? p.peer : self;
            key = {p.group, EventKind::Send, sender, receiver, p.seq};
        } else {
            key = {p.group, p.kind, -1, p.peer, p.seq};
        }
        const WorkPart*& slot = by_key[key][p.rank];
        if (!slot || latest(p) >= latest(*slot))
            slot = &p;
    }

    std::vector<HungCollective> out;
    for (const auto& [key, ranks] : by_key) {
        // 2. Completed anywhere: every rank joined (Gloo and MPI need all of them). Nobody started: queued
        // only.
        bool completed = false, started = false, failed = false, open_long = false;
        int64_t since = INT64_MAX;
        for (const auto& [rank, part] : ranks) {
            completed = completed || (part->t_ended >= 0 && !part->failed);
            if (part->t_started < 0)
                continue;
            started = true;
            since = std::min(since, part->t_started);
            failed = failed || part->failed;
            if (part->t_ended < 0 &&
                (query.run_ended || query.now_ns - part->t_started >= query.threshold_ns))
                open_long = true;
        }
        // 3. Hung: open past the threshold (or at the end of the run), or failed waiting.
        if (completed || !started || !(open_long || failed))
            continue;

        HungCollective h;
        h.group = std::get<0>(key);
        h.kind = isP2P(std::get<1>(key)) ? EventKind::Send : std::get<1>(key);
        h.sender = std::get<2>(key);
        h.peer = std::get<3>(key);
        h.seq = std::get<4>(key);
        h.open_since_ns = since;
        // 4. The group's ranks.
        const auto m = members.find(h.group);
        if (isP2P(h.kind)) {
            const auto global = [&](int local) {
                return m != members.end() && local >= 0 && local < int(m->second.size())
                           ? m->second[size_t(local)]
                           : local;
            };
            h.group_ranks = {global(h.sender), global(h.peer)};
        } else if (m != members.end()) {
            h.group_ranks = m->second;
        } else {
            const std::set<int>& seen = seen_in_group[h.group];
            h.group_ranks.assign(seen.begin(), seen.end());
        }
        std::sort(h.group_ranks.begin(), h.group_ranks.end());
        h.group_ranks.erase(std::unique(h.group_ranks.begin(), h.group_ranks.end()), h.group_ranks.end());
        for (const auto& [rank, part] : ranks) {
            if (h.step < 0)
                h.step = part->step;
            if (h.unit < 0)
                h.unit = part->unit;
            if (h.microbatch < 0)
                h.microbatch = part->microbatch;
            if (part->t_started < 0) {
                h.queued_ranks.push_back(rank);
                continue;
            }
            h.started_ranks.push_back(rank);
            (part->failed ? h.failed_ranks : h.waiting_ranks).push_back(rank);
            if (!std::binary_search(h.group_ranks.begin(), h.group_ranks.end(), rank)) {
                h.group_ranks.push_back(rank); // a part from outside the assumed group: show it anyway
                std::sort(h.group_ranks.begin(), h.group_ranks.end());
            }
        }
        for (int r : h.group_ranks)
            if (!std::binary_search(h.started_ranks.begin(), h.started_ranks.end(), r))
                h.missing_ranks.push_back(r);
        h.what = describeWhat(h, query);
        h.diagnosis = describeDiagnosis(h);
        out.push_back(std::move(h));
    }
    std::stable_sort(out.begin(), out.end(), [](const HungCollective& a, const HungCollective& b) {
        return a.open_since_ns < b.open_since_ns;
    });
    return out;
}

std::vector<WorkPart> workPartsFromEvents(const std::vector<Event>& events) {
    std::vector<WorkPart> parts;
    // (rank, group, kind, peer, seq) -> index of its latest part
    std::map<std::tuple<int, uint8_t, EventKind, int, uint64_t>, size_t> latest;
    for (const Event& e : events) {
        if (e.rank < 0 || !isWorkPhase(e.phase))
            continue;
        const auto key = std::make_tuple(int(e.rank), e.group, e.kind, int(e.peer), e.seq);
        auto it = latest.find(key);
        bool fresh = it == latest.end();
        if (!fresh) { // a phase this part has already seen: a new Work with the same key
            const WorkPart& p = parts[it->second];
            fresh = (e.phase == EventPhase::WorkScheduled && p.t_scheduled >= 0) ||
                    (e.phase == EventPhase::WorkStarted && p.t_started >= 0) ||
                    ((e.phase == EventPhase::WorkCompleted || e.phase == EventPhase::WorkFailed) &&
                     p.t_ended >= 0);
        }
        if (fresh) {
            WorkPart p;
            p.rank = e.rank;
            p.group = e.group;
            p.kind = e.kind;
            p.peer = e.peer;
            p.seq = e.seq;
            p.step = e.step;
            p.unit = e.unit;
            p.microbatch = e.microbatch;
            latest[key] = parts.size();
            parts.push_back(p);
        }
        WorkPart& p = parts[latest[key]];
        switch (e.phase) {
        case EventPhase::WorkScheduled:
            p.t_scheduled = e.t_ns;
            break;
        case EventPhase::WorkStarted:
            p.t_started = e.t_ns;
            break;
        case EventPhase::WorkCompleted:
        case EventPhase::WorkFailed:
            p.t_ended = e.t_ns;
            p.failed = e.phase == EventPhase::WorkFailed;
            break;
        default:
            break;
        }
    }
    return parts;
}

} // namespace dt
