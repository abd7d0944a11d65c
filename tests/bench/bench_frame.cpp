// bench_frame.cpp: CPU cost of one dtlab frame with a million recorded events.
//
// Measures ImGui::NewFrame -> TimelineView::draw -> ImGui::Render (the CPU
// side of a frame: no GPU, no window; the draw data is built and dropped) on a
// headless ImGui context (1600x900, default font), in one run:
//   empty          a timeline with no events (the floor: ImGui itself)
//   zoomed out     8 ranks (--ranks N), 1,000,000 events, the whole run (60 s) across the width
//   mid zoom       1 s across the width (100 steps)
//   zoomed in      2 steps (20 ms) across the width
// Each case: 10 warm-up frames, then --frames frames (default 100); prints the
// median, p90 and max in ms, and the vertices and row items of the last frame.
// Goal: median <= 8 ms zoomed out.
//
// With --ranks 32 the timeline draws compact lanes (every rank on screen).
//
//   cmake --build build --target bench_frame && ./build/tests/bench_frame [--frames N] [--events N] [--ranks
//   N]
#include "gui/views_fixture.hpp"
#include "views/view_timeline.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace dt;
using namespace dt::app;
using Clock = std::chrono::steady_clock;

namespace {

struct Result {
    const char* name;
    double median_ms, p90_ms, max_ms;
    int vertices;
    size_t items;
};

Result measure(const char* name, test::HeadlessImGui& imgui, TimelineView& view, const ViewInputs& in,
               int frames, int64_t range0 = 0, int64_t range1 = 0) {
    if (range1 > range0)
        view.showRange(range0, range1);
    else
        view.fit();
    std::vector<double> ms;
    test::FrameStats stats;
    for (int f = 0; f < frames + 10; ++f) {
        const auto t0 = Clock::now();
        stats = imgui.frame([&] { view.draw(in); }); // NewFrame, Begin, draw, End, Render
        const double elapsed = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        if (f >= 10)
            ms.push_back(elapsed);
    }
    std::sort(ms.begin(), ms.end());
    return {name,      ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 9 / 10)],
            ms.back(), stats.vertices,    view.lastItemCount()};
}

} // namespace

int main(int argc, char** argv) {
    int frames = 100;
    long events = 1'000'000;
    int world = 8;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--frames") && i + 1 < argc)
            frames = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--events") && i + 1 < argc)
            events = std::max(1000L, std::atol(argv[++i]));
        else if (!std::strcmp(argv[i], "--ranks") && i + 1 < argc)
            world = std::clamp(std::atoi(argv[++i]), 1, 64);
        else {
            std::fprintf(stderr, "usage: bench_frame [--frames N] [--events N] [--ranks 1..64]\n");
            return 2;
        }
    }
    const int kWorld = world;
    const int steps = int(events / (kWorld * test::SyntheticRun::kEventsPerStep)) + 1;

    const auto t0 = Clock::now();
    RunModel model;
    test::SyntheticRun::fill(model, kWorld, steps);
    const double ingest_s = std::chrono::duration<double>(Clock::now() - t0).count();
    RunModel empty;
    empty.reset(Scenario{}, kWorld);

    test::HeadlessImGui imgui;
    std::printf(
        "bench_frame: %d ranks, %zu events (%d steps of 10 ms), ingested in %.2f s; %d frames per case\n",
        kWorld, model.eventCount(), steps, ingest_s, frames);

    std::vector<Result> results;
    {
        TimelineView view;
        ViewInputs in;
        in.model = &empty;
        results.push_back(measure("empty timeline", imgui, view, in, frames));
    }
    {
        TimelineView probe; // one frame: which lanes the timeline chose
        ViewInputs in;
        in.model = &model;
        in.now_ns = model.tEnd();
        imgui.frame([&] { probe.draw(in); });
        std::printf("lanes: %s, %.0f px per rank\n", probe.laneLayout().compact ? "compact" : "full",
                    probe.laneLayout().laneHeight());
    }
    TimelineView view;
    ViewInputs in;
    in.model = &model;
    in.now_ns = model.tEnd();
    const int64_t mid = test::SyntheticRun::kT0 + int64_t(steps / 2) * test::SyntheticRun::kStepNs;
    results.push_back(measure("zoomed out (whole run)", imgui, view, in, frames));
    results.push_back(measure("mid zoom (1 s)", imgui, view, in, frames, mid, mid + 1'000'000'000));
    results.push_back(
        measure("zoomed in (2 steps)", imgui, view, in, frames, mid, mid + 2 * test::SyntheticRun::kStepNs));

    std::printf("%-24s %10s %10s %10s %10s %10s\n", "case", "median ms", "p90 ms", "max ms", "vertices",
                "row items");
    for (const Result& r : results)
        std::printf("%-24s %10.3f %10.3f %10.3f %10d %10zu\n", r.name, r.median_ms, r.p90_ms, r.max_ms,
                    r.vertices, r.items);
    const bool ok = results[1].median_ms <= 8.0;
    std::printf("goal: median <= 8 ms zoomed out: %s\n", ok ? "ok" : "MISSED");
    return ok ? 0 : 1;
}
