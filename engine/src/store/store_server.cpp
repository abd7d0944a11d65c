// store_server.cpp: the rendezvous store's server, one thread with a poll() loop.
//
// Each turn of the loop:
//   1. poll() the wake eventfd, the listening socket and every connection
//      (POLLOUT too where replies wait to be sent), waking at the nearest
//      deadline (a parked Get/Wait, an unfinished handshake) or every 100 ms.
//   2. Accept new connections (non-blocking) and send each a Challenge.
//   3. Read each connection. Before its Hello it has handshake_timeout_ms to
//      prove the token: HMAC-SHA256(token, "dtlab store client" | nonces);
//      a wrong or missing proof closes it (on_refused says why), a right one
//      is answered with the server's own proof (Welcome).
//   4. Handle whole request frames in order, one at a time per connection: a
//      Get or Wait whose keys are not all set is parked until they are or its
//      timeout passes (then a Timeout reply), and the connection's later
//      requests wait behind it. Every Set/Add/CompareSet re-checks the parked.
//   5. Flush replies without blocking; a client that lets 64 MiB of replies
//      pile up is dropped, so no client can stall the loop.
// Values are bytes; Add keeps a key's value as decimal text, as c10d's
// TCPStore does (so Get of a counter returns "3").
#include "store/store_server.hpp"

#include "core/sha256.hpp"
#include "dtlab/clock.hpp"
#include "dtlab/errors.hpp"
#include "store/store_protocol.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dt::store {

namespace {

int64_t nowMs() {
    return dt::monotonicNowNs() / 1'000'000;
}

constexpr size_t kMaxOutboxBytes = size_t(64) << 20;
constexpr int64_t kIdleTickMs = 100;
// Connections that have not proved the token yet: at most this many at once,
// so that a local process without the token cannot use up the Session's file
// descriptors by opening connections and saying nothing.
constexpr size_t kMaxUnauthenticated = 64;

struct Connection {
    std::string peer; // "ip:port", for refusal messages
    Nonce server_nonce{};
    bool authenticated = false;
    int64_t handshake_deadline_ms = 0;
    std::string inbox;
    std::string outbox;
    std::optional<Request> parked;  // a Get/Wait waiting for its keys
    int64_t parked_deadline_ms = 0; // 0 = no deadline (timeout 0, as c10d's kNoTimeout)
};

std::string peerOf(int fd) {
    sockaddr_in address{};
    socklen_t length = sizeof(address);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
        return "an unknown peer";
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &address.sin_addr, text, sizeof(text));
    return std::string(text) + ":" + std::to_string(ntohs(address.sin_port));
}

std::string statusFrame(Status status, const BodyWriter& body = {}) {
    return body.frame(uint32_t(status));
}

std::string errorFrame(const std::string& why) {
    BodyWriter w;
    w.bytes(why);
    return statusFrame(Status::Error, w);
}

std::string integerFrame(int64_t value) {
    BodyWriter w;
    w.integer(value);
    return statusFrame(Status::Ok, w);
}

std::string bytesFrame(const std::string& value) {
    BodyWriter w;
    w.bytes(value);
    return statusFrame(Status::Ok, w);
}

} // namespace

struct StoreServer::Impl {
    StoreServerOptions options;
    std::function<void(const std::string&)> on_refused;

    mutable std::mutex mutex; // guards everything below
    std::map<std::string, std::string> values;
    size_t total_bytes = 0;
    std::map<int, Connection> connections; // by fd
    int listen_fd = -1;
    int wake_fd = -1;
    int bound_port = 0;
    std::atomic<bool> stop_requested{false};
    std::thread loop_thread;
    std::vector<std::string> refusals;  // reported after the mutex is released
    int64_t accept_paused_until_ms = 0; // out of file descriptors: the listening socket rests
    int64_t crowd_refusals = 0;         // connections refused for kMaxUnauthenticated (logged sparsely)

    void loop();
    void acceptClients(int64_t now);
    void serve(int fd, int64_t now);
    void handshake(int fd, Connection& c);
    void handleRequests(Connection& c, int64_t now);
    // The reply to a request, or nullopt when it must be parked (keys not yet set).
    std::optional<std::string> answer(const Request& request);
    void recheckParked(int64_t now);
    void flush(int fd, Connection& c);
    void close(int fd, const std::string& refusal = {});
    bool allSet(const std::vector<std::string>& keys) const;
    void storeValue(const std::string& key, std::string value);
    void wake() const;
};

bool StoreServer::Impl::allSet(const std::vector<std::string>& keys) const {
    return std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return values.count(k) > 0; });
}

