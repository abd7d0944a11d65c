// test_store.cpp: the rendezvous store (store/store_server.hpp,
// store_client.hpp, store_protocol.hpp): c10d TCPStore's semantics, the token
// in both directions, and hostile clients. Real sockets on loopback.
#include "core/sha256.hpp"
#include "dtlab/errors.hpp"
#include "store/store_client.hpp"
#include "store/store_protocol.hpp"
#include "store/store_server.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace dt::store;

namespace {

const std::string kToken = "run-token-0123456789";

StoreClientOptions clientOptions(const StoreServer& server, const std::string& token = kToken) {
    StoreClientOptions o;
    o.host = "127.0.0.1";
    o.port = server.port();
    o.token = token;
    o.connect_timeout_ms = 2000;
    o.reply_grace_ms = 5000;
    return o;
}

struct Refusals {
    std::mutex mutex;
    std::vector<std::string> seen;
    std::function<void(const std::string&)> callback() {
        return [this](const std::string& why) {
            std::lock_guard<std::mutex> lock(mutex);
            seen.push_back(why);
        };
    }
    std::string all() {
        std::lock_guard<std::mutex> lock(mutex);
        std::string out;
        for (const auto& s : seen)
            out += s + "\n";
        return out;
    }
};

// Reads until the peer closes or timeout_ms passes; true if it closed.
bool closedWithin(int fd, int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    char buffer[256];
    while (std::chrono::steady_clock::now() < deadline) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 50) > 0) {
            const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
            if (n <= 0)
                return true;
        }
    }
    return false;
}

