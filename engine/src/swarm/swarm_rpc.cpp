// swarm_rpc.cpp: frames, tensors and sockets of the trainer-server calls
// (layout in swarm_rpc.hpp).
#include "swarm/swarm_rpc.hpp"

#include "core/sha256.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace dt::swarm {
namespace {

constexpr char kRequestMagic[4] = {'D', 'T', 'S', 'W'};
constexpr char kReplyMagic[4] = {'D', 'T', 'S', 'R'};
constexpr uint64_t kMaxPayload = uint64_t(1) << 30; // 1 GiB: more is a corrupt frame, not a tensor
constexpr int kMaxTensors = 8;
constexpr int kMaxDims = 4;

struct RequestHeader {
    char magic[4];
    uint8_t op;
    uint8_t count;
    uint8_t pad[2];
    int32_t trainer;
    int32_t step;
    int32_t microbatch;
    int32_t pad2;
    int64_t sent_ns;
    uint64_t payload;
};
static_assert(sizeof(RequestHeader) == 40);

struct ReplyHeader {
    char magic[4];
    uint8_t status;
    uint8_t count;
    uint8_t pad[2];
    int64_t service_ns;
    uint64_t payload;
};
static_assert(sizeof(ReplyHeader) == 24);

struct TensorHeader {
    uint8_t dtype; // 0 fp32, 1 int64
    uint8_t ndim;
    uint8_t pad[6];
};
static_assert(sizeof(TensorHeader) == 8);

IoResult receiveExactly(int fd, void* data, size_t size) {
    errno = 0;
    if (wire::recvAll(fd, data, size))
        return IoResult::Ok;
    return errno == EAGAIN || errno == EWOULDBLOCK ? IoResult::TimedOut : IoResult::Closed;
}

// The payload after a header, size checked first.
IoResult receivePayload(int fd, uint64_t size, std::string& payload) {
    if (size > kMaxPayload)
        throw std::runtime_error("swarm call: a payload of " + std::to_string(size) +
                                 " bytes (corrupt frame)");
    payload.resize(size_t(size));
    return size == 0 ? IoResult::Ok : receiveExactly(fd, payload.data(), payload.size());
}

bool sendFrame(int fd, const void* header, size_t header_size, const std::string& payload, int64_t& bytes) {
    bytes = int64_t(header_size + payload.size());
    errno = 0;
    return wire::sendAll(fd, header, header_size) &&
           (payload.empty() || wire::sendAll(fd, payload.data(), payload.size()));
}

bool receiveLine(int fd, std::string& line, size_t max) {
    line.clear();
    char c = 0;
    while (line.size() <= max) {
        if (!wire::recvAll(fd, &c, 1))
            return false;
        if (c == '\n')
            return true;
        line.push_back(c);
    }
    return false;
}

std::string proofFor(const std::string& token, const std::string& nonce) {
    const auto mac = hmacSha256(token, "swarm-call " + nonce);
    return toHex(mac.data(), mac.size());
}

} // namespace

std::string encodeTensors(const std::vector<at::Tensor>& tensors) {
    std::string out;
    for (const at::Tensor& t : tensors) {
        const at::Tensor c = t.detach().contiguous();
        if (c.dim() > kMaxDims)
            throw std::invalid_argument("swarm call: a tensor of " + std::to_string(c.dim()) + " dimensions");
        TensorHeader h{};
        if (c.scalar_type() == at::kFloat)
            h.dtype = 0;
        else if (c.scalar_type() == at::kLong)
            h.dtype = 1;
        else
            throw std::invalid_argument("swarm call: only fp32 and int64 tensors travel");
        h.ndim = uint8_t(c.dim());
        out.append(reinterpret_cast<const char*>(&h), sizeof(h));
        for (int64_t d : c.sizes())
            out.append(reinterpret_cast<const char*>(&d), sizeof(d));
        out.append(static_cast<const char*>(c.data_ptr()), size_t(c.nbytes()));
    }
    return out;
}

std::vector<at::Tensor> decodeTensors(const std::string& payload, int count) {
    std::vector<at::Tensor> out;
    size_t at_byte = 0;
    const auto take = [&](void* dst, size_t n) {
        if (payload.size() - at_byte < n)
            throw std::runtime_error("swarm call: the payload ends inside a tensor (corrupt frame)");
        std::memcpy(dst, payload.data() + at_byte, n);
        at_byte += n;
    };
    for (int i = 0; i < count; ++i) {
        TensorHeader h{};
        take(&h, sizeof(h));
        if (h.dtype > 1 || h.ndim > kMaxDims)
            throw std::runtime_error("swarm call: a tensor of unknown type or shape (corrupt frame)");
        std::vector<int64_t> sizes(h.ndim);
        uint64_t numel = 1;
        for (auto& d : sizes) {
            take(&d, sizeof(d));
            if (d < 0 || (d > 0 && numel > kMaxPayload / uint64_t(d)))
                throw std::runtime_error("swarm call: a tensor size out of range (corrupt frame)");
            numel *= uint64_t(d);
        }
        const at::ScalarType type = h.dtype == 0 ? at::kFloat : at::kLong;
        const uint64_t element = h.dtype == 0 ? 4 : 8;
        if (numel > (payload.size() - at_byte) / element) // before allocating: the bytes must be there
            throw std::runtime_error("swarm call: the payload ends inside a tensor (corrupt frame)");
        at::Tensor t = at::empty(sizes, at::TensorOptions().dtype(type));
        take(t.data_ptr(), size_t(t.nbytes()));
        out.push_back(std::move(t));
    }
    if (at_byte != payload.size())
        throw std::runtime_error("swarm call: bytes after the last tensor (corrupt frame)");
    return out;
}

