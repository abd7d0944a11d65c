// http_heal_transport.cpp: the server and the fetch of the HTTP heal (see
// the header for the steps and the wire format).
#include "ft/http_heal_transport.hpp"

#include "dtlab/clock.hpp"
#include "dtlab/errors.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <list>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

namespace dt::ft {

namespace {

constexpr size_t kMaxRequestBytes = 4096;
constexpr int kMaxChunks = 1024;        // a request for more is refused (heal_chunks <= 64)
constexpr size_t kMaxConnections = 256; // open at once; more are closed at once

std::string proofText(int64_t step, const std::string& key) {
    return "heal " + std::to_string(step) + " " + key;
}

std::string metadataLine(int64_t step, const std::vector<int64_t>& message_numels) {
    std::string line = "dtlab-heal " + std::to_string(step) + " " + std::to_string(message_numels.size());
    for (int64_t n : message_numels)
        line += " " + std::to_string(n);
    return line + "\n";
}

std::vector<int64_t> numelsOf(const std::vector<at::Tensor>& messages) {
    std::vector<int64_t> out;
    for (const auto& m : messages)
        out.push_back(m.numel());
    return out;
}

void setSocketTimeout(int fd, double timeout_ms) {
    timeval tv{};
    tv.tv_sec = time_t(timeout_ms / 1000.0);
    tv.tv_usec = suseconds_t(std::fmod(timeout_ms, 1000.0) * 1000.0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

// The messages as one byte range: where [begin, end) lies in which message.
// Calls visit(message index, byte offset in it, length) for each piece.
template <typename Visit>
void forEachPiece(const std::vector<at::Tensor>& messages, int64_t begin, int64_t end, Visit visit) {
    int64_t at = 0;
    for (size_t i = 0; i < messages.size() && at < end; ++i) {
        const int64_t size = messages[i].numel() * 4;
        const int64_t lo = std::max(begin, at);
        const int64_t hi = std::min(end, at + size);
        if (lo < hi)
            visit(i, lo - at, hi - lo);
        at += size;
    }
}

int64_t totalBytes(const std::vector<at::Tensor>& messages) {
    int64_t bytes = 0;
    for (const auto& m : messages)
        bytes += m.numel() * 4;
    return bytes;
}

// Chunk i of n of `total` bytes: [i*total/n, (i+1)*total/n).
std::pair<int64_t, int64_t> chunkRange(int64_t total, int i, int n) {
    const auto at = [&](int k) { return int64_t(__int128(total) * k / n); }; // no overflow for any size
    return {at(i), at(i + 1)};
}

// "<i>of<n>" with 0 <= i < n <= kMaxChunks, written canonically; false otherwise.
bool parseChunkKey(const std::string& key, int& i, int& n) {
    const auto of = key.find("of");
    if (of == std::string::npos)
        return false;
    const auto number = [](const std::string& text, int& out) {
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, out);
        return ec == std::errc() && ptr == end && !text.empty() && (text == "0" || text[0] != '0');
    };
    return number(key.substr(0, of), i) && number(key.substr(of + 2), n) && n > 0 && n <= kMaxChunks &&
           i >= 0 && i < n;
}

std::string header(int status, const char* reason, int64_t length) {
    return "HTTP/1.0 " + std::to_string(status) + " " + reason +
           "\r\nContent-Type: application/octet-stream\r\nContent-Length: " + std::to_string(length) +
           "\r\n\r\n";
}

void replyError(int fd, int status, const char* reason, const std::string& why) {
    const std::string text = header(status, reason, int64_t(why.size())) + why;
    (void)wire::sendAll(fd, text.data(), text.size());
}

} // namespace

// ---- the server --------------------------------------------------------------
struct HealServer::Impl {
    std::string host;
    std::string token;
    double timeout_ms = 3000;
    int listen_fd = -1;
    int port = 0;
    std::thread acceptor;
    std::atomic<bool> stopping{false};

