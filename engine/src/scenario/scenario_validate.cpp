// scenario_validate.cpp: the cross-field rules of a scenario (shared with the TOML
// parser through scenario_rules.hpp) and validateScenario, which re-checks a whole
// scenario after command-line overrides; the baseline runs of closing checks.
#include "data/data_files.hpp"
#include "dtlab/diloco_schedule.hpp"
#include "dtlab/sharding_theory.hpp"
#include "scenario/scenario_rules.hpp"

#include "dtlab/pipeline_schedule.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <filesystem>
#include <sstream>

namespace dt::scenario_rules {

// [strategy] kind = "swarm": the layout, the model and what SWARM does not do yet.
static std::optional<Problem> swarmProblem(const Scenario& s) {
    const SwarmConfig& w = s.swarm;
    const int stages = s.topology.stages;
    const int wanted = w.trainers + stages * w.servers_per_stage;
    if (s.topology.ranks != wanted)
        return Problem{"topology",
                       {"ranks", "stages"},
                       -1,
                       "[topology] ranks " + std::to_string(s.topology.ranks) +
                           " does not match the swarm: " + std::to_string(w.trainers) + " trainers + " +
                           std::to_string(stages) + " stages x " + std::to_string(w.servers_per_stage) +
                           " servers = " + std::to_string(wanted) + " ranks"};
    if (s.model.kind != "tiny_gpt")
        return Problem{
            "strategy",
            {"kind"},
            -1,
            "[strategy] kind = \"swarm\" needs [model] kind = \"tiny_gpt\" (its blocks are cut into "
            "stages)"};
    if (s.model.layers % stages != 0)
        return Problem{"model",
                       {"layers"},
                       -1,
                       "[model] layers " + std::to_string(s.model.layers) + " cannot be cut into " +
                           std::to_string(stages) + " equal stages"};
    { // DiLoCo rounds and the param mirror go through the Session's store (16 MiB a value, 256 MiB in all)
        const int64_t stage_params = unitLayout(s.model).total() / std::max(1, stages);
        const int64_t mirror = 8 * stage_params,
                      per_round = int64_t(stages) * (4 * w.servers_per_stage + 8) * stage_params;
        if (mirror + 64 > (int64_t(16) << 20) || per_round > (int64_t(192) << 20))
            return Problem{
                "model",
                {"d_model", "layers"},
                -1,
                "[model] is too large for a swarm's param mirror in the Session's store: a stage of " +
                    std::to_string(stage_params) + " parameters needs " + std::to_string(mirror >> 20) +
                    " MiB a mirror and " + std::to_string(per_round >> 20) +
                    " MiB a round (at most 16 and 192); use a smaller model or more stages"};
    }
    if (s.data.batch_per_rank % s.strategy.microbatches != 0)
        return Problem{"strategy",
                       {"microbatches"},
                       -1,
                       "[strategy] microbatches " + std::to_string(s.strategy.microbatches) +
                           " does not divide a trainer's batch ([data] batch_per_rank " +
                           std::to_string(s.data.batch_per_rank) + ")"};
    // Not yet: say so rather than run something else.
    const char* missing = s.fault_tolerance.enabled ? "[fault_tolerance] (a swarm has no quorum: its servers "
                                                      "are restarted by [swarm] restart)"
                          : s.model.quantize != "none"
                              ? "[model] quantize (a server's backward recomputes the forward, which would "
                                "move the activation observers twice)"
                          : s.strategy.activation_checkpointing ? "[strategy] activation_checkpointing"
                          : !s.run.checkpoint_dir.empty() || !s.run.resume_from.empty()
                              ? "checkpoints ([run] checkpoint_dir, resume_from)"
                          : s.run.eval_every > 0         ? "[run] eval_every"
                          : s.topology.backend != "gloo" ? "[topology] backend = \"mpi\" (a swarm talks over "
                                                           "its own TCP calls, and MPI aborts on a death)"
                                                         : nullptr;
    if (missing)
        return Problem{"strategy",
                       {"kind"},
                       -1,
                       "[strategy] kind = \"swarm\" is not supported with " + std::string(missing) + " yet"};
    for (size_t i = 0; i < s.faults.size(); ++i)
        if (s.faults[i].when == FaultWhen::AllReduce)
            return Problem{"faults",
                           {"when", "action"},
                           static_cast<int>(i),
                           "[[faults]] when = \"allreduce\" (the default) never fires under swarm: it has no "
                           "all-reduce; write when = \"step\" (a server's step is the step of the trainer it "
                           "serves) or when = \"time\""};
    return std::nullopt;
}

std::optional<Problem> findCrossFieldProblem(const Scenario& s) {
    const ModelConfig& m = s.model;
    if (m.hidden.empty())
        return Problem{
            "model", {"hidden"}, -1, "[model] hidden: expected at least one layer width, got an empty array"};
    if (m.heads > 0 && m.d_model % m.heads != 0)
        return Problem{"model",
                       {"d_model", "heads"},
                       -1,
                       "[model] d_model " + std::to_string(m.d_model) + " is not divisible by heads " +
                           std::to_string(m.heads) + " (each head gets d_model / heads dimensions)"};

    // The model must fit its data: what a rank would otherwise only find out in its first step.
    const bool text = s.data.source == "fortunes";
    if (m.kind == "tiny_gpt" && !text)
        return Problem{
            "data",
            {"source", "kind"},
            -1,
            "[data] source = \"" + s.data.source +
                "\" gives images and labels, but [model] kind = \"tiny_gpt\" reads text tokens: use "
                "source = \"fortunes\", or [model] kind = \"mlp\""};
    if (m.kind == "mlp" && text)
        return Problem{
            "data",
            {"source", "kind"},
            -1,
            "[data] source = \"fortunes\" gives text tokens, but [model] kind = \"mlp\" classifies "
            "28 x 28 images: use source = \"fashion_mnist\", or [model] kind = \"tiny_gpt\""};
    if (m.kind == "tiny_gpt" && text && m.vocab < kFortunesTokenCount)
        return Problem{
            "model",
            {"vocab"},
            -1,
            "[model] vocab = " + std::to_string(m.vocab) + " is smaller than the " +
                std::to_string(kFortunesTokenCount) +
                " token values of the fortunes text (each byte & 0x7F is a token, 0..127): set vocab = " +
                std::to_string(kFortunesTokenCount) + " or more"};

    if (!s.data.path.empty()) {
        namespace fs = std::filesystem;
        std::error_code ec;
        const fs::path path(s.data.path);
        if (!fs::exists(path, ec))
            return Problem{"data", {"path"}, -1, "[data] path: '" + s.data.path + "' does not exist"};
        if (s.data.source == "fashion_mnist" && !fs::is_directory(path, ec))
            return Problem{"data",
                           {"path"},
                           -1,
                           "[data] path: '" + s.data.path +
                               "' is not a directory (fashion_mnist needs the folder holding the IDX files)"};
    }
    { // The files themselves (the default location only when it is installed: a rank says how to install it).
        const std::string path = !s.data.path.empty() ? s.data.path
                                 : text               ? defaultFortunesPath()
                                                      : defaultFashionMnistPath();
        std::error_code ec;
        if (!s.data.path.empty() || std::filesystem::exists(path, ec)) {
            if (text) {
                if (auto problem = fortunesProblem(path, m.context))
                    return Problem{"data", {"path", "source"}, -1, "[data] " + *problem};
            } else {
                try {
                    (void)loadFashionMnistFiles(path);
                } catch (const UsageError& e) {
                    return Problem{"data", {"path", "source"}, -1, std::string("[data] ") + e.what()};
                }
            }
        }
    }

    const int ranks = s.topology.ranks;
    const int steps = s.run.steps;
    const StrategyConfig& st = s.strategy;
    const int replicas = s.topology.replicas;
    const StrategyTraits& traits = strategyTraits(st.kind);
    const std::string kind_name = traits.name;
    const bool ft_groups = s.fault_tolerance.enabled &&
                           (traits.shards_optimizer || traits.uses_stages || st.kind == StrategyKind::Ddp) &&
                           st.kind != StrategyKind::Hsdp;
    if (replicas > 1 && st.kind != StrategyKind::Hsdp && !ft_groups)
        return Problem{"topology",
                       {"replicas"},
                       -1,
                       "[topology] replicas = " + std::to_string(replicas) +
                           " needs [strategy] kind = \"hsdp\", or ddp/zero1/zero2/fsdp/pipeline under "
                           "[fault_tolerance] (" +
                           kind_name + " uses one group of all ranks)"};
    if (ranks % replicas != 0)
        return Problem{"topology",
                       {"replicas", "ranks"},
                       -1,
                       "[topology] ranks " + std::to_string(ranks) + " is not divisible by replicas " +
                           std::to_string(replicas) +
                           " (every replica group shards the model over the same number of ranks)"};
    if (s.model.quantize != "none" && (s.model.kind != "tiny_gpt" || st.kind == StrategyKind::TensorParallel))
        return Problem{"model",
                       {"quantize"},
                       -1,
                       "[model] quantize = \"" + s.model.quantize +
                           "\" fake-quantizes tiny_gpt's Linear layers; not " +
                           (s.model.kind != "tiny_gpt" ? "model kind \"" + s.model.kind + "\""
                                                       : std::string("tensor_parallel's split layers")) +
                           " (remove the key)"};
    if (s.model.quantize != "none") {
        // Not yet: the recompute would move the observers a second time; the
        // zero-bubble tape's weight gradient has no clip mask; the observers'
        // min and max are in no checkpoint or heal.
        const char* why =
            st.activation_checkpointing ? "activation_checkpointing (a recompute would move the "
                                          "activation observers a second time)"
            : splitsBackward(s)         ? "the zero-bubble schedule (its weight-gradient tape has no "
                                          "straight-through clip mask)"
            : s.fault_tolerance.enabled ? "[fault_tolerance] (the observers' min and max are not "
                                          "healed)"
            : !s.run.checkpoint_dir.empty() || !s.run.resume_from.empty()
                ? "checkpoints (the observers' min and max are not saved)"
                : nullptr;
        if (why)
            return Problem{"model",
                           {"quantize"},
                           -1,
                           "[model] quantize is not supported with " + std::string(why) + " yet"};
    }
    if (s.run.eval_every > 0 && (!traits.trains_model || traits.shards_parameters || traits.uses_stages ||
                                 st.kind == StrategyKind::TensorParallel || s.fault_tolerance.enabled))
        return Problem{"run",
                       {"eval_every"},
                       -1,
                       "[run] eval_every needs the whole model on rank 0 and the plain training loop: ddp, "
                       "zero1, zero2 or diloco without [fault_tolerance]; not " +
                           kind_name + (s.fault_tolerance.enabled ? " under [fault_tolerance]" : "")};
    const int stages = s.topology.stages;
    if (traits.uses_stages) {
        if (ranks % stages != 0)
            return Problem{"topology",
                           {"stages", "ranks"},
                           -1,
                           "[topology] ranks " + std::to_string(ranks) + " is not divisible by stages " +
                               std::to_string(stages) + " (ranks / stages pipelines run side by side)"};
        if (s.model.kind != "tiny_gpt")
            return Problem{"strategy",
                           {"kind"},
                           -1,
                           "[strategy] kind = \"pipeline\" needs [model] kind = \"tiny_gpt\" (its blocks are "
                           "cut into stages)"};
        const PipelineShape shape = pipelineShapeOf(s);
        const std::string shape_problem = pipelineShapeProblem(st.schedule, shape);
        if (!shape_problem.empty())
            return Problem{"strategy",
                           {"schedule", "chunks_per_rank", "microbatches"},
                           -1,
                           "[strategy] " + shape_problem};
        if (s.model.layers % shape.chunks() != 0)
            return Problem{"model",
                           {"layers"},
                           -1,
                           "[model] layers " + std::to_string(s.model.layers) + " cannot be cut into " +
                               std::to_string(shape.chunks()) + " equal chunks (stages x chunks_per_rank)"};
        if (st.slow_stage >= stages)
            return Problem{"strategy",
                           {"slow_stage"},
                           -1,
                           "[strategy] slow_stage " + std::to_string(st.slow_stage) +
                               " does not exist: the pipeline has " + std::to_string(stages) +
                               " stages (0.." + std::to_string(stages - 1) + ")"};
        if (st.activation_checkpointing)
            return Problem{
                "strategy",
                {"activation_checkpointing"},
                -1,
                "[strategy] activation_checkpointing is not supported with kind = \"pipeline\" yet"};
        if (st.pipeline_data_parallel != "ddp" && ranks / stages < 2)
            return Problem{
                "strategy",
                {"pipeline_data_parallel"},
                -1,
                "[strategy] pipeline_data_parallel = \"" + st.pipeline_data_parallel +
                    "\" shards each stage over the pipelines side by side, and [topology] ranks / stages = " +
                    std::to_string(ranks / stages) +
                    " is one pipeline: raise ranks to a multiple of stages (e.g. ranks = " +
                    std::to_string(2 * stages) + ")"};
    } else if (stages > 1 && st.kind != StrategyKind::Swarm) {
        return Problem{"topology",
                       {"stages"},
                       -1,
                       "[topology] stages = " + std::to_string(stages) +
                           " needs [strategy] kind = \"pipeline\" or \"swarm\""};
    }
    if (st.kind == StrategyKind::Swarm) {
        if (auto problem = swarmProblem(s))
            return problem;
    }
    if (st.kind == StrategyKind::TensorParallel) {
        if (s.model.kind != "tiny_gpt")
            return Problem{
                "strategy",
                {"kind"},
                -1,
                "[strategy] kind = \"tensor_parallel\" needs [model] kind = \"tiny_gpt\" (its attention "
                "heads and MLP columns are split over the ranks)"};
        if (s.model.heads % ranks != 0)
            return Problem{"model",
                           {"heads"},
                           -1,
                           "[model] heads " + std::to_string(s.model.heads) +
                               " is not divisible by [topology] ranks " + std::to_string(ranks) +
                               " (tensor_parallel gives every rank heads / ranks attention heads)"};
        if ((s.model.mlp_ratio * s.model.d_model) % ranks != 0)
            return Problem{
                "model",
                {"mlp_ratio", "d_model"},
                -1,
                "[model] mlp_ratio x d_model = " + std::to_string(s.model.mlp_ratio * s.model.d_model) +
                    " is not divisible by [topology] ranks " + std::to_string(ranks) +
                    " (tensor_parallel gives every rank an equal slice of the MLP's columns)"};
        if (st.activation_checkpointing)
            return Problem{
                "strategy",
                {"activation_checkpointing"},
                -1,
                "[strategy] activation_checkpointing is not supported with kind = \"tensor_parallel\" yet"};
    }
    if (st.pipeline_data_parallel != "ddp" && !traits.uses_stages)
        return Problem{
            "strategy",
            {"pipeline_data_parallel"},
            -1,
            "[strategy] pipeline_data_parallel is for kind = \"pipeline\" (how pipelines side by side keep "
            "a stage equal); " +
                kind_name + " has no stages"};
    if (st.offload_optimizer && !traits.shards_optimizer)
        return Problem{
            "strategy",
            {"offload_optimizer"},
            -1,
            "[strategy] offload_optimizer needs a sharded kind (zero1, zero2, fsdp or hsdp): ZeRO-Offload "
            "moves each rank's optimizer shard to the host; " +
                kind_name + " is not sharded that way"};
    if (s.data.batch_per_rank % st.microbatches != 0)
        return Problem{"strategy",
                       {"microbatches"},
                       -1,
                       "[strategy] microbatches " + std::to_string(st.microbatches) +
                           " does not divide [data] batch_per_rank " + std::to_string(s.data.batch_per_rank) +
                           " (each microbatch gets batch_per_rank / microbatches samples)"};
    if (st.activation_checkpointing && s.model.kind != "tiny_gpt")
        return Problem{"strategy",
                       {"activation_checkpointing"},
                       -1,
                       "[strategy] activation_checkpointing needs [model] kind = \"tiny_gpt\" (its "
                       "transformer blocks are the units recomputed)"};
    if (s.optimizer.kind == "sgd" && st.kind != StrategyKind::Ddp && st.kind != StrategyKind::Diloco)
        return Problem{"optimizer",
                       {"kind"},
                       -1,
                       "[optimizer] kind = \"sgd\" works with [strategy] kind = \"ddp\" or \"diloco\"; " +
                           kind_name + " uses AdamW (\"adamw\")"};
    if (st.kind == StrategyKind::Diloco) {
        const DilocoConfig& d = s.diloco;
        if (d.inner_steps % d.fragments != 0)
            return Problem{"diloco",
                           {"fragments", "inner_steps"},
                           -1,
                           "[diloco] fragments " + std::to_string(d.fragments) +
                               " does not divide inner_steps " + std::to_string(d.inner_steps) +
                               " (the fragments sync inner_steps / fragments steps apart)"};
        if (d.sync_delay >= d.inner_steps / d.fragments)
            return Problem{"diloco",
                           {"sync_delay"},
                           -1,
                           "[diloco] sync_delay " + std::to_string(d.sync_delay) +
                               " must be below inner_steps / fragments = " +
                               std::to_string(d.inner_steps / d.fragments) +
                               " (a pseudo-gradient is applied before the next fragment is sent)"};
        const int units = s.model.kind == "tiny_gpt" ? s.model.layers : int(s.model.hidden.size()) + 1;
        if (d.fragments > units)
            return Problem{"diloco",
                           {"fragments"},
                           -1,
                           "[diloco] fragments " + std::to_string(d.fragments) +
                               " is more than the model's " + std::to_string(units) +
                               (s.model.kind == "tiny_gpt" ? " blocks" : " layers") +
                               " (a fragment is a group of blocks)"};
        if (st.microbatches > 1 && !st.sync_every_microbatch)
            return Problem{"strategy",
                           {"sync_every_microbatch"},
                           -1,
                           "[strategy] sync_every_microbatch has no meaning under diloco (inner steps never "
                           "communicate)"};
    }
    const bool sharded = traits.shards_optimizer; // writes sharded checkpoints
    const bool wants_checkpoints = !s.run.checkpoint_dir.empty() || !s.run.resume_from.empty();
    // Under the quorum Streaming DiLoCo saves at the end of a round, when nothing is in flight.
    if (st.kind == StrategyKind::Diloco && wants_checkpoints && s.diloco.sync_delay > 0 &&
        !dilocoStreamsUnderQuorum(s))
        return Problem{
            "run",
            {"checkpoint_dir", "resume_from"},
            -1,
            "[run] DiLoCo checkpoints need [diloco] sync_delay = 0 (with a delay a pseudo-gradient is always "
            "in flight, and a checkpoint would miss it)"};
    if (!sharded && st.kind != StrategyKind::Diloco && !s.fault_tolerance.enabled &&
        (!s.run.checkpoint_dir.empty() || !s.run.resume_from.empty()))
        return Problem{"run",
                       {"checkpoint_dir", "resume_from"},
                       -1,
                       "[run] checkpoints need [strategy] kind = zero1, zero2, fsdp or hsdp (sharded), "
                       "diloco, or ddp or pipeline under "
                       "[fault_tolerance] (replica and stage checkpoints); not " +
                           kind_name + " on its own"};
    if (!s.run.checkpoint_dir.empty() && s.run.resume_from.empty()) {
        // A checkpoint is never overwritten: refuse before anything starts.
        // (When resuming, the steps saved depend on the checkpoint chosen:
        // dtrun and the Session check then, checkpoint.hpp.)
        std::error_code ec;
        for (int step = 0; step < steps; ++step) {
            const bool saved =
                step == steps - 1 || (s.run.checkpoint_every > 0 && (step + 1) % s.run.checkpoint_every == 0);
            const std::filesystem::path dir =
                std::filesystem::path(s.run.checkpoint_dir) / ("step-" + std::to_string(step));
            if (saved && std::filesystem::exists(dir, ec))
                return Problem{"run",
                               {"checkpoint_dir"},
                               -1,
                               "[run] checkpoint_dir: this run would save '" + dir.string() +
                                   "', which exists already (checkpoints are never overwritten: choose "
                                   "another directory)"};
        }
    }
    if (!s.run.resume_from.empty()) {
        std::error_code ec;
        if (!std::filesystem::is_directory(s.run.resume_from, ec))
            return Problem{"run",
                           {"resume_from"},
                           -1,
                           "[run] resume_from: '" + s.run.resume_from +
                               "' is not a directory (expected one checkpoint, DIR/step-<S>, or a "
                               "checkpoint_dir DIR: its newest valid step)"};
    }
    if (st.kind == StrategyKind::Collectives) {
        const CollectivesConfig& c = s.collectives;
        if (c.ops.empty() || c.sizes_kb.empty() || c.backends.empty())
            return Problem{"collectives",
                           {"ops", "sizes_kb", "backends"},
                           -1,
                           "[collectives] ops, sizes_kb and backends each need at least one entry"};
        for (size_t i = 0; i < c.backends.size(); ++i)
            for (size_t j = 0; j < i; ++j)
                if (c.backends[i] == c.backends[j])
                    return Problem{"collectives",
                                   {"backends"},
                                   -1,
                                   "[collectives] backends names \"" + c.backends[i] + "\" twice"};
        if (size_t(steps) > c.sizes_kb.size())
            return Problem{"run",
                           {"steps"},
                           -1,
                           "[run] steps = " + std::to_string(steps) +
                               " but [collectives] sizes_kb has only " + std::to_string(c.sizes_kb.size()) +
                               " sizes (a collectives run measures one size per step)"};
        if (s.fault_tolerance.enabled)
            return Problem{
                "fault_tolerance",
                {"enabled"},
                -1,
                "[fault_tolerance] trains a model; [strategy] kind = \"collectives\" only times collectives"};
    }
    const FaultToleranceConfig& ft = s.fault_tolerance;
    if (ft.enabled && s.topology.backend == "mpi")
        return Problem{
            "topology",
            {"backend"},
            -1,
            "[topology] backend = \"mpi\" cannot be fault tolerant: when one MPI rank dies, Open MPI aborts "
            "the whole job (errors are fatal and a communicator cannot lose a member), so the replica "
            "dimension under the quorum must use \"gloo\", whose groups are rebuilt for every new quorum. "
            "Inside a replica group too, a failed rank's group is restarted as a new set of processes, which "
            "an MPI job cannot take in: set backend = \"gloo\""};
    if (ft.enabled) {
        if (!strategyTraits(s.strategy.kind).fault_tolerant)
            return Problem{
                "fault_tolerance",
                {"enabled"},
                -1,
                "[fault_tolerance] works with [strategy] kind = \"ddp\" or \"diloco\" (each rank is one "
                "replica group), \"zero1\", \"zero2\", \"fsdp\" (sharded inside [topology] replicas "
                "groups) or \"pipeline\" (each pipeline is one replica group); this scenario uses \"" +
                    std::string(strategyKindName(s.strategy.kind)) + "\"" +
                    (s.strategy.kind == StrategyKind::Hsdp
                         ? " (under the quorum, write kind = \"fsdp\" with [topology] replicas: the quorum "
                           "manages the replicate dimension, as TorchFT over FSDP does)"
                         : "")};
        if (s.strategy.kind == StrategyKind::Diloco && ft.init_sync)
            return Problem{"fault_tolerance",
                           {"init_sync"},
                           -1,
                           "[fault_tolerance] init_sync has no effect with diloco: its replicas report inner "
                           "steps, so the first outer sync is never at step 0 (remove the key)"};
        if (s.strategy.kind == StrategyKind::Diloco && s.diloco.inner_steps % s.diloco.fragments != 0)
            return Problem{
                "diloco",
                {"inner_steps", "fragments"},
                -1,
                "[diloco] inner_steps " + std::to_string(s.diloco.inner_steps) +
                    " is not a multiple of fragments " + std::to_string(s.diloco.fragments) +
                    ": under [fault_tolerance] one fragment's round comes every inner_steps / "
                    "fragments steps, as TorchFT requires (sync_every divisible by the fragments)"};
        if (strategyTraits(s.strategy.kind).uses_stages) {
            // A group is one pipeline, or (with [topology] replicas) G / stages
            // pipelines side by side that keep their stages equal inside it.
            const int G = ftGroupSize(s), stages = std::max(1, s.topology.stages);
            if (G % stages != 0)
                return Problem{"topology",
                               {"replicas", "stages"},
                               -1,
                               "[topology] a replica group of " + std::to_string(G) +
                                   " ranks (ranks / replicas) "
                                   "is not a whole number of pipelines of " +
                                   std::to_string(stages) +
                                   " stages: make ranks / replicas a multiple of stages"};
            if (s.strategy.pipeline_data_parallel != "ddp" && G / stages < 2)
                return Problem{
                    "strategy",
                    {"pipeline_data_parallel"},
                    -1,
                    "[strategy] pipeline_data_parallel = \"" + s.strategy.pipeline_data_parallel +
                        "\" shards each stage over the pipelines inside a replica group, and each group is "
                        "one pipeline: set [topology] replicas so that ranks / replicas is a multiple of "
                        "stages of at least 2 pipelines (the quorum averages each shard across the "
                        "groups, TorchFT's replicate dimension)"};
        }
        if (!ft.lighthouse.empty() && ft.detection == "heartbeat")
            return Problem{
                "fault_tolerance",
                {"detection"},
                -1,
                "[fault_tolerance] detection is the rule of the Session's own lighthouse; with "
                "lighthouse = \"" +
                    ft.lighthouse +
                    "\" start that one with `dtrun lighthouse --detection heartbeat` (and remove the key)"};
        if (!ft.quorum_mode.empty() && ft.quorum_mode != "async" && ft.quorum_mode != "sync")
            return Problem{"fault_tolerance",
                           {"quorum_mode"},
                           -1,
                           "[fault_tolerance] quorum_mode: expected \"async\" or \"sync\", got \"" +
                               ft.quorum_mode + "\""};
        if (ft.heal_chunks > 0 && healTransportOf(ft) != HealTransport::Http)
            return Problem{"fault_tolerance",
                           {"heal_chunks"},
                           -1,
                           "[fault_tolerance] heal_chunks splits the HTTP heal into parallel fetches; "
                           "with heal_transport = \"" +
                               ft.heal_transport +
                               "\" the state goes over the process group (write heal_transport = "
                               "\"http\", or remove heal_chunks)"};
        if (s.strategy.kind == StrategyKind::Diloco && ft.quorum_mode == "async")
            return Problem{
                "fault_tolerance",
                {"quorum_mode"},
                -1,
                "[fault_tolerance] quorum_mode = \"async\" does not apply to diloco: as TorchFT's "
                "DiLoCo (use_async_quorum=False), a replica heals before it takes part in an outer "
                "step (remove the key, or write \"sync\")"};
        if (s.optimizer.kind != "adamw")
            return Problem{"optimizer",
                           {"kind"},
                           -1,
                           "[fault_tolerance] replicas step with AdamW; [optimizer] kind = \"" +
                               s.optimizer.kind + "\" is not supported under fault tolerance"};
        if (ft.min_replicas > ftReplicaGroups(s))
            return Problem{"fault_tolerance",
                           {"min_replicas"},
                           -1,
                           "[fault_tolerance] min_replicas " + std::to_string(ft.min_replicas) +
                               " can never be met: the topology has " + std::to_string(ftReplicaGroups(s)) +
                               " replica groups"};
        if (ftGroupSize(s) > 1 && s.strategy.offload_optimizer)
            return Problem{"strategy",
                           {"offload_optimizer"},
                           -1,
                           "[strategy] offload_optimizer is not supported under [fault_tolerance] with "
                           "replica groups of several ranks yet"};
        if (ft.heartbeat_timeout_ms <= ft.heartbeat_interval_ms)
            return Problem{
                "fault_tolerance",
                {"heartbeat_timeout_ms"},
                -1,
                "[fault_tolerance] heartbeat_timeout_ms must be longer than heartbeat_interval_ms, or every "
                "replica times out between two heartbeats"};
    }
    if (s.chaos.enabled && !ft.enabled)
        return Problem{
            "chaos",
            {"enabled"},
            -1,
            "[chaos] needs [fault_tolerance] enabled = true: without it the first fault ends the run"};
    for (size_t i = 0; i < s.faults.size(); ++i) {
        const FaultConfig& f = s.faults[i];
        if (faultActionTraits(f.action).needs_fault_tolerance && !ft.enabled)
            return Problem{"faults",
                           {"action"},
                           static_cast<int>(i),
                           "[[faults]] action = \"" + std::string(faultActionName(f.action)) +
                               "\" needs [fault_tolerance] enabled = true"};
        if (f.rank >= ranks)
            return Problem{"faults",
                           {"rank"},
                           static_cast<int>(i),
                           "[[faults]] rank " + std::to_string(f.rank) +
                               " does not exist: the topology has " + std::to_string(ranks) +
                               (ranks == 1 ? " rank" : " ranks") + " (0.." + std::to_string(ranks - 1) + ")"};
        const StrategyKind kind = s.strategy.kind;
        // zero1, zero2 and fsdp reduce-scatter gradients; hsdp also all-reduces across replica groups.
        // Pipeline groups under the quorum: the only all-reduce is the manager's, across groups.
        const bool no_all_reduce = (strategyTraits(kind).shards_optimizer && kind != StrategyKind::Hsdp) ||
                                   (ft.enabled && strategyTraits(kind).uses_stages);
        if (f.when == FaultWhen::AllReduce && no_all_reduce)
            return Problem{
                "faults",
                {"when", "action"},
                static_cast<int>(i),
                "[[faults]] when = \"allreduce\" (the default) never fires under " + kind_name +
                    ": it has no all-reduce (gradients are reduce-scattered); write when = \"step\""};
        if (f.when == FaultWhen::AllReduce && kind == StrategyKind::Diloco && f.step < steps) {
            // Only an outer sync communicates (fp32: an all-reduce; quantized: an all-gather).
            const DilocoConfig& d = s.diloco;
            bool syncs = f.step == steps - 1 && d.pseudo_gradient == "fp32";
            for (int fragment = 0; fragment < d.fragments && !syncs; ++fragment)
                syncs = diloco::sendsAfterStep(f.step, fragment, d.inner_steps, d.fragments) &&
                        d.pseudo_gradient == "fp32";
            if (!syncs)
                return Problem{"faults",
                               {"when", "step"},
                               static_cast<int>(i),
                               "[[faults]] when = \"allreduce\" (the default) never fires at step " +
                                   std::to_string(f.step) +
                                   " under diloco: only an outer sync with fp32 pseudo-gradients "
                                   "all-reduces; write when = \"step\""};
        }
        if (f.when != FaultWhen::Time && f.step >= steps)
            return Problem{"faults",
                           {"step"},
                           static_cast<int>(i),
                           "[[faults]] step " + std::to_string(f.step) + " is never reached: the run has " +
                               std::to_string(steps) + (steps == 1 ? " step" : " steps") + " (0.." +
                               std::to_string(steps - 1) + ")"};
    }
    for (size_t i = 0; i < s.steps.size(); ++i) {
        NarrationCondition c;
        if (!parseNarrationCondition(s.steps[i].until, c))
            continue; // reported by checkString
        const std::string label = "[[steps]] until \"" + s.steps[i].until + "\"";
        if (c.kind == NarrationCondition::Kind::StepAtLeast && c.value > steps)
            return Problem{"steps",
                           {"until"},
                           static_cast<int>(i),
                           label + " is never reached: the run has " + std::to_string(steps) +
                               (steps == 1 ? " step" : " steps")};
        using Kind = NarrationCondition::Kind;
        if (s.steps[i].pause && (c.kind == Kind::None || c.kind == Kind::RunFinished))
            return Problem{"steps",
                           {"pause"},
                           static_cast<int>(i),
                           "[[steps]] pause = true needs an `until` event to pause at (a run that finished "
                           "cannot be paused), got until \"" +
                               s.steps[i].until + "\""};
        if (!s.steps[i].expect.empty() && !s.steps[i].pause && c.kind != Kind::RunFinished)
            return Problem{"steps",
                           {"expect"},
                           static_cast<int>(i),
                           "[[steps]] expect is checked at the step's hold: add pause = true (or wait for "
                           "\"run finished\"), got until \"" +
                               s.steps[i].until + "\"" + (s.steps[i].pause ? "" : " without pause")};
        if (c.kind == Kind::NewQuorumForms && !s.fault_tolerance.enabled)
            return Problem{"steps",
                           {"until"},
                           static_cast<int>(i),
                           label + " needs [fault_tolerance] enabled = true: there is no quorum otherwise"};
        if (c.kind == Kind::CollectiveHangs && ranks < 2)
            return Problem{"steps",
                           {"until"},
                           static_cast<int>(i),
                           label + " needs 2 ranks or more: one rank has no peer to wait for"};
        if (c.kind == Kind::FirstOuterSyncEnds && s.strategy.kind != StrategyKind::Diloco &&
            !(s.strategy.kind == StrategyKind::Swarm && s.swarm.outer_every > 0))
            return Problem{"steps",
                           {"until"},
                           static_cast<int>(i),
                           label + " needs strategy \"diloco\", or \"swarm\" with [swarm] outer_every > 0: "
                                   "only DiLoCo has outer syncs"};
        if ((c.kind == Kind::RankDies || c.kind == Kind::RankHeals) && c.value >= ranks)
            return Problem{"steps",
                           {"until"},
                           static_cast<int>(i),
                           label + ": rank " + std::to_string(c.value) +
                               " does not exist: the topology has " + std::to_string(ranks) +
                               (ranks == 1 ? " rank" : " ranks") + " (0.." + std::to_string(ranks - 1) + ")"};
    }
    return std::nullopt;
}

} // namespace dt::scenario_rules

