// test_frame_pacer.cpp: the main loop's frame rate, 60 per second while the
// user interacts and 20 otherwise (app/dtlab/frame_pacer.hpp).
#include "frame_pacer.hpp"

#include <catch2/catch.hpp>

using dt::app::FramePacer;
using namespace std::chrono_literals;

TEST_CASE("The frame pacer draws 60 frames a second for a second after input, 20 otherwise", "[pacer]") {
    FramePacer pacer;
    const FramePacer::Clock::time_point t0 = FramePacer::Clock::now();

    SECTION("with no input yet, frames come at the idle rate") {
        CHECK_FALSE(pacer.interactive(t0));
        CHECK(pacer.frameBudget(t0) == FramePacer::kIdleFrame);
    }
    SECTION("input makes the next second interactive, then the rate falls back") {
        pacer.noteInput(t0);
        CHECK(pacer.frameBudget(t0) == FramePacer::kInteractiveFrame);
        CHECK(pacer.frameBudget(t0 + 999ms) == FramePacer::kInteractiveFrame);
        CHECK(pacer.frameBudget(t0 + 1000ms) == FramePacer::kIdleFrame);
        pacer.noteInput(t0 + 1500ms);
        CHECK(pacer.interactive(t0 + 2s));
    }
    SECTION("the idle rate is still a live picture, and the interactive one is 60 per second") {
        CHECK(FramePacer::kIdleFrame <= 50ms);
        CHECK(FramePacer::kInteractiveFrame < 17ms);
    }
}
