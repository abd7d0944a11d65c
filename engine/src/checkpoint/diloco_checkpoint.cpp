// diloco_checkpoint.cpp: DiLoCo checkpoints (layout in the header).
#include "checkpoint/diloco_checkpoint.hpp"
#include "checkpoint/checkpoint_meta.hpp"
#include "dtlab/atomic_file.hpp"

#include "checkpoint/params_io.hpp"
#include "checkpoint/replica_state.hpp"
#include "dtlab/diloco_theory.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/scenario.hpp"
#include "dtlab/sharding_theory.hpp"

#include <nlohmann/json.hpp>
#include <torch/optim/adamw.h>

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>

namespace dt {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr const char* kFormat = "dtlab diloco checkpoint";

struct DilocoMeta {
    int step = 0;
    int replicas = 0;
    int fragments = 0;
    int64_t parameters = 0;
    std::vector<int64_t> fragment_numel;
    std::string inner;
    std::string run_id, model; // empty: not recorded (older checkpoints)
};

std::string replicaFile(const std::string& dir, int rank) {
    return (fs::path(dir) / ("replica-" + std::to_string(rank) + ".dtparams")).string();
}
std::string outerFile(const std::string& dir) {
    return (fs::path(dir) / "outer.dtparams").string();
}

DilocoMeta readMeta(const std::string& step_dir) {
    DilocoMeta m;
    readCheckpointMeta(step_dir, kFormat, [&](const Json& meta) {
        m.step = meta.at("step").get<int>();
        m.replicas = meta.at("replicas").get<int>();
        m.fragments = meta.at("fragments").get<int>();
        m.parameters = meta.at("parameters").get<int64_t>();
        m.fragment_numel = meta.at("fragment_numel").get<std::vector<int64_t>>();
        m.inner = meta.at("inner_optimizer").get<std::string>();
        m.run_id = meta.value("run_id", "");
        m.model = meta.value("model", "");
    });
    const std::string meta_path = checkpointMetaPath(step_dir);
    if (m.step < 0 || m.replicas < 1 || m.fragments < 1)
        throw UsageError("checkpoint '" + meta_path +
                         "': step must be >= 0 and replicas, fragments >= 1 (got " + std::to_string(m.step) +
                         ", " + std::to_string(m.replicas) + ", " + std::to_string(m.fragments) + ")");
    if (int(m.fragment_numel.size()) != m.fragments)
        throw UsageError("checkpoint '" + meta_path + "' is inconsistent: " + std::to_string(m.fragments) +
                         " fragments but " + std::to_string(m.fragment_numel.size()) + " sizes");
    return m;
}

// The saved run and this scenario must agree on everything the files' shapes depend on.
void checkFits(const std::string& step_dir, const DilocoMeta& m, const Scenario& s) {
    const DilocoTheory theory = dilocoTheory(s);
    const int64_t P = unitLayout(s.model).total();
    const auto refuse = [&](const std::string& what) {
        throw UsageError("checkpoint '" + step_dir + "' does not fit this scenario: " + what);
    };
    checkCheckpointModel(step_dir, m.model, s.model.kind);
    if (m.parameters != P)
        refuse("it holds " + std::to_string(m.parameters) + " parameters, this model has " +
               std::to_string(P));
    if (m.replicas != s.topology.ranks)
        refuse("it was saved by " + std::to_string(m.replicas) + " replicas, this run has " +
               std::to_string(s.topology.ranks) + " (each replica resumes its own local model)");
    if (m.fragments != s.diloco.fragments || m.fragment_numel != theory.fragment_numel)
        refuse("it has " + std::to_string(m.fragments) + " fragments, this run " +
               std::to_string(s.diloco.fragments));
    if (m.inner != s.optimizer.kind)
        refuse("its inner optimizer is " + m.inner + ", this run's is " + s.optimizer.kind);
}

std::vector<NamedParameter> loadChecked(const std::string& file, const std::string& step_dir) {
    std::error_code ec;
    if (!fs::exists(file, ec))
        throw UsageError("checkpoint '" + step_dir + "' is incomplete: '" +
                         fs::path(file).filename().string() + "' is missing");
    return loadParameters(file); // throws on a checksum mismatch, naming the file
}

at::Tensor find(const std::vector<NamedParameter>& tensors, const std::string& name, int64_t numel,
                const std::string& file) {
    for (const auto& t : tensors)
        if (t.name == name) {
            if (t.tensor.numel() != numel)
                throw UsageError("checkpoint '" + file + "': '" + name + "' holds " +
                                 std::to_string(t.tensor.numel()) + " values, expected " +
                                 std::to_string(numel));
            return t.tensor.reshape({-1});
        }
    throw UsageError("checkpoint '" + file + "' has no tensor '" + name + "'");
}

void checkReplicaFile(const std::vector<NamedParameter>& tensors, const DilocoMeta& m,
                      const std::string& file) {
    checkRunIdentity(tensors, m.run_id, file);
    if (m.inner == "adamw")
        (void)find(tensors, "inner_state", 3 * m.parameters + 2, file);
    else
        (void)find(tensors, "local", m.parameters, file);
}

void checkOuterFile(const std::vector<NamedParameter>& tensors, const DilocoMeta& m,
                    const std::string& file) {
    checkRunIdentity(tensors, m.run_id, file);
    for (int k = 0; k < m.fragments; ++k) {
        (void)find(tensors, "global.f" + std::to_string(k), m.fragment_numel[size_t(k)], file);
        (void)find(tensors, "momentum.f" + std::to_string(k), m.fragment_numel[size_t(k)], file);
    }
    (void)find(tensors, "outer_steps", m.fragments, file);
}

at::Tensor flatten(const std::vector<at::Tensor>& params) {
    std::vector<at::Tensor> parts;
    for (const auto& p : params)
        parts.push_back(p.detach().reshape({-1}));
    return at::cat(parts).contiguous();
}

} // namespace

