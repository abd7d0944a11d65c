// app_layout.hpp: the default tiling of the views' windows. Each view says
// where it goes (View::layoutPlace, views/layout_place.hpp draws the areas);
// this turns the places into rectangles for the current display and font.
#pragma once

#include "dtlab/scenario.hpp"
#include "views/view.hpp"

#include <imgui.h>

#include <memory>
#include <vector>

namespace dt::app {

// The rectangle (x, y, width, height) of each view, in the order of `views`,
// below a menu bar `menu_height` high (closed views get one too; they take no
// room). Call it inside an ImGui frame: sizes follow the style and the font.
[[nodiscard]] std::vector<ImVec4> layoutViews(const std::vector<std::unique_ptr<View>>& views,
                                              const Scenario& scenario, float menu_height);

} // namespace dt::app
