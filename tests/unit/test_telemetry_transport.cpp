// test_telemetry_transport.cpp: a real TelemetrySender talking TCP to a real
// TelemetryCollector on 127.0.0.1: hello, events in order with the rank
// stamped by the connection, logs, a clean Bye, the measured clock offset,
// drops under a full queue, refusal of a wrong wire version, and splitAddress.
#include "telemetry/telemetry_collector.hpp"
#include "telemetry/telemetry_sender.hpp"
#include "telemetry/telemetry_wire.hpp"

#include "dtlab/clock.hpp"
#include "dtlab/errors.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using dt::Event;
using dt::EventKind;
using dt::LogLevel;

namespace {

// Records everything the collector hands over; waitUntil polls with a deadline.
class TestSink final : public dt::TelemetrySink {
  public:
    struct Hello {
        int rank;
        int pid;
        std::string host;
    };
    struct Log {
        int rank;
        LogLevel level;
        std::string text;
    };
    struct Disconnect {
        int rank;
        bool clean;
    };

    bool onHello(int rank, int pid, const std::string& host) override {
        std::lock_guard<std::mutex> lock(m_mutex);
        hellos.push_back({rank, pid, host});
        order.push_back("hello");
        m_cv.notify_all();
        return accept_hello;
    }
    void onEvents(int rank, const Event* e, size_t count) override {
        std::lock_guard<std::mutex> lock(m_mutex);
        for (size_t i = 0; i < count; ++i) // the sender's own clock reports apart from the test's events
            (e[i].kind == EventKind::ClockSync || e[i].kind == EventKind::ClockDriftPpm ? clock_events
                                                                                        : events)
                .push_back(e[i]);
        event_frame_ranks.push_back(rank);
        order.push_back("events");
        m_cv.notify_all();
    }
    void onLog(int rank, LogLevel level, const std::string& text) override {
        std::lock_guard<std::mutex> lock(m_mutex);
        logs.push_back({rank, level, text});
        order.push_back("log");
        m_cv.notify_all();
    }
    void onDisconnect(int rank, int /*pid*/, bool clean) override {
        std::lock_guard<std::mutex> lock(m_mutex);
        disconnects.push_back({rank, clean});
        order.push_back("disconnect");
        m_cv.notify_all();
    }
    void onProtocolError(const std::string& what) override {
        std::lock_guard<std::mutex> lock(m_mutex);
        protocol_errors.push_back(what);
        m_cv.notify_all();
    }

    // True if `done` became true within the timeout (evaluated under the lock).
    bool waitUntil(const std::function<bool()>& done,
                   std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
        std::unique_lock<std::mutex> lock(m_mutex);
        return m_cv.wait_for(lock, timeout, done);
    }

    // Copies, for checking after the connection ended (take the lock).
    template <typename F> auto read(F f) {
        std::lock_guard<std::mutex> lock(m_mutex);
        return f();
    }

    bool accept_hello = true;
    std::vector<Hello> hellos;
    std::vector<Event> events;
    std::vector<Event> clock_events; // ClockSync, ClockDriftPpm
    std::vector<int> event_frame_ranks;
    std::vector<Log> logs;
    std::vector<Disconnect> disconnects;
    std::vector<std::string> protocol_errors;
    std::vector<std::string> order;

  private:
    std::mutex m_mutex;
    std::condition_variable m_cv;
};

Event stepEvent(int i) {
    Event e;
    e.kind = EventKind::Step;
    e.phase = dt::EventPhase::Span;
    e.step = i;
    e.rank = 99; // a confused rank: the collector must overwrite this
    e.t_ns = 1000 + i;
    e.dur_ns = 7;
    e.bytes = int64_t(i) * 3;
    e.value = 0.5 * i;
    return e;
}

} // namespace

