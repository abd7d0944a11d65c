// test_sha256.cpp: SHA-256 and HMAC-SHA256 (core/sha256.hpp) against the
// published test vectors: NIST (FIPS 180-4 examples) for the hash, RFC 4231
// for the HMAC; then the compare and nonce helpers the handshake uses.
#include "core/sha256.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

using namespace dt;

namespace {

std::string hex(const std::array<uint8_t, 32>& digest) {
    return toHex(digest.data(), digest.size());
}

} // namespace

TEST_CASE("SHA-256 and HMAC-SHA256 match the published test vectors", "[auth]") {
    SECTION("The hash of the empty message is the NIST value") {
        CHECK(hex(sha256("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }

    SECTION("The hash of abc is the NIST value") {
        CHECK(hex(sha256("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    SECTION("The hash of the 448-bit message, which needs a second padding block, is the NIST value") {
        CHECK(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")) ==
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    }

    SECTION("One million a's fed in uneven chunks hash to the NIST value") {
        const std::string chunk(997, 'a');
        Sha256 h;
        size_t left = 1'000'000;
        while (left > 0) {
            const size_t n = std::min(left, chunk.size());
            h.update(chunk.data(), n);
            left -= n;
        }
        CHECK(hex(h.finish()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    }

    SECTION("RFC 4231 test case 1: a 20-byte key of 0x0b and Hi There") {
        CHECK(hex(hmacSha256(std::string(20, '\x0b'), "Hi There")) ==
              "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    }

    SECTION("RFC 4231 test case 2: a key shorter than the digest") {
        CHECK(hex(hmacSha256("Jefe", "what do ya want for nothing?")) ==
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    }

    SECTION("RFC 4231 test case 3: 50 bytes of 0xdd under 20 bytes of 0xaa") {
        CHECK(hex(hmacSha256(std::string(20, '\xaa'), std::string(50, '\xdd'))) ==
              "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    }

    SECTION("RFC 4231 test case 4: 50 bytes of 0xcd under the key 0x01..0x19") {
        std::string key;
        for (int i = 1; i <= 25; ++i)
            key += char(i);
        CHECK(hex(hmacSha256(key, std::string(50, '\xcd'))) ==
              "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
    }

    SECTION("RFC 4231 test case 6: a key longer than the block size is hashed first") {
        CHECK(hex(hmacSha256(std::string(131, '\xaa'),
                             "Test Using Larger Than Block-Size Key - Hash Key First")) ==
              "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    }

    SECTION("RFC 4231 test case 7: both key and message longer than the block size") {
        const std::string message =
            "This is a test using a larger than block-size key and a larger than block-size "
            "data. The key needs to be hashed before being used by the HMAC algorithm.";
        CHECK(hex(hmacSha256(std::string(131, '\xaa'), message)) ==
              "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
    }

    SECTION("constantTimeEqual accepts equal bytes and refuses a difference in the last byte") {
        const std::array<uint8_t, 32> a = sha256("abc");
        std::array<uint8_t, 32> b = a;
        CHECK(constantTimeEqual(a.data(), b.data(), a.size()));
        b[31] ^= 0x01;
        CHECK_FALSE(constantTimeEqual(a.data(), b.data(), a.size()));
    }

    SECTION("Two random nonces differ") {
        const std::array<uint8_t, 16> first = randomNonce();
        const std::array<uint8_t, 16> second = randomNonce();
        CHECK(first != second);
    }
}
