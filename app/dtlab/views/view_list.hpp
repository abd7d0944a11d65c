// view_list.hpp: every view of the window, built in one place.
#pragma once

#include "views/view.hpp"

#include <memory>
#include <vector>

namespace dt::app {

// The views in drawing order, which is also the View menu's order, the
// Bottom area's left-to-right order and the stacking order within a band slot.
[[nodiscard]] std::vector<std::unique_ptr<View>> makeViews();

} // namespace dt::app
