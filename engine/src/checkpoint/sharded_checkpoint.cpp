// sharded_checkpoint.cpp: sharded checkpoints and resharding (layout in the header).
#include "checkpoint/sharded_checkpoint.hpp"
#include "checkpoint/checkpoint_meta.hpp"
#include "dtlab/atomic_file.hpp"

#include "checkpoint/params_io.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/scenario.hpp"
#include "dtlab/sharding_theory.hpp"

#include <nlohmann/json.hpp>
#include <torch/optim/adamw.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace dt {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string shardFileName(int rank, int count) {
    return "shard-" + std::to_string(rank) + "-of-" + std::to_string(count) + ".dtparams";
}

// Each shard file says which it is: {index, shard count, last step} in a
// tensor of its own, so a file swapped with another shard's, or copied in from
// another checkpoint, is refused instead of loaded into the wrong slice
// (files written before this entry existed carry none and are not checked).
constexpr const char* kShardIdentityKey = "dtlab/shard";

at::Tensor shardIdentity(int index, int count, int step) {
    return at::tensor({float(index), float(count), float(step)}, at::kFloat);
}

void checkShardIdentity(const std::string& step_dir, const std::vector<NamedParameter>& tensors, int index,
                        int count, int step) {
    for (const NamedParameter& p : tensors) {
        if (p.name != kShardIdentityKey)
            continue;
        const at::Tensor t = p.tensor.reshape({-1});
        const bool ok = t.numel() == 3 && t[0].item<float>() == float(index) &&
                        t[1].item<float>() == float(count) && t[2].item<float>() == float(step);
        if (!ok)
            throw UsageError("checkpoint '" + step_dir + "': " + shardFileName(index, count) + " holds " +
                             (t.numel() == 3 ? "shard " + std::to_string(int(t[0].item<float>())) + " of " +
                                                   std::to_string(int(t[1].item<float>())) + " of step " +
                                                   std::to_string(int(t[2].item<float>()))
                                             : std::string("a malformed shard identity")) +
                             ", not shard " + std::to_string(index) + " of " + std::to_string(count) +
                             " of step " + std::to_string(step) +
                             " (a file swapped, renamed or copied from another checkpoint?)");
        return;
    }
}

std::string unitKey(int id, const char* what) {
    return "unit" + std::to_string(id) + "/" + what;
}

torch::optim::AdamWParamState* adamState(torch::optim::AdamW& optimizer, const at::Tensor& param) {
    auto& state = optimizer.state();
    auto it = state.find(c10::guts::to_string(param.unsafeGetTensorImpl()));
    return it == state.end() ? nullptr : static_cast<torch::optim::AdamWParamState*>(it->second.get());
}

struct CheckpointMeta {
    int shards = 0;
    int step = 0;
    int64_t adam_step = 0;
    std::string run_id, model;            // empty: not recorded (older checkpoints)
    std::map<int, int64_t> numel, padded; // unit id ->
};

CheckpointMeta readMeta(const std::string& step_dir) {
    CheckpointMeta m;
    readCheckpointMeta(step_dir, "dtlab sharded checkpoint", [&](const Json& meta) {
        m.shards = meta.at("shards").get<int>();
        m.step = meta.at("step").get<int>();
        m.adam_step = meta.at("adam_step").get<int64_t>();
        m.run_id = meta.value("run_id", "");
        m.model = meta.value("model", "");
        for (const auto& u : meta.at("units")) {
            m.numel[u.at("id").get<int>()] = u.at("numel").get<int64_t>();
            m.padded[u.at("id").get<int>()] = u.at("padded").get<int64_t>();
        }
    });
    const std::string meta_path = checkpointMetaPath(step_dir);
    if (m.shards < 1)
        throw UsageError("checkpoint '" + meta_path + "': shards must be >= 1");
    if (m.step < 0)
        throw UsageError("checkpoint '" + meta_path + "': step must be >= 0, got " + std::to_string(m.step));
    if (m.adam_step < 0) // AdamW's bias correction 1 - beta^t: a negative t makes NaN
        throw UsageError("checkpoint '" + meta_path + "': adam_step must be >= 0, got " +
                         std::to_string(m.adam_step));
    return m;
}