bool waitFor(const std::function<bool()>& condition, int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!condition()) {
        if (std::chrono::steady_clock::now() > deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

// A connection that did the handshake by hand, to speak the protocol raw.
int rawAuthenticatedConnection(int port) {
    const int fd = dt::wire::connectTcp("127.0.0.1", port, 1000);
    REQUIRE(fd >= 0);
    Challenge challenge{};
    REQUIRE(dt::wire::recvAll(fd, &challenge, sizeof(challenge)));
    Hello hello{};
    std::memcpy(hello.magic, kMagic, 4);
    hello.version = kVersion;
    hello.client_nonce = dt::randomNonce();
    hello.proof = clientProof(kToken, challenge.server_nonce, hello.client_nonce);
    REQUIRE(dt::wire::sendAll(fd, &hello, sizeof(hello)));
    Welcome welcome{};
    REQUIRE(dt::wire::recvAll(fd, &welcome, sizeof(welcome)));
    CHECK(welcome.proof == serverProof(kToken, challenge.server_nonce, hello.client_nonce));
    return fd;
}

} // namespace

TEST_CASE("The rendezvous store keeps c10d TCPStore's semantics", "[store]") {
    StoreServerOptions so;
    so.token = kToken;
    StoreServer server(so);
    server.start();
    StoreClient a(clientOptions(server));
    StoreClient b(clientOptions(server));

    SECTION("a value set by one client is read by another, bytes intact") {
        const std::string value("a\0b\xff", 4);
        a.set("k", value);
        CHECK(b.get("k", 1000) == value);
        CHECK(b.check({"k"}));
        CHECK_FALSE(b.check({"k", "missing"}));
        CHECK(b.numKeys() == 1);
    }
    SECTION("get blocks until another client sets the key") {
        std::thread setter([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            a.set("late", "here");
        });
        const auto start = std::chrono::steady_clock::now();
        const auto value = b.get("late", 5000);
        const auto waited = std::chrono::steady_clock::now() - start;
        setter.join();
        CHECK(value == "here");
        CHECK(waited >= std::chrono::milliseconds(150));
    }
    SECTION("get and wait report a timeout when the key never comes") {
        CHECK_FALSE(b.get("never", 100).has_value());
        CHECK_FALSE(b.wait({"never"}, 100));
        a.set("x", "1");
        CHECK(b.wait({"x"}, 100));
        CHECK_FALSE(b.wait({"x", "never"}, 100));
    }
    SECTION("a value the Session sets locally wakes a waiting client") {
        std::thread setter([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            server.set("dtlab/world", "4");
        });
        CHECK(b.get("dtlab/world", 5000) == "4");
        setter.join();
        a.set("from-client", "v");
        CHECK(server.get("from-client") == "v");
        CHECK_FALSE(server.get("nothing").has_value());
    }
    SECTION("add keeps a counter as decimal text, as TCPStore does") {
        CHECK(a.add("n", 1) == 1);
        CHECK(b.add("n", 2) == 3);
        CHECK(a.add("n", 0) == 3);
        CHECK(b.get("n", 100) == "3");
        CHECK(a.add("n", -5) == -2);
        a.set("text", "abc");
        CHECK_THROWS_WITH(a.add("text", 1), Catch::Contains("not an integer"));
        a.set("big", std::to_string(INT64_MAX));
        CHECK_THROWS_WITH(a.add("big", 1), Catch::Contains("overflows"));
        CHECK(a.add("n", 1) == -1); // the connection is still usable after an Error reply
    }
    SECTION("compareSet follows TCPStore's rule") {
        // Missing key: set only when expected is empty; the reply is what is stored (or expected).
        CHECK(a.compareSet("c", "x", "y") == "x");
        CHECK_FALSE(a.check({"c"}));
        CHECK(a.compareSet("c", "", "first") == "first");
        // Existing key: replaced only when it equals expected; the reply is the value now stored.
        CHECK(a.compareSet("c", "wrong", "second") == "first");
        CHECK(a.compareSet("c", "first", "second") == "second");
        CHECK(b.get("c", 100) == "second");
    }
    SECTION("deleteKey says whether the key existed") {
        a.set("d", "1");
        CHECK(a.deleteKey("d"));
        CHECK_FALSE(a.deleteKey("d"));
        CHECK_FALSE(a.check({"d"}));
    }
    SECTION("a client waiting on a key does not hold up the others") {
        std::thread waiter([&] { CHECK(b.get("slow", 5000) == "ok"); });
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        StoreClient c(clientOptions(server));
        c.set("other", "1");
        CHECK(a.get("other", 100) == "1");
        a.set("slow", "ok");
        waiter.join();
    }
}

TEST_CASE("The rendezvous store admits only holders of the run's token", "[store]") {
    Refusals refusals;
    StoreServerOptions so;
    so.token = kToken;
    so.handshake_timeout_ms = 300;
    StoreServer server(so, refusals.callback());
    server.start();

    SECTION("a client with another token is refused with a usage error, and the Session says so") {
        CHECK_THROWS_AS(StoreClient(clientOptions(server, "not-the-token")), dt::UsageError);
        CHECK_THROWS_WITH(StoreClient(clientOptions(server, "")),
                          Catch::Contains("refused this rank's token"));
        REQUIRE(waitFor(
            [&] { return refusals.all().find("does not hold this run's token") != std::string::npos; },
            2000));
        StoreClient good(clientOptions(server));
        good.set("k", "v");
        CHECK(good.get("k", 100) == "v");
    }
    SECTION("a client that never introduces itself is closed after the handshake timeout") {
        const int fd = dt::wire::connectTcp("127.0.0.1", server.port(), 1000);
        REQUIRE(fd >= 0);
        CHECK(closedWithin(fd, 3000));
        ::close(fd);
        CHECK(waitFor([&] { return refusals.all().find("did not prove the token") != std::string::npos; },
                      2000));
    }
    SECTION("something that is not a dtlab store client is refused at once") {
        const int fd = dt::wire::connectTcp("127.0.0.1", server.port(), 1000);
        REQUIRE(fd >= 0);
        const std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(64, ' ');
        REQUIRE(dt::wire::sendAll(fd, http.data(), http.size()));
        CHECK(closedWithin(fd, 200)); // well before the 300 ms handshake timeout
        ::close(fd);
        CHECK(waitFor([&] { return refusals.all().find("not a dtlab store client") != std::string::npos; },
                      2000));
    }
    SECTION("a store that cannot prove the token is refused by the client") {
        // A fake store: sends a Challenge, reads the Hello, answers with a made-up proof.
        int fake_port = 0;
        const int listen_fd = dt::wire::listenTcp("127.0.0.1", 0, &fake_port);
        std::thread fake([&] {
            const int fd = ::accept(listen_fd, nullptr, nullptr);
            Challenge challenge{};
            std::memcpy(challenge.magic, kMagic, 4);
            challenge.version = kVersion;
            challenge.server_nonce = dt::randomNonce();
            dt::wire::sendAll(fd, &challenge, sizeof(challenge));
            Hello hello{};
            dt::wire::recvAll(fd, &hello, sizeof(hello));
            Welcome welcome{};
            std::memcpy(welcome.magic, kMagic, 4);
            dt::wire::sendAll(fd, &welcome, sizeof(welcome)); // proof all zeros
            closedWithin(fd, 2000);
            ::close(fd);
        });
        StoreClientOptions o = clientOptions(server);
        o.port = fake_port;
        CHECK_THROWS_WITH(StoreClient(o), Catch::Contains("is not this run's Session"));
        fake.join();
        ::close(listen_fd);
    }
}

TEST_CASE("The rendezvous store survives hostile requests", "[store]") {
    StoreServerOptions so;
    so.token = kToken;
    so.max_total_bytes = 1 << 20;
    StoreServer server(so);
    server.start();

    SECTION("a malformed or unknown request gets an error reply and the connection stays usable") {
        const int fd = rawAuthenticatedConnection(server.port());
        auto roundTrip = [&](const std::string& frame) {
            REQUIRE(dt::wire::sendAll(fd, frame.data(), frame.size()));
            FrameHeader header{};
            REQUIRE(dt::wire::recvAll(fd, &header, sizeof(header)));
            std::string body(header.length, '\0');
            REQUIRE(dt::wire::recvAll(fd, body.data(), body.size()));
            BodyReader r(body);
            return std::make_pair(header.code,
                                  header.code == uint32_t(Status::Error) ? r.bytes() : std::string());
        };
        BodyWriter unknown;
        auto [status, why] = roundTrip(unknown.frame(99));
        CHECK(status == uint32_t(Status::Error));
        CHECK_THAT(why, Catch::Contains("unknown request 99"));

        BodyWriter lying; // a key whose length says 1 GiB
        lying.integer(int64_t(1) << 30);
        std::tie(status, why) = roundTrip(lying.frame(uint32_t(Op::Set)));
        CHECK(status == uint32_t(Status::Error));
        CHECK_THAT(why, Catch::Contains("malformed request"));

        BodyWriter negative; // Check with -1 keys
        negative.integer(-1);
        std::tie(status, why) = roundTrip(negative.frame(uint32_t(Op::Check)));
        CHECK_THAT(why, Catch::Contains("key count -1 out of range"));

        BodyWriter forever; // a Get with a negative timeout
        forever.bytes("k");
        forever.integer(-5);
        std::tie(status, why) = roundTrip(forever.frame(uint32_t(Op::Get)));
        CHECK_THAT(why, Catch::Contains("out of range"));

        std::tie(status, why) = roundTrip(encodeRequest({Op::Set, {"ok"}, "1", {}, 0}));
        CHECK(status == uint32_t(Status::Ok));
        ::close(fd);
    }
    SECTION("a store that is full refuses more with a clear error") {
        StoreClient c(clientOptions(server));
        c.set("a", std::string(600 << 10, 'x'));
        CHECK_THROWS_WITH(c.set("b", std::string(600 << 10, 'y')), Catch::Contains("the store is full"));
        c.set("a", std::string(700 << 10, 'z')); // replacing a value counts only the difference
        CHECK(c.get("a", 100)->size() == size_t(700 << 10));
    }
    SECTION("a client that goes away while waiting leaves the store working") {
        StoreClient c(clientOptions(server));
        const int fd = rawAuthenticatedConnection(server.port());
        const std::string get = encodeRequest({Op::Get, {"never"}, {}, {}, 0}); // no limit
        REQUIRE(dt::wire::sendAll(fd, get.data(), get.size()));
        CHECK(waitFor([&] { return server.connectionCount() == 2; }, 2000));
        ::close(fd);
        CHECK(waitFor([&] { return server.connectionCount() == 1; }, 2000));
        c.set("never", "now");
        CHECK(c.get("never", 100) == "now");
    }
    SECTION("a stopped store ends a client's wait with an error, and starts again") {
        StoreClient c(clientOptions(server));
        std::thread stopper([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            server.stop();
        });
        CHECK_THROWS_WITH(c.get("never", 0), Catch::Contains("connection closed"));
        stopper.join();
        server.start();
        StoreClient again(clientOptions(server));
        again.set("k", "v");
        CHECK(again.get("k", 100) == "v");
    }
}

TEST_CASE("A request decodes to what was encoded, and nothing else decodes", "[store]") {
    const std::vector<Request> requests{
        {Op::Set, {"k"}, "v", {}, 0},   {Op::CompareSet, {"k"}, "old", "new", 0},
        {Op::Get, {"k"}, {}, {}, 250},  {Op::Add, {"n"}, {}, {}, -3},
        {Op::Delete, {"k"}, {}, {}, 0}, {Op::Check, {"a", "b"}, {}, {}, 0},
        {Op::NumKeys, {}, {}, {}, 0},   {Op::Wait, {"a"}, {}, {}, 10}};
    for (const Request& request : requests) {
        const std::string frame = encodeRequest(request);
        FrameHeader header{};
        std::memcpy(&header, frame.data(), sizeof(header));
        REQUIRE(header.length == frame.size() - sizeof(header));
        std::string why;
        const auto decoded = decodeRequest(header.code, frame.substr(sizeof(header)), why);
        REQUIRE(decoded);
        CHECK(decoded->op == request.op);
        CHECK(decoded->keys == request.keys);
        CHECK(decoded->value == request.value);
        CHECK(decoded->desired == request.desired);
        CHECK(decoded->number == request.number);
        // Every truncation is refused, and so is a byte too many.
        for (size_t cut = 0; cut + sizeof(header) < frame.size(); ++cut)
            CHECK_FALSE(decodeRequest(header.code, frame.substr(sizeof(header), cut), why));
        CHECK_FALSE(decodeRequest(header.code, frame.substr(sizeof(header)) + "x", why));
    }
}
