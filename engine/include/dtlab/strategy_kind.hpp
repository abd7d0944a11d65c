// strategy_kind.hpp: the [strategy] kinds as an enum, their names and their
// traits, all from the one list in strategy_kinds.def. Code asks a trait
// ("does this strategy shard parameters?") instead of comparing names.
//
// A new strategy: one row in strategy_kinds.def, its TrainingStrategy file in
// engine/src/strategy/, and its case in makeTrainingStrategy (training_strategy.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dt {

enum class StrategyKind : uint8_t {
#define DT_STRATEGY_KIND(id, name, shards_optimizer, shards_gradients, shards_parameters, uses_stages,       \
                         trains_model, fault_tolerant)                                                       \
    id,
#include "dtlab/strategy_kinds.def"
#undef DT_STRATEGY_KIND
};

struct StrategyTraits {
    const char* name;
    bool shards_optimizer;
    bool shards_gradients;
    bool shards_parameters;
    bool uses_stages;
    bool trains_model;
    bool fault_tolerant;
};

inline constexpr StrategyTraits kStrategyTraits[] = {
#define DT_STRATEGY_KIND(id, name, shards_optimizer, shards_gradients, shards_parameters, uses_stages,       \
                         trains_model, fault_tolerant)                                                       \
    {name, shards_optimizer, shards_gradients, shards_parameters, uses_stages, trains_model, fault_tolerant},
#include "dtlab/strategy_kinds.def"
#undef DT_STRATEGY_KIND
};

[[nodiscard]] constexpr const StrategyTraits& strategyTraits(StrategyKind kind) {
    return kStrategyTraits[static_cast<size_t>(kind)];
}
[[nodiscard]] constexpr const char* strategyKindName(StrategyKind kind) {
    return strategyTraits(kind).name;
}

// "ddp" -> StrategyKind::Ddp; false when the text names no strategy.
[[nodiscard]] inline bool parseStrategyKind(std::string_view text, StrategyKind& out) {
    for (size_t i = 0; i < std::size(kStrategyTraits); ++i)
        if (text == kStrategyTraits[i].name) {
            out = static_cast<StrategyKind>(i);
            return true;
        }
    return false;
}

// Every name, in the list's order (for messages and help texts).
[[nodiscard]] inline std::vector<std::string> strategyKindNames() {
    std::vector<std::string> names;
    for (const StrategyTraits& t : kStrategyTraits)
        names.push_back(t.name);
    return names;
}

} // namespace dt
