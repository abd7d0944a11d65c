// read_file.cpp: readRegularFile (read_file.hpp), with POSIX calls: fstat on the open
// descriptor says what the path is, so nothing can swap it between the check and the read.
#include "dtlab/read_file.hpp"

#include "dtlab/errors.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dt {

namespace {

const char* kindOf(mode_t mode) {
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

} // namespace

std::string readRegularFile(const std::string& path, const std::string& what) {
    // O_NONBLOCK: opening a FIFO with no writer would otherwise wait for one.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        throw UsageError("cannot open " + what + " '" + path + "': " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        const std::string kind = kindOf(st.st_mode);
        ::close(fd);
        throw UsageError(what + " '" + path + "' is " + kind + ", not a file");
    }
    std::string bytes;
    bytes.reserve(size_t(st.st_size));
    char buffer[1 << 16];
    while (true) {
        const ssize_t n = ::read(fd, buffer, sizeof(buffer));
        if (n == 0)
            break;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            const int error = errno;
            ::close(fd);
            throw UsageError("cannot read " + what + " '" + path + "': " + std::strerror(error));
        }
        bytes.append(buffer, size_t(n));
    }
    ::close(fd);
    return bytes;
}

} // namespace dt
