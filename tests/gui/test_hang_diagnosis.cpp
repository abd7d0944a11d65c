// test_hang_diagnosis.cpp: the app's model of a hang (RunModel::hungCollectives)
// built from synthetic events, headless: the event log's row and the timeline's
// label name the rank that never joined, and collective_hangs / the narration
// condition fire only once a collective has been open past the threshold.
#include "gui/views_fixture.hpp"
#include "model/breakpoints.hpp"
#include "run_facts.hpp"
#include "views/view_event_log.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace dt;
using namespace dt::app;
using dt::test::SyntheticRun;

namespace {

constexpr int64_t kMs = 1'000'000;

RunModel ddpModel(int world) {
    RunModel model;
    Scenario scenario;
    scenario.topology.ranks = world;
    scenario.strategy.kind = StrategyKind::Ddp;
    model.reset(scenario, world);
    return model;
}

} // namespace

TEST_CASE("The app's model says which rank never joined a hung collective", "[gui][hang]") {
    using W = EventPhase;
    RunModel model = ddpModel(4);
    // Bucket 2's all-reduce of step 14 (seq 57): ranks 0, 2, 3 start it at 1 s; rank 1 never does.
    std::vector<Event> ev;
    for (int r : {0, 2, 3}) {
        ev.push_back(SyntheticRun::work(r, 14, EventKind::AllReduce, W::WorkScheduled, 57, 2, 1000 * kMs, 4));
        ev.push_back(
            SyntheticRun::work(r, 14, EventKind::AllReduce, W::WorkStarted, 57, 2, 1000 * kMs + r, 4));
    }
    // An earlier collective every rank completed is never listed.
    for (int r : {0, 1, 2, 3}) {
        ev.push_back(SyntheticRun::work(r, 14, EventKind::AllReduce, W::WorkStarted, 56, 3, 900 * kMs, 4));
        ev.push_back(SyntheticRun::work(r, 14, EventKind::AllReduce, W::WorkCompleted, 56, 3, 950 * kMs, 4));
    }
    model.ingest(ev.data(), ev.size());

    SECTION("live, it is in flight for 2 s, then hung") {
        CHECK(model.hungCollectives(2500 * kMs, false).empty());
        const auto hung = model.hungCollectives(3100 * kMs, false);
        REQUIRE(hung.size() == 1);
        CHECK(hung[0].started_ranks == std::vector<int>{0, 2, 3});
        CHECK(hung[0].missing_ranks == std::vector<int>{1});
        CHECK(hung[0].diagnosis ==
              "all-reduce bucket 2 of step 14: ranks {0,2,3} waiting, rank 1 never joined");
    }

    SECTION("the event log lists it on the missing rank, in time order") {
        const auto rows = buildEventLogRows(model, model.hungCollectives(3100 * kMs, false));
        const auto it = std::find_if(rows.begin(), rows.end(),
                                     [](const EventLogRow& r) { return r.text.rfind("hung: ", 0) == 0; });
        REQUIRE(it != rows.end());
        CHECK(it->text == "hung: all-reduce bucket 2 of step 14: ranks {0,2,3} waiting, rank 1 never joined");
        CHECK(it->rank == 1);
        CHECK(it->level == LogLevel::Error);
        CHECK(it->t_ns == 1000 * kMs);
    }

    SECTION("the timeline finds the diagnosis of each waiting rank's open span, and its label names rank 1") {
        const auto hung = model.hungCollectives(0, true); // a run that ended
        for (int r : {0, 2, 3}) {
            CAPTURE(r);
            const SpanRecord* s = model.findComm(r, kGroupWorld, EventKind::AllReduce, -1, 57);
            REQUIRE(s != nullptr);
            const HungCollective* h = findHungFor(hung, r, *s);
            REQUIRE(h != nullptr);
            CHECK(missingRanksNote(*h) == "rank 1 never joined");
            const SpanRecord* done = model.findComm(r, kGroupWorld, EventKind::AllReduce, -1, 56);
            REQUIRE(done != nullptr);
            CHECK(findHungFor(hung, r, *done) == nullptr);
        }
    }

    SECTION("the collective_hangs breakpoint hits once per collective, with the diagnosis") {
        BreakpointList breakpoints;
        BreakpointKind kind;
        REQUIRE(parseBreakpointKind("collective_hangs", kind));
        breakpoints.add({kind, 0.0});
        CHECK_FALSE(breakpoints.checkHung(model.hungCollectives(2500 * kMs, false)));
        const auto hit = breakpoints.checkHung(model.hungCollectives(3100 * kMs, false));
        REQUIRE(hit);
        CHECK(hit->what == "all-reduce bucket 2 of step 14: ranks {0,2,3} waiting, rank 1 never joined");
        CHECK_FALSE(breakpoints.checkHung(model.hungCollectives(4000 * kMs, false))); // the same one
    }

    SECTION("rank 1 joins at last: nothing is hung any more") {
        const Event joined[] = {
            SyntheticRun::work(1, 14, EventKind::AllReduce, W::WorkStarted, 57, 2, 3200 * kMs, 4),
            SyntheticRun::work(1, 14, EventKind::AllReduce, W::WorkCompleted, 57, 2, 3300 * kMs, 4),
            SyntheticRun::work(0, 14, EventKind::AllReduce, W::WorkCompleted, 57, 2, 3300 * kMs, 4),
        };
        model.ingest(joined, std::size(joined));
        CHECK(model.hungCollectives(9000 * kMs, true).empty());
    }
}

TEST_CASE("The narration condition a collective hangs is met by the hang diagnosis", "[gui][hang]") {
    NarrationCondition c;
    REQUIRE(parseNarrationCondition("a collective hangs", c));
    CHECK(c.kind == NarrationCondition::Kind::CollectiveHangs);
    RunFacts facts;
    facts.live = true;
    CHECK_FALSE(narrationConditionMet(c, facts));
    facts.collective_hung = true;
    CHECK(narrationConditionMet(c, facts));
}