    std::mutex mutex;
    std::condition_variable changed;
    bool allowed = false;
    int64_t step = -1;
    std::vector<at::Tensor> pieces;
    std::vector<int64_t> message_numels;
    int readers = 0;          // requests writing the messages now
    std::set<int> reader_fds; // their sockets: disallow() shuts down a reader stalled past the timeout
    std::vector<ServedRequest> served;
    struct Connection {
        int fd = -1;
        std::thread thread;
        bool done = false; // handle() returned: join it
    };
    std::list<Connection> connections; // under mutex

    void acceptLoop();
    void joinFinished(); // under mutex: the threads whose request is over
    void handle(int fd);
    // Parses "GET /checkpoint/<step>/<key>" and the two headers; false on a bad request.
    static bool parseRequest(const std::string& text, int64_t& step, std::string& key, int& rank,
                             std::string& proof);
};

HealServer::HealServer(const std::string& host, std::string token, double timeout_ms)
    : m_impl(std::make_unique<Impl>()) {
    m_impl->host = host;
    m_impl->token = std::move(token);
    m_impl->timeout_ms = timeout_ms;
    m_impl->listen_fd = wire::listenTcp(host, 0, &m_impl->port);
    m_impl->acceptor = std::thread([impl = m_impl.get()] { impl->acceptLoop(); });
}

HealServer::~HealServer() {
    {
        std::lock_guard<std::mutex> lock(m_impl->mutex); // a request between its check and its wait sees it
        m_impl->stopping = true;
    }
    m_impl->changed.notify_all();
    if (m_impl->acceptor.joinable())
        m_impl->acceptor.join();
    ::close(m_impl->listen_fd);
    std::list<Impl::Connection> connections;
    {
        std::lock_guard<std::mutex> lock(m_impl->mutex);
        for (auto& c : m_impl->connections)
            if (!c.done)
                ::shutdown(c.fd, SHUT_RDWR); // a request blocked on its socket returns now
        connections.swap(m_impl->connections);
    }
    for (auto& c : connections)
        c.thread.join();
}

std::string HealServer::address() const {
    return m_impl->host + ":" + std::to_string(m_impl->port);
}

void HealServer::allow(int64_t step, std::vector<at::Tensor> pieces, std::vector<int64_t> message_numels) {
    int64_t numel = 0;
    for (int64_t n : message_numels)
        numel += n;
    DT_ENFORCE(totalBytes(pieces) == 4 * numel, "heal server: the pieces do not add up to the messages");
    for (const auto& p : pieces)
        DT_ENFORCE(p.is_contiguous() && p.scalar_type() == at::kFloat,
                   "heal server: pieces are contiguous fp32");
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    m_impl->step = step;
    m_impl->pieces = std::move(pieces);
    m_impl->message_numels = std::move(message_numels);
    m_impl->allowed = true;
    m_impl->changed.notify_all();
}

void HealServer::disallow() {
    std::unique_lock<std::mutex> lock(m_impl->mutex);
    m_impl->allowed = false;
    // The readers in progress finish, or, stalled past the timeout, are cut
    // off (their healer's fetch fails) so that the state may change.
    const auto timeout = std::chrono::microseconds(int64_t(m_impl->timeout_ms * 1000));
    if (!m_impl->changed.wait_for(lock, timeout, [&] { return m_impl->readers == 0; })) {
        for (int fd : m_impl->reader_fds)
            ::shutdown(fd, SHUT_RDWR);
        m_impl->changed.wait(lock, [&] { return m_impl->readers == 0; });
    }
    m_impl->pieces.clear();
}

std::vector<ServedRequest> HealServer::takeServed() {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    std::vector<ServedRequest> out;
    out.swap(m_impl->served);
    return out;
}

void HealServer::Impl::acceptLoop() {
    while (!stopping.load()) {
        pollfd p{listen_fd, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0)
            continue;
        const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10)); // out of fds: no busy loop
            continue;
        }
        setSocketTimeout(fd, timeout_ms);
        std::lock_guard<std::mutex> lock(mutex);
        joinFinished();
        if (connections.size() >= kMaxConnections) {
            ::close(fd);
            continue;
        }
        Connection& c = connections.emplace_back();
        c.fd = fd;
        try {
            c.thread = std::thread([this, fd, &c] {
                try {
                    handle(fd);
                } catch (const std::exception&) {
                    // (bad_alloc, say): the connection closes, the healer's fetch fails
                }
                std::lock_guard<std::mutex> done_lock(mutex);
                ::close(fd);
                c.done = true;
            });
        } catch (const std::system_error&) { // no thread: drop the connection
            ::close(fd);
            connections.pop_back();
        }
    }
}

