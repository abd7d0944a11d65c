// lighthouse_client.cpp: one replica's line to the lighthouse.
//
// One TCP connection, two threads:
//   - the heartbeat thread sends "HB" every interval (under the write mutex),
//     and only writes; when the connection is broken it just skips: the
//     requester thread is the one that reconnects.
//   - the requester thread (requestQuorum, status) sends a request and reads
//     lines until the answer it wants. It alone reads the socket, and it alone
//     opens and closes it (the fd changes under the write mutex).
// A request, step by step (ask()):
//   1. Drop answers left over from an earlier request that timed out.
//   2. While partitioned: send nothing, read nothing, just wait.
//   3. Not connected: connect once, read the lighthouse's "CHALLENGE <nonce>"
//      (within 1 s, and never past the request's deadline), say "HELLO <replica> <incarnation> <proof>" (the
//      proof: helloProof, the run's token over the nonce); on failure retry after a backoff of 50 ms,
//      doubling up to 500 ms.
//   4. Send the request (again after every reconnect).
//   5. poll() for a line, at most 50 ms at a time (a partition or the
//      deadline is noticed promptly); a closed connection -> back to 3.
//   6. The wanted answer -> return it; past timeout_ms -> CommError(Timeout).
#include "dtlab/errors.hpp"
#include "dtlab/lighthouse.hpp"
#include "ft/lighthouse_detail.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dt::ft {

namespace {

using Clock = std::chrono::steady_clock;

int64_t msUntil(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
}

constexpr int64_t kFirstBackoffMs = 50;
constexpr int64_t kLongestBackoffMs = 500;
constexpr int64_t kLongestPollMs = 50;

} // namespace

struct LighthouseClient::Impl {
    std::string address;
    std::string host;
    int port = 0;
    int replica = -1;
    int incarnation = 0;
    std::string token;

    std::mutex write_mutex; // guards writes to fd, and changes of fd
    int fd = -1;            // changed only by the requester thread (and the constructor/destructor)
    std::string inbox;      // bytes read, not yet a whole line (requester thread only)

    std::atomic<bool> partitioned{false};
    std::atomic<int64_t> heartbeat_interval_ms{0};
    std::mutex heartbeat_mutex; // guards stopping, on_heartbeat
    std::condition_variable heartbeat_wake;
    bool stopping = false;
    std::function<void()> on_heartbeat;
    std::thread heartbeat_thread;

    // One connection attempt; the challenge must come within wait_ms (at most 1 s).
    bool connectOnce(int64_t wait_ms);
    void disconnect();
    bool sendLine(const std::string& line);
    enum class Read { Line, NothingYet, Closed };
    Read readLine(std::string& line, int64_t wait_ms);
    void dropLeftoverAnswers();
    void heartbeatLoop();
    std::string ask(const std::string& request, const std::function<bool(const std::string&)>& is_answer,
                    int64_t timeout_ms, const std::string& what);
};

bool LighthouseClient::Impl::connectOnce(int64_t wait_ms) {
    const int new_fd = wire::connectTcp(host, port, 0); // one attempt
    if (new_fd < 0)
        return false;
    // The challenge: one line, within a second.
    std::string received;
    const auto deadline = Clock::now() + std::chrono::milliseconds(std::clamp<int64_t>(wait_ms, 0, 1000));
    while (received.find('\n') == std::string::npos && received.size() < 256) {
        pollfd p{new_fd, POLLIN, 0};
        const int64_t wait = std::max<int64_t>(0, msUntil(deadline));
        char buffer[256];
        ssize_t n = 0;
        if (::poll(&p, 1, int(wait)) <= 0 || (n = ::recv(new_fd, buffer, sizeof(buffer), 0)) <= 0) {
            ::close(new_fd);
            return false;
        }
        received.append(buffer, size_t(n));
    }
    const auto newline = received.find('\n');
    const std::string first = newline == std::string::npos ? "" : received.substr(0, newline);
    if (first.rfind("CHALLENGE ", 0) != 0) {
        ::close(new_fd);
        return false; // not a dtlab lighthouse (or an older one)
    }
    const std::string nonce = first.substr(10);
    const std::string hello = "HELLO " + std::to_string(replica) + " " + std::to_string(incarnation) + " " +
                              helloProof(token, nonce, replica, incarnation) + "\n";
    if (!wire::sendAll(new_fd, hello.data(), hello.size())) {
        ::close(new_fd);
        return false;
    }
    std::lock_guard<std::mutex> lock(write_mutex);
    fd = new_fd;
    inbox = received.substr(newline + 1);
    return true;
}

