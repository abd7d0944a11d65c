// layout_place.hpp: where a view goes in the default tiling (View::layoutPlace).
//
// The window is tiled into areas (app_layout.cpp computes the rectangles):
//
//   +------------------------ TopBar -------------------------+
//   | LeftTop      | Timeline                                  |
//   |              +-------------------------------------------+
//   |              | Band        (one row per open view)       |
//   |              +-------------------------------------------+
//   +--------------+ LowerBand   (one row per open view)       |
//   | LeftBottom   +-------------------------------------------+
//   |              | Bottom: side by side, left to right       |
//   +--------------+-------------------------------------------+
//
//   TopBar      across the window, one frame high
//   LeftTop     the left column; LeftBottom under it when open
//   Timeline, Band, LowerBand, Bottom   the rows of the right column, top to
//               bottom. Each row gets at least a minimum content height
//               (kMinContentPx); the scenario family's main view (the pipeline
//               grid, the quorum, memory for ZeRO/FSDP, ...) gets the most of
//               the rest, a row never more than its `height` (its content's
//               natural height; 0 = any). Rows that do not fit, and a Bottom
//               row too narrow for its views, become tabs of one shelf window.
//   Bottom      each view takes width_share of the column's width (0: the rest)
//   Floating    half the window, centred (a view that does not say)
#pragma once

#include "dtlab/scenario.hpp"

namespace dt::app {

enum class LayoutArea { Floating, TopBar, LeftTop, LeftBottom, Timeline, Band, LowerBand, Bottom };

// What a view's place may depend on.
struct LayoutContext {
    const Scenario& scenario; // the run shown (a default Scenario when none is)
    float body_height = 0.0f; // px under the menu and the control bar
};

struct LayoutPlace {
    LayoutArea area = LayoutArea::Floating;
    float height = 0.0f;      // Band, LowerBand: the content's natural height in px (0 = as tall as given)
    bool compact = false;     // a small control: gets its height, never more
    float width_share = 0.0f; // Bottom: share of the right column's width; 0 = the rest
};

} // namespace dt::app
