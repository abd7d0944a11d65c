// icon_file.hpp: assets/icons.toml, the gallery's family icons as vector
// shapes in a unit square (0,0 top left, 1,1 bottom right), so they scale with
// the text size with no image file to blur.
//
//   [[pipeline]]                       # one table per shape, drawn in order
//   shape = "rect"                     # rect | circle | line | triangle
//   from = [0.08, 0.12]  to = [0.19, 0.28]       (rect, line)
//   at = [0.5, 0.5]  radius = 0.11               (circle)
//   points = [[0.5, 0.12], [0.42, 0.42], [0.58, 0.42]]   (triangle)
//   fill = true                        # rect, circle, triangle: filled, else an outline
//   ink = "accent"                     # "ink" (the card's text colour) or "accent" (the theme's)
//   width = 1.0                        # outline / line width, in units of size / 28 (at least 1.5 px)
// A family with no shapes (or no file) draws a plain rounded square.
#pragma once

#include "model/scenario_catalog.hpp"

#include <imgui.h>

#include <array>
#include <string>
#include <vector>

namespace dt::app {

struct IconShape {
    enum class Kind { Rect, Circle, Line, Triangle };
    Kind kind = Kind::Rect;
    std::vector<ImVec2> points; // rect and line: from, to; circle: the centre; triangle: three corners
    float radius = 0.0f;        // circle, as a fraction of the square's side
    bool fill = false;
    bool accent = false; // else ink
    float width = 1.0f;
};

struct FamilyIcons {
    std::array<std::vector<IconShape>, kFamilyCount> by_family{};
    std::vector<std::string> problems; // FILE:LINE:COLUMN: why (the file then counts as absent)

    [[nodiscard]] const std::vector<IconShape>& of(ScenarioFamily family) const {
        return by_family[size_t(family)];
    }
};

// path "" = no file: every family draws the plain square.
[[nodiscard]] FamilyIcons loadFamilyIcons(const std::string& path);

} // namespace dt::app
