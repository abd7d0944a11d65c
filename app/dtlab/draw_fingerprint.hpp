// draw_fingerprint.hpp: a 64-bit fingerprint of one frame's Dear ImGui draw
// data, so the main loop can skip drawing a frame whose pixels would be the
// ones already on screen (a paused run, a narration hold, the gallery).
//
// It mixes, list by list, every vertex (position, uv, colour: 20 bytes), every
// index, and each command's clip rectangle, texture, offsets and count, with
// the framebuffer's size. Two frames with equal fingerprints draw the same
// triangles in the same order with the same state, hence the same pixels
// (barring a 64-bit collision; the loop redraws at least once a second anyway).
#pragma once

#include <cstdint>

struct ImDrawData;
struct ImVec4;

namespace dt::app {

uint64_t drawDataFingerprint(const ImDrawData& draw_data, int framebuffer_width, int framebuffer_height,
                             const ImVec4& clear_color);

} // namespace dt::app
