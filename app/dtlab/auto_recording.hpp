// auto_recording.hpp: where dtlab keeps the recording of every live run, so
// that "show that again" needs no preparation (File > Replay the last run).
//
//   folder  $DTLAB_RECORDING_DIR if set, else $XDG_RUNTIME_DIR/dtlab, else
//           /tmp/dtlab-<uid>; created with mode 0700. The two defaults must be
//           a real directory (not a symlink) owned by this user.
//   name    dtlab-<scenario>-<yyyymmdd-hhmmss>.dtrec (-2, -3 ... when taken);
//           while the run goes the Session writes NAME.partial (recording.hpp)
//   keep    the newest few of dtlab's own recordings in that folder: files
//           named as above (.dtrec or .dtrec.partial), regular files only.
//           Nothing else there is ever touched.
//
// No ImGui, no Session: plain functions, tested in tests/gui/test_auto_recording.cpp.
#pragma once

#include <ctime>
#include <string>
#include <vector>

namespace dt::app {

constexpr size_t kAutoRecordingsKept = 5;

// The folder (created if missing), or "" with `error` saying why none can be used.
[[nodiscard]] std::string autoRecordingDir(std::string& error);

// dir/dtlab-<scenario>-<yyyymmdd-hhmmss>.dtrec for the local time `now`, with
// -2, -3 ... appended when that name (or its .partial) is taken.
[[nodiscard]] std::string autoRecordingPath(const std::string& dir, const std::string& scenario_name,
                                            std::time_t now);

// Whether a file name is one of dtlab's own automatic recordings.
[[nodiscard]] bool isAutoRecordingName(const std::string& name);

// Deletes dtlab's own recordings in `dir` beyond the newest `keep` (by
// modification time); returns the paths removed.
std::vector<std::string> pruneAutoRecordings(const std::string& dir, size_t keep);

// The newest of dtlab's recordings in `dir` (a .partial too: a run cut off), or "".
[[nodiscard]] std::string newestAutoRecording(const std::string& dir);

} // namespace dt::app
