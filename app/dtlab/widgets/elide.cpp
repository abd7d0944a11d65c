// elide.cpp: see elide.hpp. Widths come from the current ImGui font.
#include "widgets/elide.hpp"

#include <imgui.h>

#include <cstring>

namespace dt::app {

namespace {

float widthOf(const std::string& text) {
    return ImGui::CalcTextSize(text.c_str()).x;
}

constexpr const char* kMark = "...";

} // namespace

std::string elideToWidth(const std::string& text, float width) {
    if (widthOf(text) <= width)
        return text;
    const float mark = widthOf(kMark);
    // The longest prefix that fits beside the mark (binary search on the byte length,
    // then back to a UTF-8 boundary and, if there is one nearby, a word boundary).
    size_t lo = 0, hi = text.size();
    while (lo < hi) {
        const size_t mid = (lo + hi + 1) / 2;
        if (widthOf(text.substr(0, mid)) + mark <= width)
            lo = mid;
        else
            hi = mid - 1;
    }
    while (lo > 0 && (static_cast<unsigned char>(text[lo]) & 0xC0) == 0x80)
        --lo;
    const size_t space = text.rfind(' ', lo);
    if (space != std::string::npos && space > 0 && lo - space < 12)
        lo = space;
    while (lo > 0 && (text[lo - 1] == ' ' || text[lo - 1] == ',' || text[lo - 1] == '.'))
        --lo;
    return text.substr(0, lo) + kMark;
}

std::vector<std::string> wrapLines(const std::string& text, float width, int max_lines) {
    std::vector<std::string> lines;
    ImFont* font = ImGui::GetFont();
    const float scale = ImGui::GetFontSize() / font->FontSize;
    const char* s = text.c_str();
    const char* end = s + text.size();
    while (s < end && int(lines.size()) < max_lines) {
        while (s < end && (*s == ' ' || *s == '\n'))
            ++s;
        if (s >= end)
            break;
        const char* eol = font->CalcWordWrapPositionA(scale, s, end, width);
        if (eol == s) // one character wider than the line: take it anyway
            ++eol;
        const char* newline = static_cast<const char*>(memchr(s, '\n', size_t(eol - s)));
        if (newline)
            eol = newline;
        std::string line(s, eol);
        s = eol;
        if (int(lines.size()) + 1 == max_lines) {
            bool more = false;
            for (const char* p = s; p < end && !more; ++p)
                more = *p != ' ' && *p != '\n';
            if (more)
                line = elideToWidth(line + " " + std::string(s, end), width);
        }
        lines.push_back(std::move(line));
    }
    return lines;
}

bool textElided(const std::string& text, float width) {
    const std::string shown = elideToWidth(text, width);
    ImGui::TextUnformatted(shown.c_str());
    const bool shortened = shown.size() != text.size();
    if (shortened && ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 36.0f);
        ImGui::TextUnformatted(text.c_str());
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
    return shortened;
}

void sameLineOrWrap(float width) {
    // Decided before SameLine: SameLine then NewLine would leave the cursor's furthest
    // point past the edge (NewLine records an empty item where SameLine put it).
    const float right_edge = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
    if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + width <= right_edge)
        ImGui::SameLine();
}

void flowText(const std::string& text, ImU32 color) {
    sameLineOrWrap(widthOf(text));
    if (color != 0)
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(color));
    if (widthOf(text) <= ImGui::GetContentRegionAvail().x)
        ImGui::TextUnformatted(text.c_str());
    else
        ImGui::TextWrapped("%s", text.c_str());
    if (color != 0)
        ImGui::PopStyleColor();
}

void flowTextDisabled(const std::string& text) {
    flowText(text, ImGui::GetColorU32(ImGuiCol_TextDisabled));
}

bool textDisabledElided(const std::string& text) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    const bool shortened = textElided(text, ImGui::GetContentRegionAvail().x);
    ImGui::PopStyleColor();
    return shortened;
}

} // namespace dt::app
