// telemetry_sender.cpp: bounded queue + sender thread (see the header).
//
// Steps: connect -> Hello -> kClockPings ping-pongs, keep the offset of the
// one with the least round trip (offset = t_session - (t_send + t_recv) / 2)
// -> loop: every 20 ms or when 1024 events wait, swap the queue out and send
// it as one Events frame; after kHeartbeatNs with nothing to send, an empty
// Events frame says "still here" (the Session notices a rank that goes
// silent: a stopped process, a host or link that is down)
// -> close(): send what is left, then Bye.
#include "telemetry/telemetry_sender.hpp"

#include "core/sha256.hpp"
#include "dtlab/clock.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <climits>
#include <cstring>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

namespace dt {

TelemetrySender::TelemetrySender(int rank, size_t queue_capacity) : m_rank(rank), m_capacity(queue_capacity) {
    m_queue.reserve(std::min<size_t>(queue_capacity, 4096));
}

TelemetrySender::~TelemetrySender() {
    close();
}

void TelemetrySender::connect(const std::string& host, int port, int timeout_ms, const std::string& token) {
    m_fd = wire::connectTcp(host, port, timeout_ms);
    const std::string where = host + ":" + std::to_string(port);
    if (m_fd < 0)
        throw std::runtime_error("cannot reach the Session's telemetry collector at " + where);
    wire::Challenge challenge{};
    if (!wire::recvAll(m_fd, &challenge, sizeof(challenge)) ||
        std::memcmp(challenge.magic, wire::kChallengeMagic, 4) != 0)
        throw std::runtime_error("the telemetry port " + where + " did not send a dtlab challenge");
    if (challenge.version != wire::kWireVersion)
        throw std::runtime_error("the Session at " + where + " speaks wire version " +
                                 std::to_string(challenge.version) + ", this rank " +
                                 std::to_string(wire::kWireVersion) + " (a different dtlab build)");
    wire::Hello hello{};
    std::memcpy(hello.magic, wire::kMagic, 4);
    hello.version = wire::kWireVersion;
    hello.rank = m_rank;
    hello.pid = int32_t(::getpid());
    gethostname(hello.host, sizeof(hello.host) - 1);
    hello.rank_nonce = randomNonce();
    hello.proof = wire::rankProof(token, challenge.session_nonce, hello.rank_nonce, m_rank);
    if (!wire::sendAll(m_fd, &hello, sizeof(hello)))
        throw std::runtime_error("telemetry hello failed");
    wire::Welcome welcome{};
    if (!wire::recvAll(m_fd, &welcome, sizeof(welcome)))
        throw std::runtime_error("the Session at " + where +
                                 " refused this rank: wrong or missing token (DTLAB_TOKEN or --token-file)");
    if (std::memcmp(welcome.magic, wire::kWelcomeMagic, 4) != 0 ||
        !wire::proofsEqual(welcome.proof,
                           wire::sessionProof(token, challenge.session_nonce, hello.rank_nonce)))
        throw std::runtime_error("the Session at " + where +
                                 " did not prove it holds the token: refusing its control messages");

    int64_t best_rtt = INT64_MAX;
    for (int i = 0; i < wire::kClockPings; ++i) {
        const int64_t t_send = monotonicNowNs();
        int64_t t_session = 0;
        if (!wire::sendAll(m_fd, &t_send, 8) || !wire::recvAll(m_fd, &t_session, 8))
            throw std::runtime_error(
                "telemetry clock sync failed (Session closed the connection: wrong version?)");
        const int64_t t_recv = monotonicNowNs();
        if (t_recv - t_send < best_rtt) {
            best_rtt = t_recv - t_send;
            m_offset_ns = t_session - (t_send + t_recv) / 2;
        }
    }
    m_thread = std::thread([this] { senderLoop(); });
    m_control_thread = std::thread([this] { controlLoop(); });
}

void TelemetrySender::controlLoop() {
    while (true) {
        wire::FrameHeader header{};
        if (!wire::recvAll(m_fd, &header, sizeof(header)))
            return;
        if (header.type != uint32_t(wire::FrameType::Control) ||
            header.length != sizeof(wire::ControlMessage))
            return;
        wire::ControlMessage message{};
        if (!wire::recvAll(m_fd, &message, sizeof(message)))
            return;
        if (m_on_control)
            m_on_control(message);
    }
}

int64_t TelemetrySender::now() const {
    return monotonicNowNs() + m_offset_ns;
}

void TelemetrySender::emit(const Event& event) {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (m_queue.size() >= m_capacity || m_closing) {
            m_dropped.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        m_queue.push_back(event);
        if (m_queue.size() < 1024)
            return;
    }
    m_wake.notify_one();
}

void TelemetrySender::log(LogLevel level, const std::string& text) {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_logs.emplace_back(level, text);
    }
    m_wake.notify_one();
}

bool TelemetrySender::sendLog(LogLevel level, const std::string& text) {
    wire::FrameHeader header{uint32_t(wire::FrameType::Log), uint32_t(1 + text.size())};
    const uint8_t lvl = uint8_t(level);
    m_bytes_written += sizeof(header) + 1 + text.size();
    return wire::sendAll(m_fd, &header, sizeof(header)) && wire::sendAll(m_fd, &lvl, 1) &&
           wire::sendAll(m_fd, text.data(), text.size());
}

void TelemetrySender::senderLoop() {
    std::vector<Event> batch;
    std::vector<std::pair<LogLevel, std::string>> logs;
    bool connected = true;
    int64_t last_sent_ns = monotonicNowNs();
    while (true) {
        bool closing = false;
        {
            std::unique_lock<std::mutex> lock(m_mutex);
            m_wake.wait_for(lock, std::chrono::milliseconds(20),
                            [this] { return m_closing || m_queue.size() >= 1024 || !m_logs.empty(); });
            batch.swap(m_queue);
            logs.swap(m_logs);
            closing = m_closing;
        }
        if (connected) {
            std::lock_guard<std::mutex> lock(m_send_mutex);
            const int64_t now = monotonicNowNs();
            for (const auto& [level, text] : logs)
                connected = connected && sendLog(level, text);
            if (!logs.empty())
                last_sent_ns = now;
            if (!batch.empty() || now - last_sent_ns >= wire::kHeartbeatNs) {
                // An empty batch is the heartbeat.
                wire::FrameHeader header{uint32_t(wire::FrameType::Events),
                                         uint32_t(batch.size() * sizeof(Event))};
                m_bytes_written += sizeof(header) + header.length;
                connected = connected && wire::sendAll(m_fd, &header, sizeof(header)) &&
                            wire::sendAll(m_fd, batch.data(), batch.size() * sizeof(Event));
                last_sent_ns = now;
            }
        }
        batch.clear();
        logs.clear();
        if (closing)
            break;
    }
    if (connected) {
        wire::FrameHeader bye{uint32_t(wire::FrameType::Bye), 0};
        wire::sendAll(m_fd, &bye, sizeof(bye));
    }
}

void TelemetrySender::close() {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (m_closing)
            return;
        m_closing = true;
    }
    m_wake.notify_one();
    if (m_thread.joinable())
        m_thread.join();
    if (m_fd >= 0)
        ::shutdown(m_fd, SHUT_RDWR); // also wakes the control reader
    if (m_control_thread.joinable())
        m_control_thread.join();
    if (m_fd >= 0) {
        ::close(m_fd);
        m_fd = -1;
    }
}

} // namespace dt
