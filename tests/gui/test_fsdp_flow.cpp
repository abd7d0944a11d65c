// test_fsdp_flow.cpp: the FSDP flow view and the group-aware collective
// matching it relies on, headless, from synthetic events (views_fixture.hpp).
//
// [SECTION] RunModel: collectives matched by (group, kind, seq)
// [SECTION] FSDP flow: empty states
// [SECTION] FSDP flow: tile states from events
// [SECTION] FSDP flow: drawing
#include "gui/views_fixture.hpp"

#include "views/view_fsdp_flow.hpp"

#include <catch2/catch.hpp>

using namespace dt;
using namespace dt::app;
using dt::test::HeadlessImGui;
using dt::test::SyntheticFsdp;
using dt::test::SyntheticRun;

namespace {

Event onGroup(Event e, uint8_t group) {
    e.group = group;
    return e;
}

} // namespace

// -----------------------------------------------------------------------------
// [SECTION] RunModel: collectives matched by (group, kind, seq)
// -----------------------------------------------------------------------------

TEST_CASE("The parts of a collective are matched by process group, kind and seq", "[gui][fsdp]") {
    // HSDP on 4 ranks, 2 replicas: ranks 0,1 form shard group 1 and ranks 2,3
    // shard group 2. Both groups number their all-gathers from 0.
    RunModel model;
    model.reset(SyntheticFsdp::scenario(4, 2, "hsdp"), 4);
    using W = EventPhase;
    std::vector<Event> events;
    for (int r = 0; r < 4; ++r) {
        const uint8_t group = groupIdShard(r / 2);
        events.push_back(
            onGroup(SyntheticRun::work(r, 0, EventKind::AllGather, W::WorkStarted, 3, 0, 100 + r, 2), group));
        events.push_back(onGroup(
            SyntheticRun::work(r, 0, EventKind::AllGather, W::WorkCompleted, 3, 0, 200 + r, 2), group));
    }
    model.ingest(events.data(), events.size());
    const SpanRecord& mine = model.lane(0).comm.at(0);
    REQUIRE(mine.group == groupIdShard(0));

    SECTION("the same seq in another group is not linked") {
        CHECK(model.findPart(1, mine) != nullptr);
        CHECK(model.findPart(2, mine) == nullptr);
        CHECK(model.findPart(3, mine) == nullptr);
        CHECK(model.findComm(2, groupIdShard(1), EventKind::AllGather, -1, 3) == &model.lane(2).comm.at(0));
        CHECK(model.findComm(2, groupIdShard(0), EventKind::AllGather, -1, 3) == nullptr);
    }
    SECTION("one rank in two groups keeps two Works with the same seq apart") {
        // Rank 0's replicate group (128 + shard 0) also runs its Work number 3.
        const Event more[] = {
            onGroup(SyntheticRun::work(0, 0, EventKind::AllGather, W::WorkStarted, 3, 0, 300, 2),
                    groupIdReplicate(0)),
        };
        model.ingest(more, 1);
        REQUIRE(model.lane(0).comm.size() == 2);
        const SpanRecord* first = model.findComm(0, groupIdShard(0), EventKind::AllGather, -1, 3);
        const SpanRecord* second = model.findComm(0, groupIdReplicate(0), EventKind::AllGather, -1, 3);
        REQUIRE(first != nullptr);
        REQUIRE(second != nullptr);
        CHECK_FALSE(first->open()); // the replicate group's start did not reopen the shard group's Work
        CHECK(second->open());
        CHECK(model.openCollectives() == 1);
    }
}

TEST_CASE("Unit events stay out of the lifecycle markers and the event log", "[gui][fsdp]") {
    RunModel model;
    SyntheticFsdp::fill(model, SyntheticFsdp::scenario(2, 2), 1);
    CHECK_FALSE(model.lane(0).unit_events.empty());
    CHECK(model.lane(0).instants.empty());
    CHECK(model.notable().empty());
    CHECK(spanDepth(EventKind::Recompute, 1) == 2);
    CHECK(spanDepth(EventKind::Recompute, -1) == 1);
}

// -----------------------------------------------------------------------------
// [SECTION] FSDP flow: empty states
// -----------------------------------------------------------------------------

