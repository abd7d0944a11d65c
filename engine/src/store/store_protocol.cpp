// store_protocol.cpp: encoding and bounds-checked decoding of the rendezvous
// store's frames (format in store_protocol.hpp).
#include "store/store_protocol.hpp"

#include "core/sha256.hpp"

#include <cstring>

namespace dt::store {

namespace {

Proof proof(const std::string& token, const char* label, const Nonce& server_nonce,
            const Nonce& client_nonce) {
    std::string message = label;
    message.append(reinterpret_cast<const char*>(server_nonce.data()), server_nonce.size());
    message.append(reinterpret_cast<const char*>(client_nonce.data()), client_nonce.size());
    return hmacSha256(token, message);
}

} // namespace

Proof clientProof(const std::string& token, const Nonce& server_nonce, const Nonce& client_nonce) {
    return proof(token, "dtlab store client", server_nonce, client_nonce);
}

Proof serverProof(const std::string& token, const Nonce& server_nonce, const Nonce& client_nonce) {
    return proof(token, "dtlab store server", server_nonce, client_nonce);
}

void BodyWriter::bytes(const std::string& field) {
    const uint32_t n = uint32_t(field.size());
    m_body.append(reinterpret_cast<const char*>(&n), sizeof(n));
    m_body.append(field);
}

void BodyWriter::integer(int64_t field) {
    m_body.append(reinterpret_cast<const char*>(&field), sizeof(field));
}

std::string BodyWriter::frame(uint32_t code) const {
    const FrameHeader header{code, uint32_t(m_body.size())};
    std::string out(reinterpret_cast<const char*>(&header), sizeof(header));
    out += m_body;
    return out;
}

std::string BodyReader::bytes(uint32_t max_bytes) {
    uint32_t n = 0;
    if (m_failed || m_body.size() - m_offset < sizeof(n)) {
        m_failed = true;
        return {};
    }
    std::memcpy(&n, m_body.data() + m_offset, sizeof(n));
    if (n > max_bytes || m_body.size() - m_offset - sizeof(n) < n) {
        m_failed = true;
        return {};
    }
    m_offset += sizeof(n);
    std::string field = m_body.substr(m_offset, n);
    m_offset += n;
    return field;
}

int64_t BodyReader::integer() {
    int64_t value = 0;
    if (m_failed || m_body.size() - m_offset < sizeof(value)) {
        m_failed = true;
        return 0;
    }
    std::memcpy(&value, m_body.data() + m_offset, sizeof(value));
    m_offset += sizeof(value);
    return value;
}

std::string encodeRequest(const Request& request) {
    BodyWriter w;
    switch (request.op) {
    case Op::Set:
        w.bytes(request.keys.at(0));
        w.bytes(request.value);
        break;
    case Op::CompareSet:
        w.bytes(request.keys.at(0));
        w.bytes(request.value);
        w.bytes(request.desired);
        break;
    case Op::Get:
    case Op::Add:
        w.bytes(request.keys.at(0));
        w.integer(request.number);
        break;
    case Op::Delete:
        w.bytes(request.keys.at(0));
        break;
    case Op::Check:
    case Op::Wait:
        w.integer(int64_t(request.keys.size()));
        for (const auto& key : request.keys)
            w.bytes(key);
        if (request.op == Op::Wait)
            w.integer(request.number);
        break;
    case Op::NumKeys:
        break;
    }
    return w.frame(uint32_t(request.op));
}

std::optional<Request> decodeRequest(uint32_t code, const std::string& body, std::string& why) {
    if (code < uint32_t(Op::Set) || code > uint32_t(Op::Wait)) {
        why = "unknown request " + std::to_string(code);
        return std::nullopt;
    }
    Request request;
    request.op = Op(code);
    BodyReader r(body);
    auto timeoutInRange = [&] {
        if (request.number < 0 || request.number > kMaxTimeoutMs)
            why = "timeout " + std::to_string(request.number) + " ms out of range";
    };
    switch (request.op) {
    case Op::Set:
        request.keys.push_back(r.bytes(kMaxKeyBytes));
        request.value = r.bytes();
        break;
    case Op::CompareSet:
        request.keys.push_back(r.bytes(kMaxKeyBytes));
        request.value = r.bytes();
        request.desired = r.bytes();
        break;
    case Op::Get:
        request.keys.push_back(r.bytes(kMaxKeyBytes));
        request.number = r.integer();
        timeoutInRange();
        break;
    case Op::Add:
        request.keys.push_back(r.bytes(kMaxKeyBytes));
        request.number = r.integer();
        break;
    case Op::Delete:
        request.keys.push_back(r.bytes(kMaxKeyBytes));
        break;
    case Op::Check:
    case Op::Wait: {
        const int64_t count = r.integer();
        if (count < 0 || count > int64_t(kMaxKeysPerRequest)) {
            why = "key count " + std::to_string(count) + " out of range";
            return std::nullopt;
        }
        for (int64_t i = 0; i < count && !r.failed(); ++i)
            request.keys.push_back(r.bytes(kMaxKeyBytes));
        if (request.op == Op::Wait) {
            request.number = r.integer();
            timeoutInRange();
        }
        break;
    }
    case Op::NumKeys:
        break;
    }
    if (r.failed())
        why = "a field is missing or longer than allowed";
    else if (!r.atEnd() && why.empty())
        why = std::to_string(body.size()) + "-byte body has bytes left over";
    if (!why.empty())
        return std::nullopt;
    return request;
}

} // namespace dt::store
