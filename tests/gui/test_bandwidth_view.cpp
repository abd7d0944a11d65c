// test_bandwidth_view.cpp: the backend comparison plot, headless, from
// synthetic BusBandwidth counters: its empty states, and that it plots every
// (backend, op, size) point with a fitted model per series.
#include "gui/views_fixture.hpp"

#include "views/view_bandwidth.hpp"

#include <catch2/catch.hpp>

using namespace dt;
using namespace dt::app;
using dt::test::HeadlessImGui;

namespace {

Event point(int rank, CommBackend backend, int64_t size, double seconds) {
    Event e;
    e.kind = EventKind::BusBandwidth;
    e.phase = EventPhase::Counter;
    e.rank = rank;
    e.step = 0;
    e.unit = 0; // all_reduce
    e.backend = backend;
    e.bytes = size;
    e.dur_ns = int64_t(seconds * 1e9);
    e.value = busBandwidthGBs("all_reduce", double(size), 2, seconds);
    e.group_size = 2;
    e.t_ns = 1'000'000'000;
    return e;
}

Scenario comparison() {
    Scenario s;
    s.name = "compare";
    s.topology.ranks = 2;
    s.strategy.kind = StrategyKind::Collectives;
    return s;
}

} // namespace

TEST_CASE("The bandwidth view says why it is empty", "[gui][backends]") {
    HeadlessImGui imgui;
    BandwidthView view;
    ViewInputs in;
    CHECK(bandwidthEmpty(in) == BandwidthEmpty::NoRun);
    CHECK(imgui.frame([&] { view.draw(in); }).balanced);
    RunModel model;
    Scenario ddp = comparison();
    ddp.strategy.kind = StrategyKind::Ddp;
    model.reset(ddp, 2);
    in.model = &model;
    CHECK(bandwidthEmpty(in) == BandwidthEmpty::NotComparison);
    CHECK(imgui.frame([&] { view.draw(in); }).balanced);
    model.reset(comparison(), 2);
    CHECK(bandwidthEmpty(in) == BandwidthEmpty::NoPointYet);
    CHECK(imgui.frame([&] { view.draw(in); }).balanced);
}

TEST_CASE("The bandwidth view plots every measured point and a fitted model per series", "[gui][backends]") {
    HeadlessImGui imgui;
    BandwidthView view;
    RunModel model;
    model.reset(comparison(), 2);
    std::vector<Event> events;
    for (int rank = 0; rank < 2; ++rank)
        for (int64_t size : {4096, 65536, 1048576}) {
            events.push_back(point(rank, CommBackend::Gloo, size, 2e-3 + double(size) / 0.8e9));
            events.push_back(point(rank, CommBackend::Mpi, size, 20e-6 + double(size) / 3e9));
        }
    model.ingest(events.data(), events.size());
    ViewInputs in;
    in.model = &model;
    CHECK(bandwidthEmpty(in) == BandwidthEmpty::None);
    const auto stats = imgui.frame([&] { view.draw(in); });
    CHECK(stats.balanced);
    CHECK(stats.vertices > 0);
    const BusBandwidthMeasure& m = view.lastMeasure();
    CHECK(m.points.size() == 6);
    REQUIRE(m.models.size() == 2);
    CHECK(m.models[0].fit.bandwidth_bytes_s == Approx(0.8e9).epsilon(1e-3)); // gloo first
    CHECK(m.models[1].fit.alpha_s == Approx(20e-6).epsilon(1e-3));           // mpi
}