TEST_CASE("The FSDP flow view says why it is empty", "[gui][fsdp]") {
    HeadlessImGui imgui;
    FsdpFlowView view;
    int selected = -1;
    ViewInputs in;
    in.selected_rank = &selected;

    SECTION("no run open") {
        CHECK(fsdpFlowEmpty(in) == FlowEmpty::NoRun);
        CHECK(imgui.frame([&] { view.draw(in); }).balanced);
        CHECK(view.lastEmpty() == FlowEmpty::NoRun);
    }
    SECTION("ddp, zero1 and zero2 do not shard parameters") {
        for (const char* kind : {"ddp", "zero1", "zero2"}) {
            CAPTURE(kind);
            RunModel model;
            model.reset(SyntheticFsdp::scenario(4, 4, kind), 4);
            in.model = &model;
            CHECK(fsdpFlowEmpty(in) == FlowEmpty::NotSharded);
            const auto stats = imgui.frame([&] { view.draw(in); });
            CHECK(stats.balanced);
            CHECK(stats.vertices > 0);
            CHECK(view.lastEmpty() == FlowEmpty::NotSharded);
        }
    }
    SECTION("fsdp and hsdp draw their units, sharded until the first event") {
        for (const char* kind : {"fsdp", "hsdp"}) {
            CAPTURE(kind);
            RunModel model;
            Scenario sc = SyntheticFsdp::scenario(4, 3, kind);
            sc.topology.replicas = 2;
            model.reset(sc, 4);
            in.model = &model;
            CHECK(fsdpFlowEmpty(in) == FlowEmpty::None);
            CHECK(imgui.frame([&] { view.draw(in); }).balanced);
            const FlowState& state = view.lastState();
            CHECK(state.shards == (std::string(kind) == "hsdp" ? 2 : 4));
            REQUIRE(state.tiles.size() == 4); // root + 3 blocks
            CHECK(state.tiles[0].unit == -1);
            CHECK(state.tiles[3].unit == 2);
            CHECK_FALSE(state.any_unit_events);
            for (const FlowTile& t : state.tiles) {
                CHECK(t.residency == Residency::Sharded);
                CHECK(t.theory_full_bytes > 0);
                CHECK_FALSE(t.computing());
            }
        }
    }
    CHECK(std::string(view.helpText()).find("all-gather") != std::string::npos);
    CHECK(std::string(view.helpText()).size() > 300);
}

// -----------------------------------------------------------------------------
// [SECTION] FSDP flow: tile states from events
// -----------------------------------------------------------------------------

TEST_CASE("FSDP flow tiles follow the unit events and the spans around the moment", "[gui][fsdp]") {
    // 4 ranks, 4 blocks; the tick schedule is in views_fixture.hpp (SyntheticFsdp).
    RunModel model;
    const Scenario sc = SyntheticFsdp::scenario(4, 4);
    SyntheticFsdp::fill(model, sc, 2);
    auto at = [](double ticks) { return SyntheticFsdp::at(1, ticks); }; // step 1
    const UnitLayout layout = unitLayout(sc.model);
    const int64_t root_bytes = 4 * paddedNumel(layout.root_numel, 4);
    const int64_t block_bytes = 4 * paddedNumel(layout.unit_numel[0], 4);

    SECTION("before any event every unit holds only its shard") {
        const FlowState s = fsdpFlowState(model, 0, SyntheticFsdp::kT0 - 1);
        CHECK_FALSE(s.any_unit_events);
        for (const FlowTile& t : s.tiles)
            CHECK(t.residency == Residency::Sharded);
        CHECK(s.materialized_bytes < 0.0);
    }
    SECTION("unit 2 is materialized during its forward, then freed") {
        const FlowState during = fsdpFlowState(model, 0, at(10)); // block 2: forward [9, 11]
        const FlowTile& t2 = *during.tile(2);
        CHECK(t2.residency == Residency::Materialized);
        CHECK(t2.gathered_for == 0);
        CHECK(t2.forward);
        CHECK_FALSE(t2.backward);
        CHECK(t2.full_bytes == block_bytes);
        CHECK(during.tile(1)->residency == Residency::Freed);
        CHECK(during.tile(3)->residency == Residency::Freed); // freed in step 0, not gathered yet in step 1
        CHECK(during.tile(-1)->residency == Residency::Materialized);
        CHECK(during.step == 1);
        CHECK(during.microbatch == 0);
        CHECK(during.materialized_bytes == double(root_bytes + block_bytes));

        const FlowState after = fsdpFlowState(model, 0, at(11.5)); // freed at 11, block 3 gathering [11, 12]
        CHECK(after.tile(2)->residency == Residency::Freed);
        CHECK_FALSE(after.tile(2)->computing());
        CHECK(after.tile(3)->all_gather);
        CHECK(after.tile(3)->residency == Residency::Freed);
    }
    SECTION("in backward the root stays materialized and the next all-gather is prefetched") {
        const FlowState s =
            fsdpFlowState(model, 0, at(18.5)); // block 3 backward [17, 19], all-gather 2 [18, 19]
        CHECK(s.tile(3)->backward);
        CHECK(s.tile(3)->residency == Residency::Materialized);
        CHECK(s.tile(3)->gathered_for == 1);
        CHECK(s.tile(2)->all_gather);
        CHECK_FALSE(s.tile(2)->computing());
        CHECK(s.tile(-1)->residency == Residency::Materialized);
        CHECK(s.tile(-1)->gathered_for == 0); // gathered once, in forward
    }
    SECTION("gradients are reduce-scattered, then the unit is freed") {
        const FlowState rs = fsdpFlowState(model, 0, at(19.5)); // reduce-scatter 3 [19, 20], block 2 backward
        CHECK(rs.tile(3)->reduce_scatter);
        CHECK(rs.tile(3)->residency == Residency::Materialized);
        CHECK(rs.tile(2)->backward);
        const FlowState freed = fsdpFlowState(model, 0, at(20.5));
        CHECK_FALSE(freed.tile(3)->reduce_scatter);
        CHECK(freed.tile(3)->residency == Residency::Freed);
    }
    SECTION("at the end of the run every unit is freed and nothing is in flight") {
        const FlowState s = fsdpFlowState(model, 3, model.tEnd());
        for (const FlowTile& t : s.tiles) {
            CHECK(t.residency == Residency::Freed);
            CHECK_FALSE(t.all_gather);
            CHECK_FALSE(t.reduce_scatter);
            CHECK_FALSE(t.computing());
        }
        CHECK(s.materialized_bytes == 0.0);
    }
}

