// stage_checkpoint.cpp: durable checkpoints of pipeline replica groups (layout and steps in the header).
#include "checkpoint/stage_checkpoint.hpp"

#include "checkpoint/checkpoint_meta.hpp"
#include "checkpoint/params_io.hpp"
#include "checkpoint/replica_state.hpp"
#include "dtlab/atomic_file.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/scenario.hpp"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

namespace dt {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr const char* kFormat = "dtlab stage checkpoint";

struct StageMeta {
    int step = 0;
    int stages = 0;
    int shards = 1;                   // files per stage
    std::vector<int64_t> stage_numel; // per file, stage-major: file i K + k
    std::string run_id, model;
};

StageMeta readStageMeta(const std::string& step_dir) {
    StageMeta m;
    readCheckpointMeta(
        step_dir, kFormat,
        [&](const Json& meta) {
            m.step = meta.at("step").get<int>();
            m.stages = meta.at("stages").get<int>();
            m.shards = meta.value("shards", 1);
            m.stage_numel = meta.at("stage_numel").get<std::vector<int64_t>>();
            m.run_id = meta.value("run_id", "");
            m.model = meta.value("model", "");
            if (meta.at("version").get<int>() == 1 && m.shards != 1)
                throw UsageError("checkpoint '" + checkpointMetaPath(step_dir) +
                                 "' is inconsistent: version 1 holds whole stages, not " +
                                 std::to_string(m.shards) + " shards");
        },
        /*newest_version=*/2);
    if (m.step < 0 || m.stages < 1 || m.shards < 1 ||
        int64_t(m.stage_numel.size()) != int64_t(m.stages) * m.shards)
        throw UsageError("checkpoint '" + checkpointMetaPath(step_dir) + "' is inconsistent: step " +
                         std::to_string(m.step) + ", " + std::to_string(m.stages) + " stages of " +
                         std::to_string(m.shards) + " shards, " + std::to_string(m.stage_numel.size()) +
                         " file sizes");
    return m;
}

std::string stageFileName(int stage, int stages, int shard, int shards) {
    std::string name = "stage-" + std::to_string(stage) + "-of-" + std::to_string(stages);
    if (shards > 1)
        name += "-shard-" + std::to_string(shard) + "-of-" + std::to_string(shards);
    return name + ".dtparams";
}

std::string shardsMismatch(const std::string& step_dir, int saved, int wanted) {
    const auto describe = [](int k) {
        return k == 1 ? std::string("whole stages")
                      : "stages sharded over " + std::to_string(k) + " pipelines";
    };
    return "checkpoint '" + step_dir + "' holds " + describe(saved) + "; this run needs " + describe(wanted) +
           " (a shard's bounds depend on the pipelines per replica group and pipeline_data_parallel)";
}

// Stage i's (shard k's) state tensor: present, checksummed (params_io), of the recorded size and step.
at::Tensor readStageState(const std::string& step_dir, const StageMeta& m, int stage, int shard) {
    const std::string name = stageFileName(stage, m.stages, shard, m.shards);
    const std::string file = (fs::path(step_dir) / name).string();
    const int64_t expected = m.stage_numel[size_t(stage) * size_t(m.shards) + size_t(shard)];
    std::error_code ec;
    if (!fs::exists(file, ec))
        throw UsageError("checkpoint '" + step_dir + "' is incomplete: '" + name + "' is missing");
    const auto tensors = loadParameters(file);
    checkRunIdentity(tensors, m.run_id, file);
    const auto found = std::find_if(tensors.begin(), tensors.end(),
                                    [](const NamedParameter& p) { return p.name == "replica_state"; });
    if (found == tensors.end())
        throw UsageError("checkpoint '" + file + "' holds no 'replica_state' tensor");
    at::Tensor state = found->tensor.reshape({-1});
    if (state.numel() != expected)
        throw UsageError("checkpoint '" + file + "' holds " + std::to_string(state.numel()) +
                         " values, checkpoint.json says " + std::to_string(expected));
    if (int64_t(state[0].item<float>()) != int64_t(m.step) + 1)
        throw UsageError("checkpoint '" + file + "' holds " +
                         std::to_string(int64_t(state[0].item<float>())) +
                         " committed steps, checkpoint.json says step " + std::to_string(m.step));
    return state;
}

} // namespace

int stageCheckpointShards(const Scenario& scenario) {
    const TopologyConfig& t = scenario.topology;
    const int pipelines = t.stages > 0 && t.replicas > 0 ? t.ranks / t.replicas / t.stages : 1;
    return scenario.strategy.pipeline_data_parallel != "ddp" && pipelines >= 2 ? pipelines : 1;
}

