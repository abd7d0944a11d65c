// sha256.cpp: the token handshake's hashing, through OpenSSL's libcrypto.
//
// SHA-256 is EVP_sha256 (one EVP_MD_CTX per incremental hash), HMAC-SHA256 is
// HMAC(EVP_sha256(), ...), the comparison CRYPTO_memcmp (constant time) and the
// nonce RAND_bytes. Every OpenSSL failure is a std::runtime_error naming the call.
#include "core/sha256.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdexcept>

namespace dt {
namespace {

void require(int ok, const char* call) {
    if (ok != 1)
        throw std::runtime_error(std::string("OpenSSL ") + call + " failed");
}

} // namespace

Sha256::Sha256() : m_context(EVP_MD_CTX_new()) {
    if (!m_context)
        throw std::runtime_error("OpenSSL EVP_MD_CTX_new failed");
    require(EVP_DigestInit_ex(m_context, EVP_sha256(), nullptr), "EVP_DigestInit_ex");
}

Sha256::~Sha256() {
    EVP_MD_CTX_free(m_context);
}

void Sha256::update(const void* data, size_t n) {
    require(EVP_DigestUpdate(m_context, data, n), "EVP_DigestUpdate");
}

std::array<uint8_t, 32> Sha256::finish() {
    std::array<uint8_t, 32> digest{};
    unsigned int length = 0;
    require(EVP_DigestFinal_ex(m_context, digest.data(), &length), "EVP_DigestFinal_ex");
    return digest;
}

std::array<uint8_t, 32> sha256(std::string_view bytes) {
    Sha256 h;
    h.update(bytes.data(), bytes.size());
    return h.finish();
}

std::array<uint8_t, 32> hmacSha256(std::string_view key, std::string_view message) {
    std::array<uint8_t, 32> mac{};
    unsigned int length = 0;
    const unsigned char* out =
        HMAC(EVP_sha256(), key.data(), int(key.size()),
             reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac.data(), &length);
    if (!out || length != mac.size())
        throw std::runtime_error("OpenSSL HMAC failed");
    return mac;
}

bool constantTimeEqual(const uint8_t* a, const uint8_t* b, size_t n) {
    return CRYPTO_memcmp(a, b, n) == 0;
}

std::string toHex(const uint8_t* bytes, size_t n) {
    static const char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * n);
    for (size_t i = 0; i < n; ++i) {
        out += kDigits[bytes[i] >> 4];
        out += kDigits[bytes[i] & 0x0f];
    }
    return out;
}

std::array<uint8_t, 16> randomNonce() {
    std::array<uint8_t, 16> nonce{};
    require(RAND_bytes(nonce.data(), int(nonce.size())), "RAND_bytes");
    return nonce;
}

} // namespace dt
