// e2e_support.hpp: what the end-to-end tests of dtlab share: an Xvfb of
// their own, the dtlab path, screenshots kept for people to look at, and the
// check that no rank process is left after dtlab exits.
#pragma once

#include "integration/process_helpers.hpp"

#include <memory>
#include <string>
#include <sys/types.h>
#include <vector>

namespace e2e {

#ifdef DTLAB_PATH
inline const std::string kDtlab = DTLAB_PATH;
#else
inline const std::string kDtlab;
#endif

// DTLAB_BINARY_DIR/gui-artifacts, created: screenshots kept for people to look at.
std::string artifactDir();
// The absolute path of a program on PATH ("" when missing).
std::string toolPath(const std::string& tool);
bool onPath(const std::string& tool);

// An X server of our own on a display number nobody uses.
class Xvfb {
  public:
    Xvfb();
    ~Xvfb(); // SIGTERM, so Xvfb removes its lock file and socket
    Xvfb(const Xvfb&) = delete;
    Xvfb& operator=(const Xvfb&) = delete;
    [[nodiscard]] bool ok() const { return m_process != nullptr; }
    [[nodiscard]] const std::string& display() const { return m_display; }

  private:
    std::string m_display;
    std::unique_ptr<it::Process> m_process;
};

it::ProcessOptions displayOptions(const Xvfb& x, double timeout_s);
// A PNG written by dtlab's screenshot, big enough to hold a drawn window.
void checkScreenshot(const std::string& path);
// PIDs from the summary lines dtlab prints when it stops a run.
std::vector<pid_t> summaryPids(const std::string& out);
// Every rank process of the run is gone (expected_ranks summary lines first).
void checkNoWorkerLeft(const std::string& out, size_t expected_ranks = 3);
// FAIL when test_gui was built without dtlab.
void requireDtlab();
// What every display test starts with: dtlab built, and an Xvfb of its own
// (REQUIREd to start); nullptr, with a warning, when Xvfb is not installed.
std::unique_ptr<Xvfb> startDisplay();

} // namespace e2e