namespace dt {

namespace {

// The first single-value problem of a whole scenario, or "".
std::string findValueProblem(const Scenario& s) {
    using namespace scenario_rules;
    const std::string checks[] = {
        checkString("scenario", "name", s.name),
        checkInt("topology", "ranks", s.topology.ranks),
        checkInt("topology", "replicas", s.topology.replicas),
        checkInt("topology", "stages", s.topology.stages),
        checkString("topology", "backend", s.topology.backend),
        checkInt("collectives", "repeats", s.collectives.repeats),
        checkString("model", "kind", s.model.kind),
        checkString("model", "quantize", s.model.quantize),
        checkString("model", "quantize_weights", s.model.quantize_weights),
        checkInt("run", "eval_every", s.run.eval_every),
        checkInt("model", "vocab", s.model.vocab),
        checkInt("model", "context", s.model.context),
        checkInt("model", "d_model", s.model.d_model),
        checkInt("model", "layers", s.model.layers),
        checkInt("model", "heads", s.model.heads),
        checkInt("model", "mlp_ratio", s.model.mlp_ratio),
        checkString("data", "source", s.data.source),
        checkInt("data", "batch_per_rank", s.data.batch_per_rank),
        checkString("strategy", "pipeline_data_parallel", s.strategy.pipeline_data_parallel),
        checkInt("strategy", "chunks_per_rank", s.strategy.chunks_per_rank),
        checkInt("strategy", "slow_stage", s.strategy.slow_stage),
        checkFloat("strategy", "slow_stage_ms", s.strategy.slow_stage_ms),
        checkInt("strategy", "prefetch_limit", s.strategy.prefetch_limit),
        checkInt("strategy", "microbatches", s.strategy.microbatches),
        checkFloat("strategy", "bucket_mb", s.strategy.bucket_mb),
        checkString("optimizer", "kind", s.optimizer.kind),
        checkFloat("optimizer", "lr", s.optimizer.lr),
        checkFloat("optimizer", "beta1", s.optimizer.beta1),
        checkFloat("optimizer", "beta2", s.optimizer.beta2),
        checkFloat("optimizer", "eps", s.optimizer.eps),
        checkFloat("optimizer", "weight_decay", s.optimizer.weight_decay),
        checkInt("run", "steps", s.run.steps),
        checkFloat("run", "timeout_s", s.run.timeout_s),
        checkFloat("run", "step_delay_ms", s.run.step_delay_ms),
        checkInt("run", "checkpoint_every", s.run.checkpoint_every),
        checkInt("telemetry", "queue_capacity", s.telemetry.queue_capacity),
        checkInt("diloco", "inner_steps", s.diloco.inner_steps),
        checkInt("diloco", "fragments", s.diloco.fragments),
        checkInt("diloco", "sync_delay", s.diloco.sync_delay),
        checkFloat("diloco", "outer_lr", s.diloco.outer_lr),
        checkFloat("diloco", "outer_momentum", s.diloco.outer_momentum),
        checkFloat("diloco", "alpha", s.diloco.alpha),
        checkInt("swarm", "trainers", s.swarm.trainers),
        checkInt("swarm", "servers_per_stage", s.swarm.servers_per_stage),
        checkString("swarm", "routing", s.swarm.routing),
        checkInt("swarm", "server_batch", s.swarm.server_batch),
        checkInt("swarm", "outer_every", s.swarm.outer_every),
        checkFloat("swarm", "outer_lr", s.swarm.outer_lr),
        checkFloat("swarm", "outer_momentum", s.swarm.outer_momentum),
        checkFloat("swarm", "join_timeout_ms", s.swarm.join_timeout_ms),
        checkFloat("swarm", "request_timeout_ms", s.swarm.request_timeout_ms),
        checkString("swarm", "restart", s.swarm.restart),
        checkFloat("swarm", "restart_delay_ms", s.swarm.restart_delay_ms),
        checkFloat("network", "bandwidth_mbit_s", s.network.bandwidth_mbit_s),
        checkFloat("network", "latency_ms", s.network.latency_ms),
    };
    for (const std::string& problem : checks)
        if (!problem.empty())
            return problem;
    for (const std::string& op : s.collectives.ops)
        if (std::string problem = checkString("collectives", "ops", op); !problem.empty())
            return problem;
    for (const std::string& backend : s.collectives.backends)
        if (std::string problem = checkString("collectives", "backends", backend); !problem.empty())
            return problem;
    for (int kb : s.collectives.sizes_kb)
        if (std::string problem = checkInt("collectives", "sizes_kb", kb); !problem.empty())
            return problem;
    for (int width : s.model.hidden) {
        std::string problem = checkInt("model", "hidden", width);
        if (!problem.empty())
            return problem;
    }
    for (const FaultConfig& f : s.faults) {
        for (const std::string& problem :
             {checkInt("faults", "rank", f.rank), checkInt("faults", "step", f.step),
              checkFloat("faults", "at_s", f.at_s), checkFloat("faults", "duration_s", f.duration_s),
              checkFloat("faults", "delay_ms", f.delay_ms)})
            if (!problem.empty())
                return problem;
    }
    const FaultToleranceConfig& ft = s.fault_tolerance;
    for (const std::string& problem :
         {checkInt("fault_tolerance", "min_replicas", ft.min_replicas),
          checkFloat("fault_tolerance", "join_timeout_ms", ft.join_timeout_ms),
          checkFloat("fault_tolerance", "heartbeat_interval_ms", ft.heartbeat_interval_ms),
          checkFloat("fault_tolerance", "heartbeat_timeout_ms", ft.heartbeat_timeout_ms),
          checkFloat("fault_tolerance", "quorum_timeout_ms", ft.quorum_timeout_ms),
          checkFloat("fault_tolerance", "collective_timeout_ms", ft.collective_timeout_ms),
          checkString("fault_tolerance", "restart", ft.restart),
          checkFloat("fault_tolerance", "restart_delay_ms", ft.restart_delay_ms),
          checkInt("fault_tolerance", "max_restarts_per_minute", ft.max_restarts_per_minute),
          checkInt("fault_tolerance", "max_retries", ft.max_retries),
          checkFloat("chaos", "mean_interval_s", s.chaos.mean_interval_s)})
        if (!problem.empty())
            return problem;
    for (FaultAction action : s.chaos.actions)
        if (!faultActionTraits(action).in_chaos)
            return prefix("chaos", "actions") + "expected one of " + quotedList(faultActionNames(true)) +
                   ", got \"" + faultActionName(action) + "\"";
    for (const NarrationStep& step : s.steps) {
        for (const std::string& problem :
             {checkString("steps", "text", step.text), checkString("steps", "highlight", step.highlight),
              checkString("steps", "until", step.until)})
            if (!problem.empty())
                return problem;
    }
    return "";
}

std::string describeLocation(const SourceLocation& where) {
    return where.file + ":" + std::to_string(where.line) + ":" + std::to_string(where.column);
}

} // namespace

void validateScenario(const Scenario& scenario, const std::string& origin) {
    std::string message = findValueProblem(scenario);
    SourceLocation where{scenario.path, 0, 0};
    if (message.empty()) {
        std::optional<scenario_rules::Problem> problem = scenario_rules::findCrossFieldProblem(scenario);
        if (!problem)
            return;
        // Narration only paces the GUI. The file as written was checked when it was
        // loaded (scenario_parse.cpp); a --steps or --ranks override, or the Session's
        // re-check of it, may leave an `until` unreachable (Next never unlocks there).
        // The narration rules are checked last, so nothing else is skipped.
        if (problem->table == "steps")
            return;
        message = problem->message;
        if (problem->entryIndex >= 0) {
            const size_t index = static_cast<size_t>(problem->entryIndex);
            const SourceLocation& entryWhere =
                problem->table == "steps" ? scenario.steps[index].where : scenario.faults[index].where;
            if (entryWhere.line > 0)
                where = entryWhere;
        }
    }
    if (origin.empty())
        throw UsageError(where, message);
    // An override made the scenario invalid: say which flag, then what broke,
    // then where the other side of the conflict is written.
    if (where.line > 0)
        message += " (the " + std::string(message.rfind("[[steps]]", 0) == 0 ? "step" : "fault") + " at " +
                   describeLocation(where) + ")";
    throw UsageError(origin + ": " + message);
}

void validateRecordedScenario(const Scenario& scenario) {
    // The same rules as a scenario file, less those that look at this machine's files: the
    // data and the checkpoints were on the machine that recorded the run.
    Scenario s = scenario;
    s.data.path.clear();
    s.run.checkpoint_dir.clear();
    s.run.resume_from.clear();
    validateScenario(s, "its scenario");
}

StrategyKind strategyKindFromOverride(const std::string& text, const std::string& origin) {
    StrategyKind kind = StrategyKind::Ddp;
    if (!parseStrategyKind(text, kind))
        throw UsageError(origin + ": " + scenario_rules::checkString("strategy", "kind", text));
    return kind;
}

bool scenarioUsesMpi(const Scenario& s) {
    if (s.topology.backend == "mpi")
        return true;
    if (s.strategy.kind != StrategyKind::Collectives)
        return false;
    return std::find(s.collectives.backends.begin(), s.collectives.backends.end(), "mpi") !=
           s.collectives.backends.end();
}

} // namespace dt