void HealServer::Impl::joinFinished() {
    for (auto it = connections.begin(); it != connections.end();) {
        if (it->done) {
            it->thread.join(); // returns at once: the thread only had to exit
            it = connections.erase(it);
        } else {
            ++it;
        }
    }
}

bool HealServer::Impl::parseRequest(const std::string& text, int64_t& step, std::string& key, int& rank,
                                    std::string& proof) {
    std::istringstream in(text);
    std::string method, path, version;
    if (!(in >> method >> path >> version) || method != "GET")
        return false;
    const std::string prefix = "/checkpoint/";
    if (path.rfind(prefix, 0) != 0)
        return false;
    const std::string rest = path.substr(prefix.size());
    const auto slash = rest.find('/');
    if (slash == std::string::npos || slash == 0)
        return false;
    try {
        size_t used = 0;
        step = std::stoll(rest.substr(0, slash), &used);
        if (used != slash)
            return false;
    } catch (const std::exception&) {
        return false;
    }
    key = rest.substr(slash + 1);
    std::string line;
    std::getline(in, line); // the rest of the request line
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        const auto colon = line.find(':');
        if (colon == std::string::npos)
            continue;
        const std::string name = line.substr(0, colon);
        std::string value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(' '));
        if (name == "X-Dtlab-Rank")
            rank = std::atoi(value.c_str());
        else if (name == "X-Dtlab-Proof")
            proof = value;
    }
    return !key.empty();
}

void HealServer::Impl::handle(int fd) {
    // The request: up to the blank line.
    std::string text;
    char buffer[1024];
    while (text.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
        if (n <= 0 || text.size() > kMaxRequestBytes)
            return;
        text.append(buffer, size_t(n));
    }
    ServedRequest record;
    record.begin_ns = monotonicNowNs();
    std::string key, proof;
    if (!parseRequest(text, record.step, key, record.healer_rank, proof))
        return replyError(fd, 400, "Bad Request", "expected GET /checkpoint/<step>/<metadata|full|chunk>");
    if (proof != wire::textProofHex(token, proofText(record.step, key)))
        return replyError(fd, 403, "Forbidden", "the request's proof does not match this run's token");

    // Wait until a state is allowed (TorchFT's read lock), then hold it as a reader.
    std::unique_lock<std::mutex> lock(mutex);
    const bool ready = changed.wait_for(lock, std::chrono::microseconds(int64_t(timeout_ms * 1000)),
                                        [&] { return stopping.load() || allowed; });
    if (!ready || stopping.load()) {
        lock.unlock();
        return replyError(fd, 503, "Service Unavailable", "no state is served (timed out waiting)");
    }
    if (record.step != step) {
        const std::string why =
            "serving step " + std::to_string(step) + ", asked for " + std::to_string(record.step);
        lock.unlock();
        return replyError(fd, 400, "Bad Request", why);
    }
    const std::vector<at::Tensor> state = pieces; // the same tensors, held while writing
    const std::vector<int64_t> layout = message_numels;
    readers += 1;
    reader_fds.insert(fd);
    lock.unlock();
    // Counted out however this request ends (disallow() waits for it).
    struct ReaderGuard {
        Impl& impl;
        int fd;
        ServedRequest& record;
        ~ReaderGuard() {
            record.end_ns = monotonicNowNs();
            std::lock_guard<std::mutex> guard(impl.mutex);
            impl.readers -= 1;
            impl.reader_fds.erase(fd);
            impl.served.push_back(record);
            impl.changed.notify_all();
        }
    } reader_guard{*this, fd, record};

    const int64_t total = totalBytes(state);
    bool ok = false;
    int64_t begin = 0, end = 0;
    std::string head;
    if (key == "metadata") {
        const std::string body = metadataLine(record.step, layout);
        head = header(200, "OK", int64_t(body.size())) + body;
    } else if (key == "full") {
        const std::string body = metadataLine(record.step, layout);
        head = header(200, "OK", int64_t(body.size()) + total) + body;
        end = total;
    } else {
        // "<i>of<n>": chunk i of n.
        int i = -1, n = 0;
        if (!parseChunkKey(key, i, n))
            head.clear();
        else {
            std::tie(begin, end) = chunkRange(total, i, n);
            head = header(200, "OK", end - begin);
        }
    }
    if (head.empty())
        replyError(fd, 400, "Bad Request", "unknown key '" + key + "'");
    else if (wire::sendAll(fd, head.data(), head.size())) {
        ok = true;
        forEachPiece(state, begin, end, [&](size_t m, int64_t offset, int64_t length) {
            const char* data = static_cast<const char*>(state[m].data_ptr()) + offset;
            ok = ok && wire::sendAll(fd, data, size_t(length));
        });
    }
    record.bytes = ok ? end - begin : 0;
    record.ok = ok; // reader_guard reports it
}

