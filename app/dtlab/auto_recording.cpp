// auto_recording.cpp: the folder, the names and the pruning of dtlab's
// automatic recordings (see auto_recording.hpp).
#include "auto_recording.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dt::app {
namespace {

const char* kPrefix = "dtlab-";
const char* kSuffix = ".dtrec";
const char* kPartial = ".partial";

bool endsWith(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool allDigits(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "DDP basics (4 ranks)" -> "ddp-basics-4-ranks"
std::string nameForFile(const std::string& scenario_name) {
    std::string out;
    for (char c : scenario_name) {
        const bool keep = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        if (c >= 'A' && c <= 'Z')
            out += char(c - 'A' + 'a');
        else if (keep)
            out += c;
        else if (!out.empty() && out.back() != '-')
            out += '-';
        if (out.size() >= 40)
            break;
    }
    while (!out.empty() && out.back() == '-')
        out.pop_back();
    return out.empty() ? "run" : out;
}

bool exists(const std::string& path) {
    struct stat st {};
    return lstat(path.c_str(), &st) == 0;
}

// A directory we can write into; the default folders must also be ours and no symlink.
bool usableDir(const std::string& dir, bool must_own, std::string& error) {
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
        error = "cannot create '" + dir + "': " + std::strerror(errno);
        return false;
    }
    struct stat st {};
    if ((must_own ? lstat(dir.c_str(), &st) : stat(dir.c_str(), &st)) != 0 || !S_ISDIR(st.st_mode)) {
        error = "'" + dir + "' is not a directory";
        return false;
    }
    if (must_own && st.st_uid != getuid()) {
        error = "'" + dir + "' belongs to another user";
        return false;
    }
    if (access(dir.c_str(), W_OK) != 0) {
        error = "'" + dir + "' is not writable";
        return false;
    }
    return true;
}

struct Found {
    std::string path;
    int64_t mtime_ns = 0;
};

// dtlab's own recordings in `dir`, newest first.
std::vector<Found> listAutoRecordings(const std::string& dir) {
    std::vector<Found> out;
    DIR* d = opendir(dir.c_str());
    if (!d)
        return out;
    while (const dirent* entry = readdir(d)) {
        const std::string name = entry->d_name;
        if (!isAutoRecordingName(name))
            continue;
        const std::string path = dir + "/" + name;
        struct stat st {};
        if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        out.push_back({path, int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec});
    }
    closedir(d);
    std::sort(out.begin(), out.end(), [](const Found& a, const Found& b) {
        return a.mtime_ns != b.mtime_ns ? a.mtime_ns > b.mtime_ns : a.path > b.path;
    });
    return out;
}

} // namespace

std::string autoRecordingDir(std::string& error) {
    if (const char* dir = std::getenv("DTLAB_RECORDING_DIR"); dir && *dir)
        return usableDir(dir, false, error) ? std::string(dir) : "";
    std::string dir;
    if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime && *runtime)
        dir = std::string(runtime) + "/dtlab";
    else
        dir = "/tmp/dtlab-" + std::to_string(getuid());
    return usableDir(dir, true, error) ? dir : "";
}

std::string autoRecordingPath(const std::string& dir, const std::string& scenario_name, std::time_t now) {
    std::tm local{};
    localtime_r(&now, &local);
    char stamp[32];
    std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
    const std::string base = dir + "/" + kPrefix + nameForFile(scenario_name) + "-" + stamp;
    std::string path = base + kSuffix;
    for (int n = 2; exists(path) || exists(path + kPartial); ++n)
        path = base + "-" + std::to_string(n) + kSuffix;
    return path;
}

// dtlab-<name>-<8 digits>-<6 digits>[-<n>].dtrec[.partial]
bool isAutoRecordingName(const std::string& file_name) {
    std::string name = file_name;
    if (endsWith(name, kPartial))
        name.resize(name.size() - std::strlen(kPartial));
    if (name.rfind(kPrefix, 0) != 0 || !endsWith(name, kSuffix))
        return false;
    name = name.substr(std::strlen(kPrefix), name.size() - std::strlen(kPrefix) - std::strlen(kSuffix));
    // Split on '-' from the right: [-n], time, date, then the scenario's name.
    std::vector<std::string> parts;
    size_t end = name.size();
    while (parts.size() < 3) {
        const size_t dash = name.rfind('-', end == 0 ? 0 : end - 1);
        if (dash == std::string::npos)
            break;
        parts.push_back(name.substr(dash + 1, end - dash - 1));
        end = dash;
    }
    auto stamp = [&](size_t i) {
        return i + 1 < parts.size() && allDigits(parts[i]) && parts[i].size() == 6 &&
               allDigits(parts[i + 1]) && parts[i + 1].size() == 8;
    };
    if (end == 0 || parts.size() < 2)
        return false;
    if (stamp(0)) // ...-date-time
        return true;
    return parts.size() == 3 && allDigits(parts[0]) && stamp(1); // ...-date-time-n
}

std::vector<std::string> pruneAutoRecordings(const std::string& dir, size_t keep) {
    std::vector<std::string> removed;
    const std::vector<Found> found = listAutoRecordings(dir);
    for (size_t i = keep; i < found.size(); ++i)
        if (unlink(found[i].path.c_str()) == 0)
            removed.push_back(found[i].path);
    return removed;
}

std::string newestAutoRecording(const std::string& dir) {
    const std::vector<Found> found = listAutoRecordings(dir);
    return found.empty() ? "" : found.front().path;
}

} // namespace dt::app