int64_t saveDilocoCheckpoint(const std::string& step_dir, int last_step, const Scenario& scenario,
                             const DilocoOuterState& outer, const std::vector<at::Tensor>& local_params,
                             torch::optim::Optimizer& inner, Communicator& comm) {
    const std::string partial = step_dir + ".partial";
    std::error_code ec;
    fs::create_directories(partial, ec);
    if (ec)
        throw UsageError("cannot create checkpoint directory '" + partial + "': " + ec.message());
    int64_t written = 0;
    {
        const std::string file = replicaFile(partial, comm.rank());
        std::vector<NamedParameter> tensors;
        if (auto* adamw = dynamic_cast<torch::optim::AdamW*>(&inner))
            tensors.push_back(
                {"inner_state", packReplicaState(local_params, *adamw, int64_t(last_step) + 1)});
        else
            tensors.push_back({"local", flatten(local_params)});
        if (!scenario.run.run_id.empty())
            tensors.push_back(runIdentity(scenario.run.run_id));
        saveParameters(file, tensors);
        written += int64_t(fs::file_size(file, ec));
    }
    comm.barrierNow(); // every replica's file is in place
    if (comm.rank() == 0) {
        std::vector<NamedParameter> tensors;
        at::Tensor steps = at::zeros({int64_t(outer.outer_steps.size())}, at::kFloat);
        for (size_t k = 0; k < outer.global.size(); ++k) {
            tensors.push_back({"global.f" + std::to_string(k), outer.global[k]});
            tensors.push_back({"momentum.f" + std::to_string(k), outer.momentum[k]});
            steps[int64_t(k)] = double(outer.outer_steps[k]);
        }
        tensors.push_back({"outer_steps", steps});
        if (!scenario.run.run_id.empty())
            tensors.push_back(runIdentity(scenario.run.run_id));
        saveParameters(outerFile(partial), tensors);
        Json meta;
        meta["format"] = kFormat;
        meta["version"] = 1;
        meta["step"] = last_step;
        meta["replicas"] = comm.size();
        meta["fragments"] = int(outer.global.size());
        std::vector<int64_t> sizes;
        int64_t P = 0;
        for (const auto& g : outer.global)
            sizes.push_back(g.numel()), P += g.numel();
        meta["parameters"] = P;
        meta["fragment_numel"] = sizes;
        meta["inner_optimizer"] = scenario.optimizer.kind;
        meta["model"] = scenario.model.kind;
        meta["run_id"] = scenario.run.run_id;
        const std::string meta_path = (fs::path(partial) / "checkpoint.json").string();
        writeFileAtomically(meta_path, meta.dump(2) + "\n");
        written += int64_t(fs::file_size(outerFile(partial), ec)) + int64_t(fs::file_size(meta_path, ec));
        if (fs::exists(step_dir, ec))
            throw UsageError("checkpoint '" + step_dir + "' exists already; not overwritten");
        fs::rename(partial, step_dir, ec);
        if (ec)
            throw UsageError("cannot rename '" + partial + "' to '" + step_dir + "': " + ec.message());
        syncDirectory(fs::path(step_dir).parent_path().string()); // the rename is durable too
    }
    comm.barrierNow(); // the checkpoint is complete before anyone goes on
    return written;
}

