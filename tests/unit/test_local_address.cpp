// test_local_address.cpp: localAddressTowards picks the interface address the
// kernel routes towards a peer, and names the host when it cannot. The
// multi-host case (two network namespaces) is tests/integration/test_multi_host.cpp.
#include "dtlab/local_address.hpp"

#include "dtlab/errors.hpp"

#include <catch2/catch.hpp>

#include <arpa/inet.h>

using namespace dt;

TEST_CASE("The local address towards a peer is the one the kernel routes from", "[launch]") {
    SECTION("Towards loopback the local address is loopback") {
        CHECK(localAddressTowards("127.0.0.1", 29500) == "127.0.0.1");
        CHECK(localAddressTowards("localhost", 29500) == "127.0.0.1");
    }

    SECTION("Any address of 127/8 is reached from 127.0.0.1") {
        CHECK(localAddressTowards("127.0.0.2", 1) == "127.0.0.1");
    }

    SECTION("The answer is always a numeric IPv4 address") {
        const std::string address = localAddressTowards("127.0.0.1", 0);
        in_addr parsed{};
        CHECK(inet_pton(AF_INET, address.c_str(), &parsed) == 1);
    }

    SECTION("A host that does not resolve is a usage error that names it") {
        try {
            (void)localAddressTowards("no-such-host.invalid", 29500);
            FAIL("expected a UsageError");
        } catch (const UsageError& e) {
            CHECK_THAT(e.what(), Catch::Contains("no-such-host.invalid"));
        }
    }
}