TEST_CASE("An all-gather that started and never completed shows in flight", "[gui][fsdp]") {
    RunModel model;
    model.reset(SyntheticFsdp::scenario(2, 2), 2);
    using W = EventPhase;
    const Event e[] = {
        SyntheticRun::work(0, 0, EventKind::AllGather, W::WorkScheduled, 0, 1, 100, 2),
        SyntheticRun::work(0, 0, EventKind::AllGather, W::WorkStarted, 0, 1, 200, 2),
    };
    model.ingest(e, 2);
    CHECK(fsdpFlowState(model, 0, 50).tile(1)->all_gather == false);
    const FlowState queued = fsdpFlowState(model, 0, 150);
    CHECK(queued.tile(1)->all_gather_queued);
    CHECK_FALSE(queued.tile(1)->all_gather);
    const FlowState hung = fsdpFlowState(model, 0, 10'000);
    CHECK(hung.tile(1)->all_gather);
    CHECK(hung.tile(1)->all_gather_t0 == 200);
    CHECK(hung.tile(1)->residency == Residency::Sharded);             // never materialized
    CHECK_FALSE(fsdpFlowState(model, 1, 10'000).tile(1)->all_gather); // rank 1 never got there
}

// -----------------------------------------------------------------------------
// [SECTION] FSDP flow: drawing
// -----------------------------------------------------------------------------

TEST_CASE("The FSDP flow view draws the moment of the cursor, else the end", "[gui][fsdp]") {
    HeadlessImGui imgui;
    RunModel model;
    SyntheticFsdp::fill(model, SyntheticFsdp::scenario(4, 4), 3);
    FsdpFlowView view;
    int selected = 2;
    std::optional<int64_t> cursor;
    ViewInputs in;
    in.model = &model;
    in.now_ns = model.tEnd();
    in.selected_rank = &selected;
    in.cursor_ns = &cursor;

    const auto end = imgui.frame([&] { view.draw(in); });
    CHECK(end.balanced);
    CHECK(view.lastEmpty() == FlowEmpty::None);
    CHECK(view.lastState().rank == 2);
    CHECK(view.lastState().t_ns == model.tEnd());

    cursor = SyntheticFsdp::at(2, 18.5);
    const auto mid = imgui.frame([&] { view.draw(in); });
    CHECK(mid.balanced);
    CHECK(view.lastState().t_ns == *cursor);
    CHECK(view.lastState().step == 2);
    CHECK(view.lastState().tile(3)->backward);
    CHECK(view.lastState().tile(2)->all_gather);
    CHECK(mid.vertices > end.vertices); // lit borders and phase chips

    selected = 9; // a rank the run does not have: rank 0
    imgui.frame([&] { view.draw(in); });
    CHECK(view.lastState().rank == 0);
}
