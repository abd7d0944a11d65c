// store_client.cpp: one authenticated connection to the rendezvous store.
//
//   1. connect (retrying for connect_timeout_ms), read the Challenge;
//   2. send Hello with HMAC-SHA256(token, "dtlab store client" | nonces);
//   3. read the Welcome and check the store's own proof (a store that cannot
//      prove the token could hand the rank a scenario of its choosing);
//   4. each call: send one request frame, wait for its reply frame (at most
//      the request's timeout plus reply_grace_ms; the server answers a Get or
//      Wait that timed out with status Timeout itself).
#include "store/store_client.hpp"

#include "core/sha256.hpp"
#include "dtlab/clock.hpp"
#include "dtlab/errors.hpp"
#include "store/store_protocol.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dt::store {

namespace {

int64_t nowMs() {
    return dt::monotonicNowNs() / 1'000'000;
}

} // namespace

StoreClient::StoreClient(StoreClientOptions options) : m_options(std::move(options)) {
    try {
        handshake();
    } catch (...) {
        if (m_fd >= 0)
            ::close(m_fd);
        m_fd = -1;
        throw;
    }
}

void StoreClient::handshake() {
    m_fd = wire::connectTcp(m_options.host, m_options.port, int(m_options.connect_timeout_ms));
    if (m_fd < 0)
        fail("cannot connect within " + std::to_string(m_options.connect_timeout_ms / 1000) + " s");
    const int64_t deadline = nowMs() + m_options.reply_grace_ms;
    Challenge challenge{};
    receive(&challenge, sizeof(challenge), deadline);
    if (std::memcmp(challenge.magic, kMagic, 4) != 0 || challenge.version != kVersion)
        fail("it is not a dtlab rendezvous store of this version");
    Hello hello{};
    std::memcpy(hello.magic, kMagic, 4);
    hello.version = kVersion;
    hello.client_nonce = randomNonce();
    hello.proof = clientProof(m_options.token, challenge.server_nonce, hello.client_nonce);
    if (!wire::sendAll(m_fd, &hello, sizeof(hello)))
        fail("the connection closed during the handshake");
    Welcome welcome{};
    try {
        receive(&welcome, sizeof(welcome), deadline);
    } catch (const std::runtime_error&) {
        throw UsageError("the rendezvous store at " + address() +
                         " refused this rank's token (wrong or missing DTLAB_TOKEN / --token-file)");
    }
    const Proof expected = serverProof(m_options.token, challenge.server_nonce, hello.client_nonce);
    if (!constantTimeEqual(expected.data(), welcome.proof.data(), expected.size()))
        throw UsageError("the rendezvous store at " + address() +
                         " does not hold this rank's token: it is not this run's Session");
}

StoreClient::~StoreClient() {
    if (m_fd >= 0)
        ::close(m_fd);
}

void StoreClient::fail(const std::string& why) const {
    throw std::runtime_error("rendezvous store at " + address() + ": " + why);
}

void StoreClient::receive(void* data, size_t size, int64_t deadline_ms) {
    auto* p = static_cast<char*>(data);
    while (size > 0) {
        pollfd pfd{m_fd, POLLIN, 0};
        const int64_t left = deadline_ms - nowMs();
        if (left <= 0)
            fail("no reply within the time allowed (is the Session stopped?)");
        const int ready = ::poll(&pfd, 1, int(std::min<int64_t>(left, 1'000'000)));
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            continue; // the deadline check above ends it
        const ssize_t n = ::recv(m_fd, p, size, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            fail("the connection closed (the Session ended?)");
        p += n;
        size -= size_t(n);
    }
}

StoreClient::Reply StoreClient::call(const std::string& frame, int64_t timeout_ms) {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_fd < 0)
        fail("not connected (an earlier request failed)");
    try {
        return exchange(frame, timeout_ms);
    } catch (const std::runtime_error& e) {
        // A reply cut short or late would be read as the next request's:
        // the connection is out of step, so it is closed. (An Error reply
        // was read whole: the connection stays usable.)
        if (!m_reply_was_error) {
            ::close(m_fd);
            m_fd = -1;
        }
        throw;
    }
}