// ---- the fetch ---------------------------------------------------------------
namespace {

struct Reply {
    int status = 0;
    int64_t length = -1;
    std::string rest; // bytes read past the header
};

// Sends the GET and reads the status line and headers.
int openRequest(const HealFetch& fetch, const std::string& key, Reply& reply) {
    std::string host;
    int port = 0;
    wire::splitAddress(fetch.address, host, port);
    const int fd = wire::connectWithin(host, port, fetch.timeout_ms);
    if (fd < 0)
        throw CommError(CommErrorKind::PeerLost, "heal over HTTP: cannot connect to " + fetch.address);
    const std::string request =
        "GET /checkpoint/" + std::to_string(fetch.step) + "/" + key +
        " HTTP/1.0\r\nX-Dtlab-Rank: " + std::to_string(fetch.healer_rank) +
        "\r\nX-Dtlab-Proof: " + wire::textProofHex(fetch.token, proofText(fetch.step, key)) + "\r\n\r\n";
    if (!wire::sendAll(fd, request.data(), request.size())) {
        ::close(fd);
        throw CommError(CommErrorKind::PeerLost,
                        "heal over HTTP: " + fetch.address + " closed the connection");
    }
    std::string text;
    char buffer[4096];
    size_t end = std::string::npos;
    while ((end = text.find("\r\n\r\n")) == std::string::npos) {
        const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
        if (n <= 0 || text.size() > kMaxRequestBytes) {
            ::close(fd);
            throw CommError(n < 0 ? CommErrorKind::Timeout : CommErrorKind::PeerLost,
                            "heal over HTTP: no reply from " + fetch.address + " for " + key);
        }
        text.append(buffer, size_t(n));
    }
    reply.rest = text.substr(end + 4);
    std::istringstream in(text.substr(0, end));
    std::string version;
    in >> version >> reply.status;
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("Content-Length:", 0) == 0)
            reply.length = std::atoll(line.c_str() + 15);
    }
    if (reply.status != 200) {
        std::string why = reply.rest;
        if (reply.length > int64_t(why.size()) && reply.length < 4096) {
            std::string more(size_t(reply.length) - why.size(), '\0');
            if (wire::recvAll(fd, more.data(), more.size()))
                why += more;
        }
        ::close(fd);
        throw CommError(CommErrorKind::Other, "heal over HTTP: " + fetch.address + " answered " +
                                                  std::to_string(reply.status) + " for " + key + ": " + why);
    }
    return fd;
}

