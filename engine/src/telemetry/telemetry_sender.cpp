// telemetry_sender.cpp: bounded queue + sender thread (see the header).
//
// Steps: connect -> Hello -> Welcome (the Session's boot id: same host means
// one CLOCK_MONOTONIC, offset 0) -> kClockPings ping-pongs, each a sample for
// ClockSync (clock_sync.hpp: offset = t_session - (t_send + t_recv) / 2,
// error <= round trip / 2) -> a ClockSync event
// -> loop: every 20 ms or when 1024 events wait, swap the queue out and send
// it as one Events frame; after kHeartbeatNs with nothing to send, an empty
// Events frame says "still here" (the Session notices a rank that goes
// silent: a stopped process, a host or link that is down); on another host a
// ClockPing every ClockSync::kResyncNs, whose ClockPong the control reader
// turns into a sample, a new estimate and a ClockSync event
// -> close(): send what is left, then Bye.
#include "telemetry/telemetry_sender.hpp"

#include "core/sha256.hpp"
#include "dtlab/clock.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <climits>
#include <cmath>
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

    BootId session_boot;
    std::memcpy(session_boot.bytes, welcome.boot_id, sizeof(session_boot.bytes));
    const bool same_host =
        m_skew_offset_ns == 0 && m_skew_drift == 0.0 && session_boot.known() && session_boot == thisBootId();
    if (same_host) {
        std::lock_guard<std::mutex> lock(m_clock_mutex);
        m_clock.setSameHost();
        m_same_host.store(true);
    }
    std::vector<ClockSample> samples;
    for (int i = 0; i < wire::kClockPings; ++i) {
        ClockSample sample;
        sample.t_send_ns = localNowNs();
        if (!wire::sendAll(m_fd, &sample.t_send_ns, 8) || !wire::recvAll(m_fd, &sample.t_session_ns, 8))
            throw std::runtime_error(
                "telemetry clock sync failed (Session closed the connection: wrong version?)");
        sample.t_recv_ns = localNowNs();
        samples.push_back(sample);
    }
    for (size_t i = 0; i < samples.size(); ++i)
        applyClockSample(samples[i], i + 1 == samples.size()); // one ClockSync event for them all
    m_thread = std::thread([this] { senderLoop(); });
    m_control_thread = std::thread([this] { controlLoop(); });
}

void TelemetrySender::simulateClockSkew(int64_t offset_ns, double drift_ppm) {
    m_skew_offset_ns = offset_ns;
    m_skew_drift = drift_ppm * 1e-6;
}

int64_t TelemetrySender::localNowNs() const {
    const int64_t t = monotonicNowNs();
    if (m_skew_offset_ns == 0 && m_skew_drift == 0.0)
        return t;
    return t + m_skew_offset_ns + int64_t(std::llround(double(t) * m_skew_drift));
}

void TelemetrySender::applyClockSample(const ClockSample& sample, bool emit_event) {
    ClockEstimate estimate;
    {
        std::lock_guard<std::mutex> lock(m_clock_mutex);
        m_clock.addSample(sample);
        estimate = m_clock.estimateAt(sample.t_recv_ns);
        m_correction = m_clock.correctionAt(sample.t_recv_ns);
    }
    if (emit_event)
        emitClockSync(estimate);
}

void TelemetrySender::emitClockSync(const ClockEstimate& estimate) {
    Event sync;
    sync.kind = EventKind::ClockSync;
    sync.phase = EventPhase::Instant;
    sync.t_ns = now();
    sync.rank = m_rank;
    sync.bytes = estimate.offset_ns;
    sync.value = double(estimate.error_bound_ns);
    sync.dur_ns = estimate.round_trip_ns;
    sync.unit = estimate.same_host ? 0 : 1;
    emit(sync);
    if (estimate.drift_ppm) {
        Event drift = sync;
        drift.kind = EventKind::ClockDriftPpm;
        drift.phase = EventPhase::Counter;
        drift.value = *estimate.drift_ppm;
        drift.bytes = 0;
        drift.dur_ns = 0;
        emit(drift);
    }
}

