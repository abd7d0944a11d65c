// test_frame_pacer.cpp: the main loop's frame rate, 60 per second while the
// user interacts and 20 otherwise (app/dtlab/frame_pacer.hpp), and the
// fingerprint that lets it skip a frame identical to the one on screen.
#include "draw_fingerprint.hpp"
#include "frame_pacer.hpp"
#include "gui/views_fixture.hpp"

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

TEST_CASE("Two frames that draw the same have one fingerprint, and any change makes another", "[pacer]") {
    dt::test::HeadlessImGui imgui;
    const ImVec4 clear(0.1f, 0.1f, 0.1f, 1.0f);
    auto frameWithRectAt = [&](float x) {
        imgui.frame([&] {
            ImGui::Text("steps done 16 / 600");
            ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(x, 100.0f), ImVec2(x + 50.0f, 150.0f),
                                                      IM_COL32(200, 80, 80, 255));
        });
        return dt::app::drawDataFingerprint(*ImGui::GetDrawData(), 1600, 900, clear);
    };
    frameWithRectAt(100.0f); // a new window's first frame differs (ImGui sizes it)
    const uint64_t first = frameWithRectAt(100.0f);
    SECTION("the same content drawn again") {
        CHECK(frameWithRectAt(100.0f) == first);
    }
    SECTION("a rectangle moved by one pixel") {
        CHECK(frameWithRectAt(101.0f) != first);
    }
    SECTION("another framebuffer size or clear colour") {
        frameWithRectAt(100.0f);
        const ImDrawData& same = *ImGui::GetDrawData();
        CHECK(dt::app::drawDataFingerprint(same, 1600, 900, clear) == first);
        CHECK(dt::app::drawDataFingerprint(same, 1920, 1080, clear) != first);
        CHECK(dt::app::drawDataFingerprint(same, 1600, 900, ImVec4(1.0f, 1.0f, 1.0f, 1.0f)) != first);
    }
}