void LighthouseClient::Impl::disconnect() {
    std::lock_guard<std::mutex> lock(write_mutex);
    if (fd >= 0)
        ::close(fd);
    fd = -1;
    inbox.clear();
}

bool LighthouseClient::Impl::sendLine(const std::string& line) {
    const std::string bytes = line + "\n";
    std::lock_guard<std::mutex> lock(write_mutex);
    return fd >= 0 && wire::sendAll(fd, bytes.data(), bytes.size());
}

// One whole line from the inbox, or from the socket within wait_ms.
LighthouseClient::Impl::Read LighthouseClient::Impl::readLine(std::string& line, int64_t wait_ms) {
    auto takeLine = [&] {
        const auto newline = inbox.find('\n');
        if (newline == std::string::npos)
            return false;
        line = inbox.substr(0, newline);
        inbox.erase(0, newline + 1);
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        return true;
    };
    if (takeLine())
        return Read::Line;
    if (fd < 0)
        return Read::Closed;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, int(std::max<int64_t>(0, wait_ms)));
    if (ready <= 0)
        return Read::NothingYet; // timeout or EINTR
    char buffer[4096];
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return Read::NothingYet;
    if (n <= 0)
        return Read::Closed;
    inbox.append(buffer, size_t(n));
    return takeLine() ? Read::Line : Read::NothingYet;
}

// An answer to an earlier request that timed out may still arrive; drop what is here now.
void LighthouseClient::Impl::dropLeftoverAnswers() {
    if (fd < 0)
        return;
    char buffer[4096];
    while (true) {
        const ssize_t n = ::recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
        if (n > 0) {
            inbox.append(buffer, size_t(n));
            continue;
        }
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            disconnect();
        break;
    }
    const auto last_newline = inbox.rfind('\n');
    if (last_newline != std::string::npos)
        inbox.erase(0, last_newline + 1); // keep a partial line
}

void LighthouseClient::Impl::heartbeatLoop() {
    std::unique_lock<std::mutex> lock(heartbeat_mutex);
    while (true) {
        heartbeat_wake.wait_for(lock, std::chrono::milliseconds(heartbeat_interval_ms.load()),
                                [this] { return stopping; });
        if (stopping)
            return;
        if (partitioned)
            continue;
        lock.unlock();
        const bool sent = sendLine("HB"); // a broken connection: skip, the requester reconnects
        lock.lock();
        if (sent && on_heartbeat) {
            const auto callback = on_heartbeat;
            lock.unlock();
            callback();
            lock.lock();
        }
    }
}

std::string LighthouseClient::Impl::ask(const std::string& request,
                                        const std::function<bool(const std::string&)>& is_answer,
                                        int64_t timeout_ms, const std::string& what) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    auto next_connect = Clock::now();
    int64_t backoff_ms = kFirstBackoffMs;
    bool request_sent = false;
    bool reached = fd >= 0;  // connected at some point during this request
    std::string last_answer; // the last line that was not the answer (an ERROR, another quorum)
    const auto retryLater = [&] {
        next_connect = Clock::now() + std::chrono::milliseconds(backoff_ms);
        backoff_ms = std::min(backoff_ms * 2, kLongestBackoffMs);
    };

    if (!partitioned)
        dropLeftoverAnswers();
    while (true) {
        const int64_t remaining_ms = msUntil(deadline);
        if (remaining_ms <= 0) {
            std::string message = what + " within " + std::to_string(timeout_ms) + " ms: ";
            if (partitioned)
                message += "replica " + std::to_string(replica) + " is partitioned from the lighthouse at " +
                           address;
            else if (!reached)
                message += "the lighthouse at " + address + " is unreachable";
            else if (!last_answer.empty())
                message += "the lighthouse at " + address + " last answered '" + last_answer + "'";
            else
                message += "the lighthouse at " + address + " has not answered replica " +
                           std::to_string(replica) + " (incarnation " + std::to_string(incarnation) + ")";
            throw CommError(CommErrorKind::Timeout, message);
        }
        // 2. Partitioned: nothing goes out, nothing comes in.
        if (partitioned) {
            std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(remaining_ms, 10)));
            request_sent = false; // send it again once the partition ends
            continue;
        }
        // 3. (Re)connect with backoff.
        if (fd < 0) {
            if (Clock::now() < next_connect) {
                std::this_thread::sleep_until(std::min(next_connect, deadline));
                continue;
            }
            if (!connectOnce(msUntil(deadline))) { // never past the request's own deadline
                retryLater();
                continue;
            }
            reached = true;
            request_sent = false;
        }
        // 4. The request.
        if (!request_sent) {
            if (!sendLine(request)) {
                disconnect();
                retryLater();
                continue;
            }
            request_sent = true;
        }
        // 5. An answer.
        std::string line;
        switch (readLine(line, std::min(remaining_ms, kLongestPollMs))) {
        case Read::Closed:
            disconnect();
            retryLater();
            break;
        case Read::NothingYet:
            break;
        case Read::Line:
            if (is_answer(line))
                return line;
            if (line.rfind("ERROR", 0) == 0 || line.rfind("QUORUM", 0) == 0)
                last_answer = line;
            break;
        }
    }
}