int loadDilocoCheckpoint(const std::string& step_dir, const Scenario& scenario, DilocoOuterState& outer,
                         const std::vector<at::Tensor>& local_params, torch::optim::Optimizer& inner,
                         int rank, int64_t& bytes_read) {
    const DilocoMeta m = readMeta(step_dir);
    checkFits(step_dir, m, scenario);
    std::error_code ec;
    {
        const std::string file = outerFile(step_dir);
        const auto tensors = loadChecked(file, step_dir);
        checkOuterFile(tensors, m, file);
        at::NoGradGuard no_grad;
        const at::Tensor steps = find(tensors, "outer_steps", m.fragments, file);
        for (int k = 0; k < m.fragments; ++k) {
            outer.global[size_t(k)].copy_(
                find(tensors, "global.f" + std::to_string(k), m.fragment_numel[size_t(k)], file));
            outer.momentum[size_t(k)].copy_(
                find(tensors, "momentum.f" + std::to_string(k), m.fragment_numel[size_t(k)], file));
            outer.outer_steps[size_t(k)] = int(steps[k].item<float>());
        }
        bytes_read += int64_t(fs::file_size(file, ec));
    }
    {
        const std::string file = replicaFile(step_dir, rank);
        const auto tensors = loadChecked(file, step_dir);
        checkReplicaFile(tensors, m, file);
        if (auto* adamw = dynamic_cast<torch::optim::AdamW*>(&inner)) {
            (void)unpackReplicaState(find(tensors, "inner_state", 3 * m.parameters + 2, file), local_params,
                                     *adamw);
        } else {
            at::NoGradGuard no_grad;
            const at::Tensor local = find(tensors, "local", m.parameters, file);
            int64_t offset = 0;
            for (const auto& p : local_params) {
                p.detach().copy_(local.narrow(0, offset, p.numel()).view(p.sizes()));
                offset += p.numel();
            }
        }
        bytes_read += int64_t(fs::file_size(file, ec));
    }
    return m.step;
}

void verifyDilocoCheckpoint(const std::string& step_dir, const Scenario& scenario) {
    const DilocoMeta m = readMeta(step_dir);
    checkFits(step_dir, m, scenario);
    checkOuterFile(loadChecked(outerFile(step_dir), step_dir), m, outerFile(step_dir));
    for (int r = 0; r < m.replicas; ++r)
        checkReplicaFile(loadChecked(replicaFile(step_dir, r), step_dir), m, replicaFile(step_dir, r));
    refuseWhenNothingLeftToTrain(step_dir, m.step, scenario.run.steps);
}

} // namespace dt