TEST_CASE("A sender's stream reaches the collector intact", "[telemetry]") {
    TestSink sink;
    dt::TelemetryCollector collector("127.0.0.1", 0, sink);
    REQUIRE(collector.port() > 0);
    collector.start();

    SECTION("hello, every event in order with the connection's rank, the log, a clean Bye") {
        const int n = 2500; // more than one 1024-event batch
        dt::TelemetrySender sender(3, 65536);
        sender.connect("127.0.0.1", collector.port(), 2000);
        CHECK(sink.waitUntil([&] { return !sink.hellos.empty(); }));
        for (int i = 0; i < n; ++i)
            sender.emit(stepEvent(i));
        sender.log(LogLevel::Warning, "rank 3 says hi");
        sender.close();
        REQUIRE(sink.waitUntil([&] { return !sink.disconnects.empty(); }));

        CHECK(sender.dropped() == 0);
        CHECK(sender.bytesWritten() >= uint64_t(n) * sizeof(Event));
        sink.read([&] {
            REQUIRE(sink.hellos.size() == 1);
            CHECK(sink.hellos[0].rank == 3);
            CHECK(sink.hellos[0].pid == int(::getpid()));
            char host[64] = {};
            gethostname(host, sizeof(host) - 1);
            CHECK(sink.hellos[0].host == std::string(host));

            REQUIRE(sink.events.size() == size_t(n));
            bool in_order = true, rank_stamped = true, payload_intact = true;
            for (int i = 0; i < n; ++i) {
                const Event& e = sink.events[size_t(i)];
                const Event want = stepEvent(i);
                in_order = in_order && e.step == i;
                rank_stamped = rank_stamped && e.rank == 3;
                payload_intact = payload_intact && e.t_ns == want.t_ns && e.dur_ns == want.dur_ns &&
                                 e.bytes == want.bytes && e.value == want.value && e.kind == want.kind &&
                                 e.phase == want.phase;
            }
            CHECK(in_order);
            CHECK(rank_stamped);
            CHECK(payload_intact);
            for (int r : sink.event_frame_ranks)
                CHECK(r == 3);

            REQUIRE(sink.logs.size() == 1);
            CHECK(sink.logs[0].rank == 3);
            CHECK(sink.logs[0].level == LogLevel::Warning);
            CHECK(sink.logs[0].text == "rank 3 says hi");

            REQUIRE(sink.disconnects.size() == 1);
            CHECK(sink.disconnects[0].rank == 3);
            CHECK(sink.disconnects[0].clean);
            CHECK(sink.order.front() == "hello");
            CHECK(sink.order.back() == "disconnect");
            CHECK(sink.protocol_errors.empty());
        });
    }

    SECTION("on the Session's host the clock is the same: offset 0, error 0, one ClockSync that says so") {
        dt::TelemetrySender sender(0, 16);
        sender.connect("127.0.0.1", collector.port(), 2000);
        CHECK(sender.clockOffsetNs() == 0);
        CHECK(sender.clockEstimate().same_host);
        const int64_t a = dt::monotonicNowNs();
        const int64_t t = sender.now();
        const int64_t b = dt::monotonicNowNs();
        CHECK(t >= a);
        CHECK(t <= b);
        sender.close();
        REQUIRE(sink.waitUntil([&] { return !sink.disconnects.empty(); }));
        sink.read([&] {
            REQUIRE(sink.clock_events.size() == 1);
            const Event& sync = sink.clock_events[0];
            CHECK(sync.kind == EventKind::ClockSync);
            CHECK(sync.unit == 0); // same host
            CHECK(sync.bytes == 0);
            CHECK(sync.value == 0.0);
            return 0;
        });
    }

    SECTION("a rank on a host whose clock is 250 ms ahead measures the offset within its bound and "
            "re-syncs") {
        dt::TelemetrySender sender(0, 64);
        sender.simulateClockSkew(250'000'000, 40.0); // 250 ms ahead, 40 ppm fast
        sender.connect("127.0.0.1", collector.port(), 2000);
        const dt::ClockEstimate first = sender.clockEstimate();
        CHECK_FALSE(first.same_host);
        CAPTURE(first.offset_ns, first.error_bound_ns, first.round_trip_ns);
        // The truth: session = local - 250 ms - 40 ppm x t, within the bound (loopback: < 1 ms).
        CHECK(first.error_bound_ns > 0);
        CHECK(first.error_bound_ns < 1'000'000);
        const int64_t a = dt::monotonicNowNs();
        const int64_t t = sender.now();
        const int64_t b = dt::monotonicNowNs();
        CHECK(t >= a - first.error_bound_ns - 100'000); // the bound, plus drift between syncs
        CHECK(t <= b + first.error_bound_ns + 100'000);
        // One re-sync (every ClockSync::kResyncNs): a second ClockSync arrives.
        CHECK(sink.waitUntil([&] { return sink.clock_events.size() >= 2; },
                             std::chrono::milliseconds(dt::ClockSync::kResyncNs / 1'000'000 + 3000)));
        const int64_t later = sender.now(), now = dt::monotonicNowNs();
        CHECK(std::llabs(later - now) < sender.clockEstimate().error_bound_ns + 100'000);
        sender.close();
        REQUIRE(sink.waitUntil([&] { return !sink.disconnects.empty(); }));
        sink.read([&] {
            for (const Event& e : sink.clock_events) {
                CHECK(e.kind == EventKind::ClockSync);
                CHECK(e.unit == 1); // measured
                CHECK(e.value > 0.0);
                CHECK(e.dur_ns > 0); // the round trip
            }
            return 0;
        });
    }

    SECTION("a full queue drops events and counts every drop") {
        const int emitted = 1000;
        dt::TelemetrySender sender(1, 4);
        sender.connect("127.0.0.1", collector.port(), 2000);
        for (int i = 0; i < emitted; ++i)
            sender.emit(stepEvent(i)); // far faster than the 20 ms drain
        sender.close();
        REQUIRE(sink.waitUntil([&] { return !sink.disconnects.empty(); }));
        const size_t delivered = sink.read([&] { return sink.events.size(); });
        CAPTURE(delivered, sender.dropped());
        CHECK(sender.dropped() > 0);
        CHECK(delivered + sender.dropped() == size_t(emitted));
        CHECK(delivered >= 3); // the first 3 fit the queue, behind the connect's ClockSync
        // what got through is still in emit order
        sink.read([&] {
            for (size_t i = 1; i < sink.events.size(); ++i)
                CHECK(sink.events[i - 1].step < sink.events[i].step);
            return 0;
        });
    }

    SECTION("events emitted after close are dropped, not lost silently") {
        dt::TelemetrySender sender(2, 64);
        sender.connect("127.0.0.1", collector.port(), 2000);
        sender.emit(stepEvent(0));
        sender.close();
        sender.emit(stepEvent(1));
        CHECK(sender.dropped() == 1);
        REQUIRE(sink.waitUntil([&] { return !sink.disconnects.empty(); }));
        CHECK(sink.read([&] { return sink.events.size(); }) == 1);
    }

    SECTION("a connection with another wire version is refused through onProtocolError") {
        const int fd = dt::wire::connectTcp("127.0.0.1", collector.port(), 2000);
        REQUIRE(fd >= 0);
        dt::wire::Challenge challenge{};
        REQUIRE(dt::wire::recvAll(fd, &challenge, sizeof(challenge)));
        dt::wire::Hello hello{};
        std::memcpy(hello.magic, dt::wire::kMagic, 4);
        hello.version = dt::wire::kWireVersion + 1;
        hello.rank = 5;
        hello.pid = 1;
        REQUIRE(dt::wire::sendAll(fd, &hello, sizeof(hello)));
        REQUIRE(sink.waitUntil([&] { return !sink.protocol_errors.empty(); }));
        // the collector closes its side: our next read sees EOF instead of a pong
        int64_t ping = 0;
        CHECK(dt::wire::sendAll(fd, &ping, 8)); // may still succeed (kernel buffer)
        CHECK_FALSE(dt::wire::recvAll(fd, &ping, 8));
        ::close(fd);
        sink.read([&] {
            CHECK_THAT(
                sink.protocol_errors[0],
                Catch::Matchers::Contains("wire version " + std::to_string(dt::wire::kWireVersion + 1)));
            CHECK(sink.hellos.empty());
            return 0;
        });
    }

    SECTION("a connection with a wrong magic is refused the same way") {
        const int fd = dt::wire::connectTcp("127.0.0.1", collector.port(), 2000);
        REQUIRE(fd >= 0);
        dt::wire::Hello hello{};
        std::memcpy(hello.magic, "XXXX", 4);
        hello.version = dt::wire::kWireVersion;
        REQUIRE(dt::wire::sendAll(fd, &hello, sizeof(hello)));
        REQUIRE(sink.waitUntil([&] { return !sink.protocol_errors.empty(); }));
        ::close(fd);
        CHECK(sink.read([&] { return sink.hellos.empty(); }));
    }

    SECTION("a sink that refuses the hello ends the connection") {
        sink.read([&] { return sink.accept_hello = false; });
        dt::TelemetrySender sender(7, 64);
        sender.connect("127.0.0.1", collector.port(), 2000);
        REQUIRE(sink.waitUntil([&] { return !sink.hellos.empty(); }));
        sender.emit(stepEvent(0));
        sender.close();
        // give the collector a moment: no events, no disconnect callback for a refused rank
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        CHECK(sink.read([&] { return sink.events.size(); }) == 0);
    }

    SECTION("a sender that cannot reach a collector throws") {
        const int port = collector.port();
        collector.stop();
        dt::TelemetrySender sender(0, 16);
        CHECK_THROWS_AS(sender.connect("127.0.0.1", port, 200), std::runtime_error);
    }

    collector.stop();
}

TEST_CASE("Ranks and Session prove the shared token to each other", "[telemetry][auth]") {
    TestSink sink;
    dt::TelemetryCollector collector("127.0.0.1", 0, sink, "s3cret-token");
    collector.start();

    SECTION("a rank with the token is welcomed and its events arrive") {
        dt::TelemetrySender sender(2, 64);
        sender.connect("127.0.0.1", collector.port(), 2000, "s3cret-token");
        REQUIRE(sink.waitUntil([&] { return !sink.hellos.empty(); }));
        sender.emit(stepEvent(0));
        sender.close();
        REQUIRE(sink.waitUntil([&] { return !sink.disconnects.empty(); }));
        CHECK(sink.read([&] { return sink.events.size(); }) == 1);
        CHECK(sink.read([&] { return sink.protocol_errors.size(); }) == 0);
    }

    SECTION("a rank with a wrong token is refused, told why, and the refusal is logged with its address") {
        dt::TelemetrySender sender(4, 64);
        try {
            sender.connect("127.0.0.1", collector.port(), 2000, "guess");
            FAIL("connect succeeded with a wrong token");
        } catch (const std::runtime_error& e) {
            CHECK_THAT(e.what(), Catch::Matchers::Contains("refused this rank: wrong or missing token"));
        }
        REQUIRE(sink.waitUntil([&] { return !sink.protocol_errors.empty(); }));
        sink.read([&] {
            CHECK_THAT(sink.protocol_errors[0],
                       Catch::Matchers::Contains("refused a telemetry connection from 127.0.0.1:"));
            CHECK_THAT(sink.protocol_errors[0], Catch::Matchers::Contains("rank 4"));
            CHECK_THAT(sink.protocol_errors[0], Catch::Matchers::Contains("did not prove the token"));
            CHECK(sink.hellos.empty());
            return 0;
        });
    }

    SECTION("a rank without a token is refused the same way") {
        dt::TelemetrySender sender(0, 64);
        CHECK_THROWS_AS(sender.connect("127.0.0.1", collector.port(), 2000), std::runtime_error);
        REQUIRE(sink.waitUntil([&] { return !sink.protocol_errors.empty(); }));
        CHECK(sink.read([&] { return sink.hellos.empty(); }));
    }

    SECTION("a client that sends nothing holds no reader: it is refused after the handshake timeout") {
        // (10 s: only checked to end, not timed)
        const int fd = dt::wire::connectTcp("127.0.0.1", collector.port(), 2000);
        REQUIRE(fd >= 0);
        dt::wire::Challenge challenge{};
        REQUIRE(dt::wire::recvAll(fd, &challenge, sizeof(challenge)));
        CHECK(std::memcmp(challenge.magic, dt::wire::kChallengeMagic, 4) == 0);
        REQUIRE(sink.waitUntil([&] { return !sink.protocol_errors.empty(); }, std::chrono::seconds(15)));
        CHECK_THAT(sink.read([&] { return sink.protocol_errors[0]; }),
                   Catch::Matchers::Contains("no hello within 10 s"));
        ::close(fd);
    }
    collector.stop();
}

TEST_CASE("A rank refuses a Session that cannot prove the token", "[telemetry][auth]") {
    // A fake Session: sends a challenge, then a Welcome whose proof is made
    // with another token (what a port squatter would have to do).
    int port = 0;
    const int fake_fd = dt::wire::listenTcp("127.0.0.1", 0, &port);
    std::thread fake([fake_fd] {
        const int fd = ::accept(fake_fd, nullptr, nullptr);
        dt::wire::Challenge challenge{};
        std::memcpy(challenge.magic, dt::wire::kChallengeMagic, 4);
        challenge.version = dt::wire::kWireVersion;
        dt::wire::sendAll(fd, &challenge, sizeof(challenge));
        dt::wire::Hello hello{};
        dt::wire::recvAll(fd, &hello, sizeof(hello));
        dt::wire::Welcome welcome{};
        std::memcpy(welcome.magic, dt::wire::kWelcomeMagic, 4);
        welcome.proof = dt::wire::sessionProof("not-the-token", challenge.session_nonce, hello.rank_nonce);
        dt::wire::sendAll(fd, &welcome, sizeof(welcome));
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        ::close(fd);
    });
    dt::TelemetrySender sender(1, 16);
    try {
        sender.connect("127.0.0.1", port, 2000, "the-token");
        FAIL("the rank accepted a Session without the token");
    } catch (const std::runtime_error& e) {
        CHECK_THAT(e.what(), Catch::Matchers::Contains("did not prove it holds the token"));
    }
    fake.join();
    ::close(fake_fd);
}

TEST_CASE("splitAddress parses HOST:PORT and refuses the rest", "[telemetry]") {
    std::string host;
    int port = 0;

    SECTION("good addresses") {
        dt::wire::splitAddress("127.0.0.1:29500", host, port);
        CHECK(host == "127.0.0.1");
        CHECK(port == 29500);
        dt::wire::splitAddress("node-7.cluster:1", host, port);
        CHECK(host == "node-7.cluster");
        CHECK(port == 1);
        dt::wire::splitAddress("h:65535", host, port);
        CHECK(port == 65535);
    }

    SECTION("bad addresses are UsageErrors that quote the address") {
        for (const std::string bad : {"", "localhost", "localhost:", ":29500", "h:0", "h:65536", "h:-1",
                                      "h:12ab", "h:29500 ", "h:80x"}) {
            CAPTURE(bad);
            try {
                dt::wire::splitAddress(bad, host, port);
                FAIL("expected a UsageError");
            } catch (const dt::UsageError& e) {
                CHECK_THAT(e.what(), Catch::Matchers::Contains("'" + bad + "'"));
            }
        }
    }
}
