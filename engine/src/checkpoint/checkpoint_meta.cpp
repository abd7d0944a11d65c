// checkpoint_meta.cpp: reading a checkpoint's checkpoint.json (see the header).
#include "checkpoint/checkpoint_meta.hpp"

#include "dtlab/atomic_file.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/scenario.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace dt {

std::string checkpointMetaPath(const std::string& step_dir) {
    return (std::filesystem::path(step_dir) / "checkpoint.json").string();
}

void readCheckpointMeta(const std::string& step_dir, const std::string& format,
                        const std::function<void(const nlohmann::json& meta)>& read, int newest_version) {
    const std::string meta_path = checkpointMetaPath(step_dir);
    nlohmann::json meta;
    {
        std::ifstream in(meta_path);
        if (!in)
            throw UsageError("checkpoint '" + step_dir +
                             "': cannot open checkpoint.json (not a checkpoint directory?)");
        try {
            in >> meta;
        } catch (const std::exception& e) {
            throw UsageError("checkpoint '" + meta_path + "' is corrupt: " + std::string(e.what()));
        }
    }
    try {
        const bool known_version = meta.at("version").is_number_integer() &&
                                   meta.at("version").get<int>() >= 1 &&
                                   meta.at("version").get<int>() <= newest_version;
        if (meta.at("format") != format || !known_version)
            throw UsageError(
                "'" + meta_path + "' is not a version " +
                (newest_version == 1 ? std::string("1") : "1 to " + std::to_string(newest_version)) + " " +
                format);
        read(meta);
    } catch (const UsageError&) {
        throw;
    } catch (const std::exception& e) {
        throw UsageError("checkpoint '" + meta_path + "' is missing a field: " + std::string(e.what()));
    }
}

void checkCheckpointModel(const std::string& step_dir, const std::string& recorded_model,
                          const std::string& model_kind) {
    if (!recorded_model.empty() && recorded_model != model_kind)
        throw UsageError("checkpoint '" + step_dir + "' was written for [model] kind = \"" + recorded_model +
                         "\"; this run trains \"" + model_kind + "\"");
}

int64_t publishCheckpoint(const std::string& partial, const std::string& step_dir,
                          const nlohmann::json& meta) {
    namespace fs = std::filesystem;
    writeFileAtomically(checkpointMetaPath(partial), meta.dump(2) + "\n");
    std::error_code ec;
    if (fs::exists(step_dir, ec))
        throw UsageError("checkpoint '" + step_dir + "' exists already; not overwritten");
    fs::rename(partial, step_dir, ec);
    if (ec)
        throw UsageError("cannot rename '" + partial + "' to '" + step_dir + "': " + ec.message());
    syncDirectory(fs::path(step_dir).parent_path().string()); // the rename is durable too
    return int64_t(fs::file_size(checkpointMetaPath(step_dir), ec));
}

bool checkpointSavedByRun(const std::string& step_dir, int last_step, const std::string& run_id) {
    if (run_id.empty())
        return false;
    std::ifstream in(checkpointMetaPath(step_dir));
    if (!in)
        return false;
    try {
        nlohmann::json meta;
        in >> meta;
        return meta.at("step").get<int>() == last_step && meta.value("run_id", "") == run_id;
    } catch (const std::exception&) {
        return false; // unreadable: not this run's
    }
}

void refuseWhenNothingLeftToTrain(const std::string& path, int64_t last_step, int64_t steps) {
    if (last_step + 1 >= steps)
        throw UsageError("checkpoint '" + path + "' ends at step " + std::to_string(last_step) +
                         " but the run has only " + std::to_string(steps) +
                         " steps: nothing left to train (raise [run] steps)");
}

std::optional<CheckpointChoice> newestCheckpointOfThisJob(const Scenario& scenario, int64_t next_step) {
    try {
        CheckpointChoice choice = chooseCheckpoint(scenario.run.checkpoint_dir, scenario);
        if (choice.step + 1 <= next_step ||
            !checkpointSavedByRun(choice.step_dir, choice.step, scenario.run.run_id))
            return std::nullopt;
        return choice;
    } catch (const UsageError&) {
        return std::nullopt; // none yet (or none usable): the job goes on from its quorum's step
    }
}

} // namespace dt
