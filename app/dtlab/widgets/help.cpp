// help.cpp: help marker, empty state, legend entries (see help.hpp).
#include "widgets/help.hpp"

#include <algorithm>

namespace dt::app {

void helpMarker(const char* text) {
    ImGui::TextDisabled("(?)");
    if (ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 36.0f);
        ImGui::TextUnformatted(text);
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
}

void emptyState(const char* title, const char* hint) {
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float wrap =
        std::max(ImGui::GetFontSize() * 10.0f, std::min(avail.x - 16.0f, ImGui::GetFontSize() * 32.0f));
    const ImVec2 title_size = ImGui::CalcTextSize(title, nullptr, false, wrap);
    const ImVec2 hint_size = ImGui::CalcTextSize(hint, nullptr, false, wrap);
    const float block_h = title_size.y + ImGui::GetStyle().ItemSpacing.y + hint_size.y;
    const ImVec2 start = ImGui::GetCursorPos();
    const float top = start.y + std::max(0.0f, (avail.y - block_h) * 0.4f);
    ImGui::SetCursorPos(ImVec2(start.x + std::max(0.0f, (avail.x - title_size.x) * 0.5f), top));
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + wrap);
    ImGui::TextUnformatted(title);
    ImGui::PopTextWrapPos();
    ImGui::SetCursorPosX(start.x + std::max(0.0f, (avail.x - hint_size.x) * 0.5f));
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + wrap);
    ImGui::TextDisabled("%s", hint);
    ImGui::PopTextWrapPos();
}

void legendItem(ImU32 color, const char* label, bool first) {
    const float h = ImGui::GetTextLineHeight();
    const float swatch = h * 0.75f;
    const ImGuiStyle& style = ImGui::GetStyle();
    const float width = swatch + style.ItemInnerSpacing.x + ImGui::CalcTextSize(label).x;
    if (!first) { // on this line if it fits, else the next (decided before SameLine: see sameLineOrWrap)
        const float right_edge = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
        if (ImGui::GetItemRectMax().x + style.ItemSpacing.x * 2.0f + width <= right_edge)
            ImGui::SameLine(0.0f, style.ItemSpacing.x * 2.0f);
    }
    colorSwatch(color);
    ImGui::SameLine(0.0f, style.ItemInnerSpacing.x);
    ImGui::TextUnformatted(label);
}

void colorSwatch(ImU32 color) {
    const float h = ImGui::GetTextLineHeight();
    const float swatch = h * 0.75f;
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const ImVec2 a(p.x, p.y + (h - swatch) * 0.5f + 1.0f);
    ImGui::GetWindowDrawList()->AddRectFilled(a, ImVec2(a.x + swatch, a.y + swatch), color, 2.0f);
    ImGui::Dummy(ImVec2(swatch, h));
}

} // namespace dt::app
