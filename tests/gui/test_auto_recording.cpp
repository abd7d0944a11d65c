// test_auto_recording.cpp: the folder, names and pruning of dtlab's automatic
// recordings (auto_recording.hpp), in a scratch folder: only dtlab's own
// recordings are ever removed, the newest kept.
#include "auto_recording.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

using dt::app::autoRecordingPath;
using dt::app::isAutoRecordingName;

namespace {

struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/dtlab-auto-XXXXXX";
        path = mkdtemp(tmpl);
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    [[nodiscard]] std::string file(const std::string& name) const { return path + "/" + name; }
};

// A file with its modification time `age_s` seconds in the past.
void touch(const std::string& path, int age_s) {
    std::ofstream(path) << "x";
    const time_t t = time(nullptr) - age_s;
    const utimbuf times{t, t};
    utime(path.c_str(), &times);
}

bool exists(const std::string& path) {
    struct stat st {};
    return lstat(path.c_str(), &st) == 0;
}

} // namespace

TEST_CASE("automatic recordings are named after the scenario and the time", "[auto_recording]") {
    TempDir dir;
    std::tm local{};
    local.tm_year = 2025 - 1900;
    local.tm_mon = 0;
    local.tm_mday = 2;
    local.tm_hour = 13;
    local.tm_min = 4;
    local.tm_sec = 5;
    local.tm_isdst = -1;
    const std::time_t when = mktime(&local);

    const std::string path = autoRecordingPath(dir.path, "DDP basics (4 ranks)", when);
    CHECK(path == dir.file("dtlab-ddp-basics-4-ranks-20250102-130405.dtrec"));
    CHECK(isAutoRecordingName("dtlab-ddp-basics-4-ranks-20250102-130405.dtrec"));

    SECTION("a name taken (or its .partial) gets -2, -3") {
        touch(path, 0);
        const std::string second = autoRecordingPath(dir.path, "DDP basics (4 ranks)", when);
        CHECK(second == dir.file("dtlab-ddp-basics-4-ranks-20250102-130405-2.dtrec"));
        touch(second + ".partial", 0);
        CHECK(autoRecordingPath(dir.path, "DDP basics (4 ranks)", when) ==
              dir.file("dtlab-ddp-basics-4-ranks-20250102-130405-3.dtrec"));
        CHECK(isAutoRecordingName("dtlab-ddp-basics-4-ranks-20250102-130405-2.dtrec.partial"));
    }
    SECTION("a name with nothing to keep is 'run'") {
        CHECK(autoRecordingPath(dir.path, "???", when) == dir.file("dtlab-run-20250102-130405.dtrec"));
    }
    SECTION("other names are not dtlab's") {
        for (const char* name : {"run.dtrec", "dtlab-x.dtrec", "dtlab-x-2025-130405.dtrec",
                                 "dtlab-x-20250102-130405.toml", "dtlab-20250102-130405.dtrec",
                                 "my-dtlab-x-20250102-130405.dtrec", "dtlab-x-20250102-130405.dtrec.tmp"}) {
            CAPTURE(name);
            CHECK_FALSE(isAutoRecordingName(name));
        }
    }
}

TEST_CASE("dtlab keeps its last few recordings and never touches anything else", "[auto_recording]") {
    TempDir dir;
    // Eight of dtlab's recordings, one minute apart (the newest first), one a .partial.
    std::vector<std::string> ours;
    for (int i = 0; i < 8; ++i) {
        const std::string name =
            "dtlab-ddp-2025010" + std::to_string(i + 1) + "-120000.dtrec" + (i == 2 ? ".partial" : "");
        ours.push_back(dir.file(name));
        touch(ours.back(), 60 * i);
    }
    // Not dtlab's, even when old: a user's file, a recording named by hand, a
    // directory and a symlink named like dtlab's.
    touch(dir.file("notes.txt"), 9999);
    touch(dir.file("run.dtrec"), 9999);
    std::filesystem::create_directory(dir.file("dtlab-dir-20240101-120000.dtrec"));
    REQUIRE(symlink(dir.file("notes.txt").c_str(), dir.file("dtlab-link-20240101-120000.dtrec").c_str()) ==
            0);

    CHECK(dt::app::newestAutoRecording(dir.path) == ours[0]);
    const std::vector<std::string> removed = dt::app::pruneAutoRecordings(dir.path, 5);
    CHECK(removed.size() == 3);
    for (int i = 0; i < 8; ++i) {
        CAPTURE(ours[size_t(i)]);
        CHECK(exists(ours[size_t(i)]) == (i < 5));
    }
    CHECK(exists(dir.file("notes.txt")));
    CHECK(exists(dir.file("run.dtrec")));
    CHECK(exists(dir.file("dtlab-dir-20240101-120000.dtrec")));
    CHECK(exists(dir.file("dtlab-link-20240101-120000.dtrec")));
}

TEST_CASE("the folder comes from DTLAB_RECORDING_DIR, made if missing", "[auto_recording]") {
    TempDir dir;
    const std::string folder = dir.file("recordings");
    const char* old = std::getenv("DTLAB_RECORDING_DIR");
    const std::string saved = old ? old : "";
    setenv("DTLAB_RECORDING_DIR", folder.c_str(), 1);
    std::string error;
    CHECK(dt::app::autoRecordingDir(error) == folder);
    CHECK(error.empty());
    CHECK(std::filesystem::is_directory(folder));

    SECTION("a file in its place is refused, with the reason") {
        std::filesystem::remove(folder);
        touch(folder, 0);
        CHECK(dt::app::autoRecordingDir(error).empty());
        CHECK(error.find("is not a directory") != std::string::npos);
    }
    if (old)
        setenv("DTLAB_RECORDING_DIR", saved.c_str(), 1);
    else
        unsetenv("DTLAB_RECORDING_DIR");
}