namespace dt {

std::string CheckBaseline::describe() const {
    std::string out;
    auto add = [&](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
    if (strategy)
        add(std::string("strategy = ") + strategyKindName(*strategy));
    if (microbatches > 0)
        add("microbatches = " + std::to_string(microbatches));
    if (!schedule.empty())
        add("schedule = " + schedule);
    if (overlap >= 0)
        add(std::string("overlap = ") + (overlap ? "true" : "false"));
    if (activation_checkpointing >= 0)
        add(std::string("activation_checkpointing = ") + (activation_checkpointing ? "true" : "false"));
    if (offload_optimizer >= 0)
        add(std::string("offload_optimizer = ") + (offload_optimizer ? "true" : "false"));
    if (!pipeline_data_parallel.empty())
        add("pipeline_data_parallel = " + pipeline_data_parallel);
    if (!pseudo_gradient.empty())
        add("pseudo_gradient = " + pseudo_gradient);
    return out;
}

Scenario scenarioForBaseline(const Scenario& scenario, const CheckBaseline& baseline) {
    Scenario s = scenario;
    if (baseline.strategy)
        s.strategy.kind = *baseline.strategy;
    if (baseline.microbatches > 0)
        s.strategy.microbatches = baseline.microbatches;
    if (!baseline.schedule.empty())
        s.strategy.schedule = baseline.schedule;
    if (baseline.overlap >= 0)
        s.strategy.overlap = baseline.overlap == 1;
    if (baseline.activation_checkpointing >= 0)
        s.strategy.activation_checkpointing = baseline.activation_checkpointing == 1;
    if (baseline.offload_optimizer >= 0)
        s.strategy.offload_optimizer = baseline.offload_optimizer == 1;
    if (!baseline.pipeline_data_parallel.empty())
        s.strategy.pipeline_data_parallel = baseline.pipeline_data_parallel;
    if (!baseline.pseudo_gradient.empty())
        s.diloco.pseudo_gradient = baseline.pseudo_gradient;
    // The baseline is a measurement: no narration, no checks of its own, no faults.
    s.steps.clear();
    s.checks.clear();
    s.faults.clear();
    validateScenario(s, "[[checks]] baseline { " + baseline.describe() + " }");
    return s;
}

std::vector<ScenarioInput> scenarioInputs(const Scenario& scenario) {
    std::vector<ScenarioInput> inputs;
    if (strategyTraits(scenario.strategy.kind).trains_model) {
        const bool text = scenario.data.source != "fashion_mnist";
        const std::string data = !scenario.data.path.empty() ? scenario.data.path
                                 : text                      ? defaultFortunesPath()
                                                             : defaultFashionMnistPath();
        inputs.push_back({"the training data", data});
    }
    if (!scenario.run.resume_from.empty())
        inputs.push_back({"the checkpoint being resumed", scenario.run.resume_from});
    return inputs;
}

int ftGroupSize(const Scenario& scenario) {
    if (!scenario.fault_tolerance.enabled)
        return 1;
    const StrategyTraits& traits = strategyTraits(scenario.strategy.kind);
    if (traits.uses_stages) // one pipeline per group, or [topology] replicas groups of stages x pipelines
        return scenario.topology.replicas > 1
                   ? std::max(1, scenario.topology.ranks / scenario.topology.replicas)
                   : std::max(1, scenario.topology.stages);
    if (scenario.strategy.kind == StrategyKind::Ddp) // one rank per group unless [topology] replicas says
        return scenario.topology.replicas > 1
                   ? std::max(1, scenario.topology.ranks / scenario.topology.replicas)
                   : 1;
    if (!traits.shards_optimizer || scenario.strategy.kind == StrategyKind::Hsdp)
        return 1;
    return std::max(1, scenario.topology.ranks / std::max(1, scenario.topology.replicas));
}

bool dilocoStreamsUnderQuorum(const Scenario& scenario) {
    const DilocoConfig& d = scenario.diloco;
    return scenario.fault_tolerance.enabled && scenario.strategy.kind == StrategyKind::Diloco &&
           (d.fragments > 1 || d.sync_delay > 0 || d.alpha != 0.0 || d.pseudo_gradient != "fp32");
}

int ftReplicaGroups(const Scenario& scenario) {
    return std::max(1, scenario.topology.ranks / ftGroupSize(scenario));
}

HealTransport healTransportOf(const FaultToleranceConfig& config) {
    return config.heal_transport == "http" ? HealTransport::Http : HealTransport::ProcessGroup;
}

const char* healTransportName(HealTransport transport) {
    return transport == HealTransport::Http ? "http" : "pg";
}

std::vector<std::string> healTransportNames() {
    return {healTransportName(HealTransport::ProcessGroup), healTransportName(HealTransport::Http)};
}

bool asyncQuorum(const Scenario& scenario) {
    const std::string& mode = scenario.fault_tolerance.quorum_mode;
    return mode.empty() ? scenario.strategy.kind != StrategyKind::Diloco : mode == "async";
}

} // namespace dt
