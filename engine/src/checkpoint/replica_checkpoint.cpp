// replica_checkpoint.cpp: durable checkpoints of a fault-tolerant run (layout in the header).
#include "checkpoint/replica_checkpoint.hpp"
#include "checkpoint/checkpoint_meta.hpp"
#include "dtlab/atomic_file.hpp"

#include "checkpoint/params_io.hpp"
#include "checkpoint/replica_state.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/scenario.hpp"
#include "dtlab/sharding_theory.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace dt {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr const char* kFormat = "dtlab replica checkpoint";
constexpr const char* kStateFile = "replica.dtparams";

struct ReplicaMeta {
    int step = 0;
    int64_t committed_steps = 0;
    int64_t state_numel = 0;
    int64_t outer_numel = 0;   // DiLoCo's global model and momentum; 0 = none
    int64_t outer_rounds = 0;  // outer rounds committed (Streaming DiLoCo's fragment order)
    std::string run_id, model; // empty: not recorded (older checkpoints)
};

ReplicaMeta readReplicaMeta(const std::string& step_dir) {
    ReplicaMeta m;
    readCheckpointMeta(step_dir, kFormat, [&](const Json& meta) {
        m.step = meta.at("step").get<int>();
        m.committed_steps = meta.at("committed_steps").get<int64_t>();
        m.state_numel = meta.at("state_numel").get<int64_t>();
        m.outer_numel = meta.value("outer_numel", int64_t(0));
        m.outer_rounds = meta.value("outer_rounds", int64_t(0));
        m.run_id = meta.value("run_id", "");
        m.model = meta.value("model", "");
    });
    if (m.step < 0)
        throw UsageError("checkpoint '" + checkpointMetaPath(step_dir) + "': step must be >= 0, got " +
                         std::to_string(m.step));
    if (m.outer_rounds < 0)
        throw UsageError("checkpoint '" + checkpointMetaPath(step_dir) +
                         "': outer_rounds must be >= 0, got " + std::to_string(m.outer_rounds));
    if (m.committed_steps != m.step + 1)
        throw UsageError("checkpoint '" + checkpointMetaPath(step_dir) + "' is inconsistent: step " +
                         std::to_string(m.step) + " but committed_steps " +
                         std::to_string(m.committed_steps));
    return m;
}

// The state tensor, checksummed (params_io), and of the size checkpoint.json says.
at::Tensor readState(const std::string& step_dir, const ReplicaMeta& m) {
    const std::string file = (fs::path(step_dir) / kStateFile).string();
    std::error_code ec;
    if (!fs::exists(file, ec))
        throw UsageError("checkpoint '" + step_dir + "' is incomplete: '" + std::string(kStateFile) +
                         "' is missing");
    const auto tensors = loadParameters(file);
    checkRunIdentity(tensors, m.run_id, file);
    const auto found = std::find_if(tensors.begin(), tensors.end(),
                                    [](const NamedParameter& p) { return p.name == "replica_state"; });
    if (found == tensors.end())
        throw UsageError("checkpoint '" + file + "' holds no 'replica_state' tensor");
    at::Tensor state = found->tensor.reshape({-1});
    if (state.numel() != m.state_numel)
        throw UsageError("checkpoint '" + file + "' holds " + std::to_string(state.numel()) +
                         " values, checkpoint.json says " + std::to_string(m.state_numel));
    if (int64_t(state[0].item<float>()) != m.committed_steps)
        throw UsageError("checkpoint '" + file + "' holds " +
                         std::to_string(int64_t(state[0].item<float>())) +
                         " committed steps, checkpoint.json says " + std::to_string(m.committed_steps));
    return state;
}

// The outer state (DiLoCo), of the size checkpoint.json says; undefined when it has none.
at::Tensor readOuter(const std::string& step_dir, const ReplicaMeta& m) {
    if (m.outer_numel == 0)
        return at::Tensor();
    const std::string file = (fs::path(step_dir) / kStateFile).string();
    const auto tensors = loadParameters(file);
    const auto found = std::find_if(tensors.begin(), tensors.end(),
                                    [](const NamedParameter& p) { return p.name == "outer_state"; });
    if (found == tensors.end())
        throw UsageError("checkpoint '" + file + "' holds no 'outer_state' tensor, checkpoint.json says " +
                         std::to_string(m.outer_numel) + " values");
    at::Tensor outer = found->tensor.reshape({-1});
    if (outer.numel() != m.outer_numel)
        throw UsageError("checkpoint '" + file + "' holds " + std::to_string(outer.numel()) +
                         " outer values, checkpoint.json says " + std::to_string(m.outer_numel));
    return outer;
}

} // namespace

