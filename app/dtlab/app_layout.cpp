// app_layout.cpp: the default tiling (layoutViews) and the views' windows
// drawn at it (AppContext::drawViews), each with a "(?)" in its title bar.
#include "app_layout.hpp"

#include "app.hpp"

#include <imgui_internal.h>

#include <algorithm>
#include <climits>
#include <cmath>

namespace dt::app {

namespace {

bool isBand(LayoutArea area) {
    return area == LayoutArea::Band || area == LayoutArea::LowerBand;
}

// The places of the views: first where each goes, then, knowing which band
// views share a slot with an open view that is not compact, their sizes.
std::vector<LayoutPlace> placesOf(const std::vector<std::unique_ptr<View>>& views, const Scenario& scenario,
                                  float body_h) {
    std::vector<LayoutPlace> places;
    for (const auto& view : views)
        places.push_back(view->layoutPlace(LayoutContext{scenario, body_h, false}));
    for (size_t i = 0; i < views.size(); ++i) {
        if (!isBand(places[i].area))
            continue;
        bool crowded = false;
        for (size_t j = 0; j < views.size(); ++j)
            crowded = crowded || (j != i && views[j]->open && places[j].area == places[i].area &&
                                  places[j].slot == places[i].slot && !places[j].compact);
        if (crowded)
            places[i] = views[i]->layoutPlace(LayoutContext{scenario, body_h, true});
    }
    return places;
}

// A band's height: the open views of its first slot with an open view, stacked.
float bandHeight(const std::vector<std::unique_ptr<View>>& views, const std::vector<LayoutPlace>& places,
                 LayoutArea area) {
    int first = INT_MAX;
    for (size_t i = 0; i < views.size(); ++i)
        if (views[i]->open && places[i].area == area)
            first = std::min(first, places[i].slot);
    float height = 0.0f;
    for (size_t i = 0; i < views.size(); ++i)
        if (views[i]->open && places[i].area == area && places[i].slot == first)
            height += places[i].height;
    return height;
}

} // namespace

std::vector<ImVec4> layoutViews(const std::vector<std::unique_ptr<View>>& views, const Scenario& scenario,
                                float menu_height) {
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    const ImGuiStyle& style = ImGui::GetStyle();
    const float ctrl_h = ImGui::GetFrameHeight() + style.WindowPadding.y * 2.0f + 2.0f;
    const float y0 = menu_height + ctrl_h;
    const float body_h = std::max(100.0f, d.y - y0);
    const float left_w =
        std::round(std::clamp(d.x * 0.32f, std::min(d.x * 0.5f, ImGui::GetFontSize() * 24.0f), d.x * 0.45f));
    const float right_w = d.x - left_w;
    const std::vector<LayoutPlace> places = placesOf(views, scenario, body_h);

    bool left_bottom_open = false;
    float timeline_share = 0.52f;
    for (size_t i = 0; i < views.size(); ++i) {
        if (!views[i]->open)
            continue;
        left_bottom_open = left_bottom_open || places[i].area == LayoutArea::LeftBottom;
        timeline_share = std::min(timeline_share, places[i].timeline_share);
    }
    const float left_top_h = std::round(left_bottom_open ? body_h * 0.66f : body_h);
    const float timeline_h = std::round(body_h * timeline_share);
    const float band_h = bandHeight(views, places, LayoutArea::Band);
    const float lower_h = bandHeight(views, places, LayoutArea::LowerBand);
    const float bottom_y = y0 + timeline_h + band_h + lower_h;
    const float bottom_h = std::max(60.0f, body_h - timeline_h - band_h - lower_h);

    std::vector<ImVec4> rects;
    float bottom_x = left_w, bottom_rest = right_w; // the Bottom row so far
    for (size_t i = 0; i < views.size(); ++i) {
        const LayoutPlace& place = places[i];
        switch (place.area) {
        case LayoutArea::TopBar:
            rects.emplace_back(0.0f, menu_height, d.x, ctrl_h);
            break;
        case LayoutArea::LeftTop:
            rects.emplace_back(0.0f, y0, left_w, left_top_h);
            break;
        case LayoutArea::LeftBottom:
            rects.emplace_back(0.0f, y0 + left_top_h, left_w, body_h - left_top_h);
            break;
        case LayoutArea::Timeline:
            rects.emplace_back(left_w, y0, right_w, timeline_h);
            break;
        case LayoutArea::Band:
        case LayoutArea::LowerBand: {
            const bool band = place.area == LayoutArea::Band;
            const float top = band ? y0 + timeline_h : y0 + timeline_h + band_h;
            int in_slot = 0;    // views of this slot, open or not
            float above = 0.0f; // the open ones above this view
            for (size_t j = 0; j < views.size(); ++j) {
                if (places[j].area != place.area || places[j].slot != place.slot)
                    continue;
                ++in_slot;
                if (j < i && views[j]->open)
                    above += places[j].height;
            }
            const float height = in_slot == 1 ? (band ? band_h : lower_h) : place.height;
            rects.emplace_back(left_w, top + above, right_w, height);
            break;
        }
        case LayoutArea::Bottom: {
            const float w = place.width_share > 0.0f ? std::round(right_w * place.width_share) : bottom_rest;
            rects.emplace_back(bottom_x, bottom_y, w, bottom_h);
            bottom_x += w;
            bottom_rest -= w;
            break;
        }
        case LayoutArea::Floating:
            rects.emplace_back(d.x * 0.25f, d.y * 0.25f, d.x * 0.5f, d.y * 0.5f);
            break;
        }
    }
    return rects;
}

void AppContext::drawViews() {
    const float menu_height = ImGui::GetFrameHeight();
    const ImGuiCond cond = m_layout_dirty ? ImGuiCond_Always : ImGuiCond_FirstUseEver;
    const std::vector<ImVec4> rects = layoutViews(m_views, m_scenario, menu_height);
    for (size_t i = 0; i < m_views.size(); ++i) {
        View& view = *m_views[i];
        if (!view.open)
            continue;
        const ImVec4 r = rects[i];
        ImGui::SetNextWindowPos(ImVec2(r.x, r.y), cond);
        ImGui::SetNextWindowSize(ImVec2(r.z, r.w), cond);
        const ImGuiWindowFlags flags = view.windowFlags() | ImGuiWindowFlags_NoCollapse;
        const std::string title = view.name() + "###" + view.id();
        if (ImGui::Begin(title.c_str(), view.closable() ? &view.open : nullptr, flags)) {
            if ((flags & ImGuiWindowFlags_NoTitleBar) == 0)
                drawTitleHelp(view);
            view.draw(viewInputs());
        }
        const ImVec2 pos = ImGui::GetWindowPos();
        const ImVec2 size = ImGui::GetWindowSize();
        m_windows_drawn.push_back(WindowRect{
            view.id(), view.name(), pos, ImVec2(pos.x + size.x, pos.y + size.y), ImGui::GetWindowDrawList()});
        ImGui::End();
    }
    m_layout_dirty = false;
}

// "(?)" in the title bar, left of the close button: the view's help text on hover.
void AppContext::drawTitleHelp(const View& view) {
    ImGuiWindow* window = ImGui::GetCurrentWindow();
    const ImRect bar = window->TitleBarRect();
    const char* marker = "(?)";
    const ImVec2 size = ImGui::CalcTextSize(marker);
    const ImVec2 at(bar.Max.x - ImGui::GetFrameHeight() * 1.2f - size.x - 6.0f,
                    bar.Min.y + (bar.GetHeight() - size.y) * 0.5f);
    ImDrawList* draw = ImGui::GetWindowDrawList();
    draw->PushClipRect(bar.Min, bar.Max, false);
    const bool hover = ImGui::IsMouseHoveringRect(at, ImVec2(at.x + size.x, at.y + size.y), false) &&
                       ImGui::IsWindowHovered(ImGuiHoveredFlags_AllowWhenBlockedByActiveItem);
    draw->AddText(at, ImGui::GetColorU32(hover ? ImGuiCol_Text : ImGuiCol_TextDisabled), marker);
    draw->PopClipRect();
    if (hover) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 36.0f);
        ImGui::TextUnformatted(view.helpText());
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
}

} // namespace dt::app
