// replica_agreement.cpp: groups, last checksums, one sentence (see the header).
#include "core/replica_agreement.hpp"

#include "dtlab/swarm_layout.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

namespace dt {

namespace {

struct LastChecksum {
    int step = -1;
    uint64_t value = 0;
};

std::string hex(uint64_t value) {
    char text[17];
    std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
    return text;
}

// Pipelines side by side in a fault-tolerant replica group with zero1/fsdp
// stages: each rank checksums its shard of its stage, held by the same rank
// of every other group (not by the other ranks of its stage).
bool stageShardedInGroup(const Scenario& scenario) {
    return scenario.fault_tolerance.enabled && ftGroupSize(scenario) > scenario.topology.stages &&
           scenario.strategy.pipeline_data_parallel != "ddp";
}

// The group a rank belongs to, or -1 when its parameters need not equal anyone's.
int groupOf(const Scenario& scenario, int rank) {
    const StrategyTraits& traits = strategyTraits(scenario.strategy.kind);
    if (!traits.trains_model)
        return -1;
    if (scenario.strategy.kind ==
        StrategyKind::Swarm) { // a stage's servers, equal after the final DiLoCo round
        const SwarmLayout layout = SwarmLayout::of(scenario);
        return layout.isServer(rank) && scenario.swarm.outer_every > 0 ? layout.stageOf(rank) : -1;
    }
    if (traits.uses_stages && !stageShardedInGroup(scenario))
        return rank % std::max(1, scenario.topology.stages);
    // Replica groups under a quorum: each rank checksums its own shard, which
    // the same rank of every other group must hold too.
    return rank % ftGroupSize(scenario);
}

} // namespace

std::string replicaDisagreement(const Scenario& scenario, const std::vector<Event>& events, int world) {
    std::vector<std::optional<LastChecksum>> last(size_t(std::max(0, world)));
    int latest_step = -1;
    for (const Event& e : events) {
        if (e.kind != EventKind::ParamsChecksum || e.rank < 0 || e.rank >= world)
            continue;
        last[size_t(e.rank)] = LastChecksum{e.step, e.seq};
    }
    for (const auto& c : last)
        if (c)
            latest_step = std::max(latest_step, c->step);
    // group -> checksum -> ranks holding it
    std::map<int, std::map<uint64_t, std::vector<int>>> groups;
    for (int r = 0; r < world; ++r) {
        const auto& c = last[size_t(r)];
        const int group = groupOf(scenario, r);
        if (c && c->step == latest_step && group >= 0)
            groups[group][c->value].push_back(r);
    }
    for (const auto& [group, by_value] : groups) {
        if (by_value.size() <= 1)
            continue;
        // The holders of each value, in the order of their lowest rank.
        std::vector<std::pair<std::vector<int>, uint64_t>> holders;
        for (const auto& [value, ranks] : by_value)
            holders.emplace_back(ranks, value);
        std::sort(holders.begin(), holders.end());
        std::string text = "ranks end with different parameters at step " + std::to_string(latest_step) + ":";
        bool first = true;
        for (const auto& [ranks, value] : holders) {
            text += first ? " " : ", ";
            first = false;
            text += ranks.size() == 1 ? "rank " : "ranks ";
            for (size_t i = 0; i < ranks.size(); ++i)
                text += (i ? " " : "") + std::to_string(ranks[i]);
            text += (ranks.size() == 1 ? " holds " : " hold ") + hex(value);
        }
        const bool staged =
            strategyTraits(scenario.strategy.kind).uses_stages && !stageShardedInGroup(scenario);
        text +=
            scenario.strategy.kind == StrategyKind::Swarm
                ? " (the servers of stage " + std::to_string(group) +
                      " must be equal after the final DiLoCo round)"
            : staged ? " (the copies of stage " + std::to_string(group) + " must be equal)"
            : ftGroupSize(scenario) > 1
                ? " (every replica group's copy of shard " + std::to_string(group) + " must be equal)"
                : std::string(" (they must be equal under ") + strategyKindName(scenario.strategy.kind) + ")";
        return text;
    }
    return "";
}

} // namespace dt