// The unit ids and sizes of a model, as flat units order them (blocks, then the root).
void checkFits(const std::string& step_dir, const CheckpointMeta& m,
               const std::vector<std::pair<int, int64_t>>& units) {
    for (const auto& [id, numel] : units) {
        auto it = m.numel.find(id);
        if (it == m.numel.end() || it->second != numel || m.padded.at(id) != paddedNumel(numel, m.shards))
            throw UsageError("checkpoint '" + step_dir + "' does not fit this model: unit " +
                             std::to_string(id) + " has " + std::to_string(numel) + " parameters here, " +
                             (it == m.numel.end() ? std::string("none") : std::to_string(it->second)) +
                             " in the checkpoint");
    }
    if (m.numel.size() != units.size())
        throw UsageError("checkpoint '" + step_dir +
                         "' does not fit this model: " + std::to_string(m.numel.size()) +
                         " units in the checkpoint, " + std::to_string(units.size()) + " here");
}

std::string shardPath(const std::string& step_dir, int rank, int count) {
    const std::string file = (fs::path(step_dir) / shardFileName(rank, count)).string();
    std::error_code ec;
    if (!fs::exists(file, ec))
        throw UsageError("checkpoint '" + step_dir + "' is incomplete: '" + shardFileName(rank, count) +
                         "' is missing (checkpoint.json says it was saved with " + std::to_string(count) +
                         " shards)");
    return file;
}

} // namespace

void verifyShardedCheckpoint(const std::string& step_dir, const Scenario& scenario) {
    const CheckpointMeta m = readMeta(step_dir);
    const UnitLayout layout = unitLayout(scenario.model);
    std::vector<std::pair<int, int64_t>> units;
    for (size_t i = 0; i < layout.unit_numel.size(); ++i)
        units.push_back({int(i), layout.unit_numel[i]});
    if (layout.root_numel > 0)
        units.push_back({-1, layout.root_numel});
    checkCheckpointModel(step_dir, m.model, scenario.model.kind);
    checkFits(step_dir, m, units);
    for (int r = 0; r < m.shards; ++r) { // checksums, and each file is the shard it is named, of this run
        const std::string file = shardPath(step_dir, r, m.shards);
        const auto tensors = loadParameters(file);
        checkShardIdentity(step_dir, tensors, r, m.shards, m.step);
        checkRunIdentity(tensors, m.run_id, file);
    }
    refuseWhenNothingLeftToTrain(step_dir, m.step, scenario.run.steps);
}

std::string checkpointStepDir(const std::string& dir, int last_step) {
    return (fs::path(dir) / ("step-" + std::to_string(last_step))).string();
}

int64_t saveShardedCheckpoint(const std::string& step_dir, int last_step, const Scenario& scenario,
                              std::vector<FlatUnit>& units, torch::optim::AdamW& optimizer,
                              Communicator& comm, bool writer) {
    const std::string partial = step_dir + ".partial";
    int64_t written = 0;
    int64_t adam_step = 0;
    // A failure on any rank is reported after the last barrier, and then by
    // every rank, so that no rank is left waiting in a barrier and no
    // directory with a shard missing is renamed to step-<S>.
    std::string failure;
    if (writer)
        try {
            std::error_code ec;
            fs::create_directories(partial, ec);
            if (ec)
                throw UsageError("cannot create checkpoint directory '" + partial + "': " + ec.message());
            std::vector<NamedParameter> tensors;
            tensors.push_back({kShardIdentityKey, shardIdentity(comm.rank(), comm.size(), last_step)});
            if (!scenario.run.run_id.empty())
                tensors.push_back(runIdentity(scenario.run.run_id));
            for (auto& u : units) {
                auto* state = adamState(optimizer, u.optimizedShard());
                const at::Tensor zeros = at::zeros({u.shard_numel}, at::kFloat);
                tensors.push_back({unitKey(u.id, "param"), u.shard.detach()});
                tensors.push_back({unitKey(u.id, "exp_avg"), state ? state->exp_avg() : zeros});
                tensors.push_back({unitKey(u.id, "exp_avg_sq"), state ? state->exp_avg_sq() : zeros});
                if (state)
                    adam_step = state->step();
            }
            const std::string file = (fs::path(partial) / shardFileName(comm.rank(), comm.size())).string();
            saveParameters(file, tensors);
            written = int64_t(fs::file_size(file, ec));
        } catch (const UsageError& e) {
            failure = e.what();
        }
    // Every shard file is in place, or some rank says it is not (one int per rank).
    at::Tensor failed = at::full({1}, failure.empty() ? 0 : 1, at::kInt);
    comm.allReduceNow(failed);
    const bool all_written = failed.item<int>() == 0;
    if (!all_written && failure.empty())
        failure = "another rank could not write its shard of '" + step_dir + "'";
    if (writer && comm.rank() == 0 && all_written)
        try {
            Json meta;
            meta["format"] = "dtlab sharded checkpoint";
            meta["version"] = 1;
            meta["strategy"] = strategyKindName(scenario.strategy.kind);
            meta["shards"] = comm.size();
            meta["step"] = last_step;
            meta["adam_step"] = adam_step;
            meta["model"] = scenario.model.kind;
            meta["run_id"] = scenario.run.run_id;
            Json list = Json::array();
            for (const auto& u : units)
                list.push_back({{"id", u.id}, {"numel", u.numel}, {"padded", u.padded}});
            meta["units"] = list;
            written += publishCheckpoint(partial, step_dir, meta);
        } catch (const UsageError& e) {
            failure = e.what();
        }
    comm.barrierNow(); // the checkpoint is complete before anyone goes on
    if (!failure.empty())
        throw UsageError(failure);
    return written;
}