void StoreServer::Impl::storeValue(const std::string& key, std::string value) {
    const auto it = values.find(key);
    if (it != values.end()) {
        total_bytes -= it->first.size() + it->second.size();
        total_bytes += key.size() + value.size();
        it->second = std::move(value);
        return;
    }
    total_bytes += key.size() + value.size();
    values.emplace(key, std::move(value));
}

void StoreServer::Impl::wake() const {
    const uint64_t one = 1;
    if (wake_fd >= 0) [[maybe_unused]]
        ssize_t ignored = ::write(wake_fd, &one, sizeof(one));
}

std::optional<std::string> StoreServer::Impl::answer(const Request& request) {
    const std::string& key = request.keys.empty() ? std::string() : request.keys[0];
    // Would storing value under key keep the store within max_total_bytes?
    auto fits = [&](const std::string& value) {
        const auto it = values.find(key);
        const size_t before = it == values.end() ? 0 : it->first.size() + it->second.size();
        return total_bytes - before + key.size() + value.size() <= options.max_total_bytes;
    };
    switch (request.op) {
    case Op::Set:
        if (!fits(request.value))
            return errorFrame("the store is full (" + std::to_string(options.max_total_bytes) + " bytes)");
        storeValue(key, request.value);
        return statusFrame(Status::Ok);
    case Op::CompareSet: {
        const auto it = values.find(key);
        if (it == values.end()) {
            if (!request.value.empty())
                return bytesFrame(request.value);
            if (!fits(request.desired))
                return errorFrame("the store is full");
            storeValue(key, request.desired);
            return bytesFrame(request.desired);
        }
        if (it->second == request.value) {
            if (!fits(request.desired))
                return errorFrame("the store is full");
            storeValue(key, request.desired);
        }
        return bytesFrame(values.at(key));
    }
    case Op::Get:
        if (!allSet(request.keys))
            return std::nullopt;
        return bytesFrame(values.at(key));
    case Op::Add: {
        int64_t current = 0;
        const auto it = values.find(key);
        if (it != values.end()) {
            const std::string& text = it->second;
            const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), current);
            if (error != std::errc() || end != text.data() + text.size())
                return errorFrame("Add on key '" + key.substr(0, 200) + "', whose value is not an integer");
        }
        int64_t result = 0;
        if (__builtin_add_overflow(current, request.number, &result))
            return errorFrame("Add on key '" + key.substr(0, 200) + "' overflows 64 bits");
        std::string text = std::to_string(result);
        if (!fits(text))
            return errorFrame("the store is full");
        storeValue(key, std::move(text));
        return integerFrame(result);
    }
    case Op::Delete: {
        const auto it = values.find(key);
        if (it == values.end())
            return integerFrame(0);
        total_bytes -= it->first.size() + it->second.size();
        values.erase(it);
        return integerFrame(1);
    }
    case Op::Check:
        return integerFrame(allSet(request.keys) ? 1 : 0);
    case Op::NumKeys:
        return integerFrame(int64_t(values.size()));
    case Op::Wait:
        if (!allSet(request.keys))
            return std::nullopt;
        return statusFrame(Status::Ok);
    }
    return errorFrame("unknown request");
}

void StoreServer::Impl::loop() {
    while (!stop_requested) {
        std::vector<pollfd> fds;
        int64_t wait_ms = kIdleTickMs;
        {
            std::lock_guard<std::mutex> lock(mutex);
            const int64_t now = nowMs();
            fds.push_back({wake_fd, POLLIN, 0});
            fds.push_back({listen_fd, short(now >= accept_paused_until_ms ? POLLIN : 0), 0});
            for (const auto& [fd, c] : connections) {
                fds.push_back({fd, short(POLLIN | (c.outbox.empty() ? 0 : POLLOUT)), 0});
                const int64_t deadline = !c.authenticated ? c.handshake_deadline_ms
                                         : c.parked       ? c.parked_deadline_ms
                                                          : 0;
                if (deadline > 0)
                    wait_ms = std::min(wait_ms, std::max<int64_t>(0, deadline - now));
            }
        }
        ::poll(fds.data(), nfds_t(fds.size()), int(wait_ms));
        if (stop_requested)
            break;
        std::vector<std::string> refused;
        {
            std::lock_guard<std::mutex> lock(mutex);
            const int64_t now = nowMs();
            if (fds[0].revents & POLLIN) {
                uint64_t count = 0;
                [[maybe_unused]] ssize_t ignored = ::read(wake_fd, &count, sizeof(count));
            }
            // Serve the connections polled (a fd accepted below is served next turn).
            for (size_t i = 2; i < fds.size(); ++i)
                if (fds[i].revents != 0)
                    serve(fds[i].fd, now);
            if (fds[1].revents & POLLIN)
                acceptClients(now);
            recheckParked(now);
            refused.swap(refusals);
        }
        if (on_refused)
            for (const auto& why : refused)
                on_refused(why);
    }
}

