// atomic_file.cpp: write a whole file so that readers see the old or the new text, never half.
//
// Steps: create `<path>.tmp.<pid>` in the same directory (so rename stays on
// one file system) as a new file (O_EXCL | O_NOFOLLOW: whatever already has
// that name, a file, a symlink or a FIFO, is neither truncated, followed nor
// blocked on: the next name `<path>.tmp.<pid>.<n>` is tried), fsync it,
// rename it over `path`, then fsync the directory (best effort). On any
// failure the temp file is removed, `path` is left as it was, and
// dt::UsageError("cannot write '<path>': <strerror>") is thrown.
#include "dtlab/atomic_file.hpp"
#include "dtlab/errors.hpp"

#include <cerrno>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace dt {
namespace {

std::string directoryOf(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    if (slash == std::string::npos)
        return ".";
    if (slash == 0)
        return "/";
    return path.substr(0, slash);
}

// Write all of `text` to `fd`; false (errno set) on failure.
bool writeAll(int fd, const std::string& text) {
    const char* data = text.data();
    size_t left = text.size();
    while (left > 0) {
        const ssize_t n = ::write(fd, data, left);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        data += n;
        left -= static_cast<size_t>(n);
    }
    return true;
}

[[noreturn]] void fail(const std::string& path, const std::string& tempPath, int fd, int error) {
    if (fd >= 0)
        ::close(fd);
    if (!tempPath.empty())
        ::unlink(tempPath.c_str());
    throw UsageError("cannot write '" + path + "': " + std::strerror(error));
}

} // namespace

void writeFileAtomically(const std::string& path, const std::string& text) {
    const std::string base = path + ".tmp." + std::to_string(::getpid());
    std::string tempPath = base;
    int fd = -1;
    for (int attempt = 0; fd < 0; ++attempt) {
        tempPath = attempt == 0 ? base : base + "." + std::to_string(attempt);
        fd = ::open(tempPath.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && (errno != EEXIST || attempt == 15))
            fail(path, "", -1, errno); // nothing was created (and nothing there was touched)
    }
    if (!writeAll(fd, text))
        fail(path, tempPath, fd, errno);
    if (::fsync(fd) != 0)
        fail(path, tempPath, fd, errno);
    if (::close(fd) != 0)
        fail(path, tempPath, -1, errno);
    if (::rename(tempPath.c_str(), path.c_str()) != 0)
        fail(path, tempPath, -1, errno);

    // Make the rename itself durable; a failure here does not undo the write.
    syncDirectory(directoryOf(path));
}

void syncDirectory(const std::string& dir) {
    const int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirFd >= 0) {
        ::fsync(dirFd);
        ::close(dirFd);
    }
}

} // namespace dt
