// read_file.hpp: reading a whole input file (a recording, a checkpoint's parameter file)
// without surprises: only a regular file is read, and every failure is a UsageError.
#pragma once

#include <string>

namespace dt {

// The bytes of the regular file at `path`. Throws UsageError naming `what` and the path when it
// cannot be opened ("cannot open WHAT 'PATH': No such file or directory"), when it is not a
// regular file ("WHAT 'PATH' is a directory, not a file": reading a directory fails, reading a
// device or a FIFO may never end), or when a read fails.
[[nodiscard]] std::string readRegularFile(const std::string& path, const std::string& what);

} // namespace dt