int loadShardedCheckpoint(const std::string& step_dir, std::vector<FlatUnit>& units,
                          torch::optim::AdamW& optimizer, int shard_rank, bool whole_params,
                          int64_t& bytes_read) {
    const CheckpointMeta meta = readMeta(step_dir);
    const int old_count = meta.shards, step = meta.step;
    const int64_t adam_step = meta.adam_step;
    std::vector<std::pair<int, int64_t>> sizes;
    for (const auto& u : units)
        sizes.push_back({u.id, u.numel});
    checkFits(step_dir, meta, sizes);

    // Every old shard file, each read (and checksummed) once.
    std::vector<std::map<std::string, at::Tensor>> old_shards(static_cast<size_t>(old_count),
                                                              std::map<std::string, at::Tensor>{});
    for (int r = 0; r < old_count; ++r) {
        const std::string file = shardPath(step_dir, r, old_count);
        std::error_code ec;
        const std::vector<NamedParameter> tensors = loadParameters(file);
        checkShardIdentity(step_dir, tensors, r, old_count, step);
        checkRunIdentity(tensors, meta.run_id, file);
        for (auto& p : tensors)
            old_shards[size_t(r)][p.name] = p.tensor;
        bytes_read += int64_t(fs::file_size(file, ec));
    }

    at::NoGradGuard no_grad;
    for (auto& u : units) {
        // old padded vector -> unpadded -> new padded vector -> this rank's slice
        const auto whole = [&](const char* what) {
            std::vector<at::Tensor> parts;
            for (int r = 0; r < old_count; ++r) {
                auto it = old_shards[size_t(r)].find(unitKey(u.id, what));
                if (it == old_shards[size_t(r)].end())
                    throw UsageError("checkpoint '" + step_dir + "': " + shardFileName(r, old_count) +
                                     " has no '" + unitKey(u.id, what) + "'");
                parts.push_back(it->second.reshape({-1}));
            }
            auto flat = at::cat(parts).narrow(0, 0, u.numel);
            return at::constant_pad_nd(flat, {0, u.padded - u.numel}, 0.0);
        };
        const auto mine = [&](const at::Tensor& padded) {
            return padded.narrow(0, int64_t(shard_rank) * u.shard_numel, u.shard_numel).clone();
        };
        const at::Tensor params = whole("param");
        if (whole_params)
            u.full.copy_(params); // zero1/zero2: u.shard is a view of it
        else
            u.shard.detach().copy_(mine(params));
        if (u.host_shard.defined())
            u.host_shard.detach().copy_(u.shard.detach()); // offloaded: AdamW's copy too
        if (auto* existing = adamState(optimizer, u.optimizedShard())) {
            // Fill the state in place: it may live in host memory (offload_optimizer).
            existing->step(adam_step);
            existing->exp_avg().copy_(mine(whole("exp_avg")));
            existing->exp_avg_sq().copy_(mine(whole("exp_avg_sq")));
            continue;
        }
        auto state = std::make_unique<torch::optim::AdamWParamState>();
        state->step(adam_step);
        state->exp_avg(mine(whole("exp_avg")));
        state->exp_avg_sq(mine(whole("exp_avg_sq")));
        optimizer.state()[c10::guts::to_string(u.optimizedShard().unsafeGetTensorImpl())] = std::move(state);
    }
    return step;
}

} // namespace dt
