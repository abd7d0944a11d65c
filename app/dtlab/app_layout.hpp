// app_layout.hpp: the default tiling of the views' windows. Each view says
// where it goes (View::layoutPlace, views/layout_place.hpp draws the areas);
// this turns the places into rectangles for the current display and font, so
// that every open view shows at least kMinContentPx of content at any window
// size from 1280 x 720 and any text size up to 32 px.
#pragma once

#include "dtlab/scenario.hpp"
#include "layout_file.hpp"
#include "views/view.hpp"

#include <imgui.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dt::app {

// The least height of a view's content area (below its title bar or tabs):
// kMinContentPx, or five lines of text when the text is large (at 32 px a
// view's own toolbar and axis take two of them).
inline constexpr float kMinContentPx = 120.0f;
[[nodiscard]] float minContentHeight(); // in an ImGui frame: follows the font

struct ViewTiling {
    std::vector<ImVec4> rects; // x, y, width, height of each view, in the order of `views`
    std::vector<bool> shelved; // drawn as a tab of the shelf window (its rect is the shelf's)
    ImVec4 shelf{0, 0, 0, 0};  // the shelf window (width 0: none)
    std::string main_view;     // the family's main view, given the most room
};

// The id of the view a scenario's family is about ("pipeline", "quorum", "memory", ...),
// as assets/layouts.toml says.
[[nodiscard]] std::string mainViewOf(const Scenario& scenario, const FamilyLayouts& layouts);

// The height each view's content really took when it was last drawn (px, from
// its window's cursor: wrapped text and all), by view id. A view that says its
// natural height (LayoutPlace::height > 0) is sized from this once it has been
// drawn: the estimate cannot know how its lines wrap at a given width and font.
using DrawnContentHeights = std::map<std::string, float>;

// Rectangles below a menu bar `menu_height` high (closed views get one too;
// they take no room). Call it inside an ImGui frame: sizes follow the style and the font.
// The family's main view and its least share of the column come from `layouts`.
[[nodiscard]] ViewTiling layoutViews(const std::vector<std::unique_ptr<View>>& views,
                                     const Scenario& scenario, float menu_height,
                                     const FamilyLayouts& layouts, const DrawnContentHeights& drawn = {});

} // namespace dt::app
