// test_telemetry_wire.cpp: the handshake's pieces (telemetry_wire.hpp): the
// fixed struct sizes of the wire, proofs that change with every input they
// cover, the constant-time comparison, the lighthouse's HELLO proof, and
// splitAddress's refusals.
#include "telemetry/telemetry_wire.hpp"

#include "dtlab/errors.hpp"
#include "ft/lighthouse_detail.hpp"

#include <catch2/catch.hpp>

using namespace dt::wire;

TEST_CASE("The wire's records keep their sizes", "[wire]") {
    CHECK(sizeof(Challenge) == 24);
    CHECK(sizeof(Hello) == 128);
    CHECK(sizeof(Welcome) == 56); // version 8: the Session's boot id
    CHECK(sizeof(ClockPong) == 16);
    CHECK(sizeof(ControlMessage) == 24);
    CHECK(sizeof(FrameHeader) == 8);
}

TEST_CASE("Each proof covers the token, both nonces and the rank", "[wire]") {
    Nonce a{}, b{};
    b[0] = 1;
    const Proof base = rankProof("token", a, a, 0);
    CHECK(proofsEqual(base, rankProof("token", a, a, 0)));
    CHECK_FALSE(proofsEqual(base, rankProof("other", a, a, 0)));
    CHECK_FALSE(proofsEqual(base, rankProof("token", b, a, 0)));
    CHECK_FALSE(proofsEqual(base, rankProof("token", a, b, 0)));
    CHECK_FALSE(proofsEqual(base, rankProof("token", a, a, 1)));
    SECTION("the Session's proof is not the rank's (a reflected proof does not pass)") {
        CHECK_FALSE(proofsEqual(sessionProof("token", a, a), rankProof("token", a, a, 0)));
    }
    SECTION("a text proof is 64 hex digits and changes with the text") {
        const std::string p = textProofHex("token", "scenario");
        CHECK(p.size() == 64);
        CHECK(p.find_first_not_of("0123456789abcdef") == std::string::npos);
        CHECK(p != textProofHex("token", "scenario "));
    }
    SECTION("the lighthouse HELLO proof covers the nonce, the replica and the incarnation") {
        const std::string p = dt::ft::helloProof("t", "00ff", 1, 0);
        CHECK(p.size() == 64);
        CHECK(p != dt::ft::helloProof("t", "00fe", 1, 0));
        CHECK(p != dt::ft::helloProof("t", "00ff", 2, 0));
        CHECK(p != dt::ft::helloProof("t", "00ff", 1, 1));
        CHECK(p != dt::ft::helloProof("", "00ff", 1, 0));
    }
}

TEST_CASE("splitAddress reads HOST:PORT and refuses anything else", "[wire]") {
    std::string host;
    int port = 0;
    splitAddress("127.0.0.1:4000", host, port);
    CHECK(host == "127.0.0.1");
    CHECK(port == 4000);
    for (const char* bad : {"", "host", ":80", "host:", "host:abc", "host:80x", "host:70000", "host:-1"}) {
        CAPTURE(bad);
        CHECK_THROWS_AS(splitAddress(bad, host, port), dt::UsageError);
    }
}
