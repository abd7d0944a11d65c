// sha256.cpp: SHA-256 and HMAC-SHA256 (definitions in sha256.hpp).
// Steps, following FIPS 180-4 section 6.2 and RFC 2104:
//   1. update() collects bytes into 64-byte blocks; each full block goes to
//      processBlock(): expand 16 words to a 64-word schedule, run 64 rounds,
//      add the result into the state H0..H7.
//   2. finish() pads: one 0x80 byte, zeros up to 56 mod 64, then the message
//      length in bits as a big-endian 64-bit number; writes H0..H7 big-endian.
//   3. hmacSha256() hashes a key longer than 64 bytes, zero-pads it to 64, and
//      computes H((K ^ opad) || H((K ^ ipad) || message)).
//   4. Helpers: constant-time compare, hex, a random nonce from the kernel.
#include "core/sha256.hpp"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace dt {

namespace {

// FIPS 180-4 4.2.2: the first 32 bits of the fractional parts of the cube
// roots of the first 64 primes.
constexpr uint32_t kRoundConstants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

// FIPS 180-4 5.3.3: the first 32 bits of the fractional parts of the square
// roots of the first 8 primes.
constexpr std::array<uint32_t, 8> kInitialState = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

constexpr size_t kBlockSize = 64;

uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// The six logical functions of FIPS 180-4 4.1.2.
uint32_t ch(uint32_t x, uint32_t y, uint32_t z) { return (x & y) ^ (~x & z); }
uint32_t maj(uint32_t x, uint32_t y, uint32_t z) { return (x & y) ^ (x & z) ^ (y & z); }
uint32_t bigSigma0(uint32_t x) { return rotr(x, 2) ^ rotr(x, 13) ^ rotr(x, 22); }
uint32_t bigSigma1(uint32_t x) { return rotr(x, 6) ^ rotr(x, 11) ^ rotr(x, 25); }
uint32_t smallSigma0(uint32_t x) { return rotr(x, 7) ^ rotr(x, 18) ^ (x >> 3); }
uint32_t smallSigma1(uint32_t x) { return rotr(x, 17) ^ rotr(x, 19) ^ (x >> 10); }

uint32_t readBigEndian32(const uint8_t* p) {
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

} // namespace

Sha256::Sha256() : state_(kInitialState), buffer_{} {}

void Sha256::processBlock(const uint8_t* block) {
    // Message schedule W0..W63.
    uint32_t w[64];
    for (int t = 0; t < 16; ++t) w[t] = readBigEndian32(block + 4 * t);
    for (int t = 16; t < 64; ++t) w[t] = smallSigma1(w[t - 2]) + w[t - 7] + smallSigma0(w[t - 15]) + w[t - 16];

    uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
    uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];
    for (int t = 0; t < 64; ++t) {
        const uint32_t t1 = h + bigSigma1(e) + ch(e, f, g) + kRoundConstants[t] + w[t];
        const uint32_t t2 = bigSigma0(a) + maj(a, b, c);
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    state_[0] += a;
    state_[1] += b;
    state_[2] += c;
    state_[3] += d;
    state_[4] += e;
    state_[5] += f;
    state_[6] += g;
    state_[7] += h;
}

void Sha256::update(const void* data, size_t n) {
    const uint8_t* bytes = static_cast<const uint8_t*>(data);
    total_bytes_ += n;
    while (n > 0) {
        const size_t take = std::min(n, kBlockSize - buffered_);
        std::memcpy(buffer_.data() + buffered_, bytes, take);
        buffered_ += take;
        bytes += take;
        n -= take;
        if (buffered_ == kBlockSize) {
            processBlock(buffer_.data());
            buffered_ = 0;
        }
    }
}

std::array<uint8_t, 32> Sha256::finish() {
    const uint64_t total_bits = total_bytes_ * 8;

    // Padding: 0x80, then zeros until 56 bytes into a block (a second block
    // when fewer than 8 bytes are left for the length).
    buffer_[buffered_++] = 0x80;
    if (buffered_ > kBlockSize - 8) {
        std::memset(buffer_.data() + buffered_, 0, kBlockSize - buffered_);
        processBlock(buffer_.data());
        buffered_ = 0;
    }
    std::memset(buffer_.data() + buffered_, 0, kBlockSize - 8 - buffered_);
    for (int i = 0; i < 8; ++i) buffer_[kBlockSize - 1 - i] = uint8_t(total_bits >> (8 * i));
    processBlock(buffer_.data());
    buffered_ = 0;

    std::array<uint8_t, 32> digest{};
    for (int i = 0; i < 8; ++i) {
        digest[4 * i + 0] = uint8_t(state_[i] >> 24);
        digest[4 * i + 1] = uint8_t(state_[i] >> 16);
        digest[4 * i + 2] = uint8_t(state_[i] >> 8);
        digest[4 * i + 3] = uint8_t(state_[i]);
    }
    return digest;
}

std::array<uint8_t, 32> sha256(std::string_view bytes) {
    Sha256 h;
    h.update(bytes.data(), bytes.size());
    return h.finish();
}

std::array<uint8_t, 32> hmacSha256(std::string_view key, std::string_view message) {
    // K0: the key, hashed first if longer than a block, zero-padded to a block.
    std::array<uint8_t, kBlockSize> k0{};
    if (key.size() > kBlockSize) {
        const std::array<uint8_t, 32> hashed = sha256(key);
        std::memcpy(k0.data(), hashed.data(), hashed.size());
    } else {
        std::memcpy(k0.data(), key.data(), key.size());
    }

    std::array<uint8_t, kBlockSize> inner_pad{};
    std::array<uint8_t, kBlockSize> outer_pad{};
    for (size_t i = 0; i < kBlockSize; ++i) {
        inner_pad[i] = uint8_t(k0[i] ^ 0x36);
        outer_pad[i] = uint8_t(k0[i] ^ 0x5c);
    }

    Sha256 inner;
    inner.update(inner_pad.data(), inner_pad.size());
    inner.update(message.data(), message.size());
    const std::array<uint8_t, 32> inner_digest = inner.finish();

    Sha256 outer;
    outer.update(outer_pad.data(), outer_pad.size());
    outer.update(inner_digest.data(), inner_digest.size());
    return outer.finish();
}

bool constantTimeEqual(const uint8_t* a, const uint8_t* b, size_t n) {
    // OR together every difference; only look at the result at the end.
    uint8_t diff = 0;
    for (size_t i = 0; i < n; ++i) diff = uint8_t(diff | (a[i] ^ b[i]));
    return diff == 0;
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
    size_t got = 0;
    while (got < nonce.size()) {
        const ssize_t r = getrandom(nonce.data() + got, nonce.size() - got, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            throw std::runtime_error(std::string("randomNonce: getrandom failed: ") + std::strerror(errno));
        }
        got += size_t(r);
    }
    return nonce;
}

} // namespace dt
