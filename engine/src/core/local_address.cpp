// local_address.cpp: see local_address.hpp.
#include "dtlab/local_address.hpp"

#include "dtlab/errors.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dt {

std::string localAddressTowards(const std::string& host, int port) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_DGRAM;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(port > 0 ? port : 9);
    if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
        rc != 0 || found == nullptr)
        throw UsageError("cannot resolve the Session's host '" + host + "': " + gai_strerror(rc));

    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        freeaddrinfo(found);
        throw UsageError(std::string("socket() failed: ") + strerror(errno));
    }
    // connect() on a UDP socket only picks the route and the source address.
    const int rc = connect(fd, found->ai_addr, found->ai_addrlen);
    const int connect_errno = errno;
    freeaddrinfo(found);
    sockaddr_in local{};
    socklen_t length = sizeof(local);
    if (rc != 0 || getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) != 0) {
        close(fd);
        throw UsageError("no route from this host to the Session's host '" + host +
                         "': " + strerror(rc != 0 ? connect_errno : errno));
    }
    close(fd);
    char text[INET_ADDRSTRLEN] = {0};
    inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text));
    return text;
}

} // namespace dt