int64_t saveStageCheckpoint(const std::string& step_dir, int last_step, const Scenario& scenario,
                            const std::vector<at::Tensor>& stage_params, torch::optim::AdamW& optimizer,
                            Communicator& group, int stages, int shards) {
    DT_ENFORCE(stages > 0 && group.size() % stages == 0, "a replica group holds whole pipelines");
    DT_ENFORCE(shards == 1 || shards == group.size() / stages,
               "a stage is sharded over the group's pipelines");
    const std::string partial = step_dir + ".partial";
    const int stage = group.rank() % stages;
    const int shard = shards > 1 ? group.rank() / stages : 0;
    const int files = stages * shards;
    const int file_index = stage * shards + shard;
    // Whole stages: the first pipeline writes (the others hold the same bits).
    // Sharded: every rank writes its shard.
    const bool writes = shards > 1 || group.rank() < stages;
    int64_t written = 0;
    std::string failure; // reported by every rank after the last barrier
    // Every file's size for checkpoint.json (from its writer), and how many writers failed.
    at::Tensor sizes = at::zeros({files + 1}, at::kLong);
    if (writes) {
        const at::Tensor state = packReplicaState(stage_params, optimizer, int64_t(last_step) + 1);
        try {
            std::error_code ec;
            fs::create_directories(partial, ec);
            if (ec)
                throw UsageError("cannot create checkpoint directory '" + partial + "': " + ec.message());
            std::vector<NamedParameter> tensors{{"replica_state", state}};
            if (!scenario.run.run_id.empty())
                tensors.push_back(runIdentity(scenario.run.run_id));
            const std::string file =
                (fs::path(partial) / stageFileName(stage, stages, shard, shards)).string();
            saveParameters(file, tensors);
            written = int64_t(fs::file_size(file, ec));
        } catch (const UsageError& e) {
            failure = e.what();
        }
        sizes[file_index] = state.numel();
        sizes[files] = failure.empty() ? 0 : 1;
    }
    group.allReduceNow(sizes);
    const bool all_written = sizes[files].item<int64_t>() == 0;
    if (!all_written && failure.empty())
        failure = "another stage or shard could not write its file of '" + step_dir + "'";
    if (group.rank() == 0 && all_written)
        try {
            Json meta;
            meta["format"] = kFormat;
            meta["version"] = shards > 1 ? 2 : 1; // 2: sharded stages (an older dtlab refuses it by version)
            meta["step"] = last_step;
            meta["committed_steps"] = int64_t(last_step) + 1;
            meta["stages"] = stages;
            meta["shards"] = shards;
            std::vector<int64_t> numel;
            for (int i = 0; i < files; ++i)
                numel.push_back(sizes[i].item<int64_t>());
            meta["stage_numel"] = numel;
            meta["model"] = scenario.model.kind;
            meta["run_id"] = scenario.run.run_id;
            written += publishCheckpoint(partial, step_dir, meta);
        } catch (const UsageError& e) {
            failure = e.what();
        }
    group.barrierNow(); // the checkpoint is complete before any rank goes on
    if (!failure.empty())
        throw UsageError(failure);
    return written;
}

int loadStageCheckpoint(const std::string& step_dir, const std::vector<at::Tensor>& stage_params,
                        torch::optim::AdamW& optimizer, int stage, int shard, int shards,
                        int64_t& bytes_read) {
    const StageMeta m = readStageMeta(step_dir);
    if (stage < 0 || stage >= m.stages)
        throw UsageError("checkpoint '" + step_dir + "' holds " + std::to_string(m.stages) +
                         " stages; this rank is stage " + std::to_string(stage));
    if (m.shards != shards)
        throw UsageError(shardsMismatch(step_dir, m.shards, shards));
    const at::Tensor state = readStageState(step_dir, m, stage, shard);
    if (state.numel() != replicaStateNumel(stage_params))
        throw UsageError("checkpoint '" + step_dir + "' does not fit stage " + std::to_string(stage) +
                         (shards > 1 ? " shard " + std::to_string(shard) : std::string()) + ": it holds " +
                         std::to_string(state.numel()) + " values, the stage needs " +
                         std::to_string(replicaStateNumel(stage_params)));
    std::error_code ec;
    bytes_read +=
        int64_t(fs::file_size(fs::path(step_dir) / stageFileName(stage, m.stages, shard, m.shards), ec));
    (void)unpackReplicaState(state, stage_params, optimizer);
    return m.step;
}

void verifyStageCheckpoint(const std::string& step_dir, const Scenario& scenario) {
    const StageMeta m = readStageMeta(step_dir);
    checkCheckpointModel(step_dir, m.model, scenario.model.kind);
    if (m.stages != scenario.topology.stages)
        throw UsageError(
            "checkpoint '" + step_dir + "' holds " + std::to_string(m.stages) +
            " stages; this run has [topology] stages = " + std::to_string(scenario.topology.stages));
    const int shards = stageCheckpointShards(scenario);
    if (m.shards != shards)
        throw UsageError(shardsMismatch(step_dir, m.shards, shards));
    for (int i = 0; i < m.stages; ++i)
        for (int k = 0; k < m.shards; ++k)
            (void)readStageState(step_dir, m, i, k); // present, checksum, size
    refuseWhenNothingLeftToTrain(step_dir, m.step, scenario.run.steps);
}

} // namespace dt
