// test_frame_times.cpp: the main loop's per-frame cost summary (frame_times.hpp).
#include "frame_times.hpp"

#include <catch2/catch.hpp>

using dt::app::FrameTimes;

TEST_CASE("Frame times summarize each part by its median p90 and max", "[gui]") {
    FrameTimes times;
    SECTION("no frames say so") {
        CHECK(times.summary() == "no frames timed");
    }
    SECTION("build counts every frame, render only the drawn ones") {
        for (int i = 1; i <= 10; ++i)
            times.add(double(i), 10.0 * i, i % 2 == 0); // render drawn on 2, 4, 6, 8, 10
        CHECK(times.frames() == 10);
        CHECK(times.summary() == "10 frames: build median 6.00 ms, p90 10.00, max 10.00; "
                                 "render and swap (5 drawn) median 60.00 ms, p90 100.00, max 100.00");
    }
    SECTION("clear starts a new count") {
        times.add(1.0, 2.0, true);
        times.clear();
        CHECK(times.frames() == 0);
        CHECK(times.summary() == "no frames timed");
    }
}
