// test_lighthouse.cpp: the lighthouse (dtlab/lighthouse.hpp).
//   1. computeQuorum, rule by rule, and the quorum id rule (pure, no sockets).
//   2. computeQuorumRole: ranks, max_step, round-robin healing.
//   3. The status JSON and the QUORUM wire line round-trip.
//   4. Real sockets on loopback: a quorum of three, a closed connection, a
//      partitioned replica, a restarted lighthouse, a request that times out.
// Timing figures (detection latency) are CAPTUREd: run with -s to see them.
#include "dtlab/errors.hpp"
#include "dtlab/lighthouse.hpp"
#include "ft/lighthouse_detail.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace dt::ft;

namespace {

MemberHealth member(int replica, bool waiting, int64_t heartbeat_age_ms = 0, bool connected = true,
                    int incarnation = 0, int64_t waiting_since_ms = 0) {
    MemberHealth h;
    h.member.replica = replica;
    h.member.incarnation = incarnation;
    h.heartbeat_age_ms = heartbeat_age_ms;
    h.connected = connected;
    h.waiting = waiting;
    h.waiting_since_ms = waiting_since_ms;
    return h;
}

QuorumMember quorumMember(int replica, int incarnation = 0, int64_t step = 0) {
    QuorumMember m;
    m.replica = replica;
    m.incarnation = incarnation;
    m.step = step;
    return m;
}

Quorum quorumOf(int64_t id, std::vector<QuorumMember> members) {
    Quorum q;
    q.quorum_id = id;
    q.members = std::move(members);
    return q;
}

std::vector<int> replicasOf(const std::vector<QuorumMember>& members) {
    std::vector<int> replicas;
    for (const auto& m : members)
        replicas.push_back(m.replica);
    return replicas;
}

using Clock = std::chrono::steady_clock;
int64_t msSince(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

// Every replica asks at once (each on its own thread, as real replicas would).
std::vector<Quorum> requestAll(const std::vector<LighthouseClient*>& clients, int64_t step,
                               int64_t timeout_ms, int commit_failures = 0) {
    std::vector<std::future<Quorum>> answers;
    for (LighthouseClient* c : clients)
        answers.push_back(std::async(
            std::launch::async, [=] { return c->requestQuorum(step, commit_failures, "", timeout_ms); }));
    std::vector<Quorum> quorums;
    for (auto& a : answers)
        quorums.push_back(a.get());
    return quorums;
}

bool waitUntil(const std::function<bool()>& condition, int64_t timeout_ms) {
    const auto start = Clock::now();
    while (msSince(start) < timeout_ms) {
        if (condition())
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return condition();
}

bool isWaiting(const LighthouseServer& server, int replica) {
    for (const auto& m : server.status().members)
        if (m.member.replica == replica && m.waiting)
            return true;
    return false;
}

// Member losses as the server reports them, with the time each was seen.
struct LossLog {
    std::mutex mutex;
    std::vector<std::pair<QuorumMember, std::string>> losses;
    std::vector<Clock::time_point> times;
    void attach(LighthouseServer& server) {
        server.onMemberLost([this](const QuorumMember& m, const std::string& why) {
            std::lock_guard<std::mutex> lock(mutex);
            losses.emplace_back(m, why);
            times.push_back(Clock::now());
        });
    }
    size_t count() {
        std::lock_guard<std::mutex> lock(mutex);
        return losses.size();
    }
};

std::unique_ptr<LighthouseClient> startClient(const LighthouseServer& server, int replica,
                                              int incarnation = 0) {
    auto client = std::make_unique<LighthouseClient>(server.address(), replica, incarnation);
    client->startHeartbeats(50);
    return client;
}

} // namespace

// ---- 1. the quorum rules ----

TEST_CASE("computeQuorum follows the lighthouse's rules in order", "[lighthouse]") {
    LighthouseOptions options;
    options.min_replicas = 2;
    options.join_timeout_ms = 1000;
    options.heartbeat_timeout_ms = 1000;
    const Quorum none;

    SECTION("fewer candidates than min_replicas wait") {
        const auto d = computeQuorum(0, {member(0, true)}, none, options);
        CHECK_FALSE(d.issue);
        CHECK(d.reason == "waiting: 1 of min_replicas 2 joined [1/1 joined]");
        CHECK(computeQuorum(0, {member(0, false), member(1, false)}, none, options).reason ==
              "waiting: 0 of min_replicas 2 joined [0/2 joined]");
    }

    SECTION("the split-brain guard needs more than half of the healthy replicas") {
        options.min_replicas = 1;
        const auto one_of_three =
            computeQuorum(0, {member(0, true), member(1, false), member(2, false)}, none, options);
        CHECK_FALSE(one_of_three.issue);
        CHECK(one_of_three.reason ==
              "waiting: 1 of 3 healthy replicas joined; a quorum needs more than half (split-brain guard)");
        const auto two_of_four = computeQuorum(
            0, {member(0, true), member(1, true), member(2, false), member(3, false)}, none, options);
        CHECK_FALSE(two_of_four.issue);
        CHECK_THAT(two_of_four.reason, Catch::Contains("split-brain guard"));
        // An unhealthy member does not count among the healthy ones.
        const auto one_of_one_healthy =
            computeQuorum(0, {member(0, true), member(1, false, 5000)}, none, options);
        CHECK(one_of_one_healthy.issue);
    }

    SECTION("a healthy straggler is waited for until the join timeout, then left out") {
        const std::vector<MemberHealth> members = {member(0, true, 0, true, 0, 0),
                                                   member(1, true, 0, true, 0, 100), member(2, false)};
        const auto early = computeQuorum(360, members, none, options);
        CHECK_FALSE(early.issue);
        CHECK(early.reason == "waiting for replica 2 to join (join timeout in 640 ms) [2/3 joined]");
        const auto late = computeQuorum(1000, members, none, options);
        REQUIRE(late.issue);
        CHECK(replicasOf(late.participants) == std::vector<int>{0, 1});
        CHECK(late.reason ==
              "issued: 2 of 3 replicas (replica 2 did not join within the 1000 ms join timeout)");
        // Everyone healthy joined: no waiting at all.
        const auto all = computeQuorum(0, {member(0, true), member(1, true)}, none, options);
        CHECK(all.issue);
        CHECK(all.reason == "issued: 2 of 2 replicas");
        CHECK(all.membership_changed);
    }

    SECTION("an unhealthy member is left out: an old heartbeat or a closed connection") {
        const Quorum previous = quorumOf(5, {quorumMember(0), quorumMember(1), quorumMember(2)});
        const auto stale =
            computeQuorum(0, {member(0, true), member(1, true), member(2, true, 1200)}, previous, options);
        REQUIRE(stale.issue);
        CHECK(replicasOf(stale.participants) == std::vector<int>{0, 1});
        CHECK(stale.reason == "issued: 2 of 3 replicas (replica 2 not healthy: heartbeat 1200 ms old)");
        CHECK(stale.membership_changed);
        const auto closed = computeQuorum(0, {member(0, true), member(1, true), member(2, false, 0, false)},
                                          previous, options);
        REQUIRE(closed.issue);
        CHECK(replicasOf(closed.participants) == std::vector<int>{0, 1});
        CHECK(closed.reason == "issued: 2 of 3 replicas (replica 2 not connected)");
    }

    SECTION("the fast path issues at once when every previous member is back, with a waiting newcomer") {
        const Quorum previous = quorumOf(3, {quorumMember(0), quorumMember(1), quorumMember(2)});
        // Replica 3 is healthy but has not asked: the fast path does not wait for it.
        const auto d = computeQuorum(0, {member(0, true), member(1, true), member(2, true), member(3, false)},
                                     previous, options);
        REQUIRE(d.issue);
        CHECK(replicasOf(d.participants) == std::vector<int>{0, 1, 2});
        CHECK(d.reason == "fast path: every member of quorum 3 is healthy and waiting [3/4 joined] "
                          "(replica 3 has not asked to join)");
        CHECK_FALSE(d.membership_changed);
        // A newcomer already waiting comes along.
        const auto with_newcomer = computeQuorum(
            0, {member(0, true), member(1, true), member(2, true), member(3, true)}, previous, options);
        REQUIRE(with_newcomer.issue);
        CHECK(replicasOf(with_newcomer.participants) == std::vector<int>{0, 1, 2, 3});
        CHECK(with_newcomer.reason == "fast path: every member of quorum 3 is healthy and waiting, with "
                                      "newcomer replica 3 [4/4 joined]");
        CHECK(with_newcomer.membership_changed);
    }

    SECTION("a restarted replica (new incarnation) is not the previous member: no fast path") {
        const Quorum previous = quorumOf(3, {quorumMember(0), quorumMember(1), quorumMember(2)});
        const std::vector<MemberHealth> members = {member(0, true), member(1, true, 0, true, 1),
                                                   member(2, false)};
        const auto d = computeQuorum(0, members, previous, options);
        CHECK_FALSE(d.issue);
        CHECK_THAT(d.reason, Catch::StartsWith("waiting for replica 2 to join"));
    }

    SECTION("replicas holding no step wait for a live replica that holds steps, then fence it") {
        options.min_replicas = 1;
        // Replica 0 is stopped (old heartbeat): the lighthouse cannot hear it, its supervisor knows it lives.
        const std::vector<MemberHealth> members = {member(0, false, 5000), member(1, true, 0, true, 1),
                                                   member(2, true, 0, true, 1)};
        const std::vector<AliveHolder> stopped_holder = {{0, true}};
        const auto held = computeQuorum(100, members, none, options, stopped_holder);
        CHECK_FALSE(held.issue);
        CHECK(held.reason ==
              "waiting: no candidate holds a committed step, and replica 0 is stopped (hung or "
              "partitioned) with committed steps: a quorum now would start the job over beside "
              "it (join timeout in 900 ms) [2/2 joined]");
        CHECK(held.fenced.empty());
        // The join timeout passed: a fresh start without it, and replica 0 is to be fenced.
        const auto fresh = computeQuorum(1000, members, none, options, stopped_holder);
        REQUIRE(fresh.issue);
        CHECK(replicasOf(fresh.participants) == std::vector<int>{1, 2});
        CHECK(fresh.fenced == std::vector<int>{0});
        CHECK_THAT(fresh.reason,
                   Catch::StartsWith("issued: a fresh start of 2 replicas holding no step; "
                                     "replica 0 is stopped (hung or partitioned) with committed "
                                     "steps"));
        // A holder that is not stopped (a long step, reconnecting to a lighthouse that came back) is
        // waited for the same join timeout, then fenced too: an unbounded wait stalled chaos runs.
        const auto running = computeQuorum(1000, members, none, options, {{0, false}});
        REQUIRE(running.issue);
        CHECK(running.fenced == std::vector<int>{0});
        CHECK_THAT(running.reason,
                   Catch::Contains("replica 0 is alive with committed steps and did not join"));
        // Told nothing, or the holder died (the supervisor says so): the same members form a quorum at once.
        CHECK(computeQuorum(100, members, none, options).issue);
        CHECK(computeQuorum(100, members, none, options, {}).fenced.empty());
        // The holder is among the candidates: they heal from it.
        std::vector<MemberHealth> back = members;
        back[0] = member(0, true);
        back[0].member.step = 12;
        CHECK(computeQuorum(0, back, none, options, stopped_holder).issue);
        // A candidate that committed steps is no fresh start: survivors go on without a stopped replica.
        std::vector<MemberHealth> survivor = members;
        survivor[1].member.step = 12;
        CHECK(computeQuorum(0, survivor, none, options, stopped_holder).issue);
        // A late first start (incarnation 0, no step) alone beside a stopped holder is held back too.
        const auto late_joiner =
            computeQuorum(100, {member(0, false, 5000), member(1, true)}, none, options, stopped_holder);
        CHECK_FALSE(late_joiner.issue);
    }
}

TEST_CASE("The quorum id moves only when membership changes or a commit failed", "[lighthouse]") {
    LighthouseOptions options;
    const Quorum previous = quorumOf(4, {quorumMember(0), quorumMember(1)});

    SECTION("the first quorum ever is quorum 1") {
        const auto d = computeQuorum(0, {member(0, true)}, Quorum{}, options);
        REQUIRE(d.issue);
        CHECK(nextQuorumId(0, d) == 1);
    }
    SECTION("the same members keep the same id") {
        const auto d = computeQuorum(0, {member(0, true), member(1, true)}, previous, options);
        REQUIRE(d.issue);
        CHECK_FALSE(d.membership_changed);
        CHECK(nextQuorumId(4, d) == 4);
    }
    SECTION("a restarted replica is a new member: a new id") {
        const auto d = computeQuorum(0, {member(0, true), member(1, true, 0, true, 1)}, previous, options);
        REQUIRE(d.issue);
        CHECK(d.membership_changed);
        CHECK(nextQuorumId(4, d) == 5);
    }
    SECTION("a member that reports commit failures forces a new id with the same members") {
        std::vector<MemberHealth> members = {member(0, true), member(1, true)};
        members[1].member.commit_failures = 1;
        const auto d = computeQuorum(0, members, previous, options);
        REQUIRE(d.issue);
        CHECK_FALSE(d.membership_changed);
        CHECK(nextQuorumId(4, d) == 5);
    }
    SECTION("no quorum issued, no new id") {
        QuorumDecision waiting;
        waiting.membership_changed = true;
        CHECK(nextQuorumId(4, waiting) == 4);
    }
}

// ---- 2. what one replica does with a quorum ----

TEST_CASE("computeQuorumRole gives ranks, max_step and round-robin healing", "[lighthouse]") {
    // Replicas 0 and 2 are at step 10 (up to date); 1, 4 and 5 are behind and heal.
    // Listed out of order: the role sorts by replica.
    const Quorum quorum = quorumOf(7, {quorumMember(5, 0, 3), quorumMember(1, 0, 7), quorumMember(0, 0, 10),
                                       quorumMember(4, 2, 7), quorumMember(2, 0, 10)});
    const auto role = [&](int replica, int incarnation = 0) {
        return computeQuorumRole(quorum, replica, incarnation);
    };

    SECTION("every replica learns its rank among the participants, the world and max_step") {
        CHECK(role(0).replica_rank == 0);
        CHECK(role(2).replica_rank == 2);
        CHECK(role(4, 2).replica_rank == 3);
        CHECK(role(5).replica_rank == 4);
        CHECK(role(5).replica_world == 5);
        CHECK(role(5).max_step == 10);
        CHECK(role(5).up_to_date == 2);
        CHECK(role(5).quorum_id == 7);
        CHECK(replicasOf(role(5).members) == std::vector<int>{0, 1, 2, 4, 5});
    }

    SECTION("healers receive round-robin from the up-to-date replicas") {
        // u = ranks {0, 2}; h = ranks {1, 3, 4}: h[0] <- u[0], h[1] <- u[1], h[2] <- u[0].
        CHECK_FALSE(role(0).heal);
        CHECK(role(0).heal_source == -1);
        CHECK(role(1).heal);
        CHECK(role(1).heal_source == 0);
        CHECK(role(4, 2).heal_source == 2);
        CHECK(role(5).heal_source == 0);
        CHECK(role(0).heal_destinations == std::vector<int>{1, 4});
        CHECK(role(2).heal_destinations == std::vector<int>{3});
        CHECK(role(1).heal_destinations.empty());
    }

    SECTION("rank 1 of a replica group shifts the sources by one, as TorchFT's, so a healing group's "
            "shards come from different groups") {
        // u = ranks {0, 2}; h = ranks {1, 3, 4}: h[i] <- u[(i + 1) % 2].
        const auto shard1 = [&](int replica, int incarnation = 0) {
            return computeQuorumRole(quorum, replica, incarnation, /*group_rank=*/1);
        };
        CHECK(shard1(1).heal_source == 2);
        CHECK(shard1(4, 2).heal_source == 0);
        CHECK(shard1(5).heal_source == 2);
        CHECK(shard1(0).heal_destinations == std::vector<int>{3});
        CHECK(shard1(2).heal_destinations == std::vector<int>{1, 4});
    }

    SECTION("every destination a sender lists names that sender as its source") {
        const std::vector<std::pair<int, int>> everyone = {{0, 0}, {1, 0}, {2, 0}, {4, 2}, {5, 0}};
        std::vector<QuorumRole> roles;
        for (const auto& [replica, incarnation] : everyone)
            roles.push_back(role(replica, incarnation));
        int healers = 0, destinations = 0;
        for (const QuorumRole& r : roles) {
            healers += r.heal ? 1 : 0;
            destinations += int(r.heal_destinations.size());
            for (int d : r.heal_destinations)
                CHECK(roles[size_t(d)].heal_source == r.replica_rank);
            if (r.heal) {
                const auto& sender = roles[size_t(r.heal_source)].heal_destinations;
                CHECK(std::count(sender.begin(), sender.end(), r.replica_rank) == 1);
            }
        }
        CHECK(healers == 3);
        CHECK(destinations == 3);
    }

    SECTION("init_sync at the job's first step: every member but the primary heals from it, as TorchFT's "
            "force_recover, and all still count as up to date") {
        const Quorum start =
            quorumOf(1, {quorumMember(0, 0, 0), quorumMember(1, 0, 0), quorumMember(2, 0, 0)});
        const QuorumRole primary = computeQuorumRole(start, 0, 0, /*group_rank=*/0, /*init_sync=*/true);
        CHECK_FALSE(primary.heal);
        CHECK(primary.heal_destinations == std::vector<int>{1, 2});
        CHECK(primary.up_to_date == 3);
        CHECK(computeQuorumRole(start, 2, 0, 0, true).heal_source == 0);
        // Every rank of a group has the same primary (a group heals as one; TorchFT offsets it by rank).
        CHECK(computeQuorumRole(start, 1, 0, /*group_rank=*/1, true).heal);
        CHECK_FALSE(computeQuorumRole(start, 0, 0, /*group_rank=*/1, true).heal);
        // Off, or past step 0, or after a restart (they load the durable checkpoint): nobody heals.
        CHECK_FALSE(computeQuorumRole(start, 1, 0, 0, false).heal);
        const Quorum later = quorumOf(2, {quorumMember(0, 0, 5), quorumMember(1, 0, 5)});
        CHECK_FALSE(computeQuorumRole(later, 1, 0, 0, true).heal);
        const Quorum restarted = quorumOf(3, {quorumMember(0, 1, 0), quorumMember(1, 1, 0)});
        CHECK_FALSE(computeQuorumRole(restarted, 1, 1, 0, true).heal);
    }

    SECTION("everyone at the same step: nobody heals") {
        const Quorum even = quorumOf(1, {quorumMember(0, 0, 4), quorumMember(1, 0, 4)});
        const QuorumRole r = computeQuorumRole(even, 1, 0);
        CHECK(r.up_to_date == 2);
        CHECK_FALSE(r.heal);
        CHECK(r.heal_destinations.empty());
    }

    SECTION("a replica that is not a participant is refused") {
        CHECK_THROWS_AS(role(3), std::invalid_argument);
        CHECK_THROWS_AS(role(4, 0), std::invalid_argument); // replica 4 is there, but as incarnation 2
    }
}

// ---- 3. formats ----

TEST_CASE("The status JSON and the QUORUM line round-trip", "[lighthouse]") {
    SECTION("statusFromJson reads back what statusToJson wrote") {
        LighthouseStatus s;
        s.running = true;
        s.quorum_id = 12;
        s.highest_step = 340;
        s.quorums_issued = 15;
        s.quorum_members = {quorumMember(0, 1, 340), quorumMember(2, 0, 338)};
        s.quorum_members[0].address = "10.0.0.1:29500";
        MemberHealth h = member(2, true, 120, true, 0, 99);
        h.member.commit_failures = 2;
        s.members = {member(0, false, 3, true, 1), h, member(3, false, 1500, false)};
        s.last_reason = "waiting: \"quoted\"\nand a second line";
        const std::string json = statusToJson(s);
        CHECK(json.find('\n') == std::string::npos); // one wire line
        const LighthouseStatus back = statusFromJson(json);
        CHECK(back.running);
        CHECK(back.quorum_id == 12);
        CHECK(back.highest_step == 340);
        CHECK(back.quorums_issued == 15);
        REQUIRE(back.quorum_members.size() == 2);
        CHECK(back.quorum_members[0].address == "10.0.0.1:29500");
        CHECK(back.quorum_members[0].incarnation == 1);
        CHECK(back.quorum_members[1].step == 338);
        REQUIRE(back.members.size() == 3);
        CHECK(back.members[1].member.commit_failures == 2);
        CHECK(back.members[1].heartbeat_age_ms == 120);
        CHECK(back.members[1].waiting);
        CHECK(back.members[1].waiting_since_ms == 99);
        CHECK_FALSE(back.members[2].connected);
        CHECK(back.last_reason == s.last_reason);
    }
    SECTION("a malformed status is a runtime_error") {
        CHECK_THROWS_AS(statusFromJson("{not json"), std::runtime_error);
        CHECK_THROWS_AS(statusFromJson("{\"running\": true}"), std::runtime_error);
    }
    SECTION("the QUORUM line carries ids, steps and addresses with colons") {
        Quorum q = quorumOf(9, {quorumMember(0, 0, 5), quorumMember(3, 2, 4)});
        q.highest_step = 6;
        q.members[1].address = "127.0.0.1:4000";
        const std::string line = formatQuorumLine(q);
        CHECK(line == "QUORUM 9 6 2 0.0:5:- 3.2:4:127.0.0.1:4000");
        Quorum back;
        REQUIRE(parseQuorumLine(line, back));
        CHECK(back.quorum_id == 9);
        CHECK(back.highest_step == 6);
        REQUIRE(back.members.size() == 2);
        CHECK(back.members[0].address.empty());
        CHECK(back.members[1].address == "127.0.0.1:4000");
        CHECK(back.members[1].incarnation == 2);
        CHECK_FALSE(parseQuorumLine("QUORUM 9 6 3 0.0:5:-", back)); // fewer members than announced
        CHECK_FALSE(parseQuorumLine("QUORUM 9 6 1 zero:5:-", back));
        CHECK_FALSE(parseQuorumLine("STATUS {}", back));
    }
}

// ---- 4. real sockets ----

TEST_CASE("Three replicas form a quorum through a lighthouse on loopback", "[lighthouse]") {
    LighthouseOptions options;
    options.min_replicas = 3;
    options.quorum_tick_ms = 5;
    std::mutex quorums_mutex; // both outlive the server thread's callbacks
    std::vector<Quorum> issued;
    LighthouseServer server(options);
    server.onQuorum([&](const Quorum& q, const QuorumDecision&) {
        std::lock_guard<std::mutex> lock(quorums_mutex);
        issued.push_back(q);
    });
    server.start();
    REQUIRE(server.running());
    REQUIRE(server.port() > 0);

    std::vector<std::unique_ptr<LighthouseClient>> clients;
    for (int r = 0; r < 3; ++r)
        clients.push_back(startClient(server, r));
    const std::vector<LighthouseClient*> all = {clients[0].get(), clients[1].get(), clients[2].get()};

    SECTION("every replica gets the same quorum; the same group keeps its id until a commit fails") {
        const auto first = requestAll(all, 0, 3000);
        for (const Quorum& q : first) {
            CHECK(q.quorum_id == 1);
            CHECK(replicasOf(q.members) == std::vector<int>{0, 1, 2});
        }
        const auto second = requestAll(all, 1, 3000);
        for (const Quorum& q : second) {
            CHECK(q.quorum_id == 1);
            CHECK(q.highest_step == 1);
        }
        CHECK_THAT(server.status().last_reason, Catch::StartsWith("fast path: every member of quorum 1"));
        const auto after_failure = requestAll(all, 1, 3000, /*commit_failures=*/1);
        for (const Quorum& q : after_failure)
            CHECK(q.quorum_id == 2);

        const LighthouseStatus status = clients[0]->status(1000); // over the wire
        CHECK(status.running);
        CHECK(status.quorum_id == 2);
        CHECK(status.quorums_issued == 3);
        CHECK(status.members.size() == 3);
        CHECK(replicasOf(status.quorum_members) == std::vector<int>{0, 1, 2});
        std::lock_guard<std::mutex> lock(quorums_mutex);
        CHECK(issued.size() == 3);
    }
}

TEST_CASE("A replica whose connection closes is left out of the next quorum at once", "[lighthouse]") {
    LighthouseOptions options;
    options.min_replicas = 2;
    options.heartbeat_timeout_ms = 5000; // far longer than the test: only the closed socket can explain it
    options.join_timeout_ms = 5000;
    LossLog losses; // declared before the server: it outlives the server thread's callbacks
    LighthouseServer server(options);
    losses.attach(server);
    server.start();
    std::vector<std::unique_ptr<LighthouseClient>> clients;
    for (int r = 0; r < 3; ++r)
        clients.push_back(startClient(server, r));
    // With min_replicas 2, two early requests would otherwise form quorum 1 before the third HELLO is read.
    REQUIRE(waitUntil([&] { return server.status().members.size() == 3; }, 2000));
    REQUIRE(requestAll({clients[0].get(), clients[1].get(), clients[2].get()}, 0, 3000)[0].quorum_id == 1);

    SECTION("the survivors' next quorum comes back within a few milliseconds, not after a timeout") {
        const auto killed_at = Clock::now();
        clients[2].reset(); // as a SIGKILL would: the socket closes
        const auto survivors = requestAll({clients[0].get(), clients[1].get()}, 1, 3000);
        const int64_t next_quorum_ms = msSince(killed_at);
        // onMemberLost runs on the lighthouse thread just after the answers went out.
        REQUIRE(waitUntil([&] { return losses.count() == 1; }, 1000));
        const int64_t detection_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(losses.times[0] - killed_at).count();
        CAPTURE(next_quorum_ms, detection_ms);
        CHECK(next_quorum_ms < 300); // heartbeat_timeout is 5000 ms
        CHECK(detection_ms < 300);
        CHECK(losses.losses[0].first.replica == 2);
        CHECK(losses.losses[0].second == "connection closed");
        for (const Quorum& q : survivors) {
            CHECK(q.quorum_id == 2);
            CHECK(replicasOf(q.members) == std::vector<int>{0, 1});
        }

        // The replica restarts as incarnation 1, asks first and joins through the fast path.
        clients[2] = startClient(server, 2, /*incarnation=*/1);
        auto newcomer =
            std::async(std::launch::async, [&] { return clients[2]->requestQuorum(0, 0, "", 3000); });
        REQUIRE(waitUntil([&] { return isWaiting(server, 2); }, 2000));
        const auto again = requestAll({clients[0].get(), clients[1].get()}, 2, 3000);
        const Quorum joined = newcomer.get();
        CHECK(joined.quorum_id == 3);
        CHECK(again[0].quorum_id == 3);
        REQUIRE(joined.members.size() == 3);
        CHECK(joined.members[2].incarnation == 1);
        CHECK(joined.members[2].step == 0);
        CHECK(joined.highest_step == 2);
        CHECK(computeQuorumRole(joined, 2, 1).heal);
    }
}

TEST_CASE("With detection by heartbeat, a closed connection is judged only when its heartbeats are old",
          "[lighthouse]") {
    // TorchFT's lighthouse: a replica is healthy while its heartbeats are recent; a closed socket is not
    // news by itself. The survivors' next quorum waits for it up to join_timeout_ms, then leaves it out.
    LighthouseOptions options;
    options.min_replicas = 2;
    options.heartbeat_timeout_ms = 600;
    options.join_timeout_ms = 5000; // longer than the heartbeat timeout: the timeout decides
    options.lost_on_close = false;
    LossLog losses;
    LighthouseServer server(options);
    losses.attach(server);
    server.start();
    std::vector<std::unique_ptr<LighthouseClient>> clients;
    for (int r = 0; r < 3; ++r)
        clients.push_back(startClient(server, r));
    REQUIRE(waitUntil([&] { return server.status().members.size() == 3; }, 2000));
    REQUIRE(requestAll({clients[0].get(), clients[1].get(), clients[2].get()}, 0, 3000)[0].quorum_id == 1);

    const auto killed_at = Clock::now();
    clients[2].reset(); // as a SIGKILL would: the socket closes
    const auto survivors = requestAll({clients[0].get(), clients[1].get()}, 1, 5000);
    const int64_t next_quorum_ms = msSince(killed_at);
    REQUIRE(waitUntil([&] { return losses.count() == 1; }, 2000));
    const int64_t detection_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(losses.times[0] - killed_at).count();
    CAPTURE(next_quorum_ms, detection_ms);
    CHECK(detection_ms >= 500); // not at the close: about heartbeat_timeout_ms after the last heartbeat
    CHECK(next_quorum_ms >= 500);
    CHECK(next_quorum_ms < 3000); // and not the join timeout
    CHECK(losses.losses[0].first.replica == 2);
    CHECK(losses.losses[0].second.find("heartbeat") != std::string::npos);
    for (const Quorum& q : survivors) {
        CHECK(q.quorum_id == 2);
        CHECK(replicasOf(q.members) == std::vector<int>{0, 1});
    }
}

TEST_CASE("While the job is paused, the lighthouse's clock stands still: a dead replica is judged after the "
          "pause",
          "[lighthouse]") {
    // dtlab's pause (a narration hold) freezes the job's clock; detection by heartbeat must still take
    // heartbeat_timeout_ms of *run* time, so the room sees the survivors wait after Next, not before it.
    LighthouseOptions options;
    options.min_replicas = 1;
    options.heartbeat_timeout_ms = 300;
    options.join_timeout_ms = 5000;
    options.lost_on_close = false;
    LossLog losses;
    LighthouseServer server(options);
    losses.attach(server);
    server.start();
    std::vector<std::unique_ptr<LighthouseClient>> clients;
    for (int r = 0; r < 2; ++r)
        clients.push_back(startClient(server, r));
    REQUIRE(waitUntil([&] { return server.status().members.size() == 2; }, 2000));
    std::atomic<int> survivor_heartbeats{0};
    clients[0]->onHeartbeat([&] { ++survivor_heartbeats; });

    server.setJobFrozen(true);
    clients[1].reset(); // killed while the room looks at the paused run
    const auto age_of_dead = [&] {
        for (const MemberHealth& m : server.status().members)
            if (m.member.replica == 1)
                return m.heartbeat_age_ms;
        return int64_t(-1);
    };
    const int64_t age_at_pause = age_of_dead();
    // 20 heartbeats of the survivor (every 50 ms): three heartbeat timeouts of wall time go by.
    REQUIRE(waitUntil([&] { return survivor_heartbeats.load() >= 20; }, 10000));
    CHECK(losses.count() == 0);
    CHECK(age_of_dead() == age_at_pause); // its last heartbeat is as old as when the pause began

    const auto resumed_at = Clock::now();
    server.setJobFrozen(false);
    REQUIRE(waitUntil([&] { return losses.count() == 1; }, 5000));
    CHECK(losses.losses[0].first.replica == 1);
    const int64_t after_resume_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(losses.times[0] - resumed_at).count();
    CAPTURE(age_at_pause, after_resume_ms);
    CHECK(after_resume_ms >= 300 - age_at_pause - 60); // the rest of its timeout runs after the pause
}

TEST_CASE("A replica that leaves because the job finished is not reported lost", "[lighthouse][issue22]") {
    LighthouseOptions options;
    options.min_replicas = 1;
    options.heartbeat_timeout_ms = 200;
    LossLog losses; // declared before the server: it outlives the server thread's callbacks
    LighthouseServer server(options);
    losses.attach(server);
    server.start();
    std::vector<std::unique_ptr<LighthouseClient>> clients;
    for (int r = 0; r < 2; ++r)
        clients.push_back(startClient(server, r));
    REQUIRE(waitUntil([&] { return server.status().members.size() == 2; }, 2000));
    REQUIRE(requestAll({clients[0].get(), clients[1].get()}, 0, 3000)[0].quorum_id == 1);

    clients[0]->leave(); // done: BYE, then the connection closes
    clients[0].reset();
    clients[1].reset(); // no BYE: a crash, lost
    REQUIRE(waitUntil([&] { return losses.count() >= 1; }, 2000));
    // Well past the heartbeat timeout: the replica that left is still not lost.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    REQUIRE(losses.count() == 1);
    CHECK(losses.losses[0].first.replica == 1);
}

TEST_CASE("A replica that stops heartbeating is left out after heartbeat_timeout_ms", "[lighthouse]") {
    LighthouseOptions options;
    options.min_replicas = 2;
    options.heartbeat_timeout_ms = 300;
    options.join_timeout_ms = 5000;
    options.quorum_tick_ms = 5;
    LossLog losses; // declared before the server: it outlives the server thread's callbacks
    LighthouseServer server(options);
    losses.attach(server);
    server.start();
    std::vector<std::unique_ptr<LighthouseClient>> clients;
    for (int r = 0; r < 3; ++r)
        clients.push_back(startClient(server, r));
    // With min_replicas 2, two early requests would otherwise form quorum 1 before the third HELLO is read.
    REQUIRE(waitUntil([&] { return server.status().members.size() == 3; }, 2000));
    REQUIRE(requestAll({clients[0].get(), clients[1].get(), clients[2].get()}, 0, 3000)[0].quorum_id == 1);

    SECTION("the partitioned replica is reported lost once, the others go on, and it comes back later") {
        const auto partitioned_at = Clock::now();
        clients[2]->setPartitioned(true);
        const auto survivors = requestAll({clients[0].get(), clients[1].get()}, 1, 3000);
        const int64_t next_quorum_ms = msSince(partitioned_at);
        // onMemberLost runs on the lighthouse thread just after the answers went out.
        REQUIRE(waitUntil([&] { return losses.count() == 1; }, 1000));
        const int64_t detection_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(losses.times[0] - partitioned_at).count();
        CAPTURE(next_quorum_ms, detection_ms);
        // Its last heartbeat was at most 50 ms before the partition.
        CHECK(detection_ms >= 300 - 60);
        CHECK(detection_ms < 1000); // generous: a loaded machine delays ticks
        CHECK(next_quorum_ms < 1200);
        CHECK(losses.losses[0].first.replica == 2);
        CHECK_THAT(losses.losses[0].second, Catch::Matches("heartbeat [0-9]+ ms old"));
        for (const Quorum& q : survivors) {
            CHECK(q.quorum_id == 2);
            CHECK(replicasOf(q.members) == std::vector<int>{0, 1});
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        CHECK(losses.count() == 1); // once per loss, not every tick

        clients[2]->setPartitioned(false);
        auto back = std::async(std::launch::async, [&] { return clients[2]->requestQuorum(0, 0, "", 3000); });
        REQUIRE(waitUntil([&] { return isWaiting(server, 2); }, 2000));
        const auto again = requestAll({clients[0].get(), clients[1].get()}, 2, 3000);
        CHECK(back.get().quorum_id == 3);
        CHECK(replicasOf(again[0].members) == std::vector<int>{0, 1, 2});
    }
}

TEST_CASE("A restarted lighthouse listens on the same port and continues the quorum ids", "[lighthouse]") {
    LighthouseOptions options;
    options.min_replicas = 2;
    LighthouseServer server(options);
    server.start();
    const int port = server.port();
    auto a = startClient(server, 0);
    auto b = startClient(server, 1);
    REQUIRE(requestAll({a.get(), b.get()}, 0, 3000)[0].quorum_id == 1);

    SECTION("the replicas keep asking while it is down and get a larger quorum id after the restart") {
        server.stop();
        CHECK_FALSE(server.running());
        auto answers = std::async(std::launch::async, [&] {
            return requestAll({a.get(), b.get()}, 1, 5000);
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        server.start();
        const auto restarted_at = Clock::now();
        CHECK(server.port() == port);
        const auto quorums = answers.get();
        const int64_t reconnect_ms = msSince(restarted_at);
        CAPTURE(reconnect_ms);
        CHECK(reconnect_ms < 1500); // reconnect backoff is at most 500 ms
        for (const Quorum& q : quorums) {
            CHECK(q.quorum_id == 2);
            CHECK(replicasOf(q.members) == std::vector<int>{0, 1});
        }
    }
}

TEST_CASE("requestQuorum throws CommError(Timeout) when no quorum comes in time", "[lighthouse]") {
    const auto expectTimeout = [](LighthouseClient& client, const std::string& expected_text) {
        const auto start = Clock::now();
        try {
            (void)client.requestQuorum(0, 0, "", 300);
            FAIL("requestQuorum returned without a quorum");
        } catch (const dt::CommError& e) {
            const int64_t waited_ms = msSince(start);
            CAPTURE(e.what(), waited_ms);
            CHECK(e.kind() == dt::CommErrorKind::Timeout);
            CHECK_THAT(e.what(),
                       Catch::Contains("no quorum within 300 ms") && Catch::Contains(expected_text));
            CHECK(waited_ms >= 290);
            CHECK(waited_ms < 1000);
        }
    };

    SECTION("the lighthouse is unreachable") {
        int free_port = 0;
        {
            LighthouseServer probe(LighthouseOptions{});
            probe.start();
            free_port = probe.port();
        } // stopped: nothing listens there now
        LighthouseClient client("127.0.0.1:" + std::to_string(free_port), 0, 0);
        expectTimeout(client, "is unreachable");
    }

    SECTION("the lighthouse never gathers min_replicas") {
        LighthouseOptions options;
        options.min_replicas = 2;
        LighthouseServer server(options);
        server.start();
        LighthouseClient client(server.address(), 0, 0);
        expectTimeout(client, "has not answered replica 0");
        CHECK(server.status().last_reason == "waiting: 1 of min_replicas 2 joined [1/1 joined]");
    }

    SECTION("the lighthouse refuses an older incarnation of a replica it knows") {
        LighthouseServer server(LighthouseOptions{});
        server.start();
        auto restarted = startClient(server, 0, /*incarnation=*/1);
        REQUIRE(waitUntil([&] { return server.status().members.size() == 1; }, 2000));
        LighthouseClient stale(server.address(), 0, 0);
        expectTimeout(stale,
                      "last answered 'ERROR replica 0 incarnation 0 is stale: incarnation 1 has joined'");
        REQUIRE(server.status().members.size() == 1);
        CHECK(server.status().members[0].member.incarnation == 1);
    }
}

TEST_CASE("A replica gone for ten heartbeat timeouts is forgotten", "[lighthouse]") {
    LighthouseOptions options;
    options.heartbeat_timeout_ms = 50; // forgotten after 500 ms
    options.quorum_tick_ms = 5;
    LighthouseServer server(options);
    server.start();
    auto client = std::make_unique<LighthouseClient>(server.address(), 0, 0);
    REQUIRE(waitUntil([&] { return server.status().members.size() == 1; }, 2000));
    const auto closed_at = Clock::now();
    client.reset();
    REQUIRE(waitUntil([&] { return !server.status().members.at(0).connected; }, 1000));
    CHECK(server.status().members.size() == 1); // not connected, but still known for a while
    REQUIRE(waitUntil([&] { return server.status().members.empty(); }, 2000));
    const int64_t forgotten_ms = msSince(closed_at);
    CAPTURE(forgotten_ms);
    CHECK(forgotten_ms >= 10 * 50 - 50); // its last sign of life was the HELLO, just before closed_at
}

namespace {

// A raw connection, as a hostile local process would open one.
struct RawClient {
    int fd = -1;
    std::string inbox;
    explicit RawClient(const LighthouseServer& server) {
        std::string host;
        int port = 0;
        dt::wire::splitAddress(server.address(), host, port);
        fd = dt::wire::connectTcp(host, port, 2000);
    }
    ~RawClient() {
        if (fd >= 0)
            ::close(fd);
    }
    bool send(const std::string& text) { return dt::wire::sendAll(fd, text.data(), text.size()); }
    // The next line within timeout_ms; "<closed>" when the server closed, "<none>" on timeout.
    std::string line(int timeout_ms = 2000) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        while (inbox.find('\n') == std::string::npos) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                                  deadline - std::chrono::steady_clock::now())
                                  .count();
            pollfd p{fd, POLLIN, 0};
            if (left <= 0 || ::poll(&p, 1, int(left)) <= 0)
                return "<none>";
            char buffer[4096];
            const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
            if (n <= 0)
                return "<closed>";
            inbox.append(buffer, size_t(n));
        }
        const auto newline = inbox.find('\n');
        std::string out = inbox.substr(0, newline);
        inbox.erase(0, newline + 1);
        return out;
    }
};

} // namespace

TEST_CASE("The lighthouse lets only a holder of the run's token speak for a replica", "[lighthouse][auth]") {
    LighthouseOptions options;
    options.min_replicas = 1;
    options.quorum_tick_ms = 5;
    options.token = "the run's token";
    std::mutex refused_mutex;
    std::vector<std::string> refused;
    LighthouseServer server(options);
    server.onRefused([&](const std::string& why) {
        std::lock_guard<std::mutex> lock(refused_mutex);
        refused.push_back(why);
    });
    server.start();

    SECTION("every connection is challenged with a fresh nonce first") {
        RawClient a(server), b(server);
        const std::string ca = a.line(), cb = b.line();
        CHECK_THAT(ca, Catch::StartsWith("CHALLENGE "));
        CHECK(ca.size() == 10 + 32); // 16 random bytes in hex
        CHECK(ca != cb);
    }
    SECTION("a HELLO with a wrong proof is refused and reported; later lines get the same refusal") {
        RawClient impostor(server);
        impostor.line();
        REQUIRE(impostor.send("HELLO 0 999 " + std::string(64, 'a') + "\n"));
        CHECK(impostor.line() ==
              "ERROR HELLO as replica 0 refused: wrong or missing token (DTLAB_TOKEN or --token-file)");
        REQUIRE(impostor.send("QUORUM 0 0 -\n"));
        CHECK_THAT(impostor.line(), Catch::Contains("refused: wrong or missing token"));
        CHECK(server.status().members.empty());
        std::this_thread::sleep_for(std::chrono::milliseconds(50)); // the callback runs on the server thread
        std::lock_guard<std::mutex> lock(refused_mutex);
        REQUIRE(refused.size() == 1);
        CHECK_THAT(refused[0], Catch::Contains("replica 0"));
    }
    SECTION("a HELLO without a proof (the old form) is refused") {
        RawClient old(server);
        old.line();
        REQUIRE(old.send("HELLO 0 0\n"));
        CHECK(old.line() == "ERROR expected HELLO <replica> <incarnation> <proof>");
    }
    SECTION("a request before HELLO, and a second HELLO as another replica, are errors") {
        RawClient raw(server);
        const std::string challenge = raw.line().substr(10);
        REQUIRE(raw.send("QUORUM 0 0 -\n"));
        CHECK(raw.line() == "ERROR say HELLO <replica> <incarnation> first");
        REQUIRE(raw.send("HELLO 2 0 " + helloProof(options.token, challenge, 2, 0) + "\n"));
        REQUIRE(raw.send("HELLO 3 0 " + helloProof(options.token, challenge, 3, 0) + "\n"));
        CHECK(raw.line() == "ERROR this connection already said HELLO as replica 2");
        CHECK(server.status().members.size() == 1);
    }
    SECTION("a proof made for another connection's nonce does not work here (no replay)") {
        RawClient first(server), second(server);
        const std::string nonce = first.line().substr(10);
        second.line();
        REQUIRE(second.send("HELLO 1 0 " + helloProof(options.token, nonce, 1, 0) + "\n"));
        CHECK_THAT(second.line(), Catch::Contains("refused: wrong or missing token"));
    }
    SECTION("the real replica keeps its place: an impostor with a newer incarnation cannot take it over") {
        LighthouseClient real(server.address(), 0, 0, options.token);
        real.startHeartbeats(50);
        CHECK(real.requestQuorum(0, 0, "", 3000).quorum_id == 1);
        RawClient impostor(server);
        impostor.line();
        REQUIRE(impostor.send("HELLO 0 999 " + helloProof("a guessed token", "00", 0, 999) + "\n"));
        CHECK_THAT(impostor.line(), Catch::Contains("refused"));
        const LighthouseStatus status = server.status();
        REQUIRE(status.members.size() == 1);
        CHECK(status.members[0].member.incarnation == 0);
        CHECK(real.requestQuorum(1, 0, "", 3000).members.size() == 1);
    }
    SECTION("a client with the wrong token never gets a quorum") {
        LighthouseClient wrong(server.address(), 0, 0, "another token");
        CHECK_THROWS_AS(wrong.requestQuorum(0, 0, "", 500), dt::CommError);
        CHECK(server.status().members.empty());
    }
    SECTION("a line of more than 64 KiB is cut off with its connection") {
        RawClient flood(server);
        flood.line();
        flood.send(std::string(70 * 1024, 'x'));
        CHECK(flood.line() == "ERROR line longer than 64 KiB");
        CHECK(flood.line() == "<closed>");
        LighthouseClient real(server.address(), 0, 0, options.token); // the server still serves
        CHECK(real.requestQuorum(0, 0, "", 3000).quorum_id >= 1);
    }
    SECTION("a client that never reads its answers is dropped, not waited for") {
        RawClient deaf(server);
        std::string many;
        for (int i = 0; i < 2000; ++i)
            many += "STATUS\n";
        for (int i = 0; i < 20 && deaf.send(many); ++i) {
        }
        LighthouseClient real(server.address(), 0, 0, options.token);
        CHECK(real.requestQuorum(0, 0, "", 3000).quorum_id >= 1);
    }
}