void StoreServer::Impl::acceptClients(int64_t now) {
    while (true) {
        const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE) // the connection waits in the backlog; do not spin on it
                accept_paused_until_ms = now + kIdleTickMs;
            return; // EAGAIN: none left
        }
        const size_t unauthenticated =
            size_t(std::count_if(connections.begin(), connections.end(),
                                 [](const auto& entry) { return !entry.second.authenticated; }));
        if (unauthenticated >= kMaxUnauthenticated) {
            if (crowd_refusals++ % 100 == 0)
                refusals.push_back("refused a rendezvous-store connection from " + peerOf(fd) + ": already " +
                                   std::to_string(unauthenticated) +
                                   " connections that have not proved the token (" +
                                   std::to_string(crowd_refusals) + " refused so far)");
            ::close(fd);
            continue;
        }
        if (connections.size() >= options.max_connections) {
            refusals.push_back("refused a rendezvous-store connection from " + peerOf(fd) + ": already " +
                               std::to_string(connections.size()) + " connections");
            ::close(fd);
            continue;
        }
        Connection c;
        c.peer = peerOf(fd);
        c.server_nonce = randomNonce();
        c.handshake_deadline_ms = now + options.handshake_timeout_ms;
        Challenge challenge{};
        std::memcpy(challenge.magic, kMagic, 4);
        challenge.version = kVersion;
        challenge.server_nonce = c.server_nonce;
        c.outbox.assign(reinterpret_cast<const char*>(&challenge), sizeof(challenge));
        auto [it, inserted] = connections.emplace(fd, std::move(c));
        flush(fd, it->second);
    }
}