// ---- the public class ----

LighthouseClient::LighthouseClient(std::string address, int replica, int incarnation, std::string token)
    : m_impl(std::make_unique<Impl>()) {
    Impl& c = *m_impl;
    c.token = std::move(token);
    c.address = std::move(address);
    wire::splitAddress(c.address, c.host, c.port); // throws UsageError on a malformed address
    c.replica = replica;
    c.incarnation = incarnation;
    c.connectOnce(1000); // best effort: the first request retries until its timeout
}

LighthouseClient::~LighthouseClient() {
    Impl& c = *m_impl;
    {
        std::lock_guard<std::mutex> lock(c.heartbeat_mutex);
        c.stopping = true;
    }
    c.heartbeat_wake.notify_all();
    if (c.heartbeat_thread.joinable())
        c.heartbeat_thread.join();
    c.disconnect();
}

void LighthouseClient::startHeartbeats(int64_t interval_ms) {
    Impl& c = *m_impl;
    c.heartbeat_interval_ms = std::max<int64_t>(1, interval_ms);
    if (!c.heartbeat_thread.joinable())
        c.heartbeat_thread = std::thread([&c] { c.heartbeatLoop(); });
}

void LighthouseClient::setPartitioned(bool partitioned) {
    m_impl->partitioned = partitioned;
}

void LighthouseClient::onHeartbeat(std::function<void()> callback) {
    std::lock_guard<std::mutex> lock(m_impl->heartbeat_mutex);
    m_impl->on_heartbeat = std::move(callback);
}

void LighthouseClient::leave() {
    if (!m_impl->partitioned)
        (void)m_impl->sendLine("BYE"); // not connected: the lighthouse has lost it already
}

Quorum LighthouseClient::requestQuorum(int64_t step, int commit_failures, const std::string& address,
                                       int64_t timeout_ms) {
    if (address.find_first_of(" \t\r\n") != std::string::npos)
        throw std::invalid_argument("a replica's address must not contain spaces: '" + address + "'");
    const Impl& c = *m_impl;
    const std::string request = "QUORUM " + std::to_string(step) + " " + std::to_string(commit_failures) +
                                " " + (address.empty() ? "-" : address);
    Quorum quorum;
    // The answer: a quorum that includes this member as it asked (same step).
    const auto is_answer = [&](const std::string& line) {
        Quorum parsed;
        if (!parseQuorumLine(line, parsed))
            return false;
        const bool includes_me =
            std::any_of(parsed.members.begin(), parsed.members.end(), [&](const QuorumMember& m) {
                return m.replica == c.replica && m.incarnation == c.incarnation && m.step == step;
            });
        if (includes_me)
            quorum = parsed;
        return includes_me;
    };
    m_impl->ask(request, is_answer, timeout_ms, "no quorum");
    return quorum;
}

LighthouseStatus LighthouseClient::status(int64_t timeout_ms) {
    const auto is_answer = [](const std::string& line) { return line.rfind("STATUS ", 0) == 0; };
    const std::string line = m_impl->ask("STATUS", is_answer, timeout_ms, "no status");
    return statusFromJson(line.substr(7));
}

} // namespace dt::ft
