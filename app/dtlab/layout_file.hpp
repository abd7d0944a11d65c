// layout_file.hpp: assets/layouts.toml, the per-family presentation layout:
// which view a scenario family's lesson is about (its "main view", given the
// most room) and the least share of the right column it gets.
//
//   [pipeline]
//   main_view = "pipeline"   # a view id (View menu; `show ID` in a script)
//   main_share = 0.30        # 0.1 .. 0.8 of the column's height, at least
//
// A family the file does not name, or no file, falls back to the timeline at 0.30.
#pragma once

#include "model/scenario_catalog.hpp"

#include <array>
#include <string>
#include <vector>

namespace dt::app {

struct FamilyLayout {
    std::string main_view = "timeline";
    float main_share = 0.30f;
};

struct FamilyLayouts {
    std::array<FamilyLayout, kFamilyCount> by_family{};
    std::vector<std::string> problems; // FILE:LINE:COLUMN: why (the file then counts as absent)

    [[nodiscard]] const FamilyLayout& of(ScenarioFamily family) const { return by_family[size_t(family)]; }
};

// `view_ids` are the views that exist (a main_view must be one of them).
// path "" = no file: every family falls back to the timeline.
[[nodiscard]] FamilyLayouts loadFamilyLayouts(const std::string& path,
                                              const std::vector<std::string>& view_ids);

} // namespace dt::app