void StoreServer::Impl::serve(int fd, int64_t now) {
    auto it = connections.find(fd);
    if (it == connections.end())
        return;
    Connection& c = it->second;
    char buffer[64 * 1024];
    bool closed = false;
    // Read at most one frame's worth beyond what waits: a flood stays in the kernel's buffer.
    while (c.inbox.size() < kMaxBodyBytes + sizeof(FrameHeader)) {
        const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
        if (n > 0) {
            c.inbox.append(buffer, size_t(n));
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        closed = true;
        break;
    }
    if (!c.authenticated) {
        if (c.inbox.size() >= sizeof(Hello)) {
            handshake(fd, c);
            if (connections.count(fd) == 0)
                return;
        } else if (closed) {
            close(fd);
            return;
        }
    }
    if (c.authenticated)
        handleRequests(c, now);
    if (connections.count(fd) == 0)
        return;
    if (closed) {
        close(fd);
        return;
    }
    flush(fd, c);
}

void StoreServer::Impl::handshake(int fd, Connection& c) {
    Hello hello{};
    std::memcpy(&hello, c.inbox.data(), sizeof(hello));
    if (std::memcmp(hello.magic, kMagic, 4) != 0 || hello.version != kVersion) {
        close(fd, "refused a rendezvous-store connection from " + c.peer +
                      ": not a dtlab store client of this version");
        return;
    }
    const Proof expected = clientProof(options.token, c.server_nonce, hello.client_nonce);
    if (!constantTimeEqual(expected.data(), hello.proof.data(), expected.size())) {
        close(fd, "refused a rendezvous-store connection from " + c.peer +
                      ": it does not hold this run's token (DTLAB_TOKEN / --token-file)");
        return;
    }
    c.inbox.erase(0, sizeof(hello));
    c.authenticated = true;
    Welcome welcome{};
    std::memcpy(welcome.magic, kMagic, 4);
    welcome.proof = serverProof(options.token, c.server_nonce, hello.client_nonce);
    c.outbox.append(reinterpret_cast<const char*>(&welcome), sizeof(welcome));
}

void StoreServer::Impl::handleRequests(Connection& c, int64_t now) {
    while (!c.parked && c.inbox.size() >= sizeof(FrameHeader)) {
        FrameHeader header{};
        std::memcpy(&header, c.inbox.data(), sizeof(header));
        if (header.length > kMaxBodyBytes) {
            c.outbox += errorFrame("a " + std::to_string(header.length) + "-byte request is over the " +
                                   std::to_string(kMaxBodyBytes) + "-byte limit");
            c.inbox.clear();
            c.inbox.shrink_to_fit();
            return; // the stream cannot be resynchronized; the client sees the Error and closes
        }
        if (c.inbox.size() < sizeof(header) + header.length)
            return;
        const std::string body = c.inbox.substr(sizeof(header), header.length);
        c.inbox.erase(0, sizeof(header) + header.length);
        std::string why;
        const auto request = decodeRequest(header.code, body, why);
        if (!request) {
            c.outbox += errorFrame("malformed request: " + why);
            continue;
        }
        if (auto reply = answer(*request)) {
            c.outbox += *reply;
            continue;
        }
        c.parked = request;
        c.parked_deadline_ms = request->number > 0 ? now + request->number : 0;
    }
}

void StoreServer::Impl::recheckParked(int64_t now) {
    // Answering one parked request lets its connection's next requests run,
    // and they may set keys another waits for: repeat until a pass moves
    // nothing (each pass consumes a request, so this ends).
    bool moved = true;
    while (moved) {
        moved = false;
        for (auto& [fd, c] : connections) {
            if (!c.parked)
                continue;
            if (auto reply = answer(*c.parked))
                c.outbox += *reply;
            else if (c.parked_deadline_ms > 0 && now >= c.parked_deadline_ms)
                c.outbox += statusFrame(Status::Timeout);
            else
                continue;
            c.parked.reset();
            handleRequests(c, now);
            moved = true;
        }
    }
    for (auto it = connections.begin(); it != connections.end();) {
        const int fd = it->first;
        Connection& c = it->second;
        ++it; // close() erases fd
        if (!c.authenticated && now >= c.handshake_deadline_ms) {
            close(fd, "refused a rendezvous-store connection from " + c.peer +
                          ": it did not prove the token within " +
                          std::to_string(options.handshake_timeout_ms) + " ms");
            continue;
        }
        if (!c.outbox.empty())
            flush(fd, c);
    }
}

void StoreServer::Impl::flush(int fd, Connection& c) {
    while (!c.outbox.empty()) {
        const ssize_t n = ::send(fd, c.outbox.data(), c.outbox.size(), MSG_NOSIGNAL);
        if (n > 0) {
            c.outbox.erase(0, size_t(n));
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        close(fd);
        return;
    }
    if (c.outbox.size() > kMaxOutboxBytes)
        close(fd, "dropped a rendezvous-store client at " + c.peer + ": it does not read its replies");
}

void StoreServer::Impl::close(int fd, const std::string& refusal) {
    if (!refusal.empty())
        refusals.push_back(refusal);
    connections.erase(fd);
    ::close(fd);
}

StoreServer::StoreServer(StoreServerOptions options, std::function<void(const std::string&)> on_refused)
    : m_impl(std::make_unique<Impl>()) {
    m_impl->options = std::move(options);
    m_impl->on_refused = std::move(on_refused);
}

StoreServer::~StoreServer() {
    stop();
}

void StoreServer::start() {
    Impl& s = *m_impl;
    s.listen_fd = wire::listenTcp(s.options.host, s.options.port, &s.bound_port);
    const int flags = fcntl(s.listen_fd, F_GETFL, 0);
    fcntl(s.listen_fd, F_SETFL, flags | O_NONBLOCK);
    s.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s.wake_fd < 0) {
        ::close(s.listen_fd);
        s.listen_fd = -1;
        throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
    }
    s.stop_requested = false;
    s.loop_thread = std::thread([&s] { s.loop(); });
}

void StoreServer::stop() {
    Impl& s = *m_impl;
    if (!s.loop_thread.joinable())
        return;
    s.stop_requested = true;
    s.wake();
    s.loop_thread.join();
    std::lock_guard<std::mutex> lock(s.mutex);
    for (const auto& entry : s.connections)
        ::close(entry.first);
    s.connections.clear();
    ::close(s.listen_fd);
    ::close(s.wake_fd);
    s.listen_fd = s.wake_fd = -1;
}

int StoreServer::port() const {
    return m_impl->bound_port;
}

void StoreServer::set(const std::string& key, const std::string& value) {
    {
        std::lock_guard<std::mutex> lock(m_impl->mutex);
        m_impl->storeValue(key, value);
    }
    m_impl->wake(); // parked Gets for this key are answered on the loop's next turn
}

std::optional<std::string> StoreServer::get(const std::string& key) const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    const auto it = m_impl->values.find(key);
    if (it == m_impl->values.end())
        return std::nullopt;
    return it->second;
}

size_t StoreServer::connectionCount() const {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    return m_impl->connections.size();
}

} // namespace dt::store