StoreClient::Reply StoreClient::exchange(const std::string& frame, int64_t timeout_ms) {
    m_reply_was_error = false;
    if (!wire::sendAll(m_fd, frame.data(), frame.size()))
        fail("the connection closed (the Session ended?)");
    const int64_t deadline = timeout_ms > 0
                                 ? nowMs() + timeout_ms + m_options.reply_grace_ms
                                 : INT64_MAX; // no limit asked: wait as long as the connection lives
    FrameHeader header{};
    receive(&header, sizeof(header), deadline);
    if (header.length > kMaxBodyBytes)
        fail("a " + std::to_string(header.length) + "-byte reply is over the limit");
    Reply reply;
    reply.status = header.code;
    reply.body.resize(header.length);
    if (header.length > 0)
        receive(reply.body.data(), header.length, deadline);
    if (reply.status == uint32_t(Status::Error)) {
        m_reply_was_error = true;
        BodyReader r(reply.body);
        const std::string why = r.bytes();
        fail(r.failed() ? std::string("error") : why);
    }
    if (reply.status != uint32_t(Status::Ok) && reply.status != uint32_t(Status::Timeout))
        fail("unknown reply status " + std::to_string(reply.status));
    return reply;
}

namespace {

std::string readBytes(const std::string& body) {
    BodyReader r(body);
    std::string value = r.bytes();
    if (r.failed() || !r.atEnd())
        throw std::runtime_error("rendezvous store: malformed reply");
    return value;
}

int64_t readInteger(const std::string& body) {
    BodyReader r(body);
    const int64_t value = r.integer();
    if (r.failed() || !r.atEnd())
        throw std::runtime_error("rendezvous store: malformed reply");
    return value;
}

int64_t checkedTimeout(int64_t timeout_ms) {
    return std::clamp<int64_t>(timeout_ms, 0, kMaxTimeoutMs);
}

} // namespace

void StoreClient::set(const std::string& key, const std::string& value) {
    call(encodeRequest({Op::Set, {key}, value, {}, 0}), m_options.reply_grace_ms);
}

std::string StoreClient::compareSet(const std::string& key, const std::string& expected,
                                    const std::string& desired) {
    return readBytes(
        call(encodeRequest({Op::CompareSet, {key}, expected, desired, 0}), m_options.reply_grace_ms).body);
}

std::optional<std::string> StoreClient::get(const std::string& key, int64_t timeout_ms) {
    const int64_t t = checkedTimeout(timeout_ms);
    const Reply reply = call(encodeRequest({Op::Get, {key}, {}, {}, t}), t);
    if (reply.status == uint32_t(Status::Timeout))
        return std::nullopt;
    return readBytes(reply.body);
}

int64_t StoreClient::add(const std::string& key, int64_t delta) {
    return readInteger(call(encodeRequest({Op::Add, {key}, {}, {}, delta}), m_options.reply_grace_ms).body);
}

bool StoreClient::deleteKey(const std::string& key) {
    return readInteger(call(encodeRequest({Op::Delete, {key}, {}, {}, 0}), m_options.reply_grace_ms).body) !=
           0;
}

bool StoreClient::check(const std::vector<std::string>& keys) {
    return readInteger(call(encodeRequest({Op::Check, keys, {}, {}, 0}), m_options.reply_grace_ms).body) != 0;
}

int64_t StoreClient::numKeys() {
    return readInteger(call(encodeRequest({Op::NumKeys, {}, {}, {}, 0}), m_options.reply_grace_ms).body);
}

bool StoreClient::wait(const std::vector<std::string>& keys, int64_t timeout_ms) {
    const int64_t t = checkedTimeout(timeout_ms);
    return call(encodeRequest({Op::Wait, keys, {}, {}, t}), t).status == uint32_t(Status::Ok);
}

} // namespace dt::store
