// params_io.hpp: a rank's parameters as a file, and their checksum.
//
// File format (little-endian), version 1:
//   "DTPARAMS" (8 bytes), u32 version, u32 count, then per parameter:
//   u32 name length, name bytes, u32 ndim, i64 dims[ndim], f32 data[numel],
//   and finally u64 FNV-1a checksum of every byte before it.
// A torn or corrupt file fails the checksum and is refused with the reason.
#pragma once

#include "model/model.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dt {

// FNV-1a 64 over the raw float32 bytes of the parameters, in order.
[[nodiscard]] uint64_t parametersChecksum(const std::vector<NamedParameter>& params);

void saveParameters(const std::string& path, const std::vector<NamedParameter>& params);
// Throws UsageError naming the file and what is wrong with it.
[[nodiscard]] std::vector<NamedParameter> loadParameters(const std::string& path);

// The run that wrote a checkpoint file. Every checkpoint kind stores the
// Session's run id ([run] run_id) twice: in checkpoint.json as "run_id", and in
// each of its tensor files as one more tensor, kRunIdentityKey, holding the
// id's characters as floats. A file whose identity differs from its
// checkpoint.json (copied in from another run's checkpoint of the same step)
// is refused. Files or checkpoints written before this carry none: not checked.
inline constexpr const char* kRunIdentityKey = "dtlab/run";
[[nodiscard]] NamedParameter runIdentity(const std::string& run_id);
// Throws UsageError "FILE was written by run X, its checkpoint.json by run Y".
void checkRunIdentity(const std::vector<NamedParameter>& tensors, const std::string& meta_run_id,
                      const std::string& file);

} // namespace dt
