// checkpoint_meta.cpp: reading a checkpoint's checkpoint.json (see the header).
#include "checkpoint/checkpoint_meta.hpp"

#include "dtlab/errors.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace dt {

std::string checkpointMetaPath(const std::string& step_dir) {
    return (std::filesystem::path(step_dir) / "checkpoint.json").string();
}

void readCheckpointMeta(const std::string& step_dir, const std::string& format,
                        const std::function<void(const nlohmann::json& meta)>& read) {
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
        if (meta.at("format") != format || meta.at("version") != 1)
            throw UsageError("'" + meta_path + "' is not a version 1 " + format);
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

} // namespace dt
