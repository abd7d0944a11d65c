// family_icon.hpp: a small drawn picture of a scenario's family for the
// gallery's cards, from the vector shapes of assets/icons.toml (they scale
// with the text size). The shipped file draws:
//
//   data parallel    four ranks in a ring, gradients flowing around it
//   ZeRO / FSDP      one model bar cut into four shards, one per rank
//   tensor parallel  one weight matrix split into column blocks
//   pipeline         a staircase of microbatches over stages (the bubble left empty)
//   fault tolerance  replicas around a lighthouse, one crossed out
//   DiLoCo           two islands of ranks joined by one thin link
//   backends         two lanes of the same all-reduce, side by side
#pragma once

#include "model/icon_file.hpp"

#include <imgui.h>

#include <vector>

namespace dt::app {

// Draws `shapes` into `draw` in the square at `min` of side `size`: `ink` the strokes,
// `accent` the point of it. No shapes: a plain rounded square.
void drawFamilyIcon(ImDrawList* draw, ImVec2 min, float size, const std::vector<IconShape>& shapes, ImU32 ink,
                    ImU32 accent);

} // namespace dt::app