bool sendRequest(int fd, const CallRequest& r, int64_t& bytes) {
    const std::string payload = encodeTensors(r.tensors);
    RequestHeader h{};
    std::memcpy(h.magic, kRequestMagic, 4);
    h.op = uint8_t(r.op);
    h.count = uint8_t(r.tensors.size());
    h.trainer = r.trainer;
    h.step = r.step;
    h.microbatch = r.microbatch;
    h.sent_ns = r.sent_ns;
    h.payload = payload.size();
    return sendFrame(fd, &h, sizeof(h), payload, bytes);
}

IoResult receiveRequest(int fd, CallRequest& r, int64_t& bytes) {
    RequestHeader h{};
    if (IoResult got = receiveExactly(fd, &h, sizeof(h)); got != IoResult::Ok)
        return got;
    if (std::memcmp(h.magic, kRequestMagic, 4) != 0 || (h.op != 1 && h.op != 2) || h.count > kMaxTensors)
        throw std::runtime_error("swarm call: not a request frame");
    std::string payload;
    if (IoResult got = receivePayload(fd, h.payload, payload); got != IoResult::Ok)
        return got;
    r.op = CallOp(h.op);
    r.trainer = h.trainer;
    r.step = h.step;
    r.microbatch = h.microbatch;
    r.sent_ns = h.sent_ns;
    r.tensors = decodeTensors(payload, h.count);
    bytes = int64_t(sizeof(h) + payload.size());
    return IoResult::Ok;
}

bool sendReply(int fd, const CallReply& r, int64_t& bytes) {
    const std::string payload = r.status == ReplyStatus::Error ? r.error : encodeTensors(r.tensors);
    ReplyHeader h{};
    std::memcpy(h.magic, kReplyMagic, 4);
    h.status = uint8_t(r.status);
    h.count = r.status == ReplyStatus::Error ? 0 : uint8_t(r.tensors.size());
    h.service_ns = r.service_ns;
    h.payload = payload.size();
    return sendFrame(fd, &h, sizeof(h), payload, bytes);
}

IoResult receiveReply(int fd, CallReply& r, int64_t& bytes) {
    ReplyHeader h{};
    if (IoResult got = receiveExactly(fd, &h, sizeof(h)); got != IoResult::Ok)
        return got;
    if (std::memcmp(h.magic, kReplyMagic, 4) != 0 || h.status > 2 || h.count > kMaxTensors)
        throw std::runtime_error("swarm call: not a reply frame");
    std::string payload;
    if (IoResult got = receivePayload(fd, h.payload, payload); got != IoResult::Ok)
        return got;
    r.status = ReplyStatus(h.status);
    r.service_ns = h.service_ns;
    r.tensors.clear();
    r.error.clear();
    if (r.status == ReplyStatus::Error)
        r.error = payload;
    else
        r.tensors = decodeTensors(payload, h.count);
    bytes = int64_t(sizeof(h) + payload.size());
    return IoResult::Ok;
}

void setReceiveTimeout(int fd, double timeout_ms) {
    timeval tv{};
    const int64_t us = int64_t(timeout_ms * 1000.0);
    tv.tv_sec = time_t(us / 1'000'000);
    tv.tv_usec = suseconds_t(us % 1'000'000);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

void setSendTimeout(int fd, double timeout_ms) {
    timeval tv{};
    const int64_t us = int64_t(timeout_ms * 1000.0);
    tv.tv_sec = time_t(us / 1'000'000);
    tv.tv_usec = suseconds_t(us % 1'000'000);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

IoResult lastFailure() {
    return errno == EAGAIN || errno == EWOULDBLOCK ? IoResult::TimedOut : IoResult::Closed;
}

bool serverHandshake(int fd, const std::string& token) {
    const auto nonce_bytes = randomNonce();
    const std::string nonce = toHex(nonce_bytes.data(), nonce_bytes.size());
    const std::string line = nonce + "\n";
    if (!wire::sendAll(fd, line.data(), line.size()))
        return false;
    std::string answer;
    if (!receiveLine(fd, answer, 64))
        return false;
    const std::string expected = proofFor(token, nonce);
    return answer.size() == expected.size() &&
           constantTimeEqual(reinterpret_cast<const uint8_t*>(answer.data()),
                             reinterpret_cast<const uint8_t*>(expected.data()), expected.size());
}

bool clientHandshake(int fd, const std::string& token) {
    std::string nonce;
    if (!receiveLine(fd, nonce, 64) || nonce.size() != 32)
        return false;
    const std::string line = proofFor(token, nonce) + "\n";
    return wire::sendAll(fd, line.data(), line.size());
}

} // namespace dt::swarm
