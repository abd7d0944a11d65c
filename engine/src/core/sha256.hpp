// sha256.hpp: SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) from OpenSSL's
// libcrypto, plus the few helpers an authentication handshake needs.
//
// What it is for: authenticating workers and GUIs to a Session by
// challenge-response with a shared token.
//   1. The Session sends a fresh random nonce (randomNonce()).
//   2. The peer answers with hmacSha256(token, nonce).
//   3. The Session computes the same HMAC and compares with constantTimeEqual().
// The token itself never goes over the wire. This is authentication only, NOT
// encryption: everything sent after the handshake is still readable by anyone
// on the network.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

struct evp_md_ctx_st; // OpenSSL's EVP_MD_CTX (openssl/evp.h)

namespace dt {

// Incremental SHA-256: update() any number of times with any chunk sizes, then
// finish() once for the 32-byte digest.
class Sha256 {
  public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;
    void update(const void* data, size_t n);
    // Returns the digest. Call once.
    std::array<uint8_t, 32> finish();

  private:
    ::evp_md_ctx_st* m_context;
};

// SHA-256 of a whole message at once.
[[nodiscard]] std::array<uint8_t, 32> sha256(std::string_view bytes);

// HMAC-SHA256 (RFC 2104): H((K ^ opad) || H((K ^ ipad) || message)).
[[nodiscard]] std::array<uint8_t, 32> hmacSha256(std::string_view key, std::string_view message);

// True when the n bytes are equal. Looks at every byte (no early exit), so the
// time taken does not tell an attacker how many leading bytes were right.
[[nodiscard]] bool constantTimeEqual(const uint8_t* a, const uint8_t* b, size_t n);

// Lower-case hexadecimal, two characters per byte.
[[nodiscard]] std::string toHex(const uint8_t* bytes, size_t n);

// 16 random bytes from OpenSSL's CSPRNG (seeded by the kernel).
// Throws std::runtime_error if they cannot be read.
[[nodiscard]] std::array<uint8_t, 16> randomNonce();

} // namespace dt
