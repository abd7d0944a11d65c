// telemetry_wire.cpp: socket helpers for the telemetry wire (format in the header).
#include "telemetry/telemetry_wire.hpp"

#include "core/sha256.hpp"
#include "dtlab/errors.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace dt::wire {

bool sendAll(int fd, const void* data, size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
        ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        size -= size_t(n);
    }
    return true;
}

bool recvAll(int fd, void* data, size_t size) {
    char* p = static_cast<char*>(data);
    while (size > 0) {
        ssize_t n = ::recv(fd, p, size, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        size -= size_t(n);
    }
    return true;
}

static bool resolve(const std::string& host, int port, sockaddr_in& out) {
    std::memset(&out, 0, sizeof(out));
    out.sin_family = AF_INET;
    out.sin_port = htons(uint16_t(port));
    if (inet_pton(AF_INET, host.c_str(), &out.sin_addr) == 1)
        return true;
    addrinfo hints{};
    hints.ai_family = AF_INET;
    addrinfo* result = nullptr;
    if (getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0 || !result)
        return false;
    out.sin_addr = reinterpret_cast<sockaddr_in*>(result->ai_addr)->sin_addr;
    freeaddrinfo(result);
    return true;
}

int listenTcp(const std::string& host, int port, int* bound_port) {
    sockaddr_in addr{};
    if (!resolve(host, port, addr))
        throw UsageError("cannot resolve listen address '" + host + "'");
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 128) != 0) {
        const std::string why = std::strerror(errno);
        ::close(fd);
        throw UsageError("cannot listen on " + host + ":" + std::to_string(port) + ": " + why);
    }
    socklen_t len = sizeof(addr);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    if (bound_port)
        *bound_port = ntohs(addr.sin_port);
    return fd;
}

int connectTcp(const std::string& host, int port, int timeout_ms) {
    sockaddr_in addr{};
    if (!resolve(host, port, addr))
        return -1;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -1;
        if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            return fd;
        }
        ::close(fd);
        if (std::chrono::steady_clock::now() >= deadline)
            return -1;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

int connectWithin(const std::string& host, int port, double timeout_ms) {
    sockaddr_in addr{};
    if (!resolve(host, port, addr))
        return -1;
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    timeval tv{};
    const int64_t us = int64_t(timeout_ms * 1000.0);
    tv.tv_sec = time_t(us / 1'000'000);
    tv.tv_usec = suseconds_t(us % 1'000'000);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        ::close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

Proof rankProof(const std::string& token, const Nonce& session_nonce, const Nonce& rank_nonce, int32_t rank) {
    std::string message = "dtlab rank";
    message.append(reinterpret_cast<const char*>(session_nonce.data()), session_nonce.size());
    message.append(reinterpret_cast<const char*>(rank_nonce.data()), rank_nonce.size());
    message.append(reinterpret_cast<const char*>(&rank), sizeof(rank));
    return hmacSha256(token, message);
}

Proof sessionProof(const std::string& token, const Nonce& session_nonce, const Nonce& rank_nonce) {
    std::string message = "dtlab session";
    message.append(reinterpret_cast<const char*>(session_nonce.data()), session_nonce.size());
    message.append(reinterpret_cast<const char*>(rank_nonce.data()), rank_nonce.size());
    return hmacSha256(token, message);
}

bool proofsEqual(const Proof& a, const Proof& b) {
    return constantTimeEqual(a.data(), b.data(), a.size());
}

std::string textProofHex(const std::string& token, const std::string& text) {
    const Proof proof = hmacSha256(token, text);
    return toHex(proof.data(), proof.size());
}

void splitAddress(const std::string& address, std::string& host, int& port) {
    const auto colon = address.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == address.size())
        throw UsageError("expected an address as HOST:PORT, got '" + address + "'");
    host = address.substr(0, colon);
    try {
        size_t used = 0;
        port = std::stoi(address.substr(colon + 1), &used);
        if (used != address.size() - colon - 1 || port <= 0 || port > 65535)
            throw std::out_of_range("port");
    } catch (const std::exception&) {
        throw UsageError("expected a port number 1..65535 in '" + address + "'");
    }
}

} // namespace dt::wire
