// test_swarm_outer_sync.cpp: a swarm stage's DiLoCo rounds through the store
// (swarm/swarm_outer_sync.hpp): the average and Nesterov step, and the two
// moments a server can die in a round without holding its stage up: after
// joining (its parameters are already there) and after claiming the lead
// (its name is already there). A real store server on loopback; the dying
// server is played by its store keys, as the Session leaves them after a
// SIGKILL (its registration cleared). The join timeout is ten minutes, so a
// round that waited on a dead server would hang the test, never pass it.
#include "swarm/swarm_outer_sync.hpp"

#include "dtlab/swarm_layout.hpp"

#include "store/c10d_store.hpp"
#include "store/store_server.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <thread>

using namespace dt;
using namespace dt::swarm;

namespace {

constexpr int kParams = 6;
// One trainer (rank 0), one stage served by ranks 1 and 2.
constexpr int kServerA = 1, kServerB = 2;

Scenario stageOfTwo() {
    Scenario s;
    s.swarm.trainers = 1;
    s.swarm.servers_per_stage = 2;
    s.swarm.outer_every = 1;
    s.swarm.outer_lr = 1.0; // g := average, with no momentum: the round's result is the average itself
    s.swarm.outer_momentum = 0.0;
    s.swarm.join_timeout_ms = 600'000;
    s.strategy.microbatches = 1;
    return s;
}

struct Store {
    store::StoreServer server{[] {
        store::StoreServerOptions o;
        o.token = "outer-sync-test-token";
        return o;
    }()};
    Store() { server.start(); }
    c10::intrusive_ptr<c10d::Store> client() {
        store::StoreClientOptions o;
        o.host = "127.0.0.1";
        o.port = server.port();
        o.token = "outer-sync-test-token";
        o.connect_timeout_ms = 2000;
        o.reply_grace_ms = 5000;
        return c10::make_intrusive<store::C10dStore>(o, std::chrono::milliseconds(5000));
    }
};

std::vector<uint8_t> bytesOf(const std::string& text) {
    return {text.begin(), text.end()};
}

void registerServer(c10d::Store& store, int rank) {
    store.set(dt::swarmRegistrationKey(rank), bytesOf("127.0.0.1:1 0"));
}

// What the Session does when a server's process ends (replica_restarts.cpp).
void clearRegistration(c10d::Store& store, int rank) {
    store.set(dt::swarmRegistrationKey(rank), {});
}

// The contribution a server puts for round r: (weight, parameters).
void putContribution(c10d::Store& store, int round, int rank, double weight, float value) {
    std::vector<uint8_t> bytes(sizeof(double) + kParams * sizeof(float));
    std::memcpy(bytes.data(), &weight, sizeof(double));
    for (int i = 0; i < kParams; ++i)
        std::memcpy(bytes.data() + sizeof(double) + i * sizeof(float), &value, sizeof(float));
    store.set("dtlab/swarm/s0/r" + std::to_string(round) + "/in" + std::to_string(rank), bytes);
}

// A store with both servers of stage 0 registered, and a client for each.
struct StageOfTwo {
    Store store;
    c10::intrusive_ptr<c10d::Store> sa = store.client(), sb = store.client();
    const Scenario scenario = stageOfTwo();
    StageOfTwo() {
        registerServer(*sa, kServerA);
        registerServer(*sa, kServerB);
    }
};

} // namespace

TEST_CASE("A stage's DiLoCo round averages its servers' parameters by their inner steps", "[swarm][outer]") {
    StageOfTwo stage;
    std::vector<at::Tensor> a{at::full({kParams}, 1.0f)}, b{at::full({kParams}, 4.0f)};
    OuterSync sync_a(stage.scenario, stage.sa, 0, kServerA, a);
    OuterSync sync_b(stage.scenario, stage.sb, 0, kServerB, b);

    SECTION("both join at once: exactly one leads, and both end with the leader's bits") {
        RoundResult ra, rb;
        std::thread other([&] { rb = sync_b.runRound(/*inner steps*/ 1, false); });
        ra = sync_a.runRound(/*inner steps*/ 2, false);
        other.join();
        CHECK(ra.led != rb.led);
        CHECK(ra.averaged == 2);
        CHECK(rb.averaged == 2);
        // (2 x 1 + 1 x 4) / 3 = 2, with outer lr 1 and no momentum
        CHECK(at::allclose(a[0], at::full({kParams}, 2.0f)));
        CHECK(at::equal(a[0], b[0]));
        CHECK(ra.round == 1);
        CHECK(rb.round == 1);
    }
}

