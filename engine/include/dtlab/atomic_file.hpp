// atomic_file.hpp: durable, all-or-nothing file writes (summaries, traces,
// recordings and every checkpoint file go through it).
#pragma once

#include <string>

namespace dt {

// Write text to `path` atomically (temp file + rename). Throws UsageError if
// the directory does not exist or is not writable.
void writeFileAtomically(const std::string& path, const std::string& text);

// fsync a directory, so that a rename into it (a checkpoint's step-<S>) is
// durable; best effort (a directory that cannot be opened is left alone).
void syncDirectory(const std::string& dir);

} // namespace dt
