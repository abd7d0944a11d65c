// e2e_support.cpp: see e2e_support.hpp.
#include "gui/e2e_support.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sys/stat.h>

namespace e2e {

std::string artifactDir() {
    const std::string dir = std::string(DTLAB_BINARY_DIR) + "/gui-artifacts";
    std::filesystem::create_directories(dir);
    return dir;
}

// The process helpers exec without a PATH search.
std::string toolPath(const std::string& tool) {
    const it::ProcessResult r = it::runProcess({"/bin/sh", "-c", "command -v " + tool}, {{}, {}, 10.0, ""});
    if (r.exit_code != 0)
        return "";
    return r.out.substr(0, r.out.find('\n'));
}

bool onPath(const std::string& tool) {
    return !toolPath(tool).empty();
}

Xvfb::Xvfb() {
    for (int n = 91; n < 160; ++n) {
        const std::string lock = "/tmp/.X" + std::to_string(n) + "-lock";
        const std::string socket = "/tmp/.X11-unix/X" + std::to_string(n);
        if (it::fileExists(lock) || it::fileExists(socket))
            continue;
        m_display = ":" + std::to_string(n);
        m_process =
            std::make_unique<it::Process>(std::vector<std::string>{toolPath("Xvfb"), m_display, "-screen",
                                                                   "0", "1920x1080x24", "-nolisten", "tcp"},
                                          it::ProcessOptions{{}, {}, 3600.0, ""});
        if (it::waitFor([&] { return it::fileExists(socket) || !m_process->running(); }, 10.0) &&
            m_process->running())
            return;
        m_process.reset();
    }
    m_display.clear();
}

// SIGTERM lets Xvfb remove its lock file and socket (SIGKILL would leave them
// behind and use up display numbers).
Xvfb::~Xvfb() {
    if (!m_process)
        return;
    m_process->signal(SIGTERM);
    (void)m_process->wait(10.0);
}

it::ProcessOptions displayOptions(const Xvfb& x, double timeout_s) {
    it::ProcessOptions o;
    o.env = {{"DISPLAY", x.display()}};
    o.unset_env = {"WAYLAND_DISPLAY"};
    o.timeout_s = timeout_s;
    return o;
}

// The magic bytes, and big enough to hold a drawn window rather than a blank
// one (a flat 1600x900 PNG is ~5 KB).
void checkScreenshot(const std::string& path) {
    INFO(path);
    REQUIRE(it::fileExists(path));
    std::ifstream in(path, std::ios::binary);
    char magic[8] = {};
    in.read(magic, 8);
    CHECK(std::string(magic + 1, 3) == "PNG");
    struct stat st {};
    REQUIRE(stat(path.c_str(), &st) == 0);
    CHECK(st.st_size > 20000);
}

// "dtlab: summary: rank 1 (pid 1234): killed by signal 9 ..."
std::vector<pid_t> summaryPids(const std::string& out) {
    std::vector<pid_t> pids;
    const std::regex line(R"(dtlab: summary: rank \d+ \(pid (\d+)\))");
    for (auto m = std::sregex_iterator(out.begin(), out.end(), line); m != std::sregex_iterator(); ++m)
        pids.push_back(pid_t(std::stoi((*m)[1].str())));
    return pids;
}

void checkNoWorkerLeft(const std::string& out, size_t expected_ranks) {
    const std::vector<pid_t> pids = summaryPids(out);
    CHECK(pids.size() == expected_ranks);
    for (pid_t pid : pids) {
        INFO("worker pid " << pid);
        const bool gone = it::waitFor(
            [&] {
                if (::kill(pid, 0) != 0)
                    return true;
                // A zombie awaiting its reaper is gone too.
                std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
                std::string pid_s, comm, state;
                stat >> pid_s >> comm >> state;
                return state == "Z";
            },
            5.0);
        CHECK(gone);
    }
    CHECK(it::waitForNoWorkers(5.0).empty());
}

void requireDtlab() {
    if (kDtlab.empty())
        FAIL("test_gui was built without the dtlab target (DTLAB_PATH unset)");
}

std::unique_ptr<Xvfb> startDisplay() {
    requireDtlab();
    if (!onPath("Xvfb")) {
        WARN("Xvfb is not installed (apt-get install xvfb): skipping the dtlab end-to-end test");
        return nullptr;
    }
    auto x = std::make_unique<Xvfb>();
    REQUIRE(x->ok());
    return x;
}

} // namespace e2e
