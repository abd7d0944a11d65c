// checkpoint_choice.cpp: which checkpoint a run resumes from, and whether a
// run would overwrite one (the API is in dtlab/checkpoint.hpp).
//
// Choosing from DIR: list the entries named step-<S> (S digits only, so
// step-<S>.partial-* and stray files are never candidates), newest first;
// verify each (checkpoint.json, checksums, model size, steps left); the first
// that passes wins, the ones before it are reported as skipped.
#include "dtlab/checkpoint.hpp"

#include "checkpoint/diloco_checkpoint.hpp"
#include "checkpoint/replica_checkpoint.hpp"
#include "checkpoint/stage_checkpoint.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/scenario.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

namespace dt {
namespace {

namespace fs = std::filesystem;

// S for a name "step-<S>", -1 otherwise.
int stepOfName(const std::string& name) {
    const std::string prefix = "step-";
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.size() > prefix.size() + 9)
        return -1;
    for (size_t i = prefix.size(); i < name.size(); ++i)
        if (!std::isdigit(static_cast<unsigned char>(name[i])))
            return -1;
    return std::stoi(name.substr(prefix.size()));
}

// Fault-tolerant ddp writes one replica's state; fault-tolerant zero1/zero2/
// fsdp replica groups write sharded checkpoints, as they do without the quorum.
bool needsReplicaCheckpoint(const Scenario& scenario) {
    return scenario.fault_tolerance.enabled && !strategyTraits(scenario.strategy.kind).shards_optimizer &&
           !strategyTraits(scenario.strategy.kind).uses_stages;
}

// Fault-tolerant pipelines: one file per stage, or per shard of a stage (stage_checkpoint.hpp).
bool needsStageCheckpoint(const Scenario& scenario) {
    return scenario.fault_tolerance.enabled && strategyTraits(scenario.strategy.kind).uses_stages;
}

} // namespace

void verifyCheckpoint(const std::string& step_dir, const Scenario& scenario) {
    // The format field says which kind this is; a mismatch gets its own message.
    std::string format;
    {
        std::ifstream in((fs::path(step_dir) / "checkpoint.json").string());
        if (in) {
            try {
                nlohmann::json meta;
                in >> meta;
                format = meta.value("format", "");
            } catch (const std::exception&) {
                // left to the kind's own reader, which names the problem
            }
        }
    }
    // The kind this scenario needs, and the kind on disk.
    const std::string needed = needsReplicaCheckpoint(scenario)                 ? "dtlab replica checkpoint"
                               : needsStageCheckpoint(scenario)                 ? "dtlab stage checkpoint"
                               : scenario.strategy.kind == StrategyKind::Diloco ? "dtlab diloco checkpoint"
                                                                                : "dtlab sharded checkpoint";
    const auto kindName = [](const std::string& f) {
        if (f == "dtlab replica checkpoint")
            return std::string("a fault-tolerant replica checkpoint");
        if (f == "dtlab diloco checkpoint")
            return std::string("a DiLoCo checkpoint");
        if (f == "dtlab stage checkpoint")
            return std::string("a fault-tolerant pipeline's checkpoint");
        return std::string("a sharded checkpoint");
    };
    const bool known = format == "dtlab replica checkpoint" || format == "dtlab diloco checkpoint" ||
                       format == "dtlab sharded checkpoint" || format == "dtlab stage checkpoint";
    if (known && format != needed)
        throw UsageError("checkpoint '" + step_dir + "' is " + kindName(format) +
                         "; this run ([strategy] kind = \"" + strategyKindName(scenario.strategy.kind) +
                         "\"" + (scenario.fault_tolerance.enabled ? " under [fault_tolerance]" : "") +
                         ") needs " + kindName(needed));
    if (needed == "dtlab replica checkpoint")
        verifyReplicaCheckpoint(step_dir, scenario);
    else if (needed == "dtlab stage checkpoint")
        verifyStageCheckpoint(step_dir, scenario);
    else if (needed == "dtlab diloco checkpoint")
        verifyDilocoCheckpoint(step_dir, scenario);
    else
        verifyShardedCheckpoint(step_dir, scenario);
}

CheckpointChoice chooseCheckpoint(const std::string& path, const Scenario& scenario) {
    CheckpointChoice choice;
    std::error_code ec;
    const std::string name = fs::path(path).lexically_normal().filename().string();
    if (stepOfName(name) >= 0 || fs::exists(fs::path(path) / "checkpoint.json", ec)) {
        verifyCheckpoint(path, scenario);
        choice.step_dir = path;
        choice.step = stepOfName(name);
        return choice;
    }
    if (!fs::is_directory(path, ec))
        throw UsageError("checkpoint directory '" + path + "' does not exist");
    std::vector<std::pair<int, std::string>> candidates;
    for (const auto& entry : fs::directory_iterator(path, ec)) {
        const int step = stepOfName(entry.path().filename().string());
        if (step >= 0 && entry.is_directory(ec))
            candidates.push_back({step, entry.path().string()});
    }
    if (ec)
        throw UsageError("cannot list checkpoint directory '" + path + "': " + ec.message());
    if (candidates.empty())
        throw UsageError("checkpoint directory '" + path + "' holds no step-<S> checkpoint");
    std::sort(candidates.rbegin(), candidates.rend());
    for (const auto& [step, dir] : candidates) {
        try {
            verifyCheckpoint(dir, scenario);
            choice.step_dir = dir;
            choice.step = step;
            return choice;
        } catch (const UsageError& e) {
            choice.skipped.push_back(e.what());
        }
    }
    std::string why;
    for (const auto& s : choice.skipped)
        why += "\n  " + s;
    throw UsageError("no usable checkpoint in '" + path + "':" + why);
}

void checkCheckpointsNotOverwritten(const Scenario& scenario, int first_step) {
    const RunConfig& run = scenario.run;
    if (run.checkpoint_dir.empty())
        return;
    std::error_code ec;
    for (int step = std::max(0, first_step); step < run.steps; ++step) {
        const bool saved =
            step == run.steps - 1 || (run.checkpoint_every > 0 && (step + 1) % run.checkpoint_every == 0);
        const fs::path dir = fs::path(run.checkpoint_dir) / ("step-" + std::to_string(step));
        if (saved && fs::exists(dir, ec))
            throw UsageError(
                "[run] checkpoint_dir: this run would save '" + dir.string() +
                "', which exists already (checkpoints are never overwritten: choose another directory)");
    }
}

} // namespace dt