// Reads `length` bytes: first what openRequest read past the header, then the socket.
void readBody(int fd, Reply& reply, char* out, int64_t length, const std::string& what) {
    const int64_t buffered = std::min<int64_t>(length, int64_t(reply.rest.size()));
    std::memcpy(out, reply.rest.data(), size_t(buffered));
    reply.rest.erase(0, size_t(buffered));
    if (!wire::recvAll(fd, out + buffered, size_t(length - buffered)))
        throw CommError(CommErrorKind::PeerLost, "heal over HTTP: " + what + " ended early");
}

// Reads the metadata line (ends with '\n') and checks it against `into`.
void readMetadata(int fd, Reply& reply, int64_t step, const std::vector<at::Tensor>& into,
                  const std::string& source) {
    std::string line = reply.rest;
    char c = 0;
    while (line.find('\n') == std::string::npos) {
        if (line.size() > kMaxRequestBytes || ::recv(fd, &c, 1, 0) != 1)
            throw CommError(CommErrorKind::PeerLost,
                            "heal over HTTP: the metadata from " + source + " ended early");
        line.push_back(c);
    }
    const auto newline = line.find('\n');
    reply.rest = line.substr(newline + 1);
    const std::string expected = metadataLine(step, numelsOf(into));
    if (line.substr(0, newline + 1) != expected)
        throw CommError(CommErrorKind::Other, "heal over HTTP: " + source + " serves a state laid out as '" +
                                                  line.substr(0, newline) + "', this rank expects '" +
                                                  expected.substr(0, expected.size() - 1) + "'");
}

} // namespace

void fetchHealState(const HealFetch& fetch, std::vector<at::Tensor>& into) {
    const int64_t total = totalBytes(into);
    // GET key; `body` reads its body from the open socket.
    const auto get = [&](const std::string& key, const std::function<void(int, Reply&)>& body) {
        Reply reply;
        const int fd = openRequest(fetch, key, reply);
        try {
            body(fd, reply);
        } catch (...) {
            ::close(fd);
            throw;
        }
        ::close(fd);
    };
    const auto receive = [&](int fd, Reply& reply, int64_t begin, int64_t end, const std::string& what) {
        forEachPiece(into, begin, end, [&](size_t m, int64_t offset, int64_t length) {
            readBody(fd, reply, static_cast<char*>(into[m].data_ptr()) + offset, length, what);
        });
    };
    if (fetch.chunks <= 0) {
        get("full", [&](int fd, Reply& reply) {
            readMetadata(fd, reply, fetch.step, into, fetch.address);
            receive(fd, reply, 0, total, "the state from " + fetch.address);
        });
        return;
    }
    // The metadata and every chunk at once, one connection and thread each.
    const int n = fetch.chunks;
    std::vector<std::exception_ptr> errors(size_t(n) + 1);
    std::vector<std::thread> threads;
    struct JoinAll { // also when starting a thread throws: no joinable thread is destroyed
        std::vector<std::thread>& threads;
        ~JoinAll() {
            for (auto& t : threads)
                if (t.joinable())
                    t.join();
        }
    } join_all{threads};
    threads.emplace_back([&] {
        try {
            get("metadata",
                [&](int fd, Reply& reply) { readMetadata(fd, reply, fetch.step, into, fetch.address); });
        } catch (...) {
            errors[0] = std::current_exception();
        }
    });
    for (int i = 0; i < n; ++i)
        threads.emplace_back([&, i] {
            try {
                const auto [begin, end] = chunkRange(total, i, n);
                const std::string key = std::to_string(i) + "of" + std::to_string(n);
                get(key, [&](int fd, Reply& reply) {
                    if (reply.length != end - begin)
                        throw CommError(CommErrorKind::Other,
                                        "heal over HTTP: chunk " + key + " from " + fetch.address + " has " +
                                            std::to_string(reply.length) + " bytes, expected " +
                                            std::to_string(end - begin));
                    receive(fd, reply, begin, end, "chunk " + key + " from " + fetch.address);
                });
            } catch (...) {
                errors[size_t(i) + 1] = std::current_exception();
            }
        });
    for (auto& t : threads)
        t.join();
    for (const auto& e : errors) // the metadata's error first: a layout mismatch explains the rest
        if (e)
            std::rethrow_exception(e);
}

} // namespace dt::ft
