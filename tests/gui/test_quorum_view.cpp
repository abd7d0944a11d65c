// test_quorum_view.cpp: the quorum view, headless, from a synthetic
// fault-tolerant run: three replicas commit steps, replica 1 is killed,
// the lighthouse forms a quorum without it, it is restarted and heals.
#include "gui/views_fixture.hpp"

#include "views/view_quorum.hpp"

#include <catch2/catch.hpp>

#include <csignal>

using namespace dt;
using namespace dt::app;
using dt::test::HeadlessImGui;
using dt::test::SyntheticRun;

namespace {

constexpr int64_t kMs = 1'000'000;

Event instant(int rank, EventKind kind, int64_t t, int step = -1, double value = 0, uint64_t seq = 0) {
    Event e;
    e.rank = rank;
    e.kind = kind;
    e.phase = EventPhase::Instant;
    e.t_ns = t;
    e.step = step;
    e.value = value;
    e.seq = seq;
    return e;
}

Scenario ftScenario() {
    Scenario s;
    s.name = "ft";
    s.topology.ranks = 3;
    s.fault_tolerance.enabled = true;
    return s;
}

// 10 steps of 100 ms; replica 1 killed at 450 ms; quorum 2 = {0, 2} at 460 ms;
// restarted at 1000 ms, healed (receiving span 1100..1110 ms), quorum 3 = {0,1,2}.
std::vector<Event> syntheticFtRun() {
    std::vector<Event> ev;
    const int64_t t0 = 1000 * kMs;
    ev.push_back(instant(-1, EventKind::QuorumFormed, t0, -1, 1, 0b111));
    for (int step = 0; step < 10; ++step)
        for (int r = 0; r < 3; ++r) {
            const int64_t t = t0 + step * 100 * kMs;
            if (r == 1 && t > t0 + 450 * kMs && t < t0 + 1100 * kMs)
                continue; // dead
            ev.push_back(SyntheticRun::span(r, step, EventKind::QuorumWait, -1, t, t + 20 * kMs));
            ev.push_back(instant(r, EventKind::Heartbeat, t + 5 * kMs));
            ev.push_back(instant(r, EventKind::Commit, t + 90 * kMs, step, 0));
        }
    ev.push_back(instant(1, EventKind::FaultInjected, t0 + 450 * kMs, -1, SIGKILL));
    ev.push_back(instant(-1, EventKind::ReplicaLost, t0 + 451 * kMs, -1, 0));
    ev.back().rank = 1;
    ev.push_back(instant(0, EventKind::Abort, t0 + 455 * kMs, 4, 1));
    ev.push_back(instant(-1, EventKind::QuorumFormed, t0 + 460 * kMs, -1, 2, 0b101));
    ev.push_back(instant(1, EventKind::ProcessExited, t0 + 452 * kMs, -1, -9));
    ev.push_back(instant(1, EventKind::RankRestarted, t0 + 1000 * kMs, -1, 1));
    ev.back().rank = 1;
    ev.push_back(instant(-1, EventKind::QuorumFormed, t0 + 1095 * kMs, -1, 3, 0b111));
    Event heal = SyntheticRun::span(1, 11, EventKind::Heal, 0, t0 + 1100 * kMs, t0 + 1110 * kMs);
    heal.bytes = 4 * (3 * 1000 + 2);
    heal.peer = 0;
    ev.push_back(heal);
    return ev;
}

} // namespace

