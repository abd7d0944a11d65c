// view.cpp: the helpers every view shares (see view.hpp).
#include "views/view.hpp"

#include <imgui_internal.h>

namespace dt::app {

bool rowInsideWindow(float top, float bottom) {
    const ImRect& visible = ImGui::GetCurrentWindow()->InnerClipRect;
    return top >= visible.Min.y - 0.5f && bottom <= visible.Max.y + 0.5f;
}

} // namespace dt::app
