// telemetry_collector.cpp: accept loop + one reader thread per rank.
//
// Per connection: send a Challenge, read Hello (refuse a wrong magic, version
// or token proof, and log who was refused), send Welcome with the Session's
// own proof and this host's boot id, answer kClockPings pings with the
// Session clock, then read frames until Bye or EOF (a ClockPing frame, a
// re-sync from a rank on another host, is answered with a ClockPong at once).
// The handshake must finish within 10 s.
// Every Event's rank field is overwritten with the connection's rank, so a
// confused rank cannot write into another rank's lane.
#include "telemetry/telemetry_collector.hpp"

#include "dtlab/clock.hpp"
#include "telemetry/clock_sync.hpp"
#include "telemetry/telemetry_wire.hpp"

#include "core/sha256.hpp"

#include <arpa/inet.h>
#include <cstring>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace dt {

TelemetryCollector::TelemetryCollector(const std::string& host, int port, TelemetrySink& sink,
                                       std::string token)
    : m_sink(sink), m_token(std::move(token)) {
    m_listen_fd = wire::listenTcp(host, port, &m_port);
}

TelemetryCollector::~TelemetryCollector() {
    stop();
}

void TelemetryCollector::start() {
    m_accept_thread = std::thread([this] { acceptLoop(); });
}

void TelemetryCollector::stop() {
    if (m_stopping.exchange(true))
        return;
    if (m_listen_fd >= 0)
        ::shutdown(m_listen_fd, SHUT_RDWR);
    if (m_accept_thread.joinable())
        m_accept_thread.join();
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        for (int fd : m_fds)
            ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : m_readers)
        if (t.joinable())
            t.join();
    std::lock_guard<std::mutex> lock(m_mutex);
    for (int fd : m_fds)
        ::close(fd);
    m_fds.clear();
    if (m_listen_fd >= 0)
        ::close(m_listen_fd);
    m_listen_fd = -1;
}

