// view_actions.cpp: the plain button every ViewActions draws (see view_actions.hpp).
#include "views/view_actions.hpp"

namespace dt::app {

bool plainButton(const char* label, bool enabled, const char* why_disabled, const ImVec2& size) {
    if (!enabled)
        ImGui::BeginDisabled();
    const bool pressed = ImGui::Button(label, size);
    if (!enabled)
        ImGui::EndDisabled();
    if (!enabled && why_disabled && ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip("%s", why_disabled);
    return pressed && enabled;
}

} // namespace dt::app
