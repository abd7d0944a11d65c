// layout_place.hpp: where a view goes in the default tiling (View::layoutPlace).
//
// The window is tiled into areas (app_layout.cpp computes the rectangles):
//
//   +------------------------ TopBar -------------------------+
//   | LeftTop      | Timeline                                  |
//   |              +-------------------------------------------+
//   |              | Band       (under the timeline)           |
//   |              +-------------------------------------------+
//   +--------------+ LowerBand  (under the band)               |
//   | LeftBottom   +-------------------------------------------+
//   |              | Bottom: side by side, left to right       |
//   +--------------+-------------------------------------------+
//
//   TopBar      across the window, one frame high
//   LeftTop     the left column, 66 % of the body when a LeftBottom view is open, else all of it
//   LeftBottom  the rest of the left column
//   Timeline    the top of the right column; its height is the smallest
//               timeline_share (of the body) any open view asks for, 52 % when none does
//   Band, LowerBand  under the timeline, in that order. A band holds slots.
//               Every slot starts at the band's top (slots are alternatives:
//               no scenario opens two together) and the band is as tall as
//               its first slot (lowest number) with an open view. The views
//               of a slot stack top to bottom, each as tall as its `height`;
//               a view alone in its slot is as tall as the band (so two
//               alternatives opened from the View menu overlap exactly)
//   Bottom      the rest of the right column; each view takes width_share of
//               the column's width (0: the rest), in the order of the view list
//   Floating    half the window, centred (a view that does not say)
#pragma once

#include "dtlab/scenario.hpp"

namespace dt::app {

enum class LayoutArea { Floating, TopBar, LeftTop, LeftBottom, Timeline, Band, LowerBand, Bottom };

// What a view's place may depend on.
struct LayoutContext {
    const Scenario& scenario; // the run shown (a default Scenario when none is)
    float body_height = 0.0f; // px under the menu and the control bar
    bool crowded = false;     // another open view, not compact, stacks in the same band slot
};

struct LayoutPlace {
    LayoutArea area = LayoutArea::Floating;
    int slot = 0;         // Band, LowerBand: the slot (see above)
    float height = 0.0f;  // Band, LowerBand: px (whole pixels)
    bool compact = false; // Band, LowerBand: a thin strip, which leaves its slot's other views uncrowded
    float timeline_share = 1.0f; // while open: the timeline keeps at most this share of the body height
    float width_share = 0.0f;    // Bottom: share of the right column's width; 0 = the rest
};

} // namespace dt::app