int64_t TelemetrySender::clockOffsetNs() const {
    std::lock_guard<std::mutex> lock(m_clock_mutex);
    return m_correction.offset_ns;
}

ClockEstimate TelemetrySender::clockEstimate() const {
    std::lock_guard<std::mutex> lock(m_clock_mutex);
    return m_clock.estimateAt(localNowNs());
}

void TelemetrySender::controlLoop() {
    while (true) {
        wire::FrameHeader header{};
        if (!wire::recvAll(m_fd, &header, sizeof(header)))
            return;
        if (header.type == uint32_t(wire::FrameType::ClockPong) && header.length == sizeof(wire::ClockPong)) {
            wire::ClockPong pong{};
            if (!wire::recvAll(m_fd, &pong, sizeof(pong)))
                return;
            applyClockSample(ClockSample{pong.t_rank, pong.t_session, localNowNs()}, true);
            continue;
        }
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
    if (m_same_host.load(std::memory_order_relaxed))
        return monotonicNowNs(); // one clock: nothing to add
    int64_t t = 0;
    {
        std::lock_guard<std::mutex> lock(m_clock_mutex);
        t = m_correction.sessionTime(localNowNs());
    }
    // A re-sync may move the estimate back by a few microseconds: never let
    // this rank's timestamps go backwards (a span would end before it began).
    int64_t last = m_last_now.load(std::memory_order_relaxed);
    while (t > last && !m_last_now.compare_exchange_weak(last, t, std::memory_order_relaxed)) {
    }
    return std::max(t, last);
}

void TelemetrySender::emit(const Event& event) {
    bool stop = false;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (m_queue.size() >= m_capacity || m_closing) {
            m_dropped.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        m_queue.push_back(event);
        stop = m_stop_reached && std::this_thread::get_id() != m_control_thread.get_id() &&
               m_stop_reached(event);
        m_flush_now = m_flush_now || stop;
        if (m_queue.size() < 1024 && !stop)
            return;
    }
    m_wake.notify_one();
    if (stop)
        m_stop_wait();
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
    int64_t last_clock_ping_ns = monotonicNowNs();
    while (true) {
        bool closing = false;
        {
            std::unique_lock<std::mutex> lock(m_mutex);
            m_wake.wait_for(lock, std::chrono::milliseconds(20), [this] {
                return m_closing || m_flush_now || m_queue.size() >= 1024 || !m_logs.empty();
            });
            m_flush_now = false;
            batch.swap(m_queue);
            logs.swap(m_logs);
            closing = m_closing;
        }
        if (connected) {
            std::lock_guard<std::mutex> lock(m_send_mutex);
            const int64_t now = monotonicNowNs();
            // Events before logs: a rank's RankFailed (which says whether it only
            // lost a peer) reaches the Session before the error line it explains.
            if (!batch.empty() || !logs.empty() || now - last_sent_ns >= wire::kHeartbeatNs) {
                // An empty batch is the heartbeat.
                wire::FrameHeader header{uint32_t(wire::FrameType::Events),
                                         uint32_t(batch.size() * sizeof(Event))};
                m_bytes_written += sizeof(header) + header.length;
                connected = connected && wire::sendAll(m_fd, &header, sizeof(header)) &&
                            wire::sendAll(m_fd, batch.data(), batch.size() * sizeof(Event));
                last_sent_ns = now;
            }
            for (const auto& [level, text] : logs)
                connected = connected && sendLog(level, text);
            if (!m_same_host.load(std::memory_order_relaxed) &&
                now - last_clock_ping_ns >= ClockSync::kResyncNs) {
                // A re-sync: the control reader takes the ClockPong.
                wire::FrameHeader header{uint32_t(wire::FrameType::ClockPing), 8};
                const int64_t t_send = localNowNs();
                m_bytes_written += sizeof(header) + 8;
                connected = connected && wire::sendAll(m_fd, &header, sizeof(header)) &&
                            wire::sendAll(m_fd, &t_send, 8);
                last_clock_ping_ns = now;
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
