// telemetry_collector.cpp: accept loop + one reader thread per rank.
//
// Per connection: read Hello (refuse a wrong magic or version), answer
// kClockPings pings with the Session clock, then read frames until Bye or EOF.
// Every Event's rank field is overwritten with the connection's rank, so a
// confused rank cannot write into another rank's lane.
#include "telemetry/telemetry_collector.hpp"

#include "dtlab/clock.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dt {

TelemetryCollector::TelemetryCollector(const std::string& host, int port, TelemetrySink& sink) : m_sink(sink) {
    m_listen_fd = wire::listenTcp(host, port, &m_port);
}

TelemetryCollector::~TelemetryCollector() { stop(); }

void TelemetryCollector::start() {
    m_accept_thread = std::thread([this] { acceptLoop(); });
}

void TelemetryCollector::stop() {
    if (m_stopping.exchange(true)) return;
    if (m_listen_fd >= 0) ::shutdown(m_listen_fd, SHUT_RDWR);
    if (m_accept_thread.joinable()) m_accept_thread.join();
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        for (int fd : m_fds) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : m_readers)
        if (t.joinable()) t.join();
    std::lock_guard<std::mutex> lock(m_mutex);
    for (int fd : m_fds) ::close(fd);
    m_fds.clear();
    if (m_listen_fd >= 0) ::close(m_listen_fd);
    m_listen_fd = -1;
}

void TelemetryCollector::acceptLoop() {
    while (!m_stopping.load()) {
        pollfd p{m_listen_fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        int fd = ::accept4(m_listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        std::lock_guard<std::mutex> lock(m_mutex);
        if (m_stopping.load()) {
            ::close(fd);
            break;
        }
        m_fds.push_back(fd);
        m_readers.emplace_back([this, fd] { readLoop(fd); });
    }
}

void TelemetryCollector::readLoop(int fd) {
    wire::Hello hello{};
    if (!wire::recvAll(fd, &hello, sizeof(hello))) return;
    if (std::memcmp(hello.magic, wire::kMagic, 4) != 0 || hello.version != wire::kWireVersion) {
        m_sink.onProtocolError("refused a telemetry connection: wire version " + std::to_string(hello.version) +
                               ", expected " + std::to_string(wire::kWireVersion));
        ::shutdown(fd, SHUT_RDWR);
        return;
    }
    hello.host[sizeof(hello.host) - 1] = 0;
    const int rank = hello.rank;
    for (int i = 0; i < wire::kClockPings; ++i) {
        int64_t t_rank = 0;
        if (!wire::recvAll(fd, &t_rank, 8)) return;
        const int64_t t_session = monotonicNowNs();
        if (!wire::sendAll(fd, &t_session, 8)) return;
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
        if (!wire::recvAll(fd, &header, sizeof(header))) break;
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
            if (!wire::recvAll(fd, events.data(), header.length)) break;
            for (auto& e : events) e.rank = rank;
            m_sink.onEvents(rank, events.data(), events.size());
        } else if (header.type == uint32_t(wire::FrameType::Log) && header.length >= 1) {
            uint8_t level = 0;
            text.resize(header.length - 1);
            if (!wire::recvAll(fd, &level, 1) || !wire::recvAll(fd, text.data(), text.size())) break;
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
        if (it != m_rank_fd.end() && it->second == fd) m_rank_fd.erase(it);
    }
    m_sink.onDisconnect(rank, clean);
}

bool TelemetryCollector::sendControl(int rank, const wire::ControlMessage& message) {
    int fd = -1;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        auto it = m_rank_fd.find(rank);
        if (it == m_rank_fd.end()) return false;
        fd = it->second;
    }
    std::lock_guard<std::mutex> lock(m_write_mutex);
    wire::FrameHeader header{uint32_t(wire::FrameType::Control), uint32_t(sizeof(message))};
    return wire::sendAll(fd, &header, sizeof(header)) && wire::sendAll(fd, &message, sizeof(message));
}

} // namespace dt
