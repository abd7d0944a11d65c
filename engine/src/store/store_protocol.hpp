// store_protocol.hpp: the bytes between a rank and the Session's rendezvous
// store (store_server.hpp), the store Gloo and the ranks rendezvous on.
//
// Why dtlab has its own: LibTorch 1.13's c10d::TCPStore listens on every
// interface and admits anyone who connects. This store binds one address
// (loopback unless dtrun --listen says otherwise) and admits only a holder of
// the run's token, and proves itself to the rank in turn.
//
// One TCP connection per client. Integers are little-endian.
//   handshake (fixed size):
//     server -> client  Challenge {magic "DTLS", u32 version, u8 server_nonce[16]}        24 bytes
//     client -> server  Hello     {magic "DTLS", u32 version, u8 client_nonce[16],
//                                  u8 proof[32]}                                           56 bytes
//                       proof = HMAC-SHA256(token, "dtlab store client" | server_nonce | client_nonce)
//     server -> client  Welcome   {magic "DTLS", u32 0, u8 proof[32]}                      40 bytes
//                       proof = HMAC-SHA256(token, "dtlab store server" | server_nonce | client_nonce)
//     A wrong client proof: the server closes without a Welcome (and reports
//     the refusal). A wrong server proof: the client refuses the store.
//   then requests and replies, one at a time, each a frame:
//     {u32 op_or_status, u32 length, body[length]}
//     body = fields: a bytes field is {u32 n, n bytes}, an integer field is i64.
//
//   request      body                               reply body (status Ok)
//   Set          key, value                         -
//   CompareSet   key, expected, desired             value now stored (c10d's rule, below)
//   Get          key, timeout_ms                    value          (status Timeout: not set in time)
//   Add          key, delta                         new value (i64; the key holds its decimal text)
//   Delete       key                                1 if it existed, else 0
//   Check        count, count keys                  1 if all exist, else 0
//   NumKeys      -                                  number of keys
//   Wait         count, count keys, timeout_ms      -              (status Timeout: not all set in time)
//   A reply with status Error carries one bytes field: the reason.
//
// CompareSet follows TCPStore's rule: a missing key is set to desired only if
// expected is empty (the reply is then desired, else expected); an existing
// key is replaced by desired only if it equals expected; the reply is the
// value stored afterwards.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dt::store {

constexpr uint32_t kVersion = 1;
constexpr char kMagic[4] = {'D', 'T', 'L', 'S'};
constexpr uint32_t kMaxBodyBytes = 16u << 20;  // a frame's body (the scenario JSON is far smaller)
constexpr uint32_t kMaxKeyBytes = 4096;        // one key
constexpr uint32_t kMaxKeysPerRequest = 65536; // Check and Wait
constexpr int64_t kMaxTimeoutMs = 7LL * 24 * 3600 * 1000;

enum class Op : uint32_t {
    Set = 1,
    CompareSet = 2,
    Get = 3,
    Add = 4,
    Delete = 5,
    Check = 6,
    NumKeys = 7,
    Wait = 8
};
enum class Status : uint32_t { Ok = 0, Timeout = 1, Error = 2 };

using Nonce = std::array<uint8_t, 16>;
using Proof = std::array<uint8_t, 32>;

struct Challenge {
    char magic[4];
    uint32_t version;
    Nonce server_nonce;
};
static_assert(sizeof(Challenge) == 24);

struct Hello {
    char magic[4];
    uint32_t version;
    Nonce client_nonce;
    Proof proof;
};
static_assert(sizeof(Hello) == 56);

struct Welcome {
    char magic[4];
    uint32_t reserved;
    Proof proof;
};
static_assert(sizeof(Welcome) == 40);

struct FrameHeader {
    uint32_t code; // an Op (request) or a Status (reply)
    uint32_t length;
};
static_assert(sizeof(FrameHeader) == 8);

[[nodiscard]] Proof clientProof(const std::string& token, const Nonce& server_nonce,
                                const Nonce& client_nonce);
[[nodiscard]] Proof serverProof(const std::string& token, const Nonce& server_nonce,
                                const Nonce& client_nonce);

// A request, decoded. Which fields are used depends on op (table above).
struct Request {
    Op op = Op::Set;
    std::vector<std::string> keys; // Set/CompareSet/Get/Add/Delete: one; Check/Wait: count
    std::string value;             // Set: the value; CompareSet: expected
    std::string desired;           // CompareSet
    int64_t number = 0;            // Get/Wait: timeout_ms; Add: delta
};

// Body writer: appends fields.
class BodyWriter {
  public:
    void bytes(const std::string& field);
    void integer(int64_t field);
    [[nodiscard]] std::string frame(uint32_t code) const; // header + body
    [[nodiscard]] const std::string& body() const { return m_body; }

  private:
    std::string m_body;
};

// Body reader: every read is bounds-checked; a read past the end, or a bytes
// field longer than max_bytes, sets failed() and returns an empty value.
class BodyReader {
  public:
    explicit BodyReader(const std::string& body) : m_body(body) {}
    std::string bytes(uint32_t max_bytes = kMaxBodyBytes);
    int64_t integer();
    [[nodiscard]] bool failed() const { return m_failed; }
    [[nodiscard]] bool atEnd() const { return m_offset == m_body.size(); }

  private:
    const std::string& m_body;
    size_t m_offset = 0;
    bool m_failed = false;
};

// The frame of a request (header + body).
[[nodiscard]] std::string encodeRequest(const Request& request);
// Decodes a request's body for op code; nullopt with why set when the code is
// unknown, a field is missing or too long, a count or timeout is out of range,
// or bytes are left over.
[[nodiscard]] std::optional<Request> decodeRequest(uint32_t code, const std::string& body, std::string& why);

} // namespace dt::store