TEST_CASE("The quorum view reads replicas, quorums and the recovery from the events", "[gui][quorum]") {
    RunModel model;
    model.reset(ftScenario(), 3);
    const std::vector<Event> events = syntheticFtRun();
    model.ingest(events.data(), events.size());

    SECTION("before the kill every replica is in quorum 1") {
        const QuorumViewState st = quorumViewState(model, nullptr, std::nullopt, 1000 * kMs + 300 * kMs);
        CHECK(st.quorum_id == 1);
        CHECK(st.members == 0b111);
        for (const ReplicaRow& row : st.rows) {
            CAPTURE(row.replica);
            CHECK(row.in_quorum);
            CHECK(row.health == ReplicaHealth::Healthy);
            CHECK(row.committed == 3);
        }
    }

    SECTION("after the kill the quorum leaves the dead replica out") {
        const QuorumViewState st = quorumViewState(model, nullptr, std::nullopt, 1000 * kMs + 600 * kMs);
        CHECK(st.quorum_id == 2);
        CHECK_FALSE(st.rows[1].in_quorum);
        CHECK(st.rows[1].health == ReplicaHealth::Dead);
        CHECK(st.rows[0].aborted == 1);
        CHECK(st.quorums == 2);
    }

    SECTION("after the restart the replica is back, a new incarnation") {
        const QuorumViewState st = quorumViewState(model, nullptr, std::nullopt, 1000 * kMs + 1200 * kMs);
        CHECK(st.quorum_id == 3);
        CHECK(st.rows[1].in_quorum);
        CHECK(st.rows[1].incarnation == 1);
        CHECK(st.rows[1].health == ReplicaHealth::Healthy);
    }

    SECTION("live progress overrides the health read from events") {
        std::vector<RankProgress> ranks(3);
        ranks[1].state = RankState::Healing;
        ranks[1].incarnation = 2;
        ranks[2].partitioned = true;
        const QuorumViewState st = quorumViewState(model, &ranks, std::nullopt, 1000 * kMs + 1200 * kMs);
        CHECK(st.rows[1].health == ReplicaHealth::Healing);
        CHECK(st.rows[1].incarnation == 2);
        CHECK(st.rows[2].partitioned);
    }

    SECTION("a replica the lighthouse does not hear never reads healthy (issue 22)") {
        std::vector<RankProgress> ranks(3);
        for (RankProgress& p : ranks)
            p.state = RankState::Running;
        ranks[2].partitioned = true; // its process runs; its heartbeats are dropped
        ft::LighthouseStatus lighthouse;
        lighthouse.running = true;
        for (int r = 0; r < 3; ++r) {
            ft::MemberHealth m;
            m.member.replica = r;
            m.heartbeat_age_ms = r == 1 ? 2000 : 40; // replica 1: silent for 2 s (> the 1 s timeout)
            lighthouse.members.push_back(m);
        }
        const QuorumViewState st = quorumViewState(model, &ranks, lighthouse, 1000 * kMs + 1200 * kMs);
        CHECK(st.rows[0].health == ReplicaHealth::Healthy);
        CHECK(st.rows[1].health == ReplicaHealth::Unreachable);
        CHECK(st.rows[2].health == ReplicaHealth::Unreachable);
        CHECK(std::string(replicaHealthLabel(ReplicaHealth::Unreachable)) == "unreachable");
    }

    SECTION("a replay: a replica whose last heartbeat is older than the timeout is unreachable") {
        // The run's last heartbeats are at +905 ms; 2.5 s later every replica has been silent too long.
        const QuorumViewState st = quorumViewState(model, nullptr, std::nullopt, 1000 * kMs + 3400 * kMs);
        for (const ReplicaRow& row : st.rows) {
            CAPTURE(row.replica, row.heartbeat_age_ms);
            CHECK(row.heartbeat_age_ms > 1000);
            CHECK(row.health != ReplicaHealth::Healthy);
        }
    }
}

TEST_CASE("The quorum header tells where its quorum formed from where training is now",
          "[gui][quorum][issue22]") {
    // Quorum 2 forms when the leader has committed 6 steps; the fast path hands
    // it out again every step without a new event while the replicas go on to 33.
    RunModel model;
    model.reset(ftScenario(), 3);
    std::vector<Event> ev;
    Event q = instant(-1, EventKind::QuorumFormed, 100 * kMs, -1, 2, 0b101);
    q.bytes = 6;
    ev.push_back(q);
    for (int step = 6; step < 33; ++step)
        for (int r : {0, 2})
            ev.push_back(instant(r, EventKind::Commit, (200 + step * 10) * kMs, step));
    model.ingest(ev.data(), ev.size());
    const QuorumViewState st = quorumViewState(model, nullptr, std::nullopt, 1000 * kMs);
    CHECK(st.quorum_id == 2);
    CHECK(st.max_step == 6);         // "formed at step 6"
    CHECK(st.steps_committed == 33); // "now at step 33", what the topology tiles say
}

namespace {
// The view's inputs for syntheticFtRun, loaded into `model`, seen at its end.
ViewInputs syntheticFtInputs(RunModel& model) {
    model.reset(ftScenario(), 3);
    const std::vector<Event> events = syntheticFtRun();
    model.ingest(events.data(), events.size());
    ViewInputs in;
    in.model = &model;
    in.now_ns = model.tEnd();
    return in;
}
} // namespace

