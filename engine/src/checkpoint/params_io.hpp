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

} // namespace dt
