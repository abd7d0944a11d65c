// checkpoint_meta.hpp: reading a checkpoint's checkpoint.json.
//
// Every checkpoint kind (sharded, replica, DiLoCo) keeps its description in
// STEP_DIR/checkpoint.json: {"format": "dtlab ... checkpoint", "version": 1,
// ...fields of that kind}. This is the one reader, so a missing, corrupt or
// foreign file gives the same clear error whichever kind was asked for.
#pragma once

#include "dtlab/checkpoint.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace dt {

// STEP_DIR/checkpoint.json
[[nodiscard]] std::string checkpointMetaPath(const std::string& step_dir);

// Reads STEP_DIR/checkpoint.json, checks "format" == format and "version"
// in 1..newest_version, then calls read(meta) to take the kind's fields.
// Throws UsageError naming the file when it is missing, is not JSON, is
// another format or version, or lacks a field that read() asks for
// (nlohmann's at() / get<>() throw).
void readCheckpointMeta(const std::string& step_dir, const std::string& format,
                        const std::function<void(const nlohmann::json& meta)>& read, int newest_version = 1);

// Throws UsageError when checkpoint.json's "model" (empty: not recorded) is
// not the run's [model] kind. (Its "strategy" may differ: resharding from one
// strategy to another is a feature.)
void checkCheckpointModel(const std::string& step_dir, const std::string& recorded_model,
                          const std::string& model_kind);

// The last move of a checkpoint written by several ranks into PARTIAL: write
// meta as PARTIAL/checkpoint.json (atomically), rename PARTIAL to STEP_DIR
// (never over an existing one) and make the rename durable. Returns
// checkpoint.json's bytes; throws UsageError naming what failed.
int64_t publishCheckpoint(const std::string& partial, const std::string& step_dir,
                          const nlohmann::json& meta);

// True when STEP_DIR/checkpoint.json (of any format) says step `last_step`
// and run `run_id`: this run saved that step already (a fault-tolerant job
// that went back commits it again with the same bits). False when run_id is
// empty, or the file is missing or unreadable.
[[nodiscard]] bool checkpointSavedByRun(const std::string& step_dir, int last_step,
                                        const std::string& run_id);

// A checkpoint at `path` whose last step is `last_step` leaves nothing to
// train in a run of `steps` steps: UsageError naming it ("... nothing left to
// train (raise [run] steps)"). Every kind's verify and every resume calls it.
void refuseWhenNothingLeftToTrain(const std::string& path, int64_t last_step, int64_t steps);

// For a fault-tolerant job whose every replica was down at once: the newest
// usable checkpoint in [run] checkpoint_dir (chooseCheckpoint) when this run
// ([run] run_id) wrote it and it is past `next_step` - 1; nullopt when there is
// none yet, none usable, or only another run's (a checkpoint_dir may hold
// several runs').
[[nodiscard]] std::optional<CheckpointChoice> newestCheckpointOfThisJob(const Scenario& scenario,
                                                                        int64_t next_step);

} // namespace dt