TEST_CASE("The quorum view draws its empty states, its rows and the stopwatch", "[gui][quorum]") {
    HeadlessImGui imgui;
    QuorumView view;

    SECTION("no run: the empty state") {
        ViewInputs in;
        const auto stats = imgui.frame([&] { view.draw(in); });
        CHECK(stats.balanced);
        CHECK(stats.vertices > 0);
    }

    SECTION("a run without fault tolerance: its own empty state") {
        RunModel model;
        Scenario s = ftScenario();
        s.fault_tolerance.enabled = false;
        model.reset(s, 3);
        ViewInputs in;
        in.model = &model;
        const auto stats = imgui.frame([&] { view.draw(in); });
        CHECK(stats.balanced);
        CHECK_FALSE(view.lastState().fault_tolerant);
    }

    SECTION("a fault-tolerant run: rows, strips and the latest recovery") {
        RunModel model;
        ViewInputs in = syntheticFtInputs(model);
        const auto stats = imgui.frame([&] { view.draw(in); });
        CHECK(stats.balanced);
        CHECK(stats.vertices > 2000); // three strips of spans and markers
        REQUIRE(view.lastState().recovery.has_value());
        const Recovery& r = *view.lastState().recovery;
        CHECK(r.fault == "kill");
        CHECK(r.replica == 1);
        CHECK(r.detected_ms == Approx(1.0));
        CHECK(r.new_quorum_ms == Approx(10.0));
        CHECK(r.new_quorum_id == 2);
        CHECK(r.restarted_ms == Approx(550.0));
        CHECK(r.heal_duration_ms == Approx(10.0));
        CHECK(r.heal_bytes == 4 * (3 * 1000 + 2));
        CHECK(r.heal_source == 0);
        CHECK(view.lastComparison().empty()); // no what-if rerun yet
        CHECK_FALSE(view.stopwatchFirst());   // 900 px: the rows, then the stopwatch
    }

    SECTION("a pane too short for the rows and the stopwatch: the stopwatch comes first") {
        RunModel model;
        ViewInputs in = syntheticFtInputs(model);
        // About 8 lines of the fixture's 13 px text: the header, then room for the rows or the
        // stopwatch, not both (as the Quorum pane was at 1600x900 with 28 px text).
        ImGui::GetIO().DisplaySize = ImVec2(1600.0f, 140.0f);
        const auto stats = imgui.frame([&] { view.draw(in); });
        CHECK(stats.balanced);
        REQUIRE(view.lastState().recovery.has_value());
        CHECK(view.stopwatchFirst());
    }

    SECTION("after a what-if rerun: this run's recoveries beside the run before's, and only those") {
        RunModel model;
        ViewInputs in = syntheticFtInputs(model);
        const std::vector<ComparisonRow> rows = {
            {"step time (mean of the ranks' medians)", "ms", 100.0, 90.0, false},
            {"heal transfer (mean over heals)", "ms", 40.0, 20.0, true},
            {"heal rate (all heals)", "GB/s", 0.75, 1.5, true},
            {"death to new quorum (mean over faults)", "ms", 50.0, std::nullopt, true}, // one side only
        };
        const std::string before = "Kill a replica", now = "heal_transport http";
        WhatIfInputs w;
        w.rows = &rows;
        w.before_label = &before;
        w.now_label = &now;
        in.whatif = &w;
        const auto stats = imgui.frame([&] { view.draw(in); });
        CHECK(stats.balanced);
        CHECK(view.lastComparison() ==
              "Against the run before (Kill a replica -> heal_transport http): heal "
              "transfer (mean over heals) 40 -> 20 ms; heal rate (all heals) 0.75 -> "
              "1.5 GB/s");
    }
}

TEST_CASE("The lighthouse's decision line never calls a replica healthy that its badge says is not",
          "[gui][quorum]") {
    dt::app::QuorumViewState st;
    st.reason = "fast path: every member of quorum 1 is healthy and waiting [3/3 joined]";
    st.rows.resize(3);
    for (int r = 0; r < 3; ++r) {
        st.rows[size_t(r)].replica = st.rows[size_t(r)].group = r;
        st.rows[size_t(r)].in_quorum = true;
        st.rows[size_t(r)].health = dt::app::ReplicaHealth::Healthy;
    }
    SECTION("while every member is healthy the decision reads as the lighthouse wrote it") {
        dt::app::markStaleDecision(st);
        CHECK(st.reason == "fast path: every member of quorum 1 is healthy and waiting [3/3 joined]");
    }
    SECTION("a member restarting since: the line says the decision is older than that") {
        st.rows[1].health = dt::app::ReplicaHealth::Restarting;
        dt::app::markStaleDecision(st);
        CHECK(st.reason ==
              "fast path: every member of quorum 1 is healthy and waiting [3/3 joined] (when it was "
              "decided; since then: replica 1 restarting)");
    }
}
