// scenario_keys.hpp: the tables a scenario file may have and the keys each
// table accepts (anything else is refused with the list of what is allowed).
// Private to the scenario module: read by the TOML parser (scenario_parse.cpp).
#pragma once

#include "dtlab/strategy_kind.hpp"

#include <string>
#include <vector>

namespace dt::scenario_keys {

inline const std::vector<std::string> kTables = {
    "scenario", "topology",  "model",   "data",        "strategy",        "optimizer",
    "run",      "telemetry", "faults",  "steps",       "fault_tolerance", "chaos",
    "diloco",   "swarm",     "network", "collectives", "checks"};
inline const std::vector<std::string> kScenarioKeys = {"name", "description"};
inline const std::vector<std::string> kTopologyKeys = {"ranks", "replicas", "stages", "backend"};
inline const std::vector<std::string> kCollectivesKeys = {"ops", "sizes_kb", "backends", "repeats"};
inline const std::vector<std::string> kModelKeys = {"kind",     "vocab",           "context",   "d_model",
                                                    "layers",   "heads",           "mlp_ratio", "hidden",
                                                    "quantize", "quantize_weights"};
inline const std::vector<std::string> kDataKeys = {"source", "path", "batch_per_rank"};
inline const std::vector<std::string> kStrategyKeys = {"kind",
                                                       "bucket_mb",
                                                       "overlap",
                                                       "forward_prefetch",
                                                       "backward_prefetch",
                                                       "prefetch_limit",
                                                       "microbatches",
                                                       "sync_every_microbatch",
                                                       "activation_checkpointing",
                                                       "schedule",
                                                       "chunks_per_rank",
                                                       "slow_stage",
                                                       "slow_stage_ms",
                                                       "offload_optimizer",
                                                       "pipeline_data_parallel"};
// [strategy] keys that mean something for some kinds only: on another kind
// the parser refuses them at their line rather than ignore them.
// (pipeline_data_parallel and offload_optimizer are checked in
// scenario_validate.cpp: their rule involves other tables.)
struct KindScopedKey {
    const char* key;
    bool (*applies)(StrategyKind);
    const char* kinds; // for the message: "kind = \"ddp\" (...)"
};
inline bool gathersParameters(StrategyKind k) {
    return strategyTraits(k).shards_parameters;
}
inline bool runsStages(StrategyKind k) {
    return strategyTraits(k).uses_stages;
}
inline bool bucketsGradients(StrategyKind k) {
    return k == StrategyKind::Ddp;
}
inline const KindScopedKey kKindScopedStrategyKeys[] = {
    {"bucket_mb", bucketsGradients, "kind = \"ddp\" (its gradient buckets)"},
    {"overlap", bucketsGradients, "kind = \"ddp\" (bucket all-reduces during backward)"},
    {"forward_prefetch", gathersParameters, "kind = \"fsdp\" or \"hsdp\" (parameters gathered before use)"},
    {"backward_prefetch", gathersParameters, "kind = \"fsdp\" or \"hsdp\" (parameters gathered before use)"},
    {"prefetch_limit", gathersParameters, "kind = \"fsdp\" or \"hsdp\" (parameters gathered before use)"},
    {"schedule", runsStages, "kind = \"pipeline\""},
    {"chunks_per_rank", runsStages, "kind = \"pipeline\""},
    {"slow_stage", runsStages, "kind = \"pipeline\""},
    {"slow_stage_ms", runsStages, "kind = \"pipeline\""},
};

inline const std::vector<std::string> kOptimizerKeys = {"kind",  "lr",  "beta1",
                                                        "beta2", "eps", "weight_decay"};
inline const std::vector<std::string> kRunKeys = {"steps",         "seed",           "timeout_s",
                                                  "step_delay_ms", "checkpoint_dir", "checkpoint_every",
                                                  "resume_from",   "eval_every"};
inline const std::vector<std::string> kTelemetryKeys = {"enabled", "queue_capacity"};
inline const std::vector<std::string> kFaultKeys = {"action", "rank",       "step",    "when",
                                                    "at_s",   "duration_s", "delay_ms"};
inline const std::vector<std::string> kFaultToleranceKeys = {"enabled",
                                                             "lighthouse",
                                                             "min_replicas",
                                                             "join_timeout_ms",
                                                             "heartbeat_interval_ms",
                                                             "heartbeat_timeout_ms",
                                                             "quorum_timeout_ms",
                                                             "collective_timeout_ms",
                                                             "restart",
                                                             "detection",
                                                             "restart_delay_ms",
                                                             "max_restarts_per_minute",
                                                             "max_retries",
                                                             "quorum_mode",
                                                             "init_sync",
                                                             "heal_transport",
                                                             "heal_chunks"};
inline const std::vector<std::string> kChaosKeys = {"enabled", "seed",    "mean_interval_s", "actions",
                                                    "hang_s",  "slow_ms", "slow_s"};
inline const std::vector<std::string> kDilocoKeys = {"inner_steps", "outer_lr",       "outer_momentum",
                                                     "nesterov",    "fragments",      "sync_delay",
                                                     "alpha",       "pseudo_gradient"};
inline const std::vector<std::string> kSwarmKeys = {
    "trainers",           "servers_per_stage", "routing",         "server_batch",
    "outer_every",        "outer_lr",          "outer_momentum",  "join_timeout_ms",
    "request_timeout_ms", "restart",           "restart_delay_ms"};
inline const std::vector<std::string> kNetworkKeys = {"bandwidth_mbit_s", "latency_ms"};
inline const std::vector<std::string> kStepKeys = {"text",  "highlight", "until",
                                                   "pause", "expect",    "question"};
inline const std::vector<std::string> kQuestionKeys = {
    "ask", "answer", "unit", "tolerance", "choices", "explain", "formula_answer", "typical_mistake"};
inline const std::vector<std::string> kCheckKeys = {"claim", "expect", "baseline"};
inline const std::vector<std::string> kBaselineKeys = {
    "strategy",          "microbatches",           "schedule",       "overlap", "activation_checkpointing",
    "offload_optimizer", "pipeline_data_parallel", "pseudo_gradient"};

} // namespace dt::scenario_keys
