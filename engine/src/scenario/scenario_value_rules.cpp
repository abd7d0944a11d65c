// scenario_value_rules.cpp: the rules of single values (integer and float ranges, the
// names an enum key accepts, taken from the kind lists) and the narration conditions, shared
// by the TOML parser and validateScenario through scenario_rules.hpp.
#include "dtlab/diloco_schedule.hpp"
#include "scenario/scenario_rules.hpp"

#include "dtlab/pipeline_schedule.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <filesystem>
#include <sstream>

namespace dt::scenario_rules {

namespace {

constexpr int64_t kIntMax = INT_MAX;

struct IntRule {
    const char* table;
    const char* key;
    int64_t min;
    int64_t max; // kIntMax or INT64_MAX: no upper bound worth telling the user
};

const IntRule kIntRules[] = {
    {"topology", "ranks", 1, 64},
    {"topology", "replicas", 1, 64},
    {"topology", "stages", 1, 64},
    {"collectives", "repeats", 1, 1000},
    {"collectives", "sizes_kb", 1, 262144},
    {"strategy", "chunks_per_rank", 1, 16},
    {"strategy", "slow_stage", -1, 63},
    {"strategy", "prefetch_limit", 1, 16},
    {"strategy", "microbatches", 1, 1024},
    {"run", "checkpoint_every", 0, kIntMax},
    {"run", "eval_every", 0, kIntMax},
    {"model", "vocab", 2, 65536},
    {"model", "context", 1, 4096},
    {"model", "d_model", 1, 8192},
    {"model", "layers", 1, 64},
    {"model", "heads", 1, 256},
    {"model", "mlp_ratio", 1, 16},
    {"model", "hidden", 1, 65536},
    {"data", "batch_per_rank", 1, 65536},
    {"run", "steps", 1, 1000000},
    {"run", "seed", 0, INT64_MAX},
    {"telemetry", "queue_capacity", 16, 16777216},
    {"faults", "rank", 0, kIntMax},
    {"faults", "step", 0, kIntMax},
    {"fault_tolerance", "min_replicas", 1, 64},
    {"fault_tolerance", "max_restarts_per_minute", 1, 100000},
    {"fault_tolerance", "max_retries", -1, 1000000},
    {"fault_tolerance", "heal_chunks", 0, 64},
    {"chaos", "seed", 0, INT64_MAX},
    {"diloco", "inner_steps", 1, 100000},
    {"diloco", "fragments", 1, 64},
    {"diloco", "sync_delay", 0, 100000},
    {"swarm", "trainers", 1, 64},
    {"swarm", "servers_per_stage", 1, 64},
    {"swarm", "server_batch", 0, 100000},
    {"swarm", "outer_every", 0, 100000},
};

struct FloatRule {
    const char* table;
    const char* key;
    double min;
    bool minInclusive;
    bool hasMax;
    double max; // exclusive
};

// Every time and rate has an upper bound: each is turned into a 64-bit count
// of nanoseconds or microseconds somewhere (1e7 s is 1e16 ns, far from 9.2e18),
// and a value past it is a typo, not a plan.
constexpr double kMaxMs = 1e10; // 115 days
constexpr double kMaxS = 1e7;   // 115 days
const FloatRule kFloatRules[] = {
    {"strategy", "bucket_mb", 1e-6, true, true, 1048576.0}, // 1 byte .. < 1 TiB: bytes fit int64
    {"strategy", "slow_stage_ms", 0.0, true, true, kMaxMs},
    {"optimizer", "lr", 0.0, false, true, 1e6},
    {"optimizer", "beta1", 0.0, true, true, 1.0},
    {"optimizer", "beta2", 0.0, true, true, 1.0},
    {"optimizer", "eps", 0.0, false, true, 1.0},
    {"optimizer", "weight_decay", 0.0, true, true, 1e6},
    {"run", "timeout_s", 0.1, true, true, 1e6}, // Gloo takes whole milliseconds, as a 64-bit count
    {"run", "step_delay_ms", 0.0, true, true, kMaxMs},
    {"faults", "at_s", 0.0, true, true, kMaxS},
    {"faults", "duration_s", 0.0, true, true, kMaxS},
    {"faults", "delay_ms", 0.0, true, true, kMaxMs},
    {"fault_tolerance", "join_timeout_ms", 0.0, true, true, kMaxMs},
    {"fault_tolerance", "heartbeat_interval_ms", 1.0, true, true, kMaxMs},
    {"fault_tolerance", "heartbeat_timeout_ms", 1.0, true, true, kMaxMs},
    {"fault_tolerance", "quorum_timeout_ms", 1.0, true, true, kMaxMs},
    {"fault_tolerance", "collective_timeout_ms", 1.0, true, true, kMaxMs},
    {"fault_tolerance", "restart_delay_ms", 0.0, true, true, kMaxMs},
    {"chaos", "mean_interval_s", 0.0, false, true, kMaxS},
    {"chaos", "hang_s", 0.0, true, true, kMaxS},
    {"chaos", "slow_ms", 0.0, true, true, kMaxMs},
    {"chaos", "slow_s", 0.0, true, true, kMaxS},
    {"diloco", "outer_lr", 0.0, false, true, 1e6},
    {"diloco", "outer_momentum", 0.0, true, true, 1.0},
    {"diloco", "alpha", 0.0, true, true, 1.0},
    {"swarm", "outer_lr", 0.0, false, true, 1e6},
    {"swarm", "outer_momentum", 0.0, true, true, 1.0},
    {"swarm", "join_timeout_ms", 0.0, true, true, kMaxMs},
    {"swarm", "request_timeout_ms", 1.0, true, true, kMaxMs},
    {"swarm", "restart_delay_ms", 0.0, true, true, kMaxMs},
    // 0 = no cap; a cap is at least 1 kbit/s (the Session sends it in whole kbit/s)
    {"network", "bandwidth_mbit_s", 0.0, true, true, 1e9},
    {"network", "latency_ms", 0.0, true, true, kMaxMs},
};

struct EnumRule {
    const char* table;
    const char* key;
    std::vector<std::string> allowed;
};

const EnumRule kEnumRules[] = {
    {"model", "kind", {"tiny_gpt", "mlp"}},
    {"model", "quantize", {"none", "int8", "int4"}},
    {"model", "quantize_weights", {"channel", "tensor"}},
    {"data", "source", {"fortunes", "fashion_mnist"}},
    {"strategy", "kind", strategyKindNames()},
    {"topology", "backend", {"gloo", "mpi"}},
    {"collectives", "ops", {"all_reduce", "all_gather", "reduce_scatter"}},
    {"collectives", "backends", {"gloo", "mpi"}},
    {"strategy", "schedule", pipelineScheduleNames()},
    {"strategy", "pipeline_data_parallel", {"ddp", "zero1", "fsdp"}},
    {"optimizer", "kind", {"adamw", "sgd"}},
    {"diloco", "pseudo_gradient", {"fp32", "bf16", "int8", "int4"}},
    {"swarm", "routing", {"throughput", "fastest"}},
    {"swarm", "restart", {"auto", "manual", "never"}},
    {"faults", "action", faultActionNames()},
    {"faults", "when", {std::begin(kFaultWhenNames), std::end(kFaultWhenNames)}},
    {"fault_tolerance", "restart", {"auto", "manual", "never"}},
    {"fault_tolerance", "quorum_mode", {"async", "sync"}}, // when given ("" = the kind's default)
    {"fault_tolerance", "detection", {"connection", "heartbeat"}},
    {"fault_tolerance", "heal_transport", healTransportNames()},
    {"chaos", "actions", faultActionNames(/*chaos_only=*/true)},
    {"steps",
     "highlight",
     {"topology", "timeline", "memory", "metrics", "events", "controls", "narration", "fsdp", "ddp",
      "pipeline", "quorum", "diloco", "bandwidth", "swarm"}},
};

std::string formatNumber(double value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

} // namespace

std::string quotedList(const std::vector<std::string>& names) {
    std::string list;
    for (const std::string& name : names)
        list += (list.empty() ? "\"" : ", \"") + name + "\"";
    return list;
}

std::string prefix(const std::string& table, const std::string& key) {
    return tableLabel(table) + " " + key + ": ";
}

std::string tableLabel(const std::string& table) {
    if (table == "checks.baseline")
        return "[[checks]] baseline";
    return table == "faults" || table == "steps" || table == "checks" ? "[[" + table + "]]"
                                                                      : "[" + table + "]";
}

std::string checkInt(const std::string& table, const std::string& key, int64_t value) {
    for (const IntRule& rule : kIntRules) {
        if (table != rule.table || key != rule.key)
            continue;
        if (value >= rule.min && value <= rule.max)
            return "";
        const bool unbounded = rule.max == kIntMax || rule.max == INT64_MAX;
        std::string range = unbounded && value < rule.min
                                ? ">= " + std::to_string(rule.min)
                                : "in " + std::to_string(rule.min) + ".." + std::to_string(rule.max);
        return prefix(table, key) + "expected an integer " + range + ", got " + std::to_string(value);
    }
    return "";
}

std::string checkFloat(const std::string& table, const std::string& key, double value) {
    for (const FloatRule& rule : kFloatRules) {
        if (table != rule.table || key != rule.key)
            continue;
        if (!std::isfinite(value))
            return prefix(table, key) + "expected a finite number, got " + formatNumber(value);
        if (table == "network" && key == "bandwidth_mbit_s" && value > 0.0 && value < 0.001)
            return prefix(table, key) + "expected 0 (no cap) or at least 0.001 (1 kbit/s), got " +
                   formatNumber(value);
        const bool aboveMin = rule.minInclusive ? value >= rule.min : value > rule.min;
        const bool belowMax = !rule.hasMax || value < rule.max;
        if (aboveMin && belowMax)
            return "";
        std::string range;
        if (rule.hasMax)
            range = std::string("in ") + (rule.minInclusive ? "[" : "(") + formatNumber(rule.min) + ", " +
                    formatNumber(rule.max) + ")";
        else
            range = std::string(rule.minInclusive ? ">= " : "> ") + formatNumber(rule.min);
        return prefix(table, key) + "expected a number " + range + ", got " + formatNumber(value);
    }
    return "";
}

std::string checkString(const std::string& table, const std::string& key, const std::string& value) {
    if (table == "scenario" && key == "name" && value.empty())
        return prefix(table, key) + "expected a non-empty string";
    if (table == "steps" && key == "text" && value.empty())
        return prefix(table, key) + "expected a non-empty string (what the presenter says at this step)";
    if (table == "steps" && key == "highlight" && value.empty())
        return ""; // no highlight
    if (table == "steps" && key == "until") {
        NarrationCondition condition;
        if (parseNarrationCondition(value, condition))
            return "";
        return prefix(table, key) + "expected one of " + narrationConditionForms() + ", got \"" + value +
               "\"";
    }
    for (const EnumRule& rule : kEnumRules) {
        if (table != rule.table || key != rule.key)
            continue;
        for (const std::string& allowed : rule.allowed)
            if (value == allowed)
                return "";
        return prefix(table, key) + (rule.allowed.size() == 1 ? "expected " : "expected one of ") +
               quotedList(rule.allowed) + ", got \"" + value + "\"";
    }
    return "";
}

} // namespace dt::scenario_rules

namespace dt {

const char* narrationConditionForms() {
    return "\"\" (no wait), \"step >= N\", \"first all-reduce ends\", \"first all-gather ends\", \"first "
           "reduce-scatter ends\", \"rank R dies\", \"rank R heals\", \"new quorum forms\", \"first outer "
           "sync "
           "ends\", \"a collective hangs\", \"run finished\"";
}

bool parseNarrationCondition(const std::string& text, NarrationCondition& out) {
    // Split into words; ">=" is its own word even when written "step>=3".
    std::string spaced;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text.compare(i, 2, ">=") == 0) {
            spaced += " >= ";
            ++i;
        } else {
            spaced += text[i];
        }
    }
    std::istringstream in(spaced);
    std::vector<std::string> words;
    for (std::string word; in >> word;)
        words.push_back(word);
    // A non-negative integer that fits an int, digits only.
    auto number = [](const std::string& word, int& value) {
        if (word.empty() || word.size() > 9)
            return false;
        for (char c : word)
            if (c < '0' || c > '9')
                return false;
        value = std::stoi(word);
        return true;
    };
    NarrationCondition c;
    using Kind = NarrationCondition::Kind;
    if (words.empty())
        c.kind = Kind::None;
    else if (words.size() == 3 && words[0] == "step" && words[1] == ">=" && number(words[2], c.value))
        c.kind = Kind::StepAtLeast;
    else if (words == std::vector<std::string>{"first", "all-reduce", "ends"})
        c.kind = Kind::FirstAllReduceEnds;
    else if (words == std::vector<std::string>{"first", "all-gather", "ends"})
        c.kind = Kind::FirstAllGatherEnds;
    else if (words == std::vector<std::string>{"first", "reduce-scatter", "ends"})
        c.kind = Kind::FirstReduceScatterEnds;
    else if (words.size() == 3 && words[0] == "rank" && words[2] == "dies" && number(words[1], c.value))
        c.kind = Kind::RankDies;
    else if (words.size() == 3 && words[0] == "rank" && words[2] == "heals" && number(words[1], c.value))
        c.kind = Kind::RankHeals;
    else if (words == std::vector<std::string>{"new", "quorum", "forms"})
        c.kind = Kind::NewQuorumForms;
    else if (words == std::vector<std::string>{"first", "outer", "sync", "ends"})
        c.kind = Kind::FirstOuterSyncEnds;
    else if (words == std::vector<std::string>{"a", "collective", "hangs"})
        c.kind = Kind::CollectiveHangs;
    else if (words == std::vector<std::string>{"run", "finished"})
        c.kind = Kind::RunFinished;
    else
        return false;
    out = c;
    return true;
}

} // namespace dt