TEST_CASE("A server that dies in a round does not hold its stage up", "[swarm][outer]") {
    StageOfTwo stage;
    c10d::Store &sa = *stage.sa, &sb = *stage.sb;
    std::vector<at::Tensor> a{at::full({kParams}, 1.0f)};
    OuterSync sync_a(stage.scenario, stage.sa, 0, kServerA, a);

    SECTION("killed just after joining: its parameters are already in, and the leader averages them") {
        // Server B put its parameters, counted itself and was killed before
        // it could claim the lead; the Session cleared its registration.
        putContribution(sb, 1, kServerB, 1.0, 3.0f);
        (void)sb.add("dtlab/swarm/s0/r1/joined", 1);
        clearRegistration(sb, kServerB);
        const RoundResult r = sync_a.runRound(1, false);
        CHECK(r.led);
        CHECK(r.averaged == 2);
        CHECK(at::allclose(a[0], at::full({kParams}, 2.0f))); // (1 + 3) / 2
        INFO("the leader read both contributions once: the store keeps none behind");
        CHECK_FALSE(sa.check({"dtlab/swarm/s0/r1/in1"}));
        CHECK_FALSE(sa.check({"dtlab/swarm/s0/r1/in2"}));
    }
    // Server B put its parameters, counted itself and claimed the lead, named
    // by its rank and registration, as runRound does.
    const auto claimLeadAsB = [&] {
        putContribution(sb, 1, kServerB, 1.0, 3.0f);
        (void)sb.add("dtlab/swarm/s0/r1/joined", 1);
        const std::vector<uint8_t> me = bytesOf(std::to_string(kServerB) + "|127.0.0.1:1 0");
        REQUIRE(sb.compareSet("dtlab/swarm/s0/r1/leader", {}, me) == me);
    };
    const auto checkGivenUp = [&] {
        const RoundResult r = sync_a.runRound(1, false);
        CHECK_FALSE(r.led);
        CHECK(r.averaged == 0);
        CHECK(at::equal(a[0], at::full({kParams}, 1.0f)));
    };
    SECTION("killed after claiming the lead: its follower gives the round up and keeps its state") {
        claimLeadAsB();
        clearRegistration(sb, kServerB);
        checkGivenUp();
        INFO("the next round starts after the one given up");
        const RoundResult next = sync_a.runRound(1, false);
        CHECK(next.round == 2);
        CHECK(next.led);
    }
    SECTION("killed after claiming the lead and already restarted: its successor is not taken for it") {
        claimLeadAsB();
        sb.set(dt::swarmRegistrationKey(kServerB), bytesOf("127.0.0.1:2 1")); // incarnation 1
        checkGivenUp();
    }
    SECTION("killed after putting the round's result: its follower takes that result") {
        claimLeadAsB();
        sb.set("dtlab/swarm/s0/r1/closed", bytesOf("2"));
        // The mirror as B's putMirror leaves it: round 1, g = 2, momentum 0.
        std::vector<uint8_t> mirror(2 * sizeof(int64_t) + 2 * kParams * sizeof(float), 0);
        const int64_t header[2] = {1, kParams};
        std::memcpy(mirror.data(), header, sizeof(header));
        for (int i = 0; i < kParams; ++i) {
            const float g = 2.0f;
            std::memcpy(mirror.data() + sizeof(header) + i * sizeof(float), &g, sizeof(float));
        }
        sb.set("dtlab/swarm/s0/mirror", mirror);
        clearRegistration(sb, kServerB);
        const RoundResult r = sync_a.runRound(1, false);
        CHECK_FALSE(r.led);
        CHECK(r.round == 1);
        CHECK(at::equal(a[0], at::full({kParams}, 2.0f)));
    }
}
