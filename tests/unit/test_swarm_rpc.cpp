// test_swarm_rpc.cpp: the trainer-server calls' frames, tensors and
// handshake (swarm_rpc.hpp), over a socket pair.
#include "swarm/swarm_rpc.hpp"

#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace dt::swarm;

namespace {

struct SocketPair {
    int a = -1, b = -1;
    SocketPair() {
        int fds[2];
        REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
        a = fds[0];
        b = fds[1];
    }
    ~SocketPair() {
        if (a >= 0)
            ::close(a);
        if (b >= 0)
            ::close(b);
    }
};

} // namespace

TEST_CASE("Tensors survive the wire with their type, shape and bits", "[swarm]") {
    const at::Tensor x = at::randn({2, 3, 4});
    const at::Tensor tokens = at::randint(0, 100, {2, 3}, at::kLong);
    const std::vector<at::Tensor> back = decodeTensors(encodeTensors({x, tokens}), 2);
    REQUIRE(back.size() == 2);
    CHECK(back[0].scalar_type() == at::kFloat);
    CHECK(back[0].sizes() == x.sizes());
    CHECK(at::equal(back[0], x));
    CHECK(back[1].scalar_type() == at::kLong);
    CHECK(at::equal(back[1], tokens));
    SECTION("a non-contiguous tensor goes as its values") {
        const at::Tensor t = x.transpose(0, 2);
        CHECK(at::equal(decodeTensors(encodeTensors({t}), 1)[0], t));
    }
}

TEST_CASE("A corrupt payload is refused, not read past its end", "[swarm]") {
    std::string payload = encodeTensors({at::ones({4})});
    SECTION("cut short") {
        CHECK_THROWS_WITH(decodeTensors(payload.substr(0, payload.size() - 1), 1),
                          Catch::Contains("corrupt frame"));
    }
    SECTION("bytes after the last tensor") {
        CHECK_THROWS_WITH(decodeTensors(payload + "x", 1), Catch::Contains("corrupt frame"));
    }
    SECTION("an unknown type") {
        payload[0] = 9;
        CHECK_THROWS_WITH(decodeTensors(payload, 1), Catch::Contains("corrupt frame"));
    }
    SECTION("a size past the limit") {
        int64_t huge = int64_t(1) << 62;
        std::memcpy(payload.data() + 8, &huge, sizeof(huge));
        CHECK_THROWS_WITH(decodeTensors(payload, 1), Catch::Contains("corrupt frame"));
    }
    SECTION("a dtype the wire does not carry is refused when sending") {
        CHECK_THROWS(encodeTensors({at::ones({2}, at::kDouble)}));
    }
}

TEST_CASE("A request and its reply cross a connection whole", "[swarm]") {
    SocketPair p;
    CallRequest request;
    request.op = CallOp::Backward;
    request.trainer = 1;
    request.step = 7;
    request.microbatch = 3;
    request.sent_ns = 123456789;
    request.tensors = {at::randn({2, 5}), at::randn({2, 5})};
    int64_t sent = 0, received = 0;
    REQUIRE(sendRequest(p.a, request, sent));
    CallRequest got;
    REQUIRE(receiveRequest(p.b, got, received) == IoResult::Ok);
    CHECK(sent == received);
    CHECK(got.op == CallOp::Backward);
    CHECK(got.trainer == 1);
    CHECK(got.step == 7);
    CHECK(got.microbatch == 3);
    CHECK(got.sent_ns == 123456789);
    REQUIRE(got.tensors.size() == 2);
    CHECK(at::equal(got.tensors[1], request.tensors[1]));

    CallReply reply;
    reply.status = ReplyStatus::Error;
    reply.error = "the output gradient's shape does not match";
    reply.service_ns = 42;
    REQUIRE(sendReply(p.b, reply, sent));
    CallReply back;
    REQUIRE(receiveReply(p.a, back, received) == IoResult::Ok);
    CHECK(back.status == ReplyStatus::Error);
    CHECK(back.error == reply.error);
    CHECK(back.service_ns == 42);
    SECTION("a closed connection reads as Closed, a silent one as TimedOut") {
        setReceiveTimeout(p.a, 50);
        CHECK(receiveReply(p.a, back, received) == IoResult::TimedOut);
        ::close(p.b);
        p.b = -1;
        CHECK(receiveReply(p.a, back, received) == IoResult::Closed);
    }
}

TEST_CASE("The handshake admits a trainer with the run's token only", "[swarm]") {
    for (const bool same_token : {true, false}) {
        INFO(same_token);
        SocketPair p;
        bool admitted = false;
        std::thread server([&] { admitted = serverHandshake(p.a, "run-token"); });
        (void)clientHandshake(p.b, same_token ? "run-token" : "another-token");
        server.join();
        CHECK(admitted == same_token);
    }
}

TEST_CASE("A frame that is not a request is refused", "[swarm]") {
    SocketPair p;
    const std::string junk(40, 'x');
    REQUIRE(::write(p.a, junk.data(), junk.size()) == ssize_t(junk.size()));
    CallRequest r;
    int64_t bytes = 0;
    CHECK_THROWS_WITH(receiveRequest(p.b, r, bytes), Catch::Contains("not a request frame"));
}