int64_t saveReplicaCheckpoint(const std::string& step_dir, int last_step, const Scenario& scenario,
                              const std::vector<at::Tensor>& params, torch::optim::AdamW& optimizer,
                              int replica, int incarnation, const at::Tensor& outer, int64_t outer_rounds) {
    std::error_code ec;
    if (fs::exists(step_dir, ec))
        throw UsageError("checkpoint '" + step_dir + "' exists already; not overwritten");
    const std::string partial =
        step_dir + ".partial-" + std::to_string(replica) + "-" + std::to_string(incarnation);
    fs::remove_all(partial, ec); // left by an earlier attempt of this very writer
    fs::create_directories(partial, ec);
    if (ec)
        throw UsageError("cannot create checkpoint directory '" + partial + "': " + ec.message());

    const at::Tensor state = packReplicaState(params, optimizer, int64_t(last_step) + 1);
    const std::string state_path = (fs::path(partial) / kStateFile).string();
    std::vector<NamedParameter> tensors{{"replica_state", state}};
    if (outer.defined())
        tensors.push_back({"outer_state", outer.reshape({-1})});
    if (!scenario.run.run_id.empty())
        tensors.push_back(runIdentity(scenario.run.run_id));
    saveParameters(state_path, tensors);

    Json meta;
    meta["format"] = kFormat;
    meta["version"] = 1;
    meta["step"] = last_step;
    meta["committed_steps"] = int64_t(last_step) + 1;
    meta["state_numel"] = state.numel();
    meta["outer_numel"] = outer.defined() ? outer.numel() : int64_t(0);
    meta["outer_rounds"] = outer_rounds;
    meta["model"] = scenario.model.kind;
    meta["run_id"] = scenario.run.run_id;
    meta["written_by_replica"] = replica;
    const std::string meta_path = (fs::path(partial) / "checkpoint.json").string();
    writeFileAtomically(meta_path, meta.dump(2) + "\n");
    const int64_t written = int64_t(fs::file_size(state_path, ec)) + int64_t(fs::file_size(meta_path, ec));
    fs::rename(partial, step_dir, ec);
    if (ec)
        throw UsageError("cannot rename '" + partial + "' to '" + step_dir + "': " + ec.message());
    syncDirectory(fs::path(step_dir).parent_path().string()); // the rename is durable too
    return written;
}

int64_t loadReplicaCheckpoint(const std::string& step_dir, const std::vector<at::Tensor>& params,
                              torch::optim::AdamW& optimizer, int64_t& bytes_read, at::Tensor* outer,
                              int64_t* outer_rounds) {
    const ReplicaMeta m = readReplicaMeta(step_dir);
    const at::Tensor state = readState(step_dir, m);
    const at::Tensor saved_outer = readOuter(step_dir, m);
    if (outer && (!saved_outer.defined() || saved_outer.numel() != outer->numel()))
        throw UsageError("checkpoint '" + step_dir + "' holds " + std::to_string(m.outer_numel) +
                         " outer values (DiLoCo's global model and momentum), this run needs " +
                         std::to_string(outer->numel()));
    if (!outer && saved_outer.defined())
        throw UsageError("checkpoint '" + step_dir +
                         "' was written by fault-tolerant DiLoCo (it holds an outer state); this run is not "
                         "DiLoCo");
    if (state.numel() != replicaStateNumel(params))
        throw UsageError("checkpoint '" + step_dir + "' does not fit this model: it holds " +
                         std::to_string(state.numel()) + " values, this model needs " +
                         std::to_string(replicaStateNumel(params)));
    std::error_code ec;
    bytes_read += int64_t(fs::file_size(fs::path(step_dir) / kStateFile, ec));
    if (outer)
        outer->copy_(saved_outer);
    if (outer_rounds)
        *outer_rounds = m.outer_rounds;
    return unpackReplicaState(state, params, optimizer);
}

void verifyReplicaCheckpoint(const std::string& step_dir, const Scenario& scenario) {
    const ReplicaMeta m = readReplicaMeta(step_dir);
    checkCheckpointModel(step_dir, m.model, scenario.model.kind);
    const int64_t P = unitLayout(scenario.model).total();
    if (m.state_numel != 3 * P + 2)
        throw UsageError("checkpoint '" + step_dir + "' does not fit this model: it holds " +
                         std::to_string(m.state_numel) + " values, this model needs " +
                         std::to_string(3 * P + 2) + " (3 x " + std::to_string(P) + " parameters + 2)");
    const int64_t outer_needed = scenario.strategy.kind == StrategyKind::Diloco ? 2 * P : 0;
    if (m.outer_numel != outer_needed)
        throw UsageError("checkpoint '" + step_dir + "' " +
                         (outer_needed ? "has no DiLoCo outer state (global model and momentum): it was not "
                                         "written by fault-tolerant DiLoCo"
                                       : "was written by fault-tolerant DiLoCo (it holds an outer state)") +
                         "; this run is " + strategyKindName(scenario.strategy.kind));
    (void)readState(step_dir, m); // the checksum
    (void)readOuter(step_dir, m);
    refuseWhenNothingLeftToTrain(step_dir, m.step, scenario.run.steps);
}

bool replicaCheckpointSavedByRun(const std::string& step_dir, int last_step, const std::string& run_id) {
    if (run_id.empty())
        return false;
    try {
        const ReplicaMeta m = readReplicaMeta(step_dir);
        return m.step == last_step && m.run_id == run_id;
    } catch (const UsageError&) {
        return false; // none, or not readable: the save says what is wrong
    }
}

} // namespace dt