void TelemetryCollector::acceptLoop() {
    while (!m_stopping.load()) {
        pollfd p{m_listen_fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0)
            continue;
        int fd = ::accept4(m_listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        std::lock_guard<std::mutex> lock(m_mutex);
        if (m_stopping.load()) {
            ::close(fd);
            break;
        }
        m_fds.push_back(fd);
        m_readers.emplace_back([this, fd] { readLoop(fd); });
    }
}

namespace {

std::string peerAddress(int fd) {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
        return "an unknown peer";
    char host[INET6_ADDRSTRLEN] = {0};
    int port = 0;
    if (address.ss_family == AF_INET) {
        const auto* a = reinterpret_cast<const sockaddr_in*>(&address);
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
        port = ntohs(a->sin_port);
    } else if (address.ss_family == AF_INET6) {
        const auto* a = reinterpret_cast<const sockaddr_in6*>(&address);
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
        port = ntohs(a->sin6_port);
    }
    return std::string(host) + ":" + std::to_string(port);
}

void setReceiveTimeout(int fd, int seconds) {
    timeval tv{seconds, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

} // namespace

bool TelemetryCollector::authenticate(int fd, wire::Hello& hello) {
    setReceiveTimeout(fd, 10); // a peer that never answers does not hold a reader for ever
    wire::Challenge challenge{};
    std::memcpy(challenge.magic, wire::kChallengeMagic, 4);
    challenge.version = wire::kWireVersion;
    challenge.session_nonce = randomNonce();
    const auto refuse = [&](const std::string& why) {
        m_sink.onProtocolError("refused a telemetry connection from " + peerAddress(fd) + ": " + why);
        ::shutdown(fd, SHUT_RDWR);
        return false;
    };
    if (!wire::sendAll(fd, &challenge, sizeof(challenge)))
        return false;
    if (!wire::recvAll(fd, &hello, sizeof(hello)))
        return refuse("no hello within 10 s (not a dtlab rank?)");
    if (std::memcmp(hello.magic, wire::kMagic, 4) != 0)
        return refuse("not a dtlab rank (bad magic)");
    if (hello.version != wire::kWireVersion)
        return refuse("wire version " + std::to_string(hello.version) + ", expected " +
                      std::to_string(wire::kWireVersion) + " (a different dtlab build)");
    hello.host[sizeof(hello.host) - 1] = 0;
    const wire::Proof expected =
        wire::rankProof(m_token, challenge.session_nonce, hello.rank_nonce, hello.rank);
    if (!wire::proofsEqual(expected, hello.proof))
        return refuse("rank " + std::to_string(hello.rank) + " on " + hello.host +
                      " did not prove the token (wrong or missing DTLAB_TOKEN / --token-file)");
    wire::Welcome welcome{};
    std::memcpy(welcome.magic, wire::kWelcomeMagic, 4);
    welcome.proof = wire::sessionProof(m_token, challenge.session_nonce, hello.rank_nonce);
    const BootId boot = thisBootId();
    std::memcpy(welcome.boot_id, boot.bytes, sizeof(welcome.boot_id));
    if (!wire::sendAll(fd, &welcome, sizeof(welcome)))
        return false;
    setReceiveTimeout(fd, 0); // frames may be far apart (a paused run)
    return true;
}

void TelemetryCollector::readLoop(int fd) {
    wire::Hello hello{};
    if (!authenticate(fd, hello))
        return;
    const int rank = hello.rank;
    for (int i = 0; i < wire::kClockPings; ++i) {
        int64_t t_rank = 0;
        if (!wire::recvAll(fd, &t_rank, 8))
            return;
        const int64_t t_session = monotonicNowNs();
        if (!wire::sendAll(fd, &t_session, 8))
            return;
    }
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_rank_fd[rank] = fd;
    }
    if (!m_sink.onHello(rank, hello.pid, hello.host)) {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_rank_fd.erase(rank);
        ::shutdown(fd, SHUT_RDWR);
        return;
    }
    std::vector<Event> events;
    std::string text;
    bool clean = false;
    while (true) {
        wire::FrameHeader header{};
        if (!wire::recvAll(fd, &header, sizeof(header)))
            break;
        if (header.length > wire::kMaxFrameBytes) {
            m_sink.onProtocolError("rank " + std::to_string(rank) + " sent an oversized frame");
            break;
        }
        if (header.type == uint32_t(wire::FrameType::Bye)) {
            clean = true;
            break;
        }
        if (header.type == uint32_t(wire::FrameType::Events)) {
            if (header.length % sizeof(Event) != 0) {
                m_sink.onProtocolError("rank " + std::to_string(rank) + " sent a torn event frame");
                break;
            }
            events.resize(header.length / sizeof(Event));
            if (!wire::recvAll(fd, events.data(), header.length))
                break;
            for (auto& e : events)
                e.rank = rank;
            m_sink.onEvents(rank, events.data(), events.size());
        } else if (header.type == uint32_t(wire::FrameType::ClockPing) && header.length == 8) {
            wire::ClockPong pong{};
            if (!wire::recvAll(fd, &pong.t_rank, 8))
                break;
            pong.t_session = monotonicNowNs();
            std::lock_guard<std::mutex> lock(m_write_mutex);
            wire::FrameHeader reply{uint32_t(wire::FrameType::ClockPong), uint32_t(sizeof(pong))};
            if (!wire::sendAll(fd, &reply, sizeof(reply)) || !wire::sendAll(fd, &pong, sizeof(pong)))
                break;
        } else if (header.type == uint32_t(wire::FrameType::Log) && header.length >= 1) {
            uint8_t level = 0;
            text.resize(header.length - 1);
            if (!wire::recvAll(fd, &level, 1) || !wire::recvAll(fd, text.data(), text.size()))
                break;
            m_sink.onLog(rank, LogLevel(level > 2 ? 2 : level), text);
        } else {
            m_sink.onProtocolError("rank " + std::to_string(rank) + " sent an unknown frame type " +
                                   std::to_string(header.type));
            break;
        }
    }
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        auto it = m_rank_fd.find(rank);
        if (it != m_rank_fd.end() && it->second == fd)
            m_rank_fd.erase(it);
    }
    m_sink.onDisconnect(rank, hello.pid, clean);
}

bool TelemetryCollector::sendControl(int rank, const wire::ControlMessage& message) {
    int fd = -1;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        auto it = m_rank_fd.find(rank);
        if (it == m_rank_fd.end())
            return false;
        fd = it->second;
    }
    std::lock_guard<std::mutex> lock(m_write_mutex);
    wire::FrameHeader header{uint32_t(wire::FrameType::Control), uint32_t(sizeof(message))};
    return wire::sendAll(fd, &header, sizeof(header)) && wire::sendAll(fd, &message, sizeof(message));
}

} // namespace dt
