// app_layout.cpp: the default tiling (layoutViews) and the views' windows
// drawn at it (AppContext::drawViews), each with a "(?)" in its title bar.
//
// layoutViews, in steps:
//   1. the control bar across the top; the left column (topology over
//      narration) and the right column share the rest
//   2. the right column's rows, top to bottom: the timeline, one row per open
//      Band and LowerBand view, then the Bottom views side by side; the
//      family's main view (mainViewOf, from assets/layouts.toml) is its own row
//   3. a row's least height shows minContentHeight() of content (the main view's:
//      all of its natural height, as drawn, while a shelf still fits under it; at
//      least its main_share of the column). While the rows'
//      least heights do not fit, the least important row (the Bottom row
//      first, then the bands from the last) moves into the shelf: one window
//      whose tabs are those views. A Bottom row too narrow for its views is
//      shelved too
//   4. the height left over goes to the rows by weight (the main view most),
//      none past its view's natural height, the rest to the timeline
#include "app_layout.hpp"

#include "app.hpp"
#include "model/scenario_catalog.hpp"

#include <imgui_internal.h>

#include <algorithm>
#include <cmath>
#include <functional>

namespace dt::app {

float minContentHeight() {
    return std::max(kMinContentPx, std::ceil(ImGui::GetTextLineHeightWithSpacing() * 5.0f));
}

std::string mainViewOf(const Scenario& scenario, const FamilyLayouts& layouts) {
    return layouts.of(familyOf(scenario)).main_view;
}

namespace {

// One row of the right column.
struct Row {
    std::vector<size_t> views; // side by side (the Bottom row), else one
    float least = 0.0f;        // px: kMinContentPx of content
    float cap = 0.0f;          // px: never taller (0 = no cap)
    float weight = 1.0f;       // share of the height left over
    int shelve_rank = 0;       // which rows go to the shelf first: highest first; 0 = never
    bool is_shelf = false;
    float height = 0.0f;
};

} // namespace

ViewTiling layoutViews(const std::vector<std::unique_ptr<View>>& views, const Scenario& scenario,
                       float menu_height, const FamilyLayouts& layouts, const DrawnContentHeights& drawn) {
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    const ImGuiStyle& style = ImGui::GetStyle();
    const float font = ImGui::GetFontSize();
    const float ctrl_h = ImGui::GetFrameHeight() + style.WindowPadding.y * 2.0f + 2.0f;
    const float y0 = menu_height + ctrl_h;
    const float body_h = std::max(100.0f, d.y - y0);
    const float title_h = font + style.FramePadding.y * 2.0f;
    const float least_h = std::ceil(title_h + style.WindowPadding.y * 2.0f + minContentHeight());
    const float tabs_h = ImGui::GetFrameHeightWithSpacing();
    const float least_w = font * 12.0f; // a Bottom view narrower than this is shelved

    // 1. Columns.
    const float left_hi = d.x * 0.45f;
    const float left_lo = std::min(font * 20.0f, left_hi);
    const float left_w = std::round(std::clamp(d.x * 0.3f, left_lo, left_hi));
    const float right_w = d.x - left_w;

    ViewTiling tiling;
    tiling.main_view = mainViewOf(scenario, layouts);
    const float main_share = layouts.of(familyOf(scenario)).main_share; // of the body height, at least
    tiling.rects.assign(views.size(), ImVec4(d.x * 0.25f, d.y * 0.25f, d.x * 0.5f, d.y * 0.5f));
    tiling.shelved.assign(views.size(), false);
    std::vector<LayoutPlace> places;
    for (const auto& view : views) {
        LayoutPlace place = view->layoutPlace(LayoutContext{scenario, body_h});
        const auto it = drawn.find(view->id());
        if (place.height > 0.0f && it != drawn.end()) // what it drew, not its estimate
            place.height = std::ceil(it->second + title_h + style.WindowPadding.y * 2.0f + 2.0f);
        places.push_back(place);
    }

    bool left_bottom_open = false, left_top_open = false;
    for (size_t i = 0; i < views.size(); ++i) {
        left_bottom_open = left_bottom_open || (views[i]->open && places[i].area == LayoutArea::LeftBottom);
        left_top_open = left_top_open || (views[i]->open && places[i].area == LayoutArea::LeftTop);
    }
    const float narration_h = !left_bottom_open ? 0.0f
                              : !left_top_open  ? body_h
                                                : std::max(least_h, std::round(body_h * 0.42f));
    for (size_t i = 0; i < views.size(); ++i) {
        if (places[i].area == LayoutArea::TopBar)
            tiling.rects[i] = ImVec4(0.0f, menu_height, d.x, ctrl_h);
        else if (places[i].area == LayoutArea::LeftTop)
            tiling.rects[i] = ImVec4(0.0f, y0, left_w, body_h - narration_h);
        else if (places[i].area == LayoutArea::LeftBottom)
            tiling.rects[i] = ImVec4(0.0f, y0 + body_h - narration_h, left_w, narration_h);
    }

    // 2. The right column's rows, in screen order.
    std::vector<Row> rows;
    auto isMain = [&](size_t i) { return views[i]->id() == tiling.main_view; };
    auto addRow = [&](size_t i, float weight, int shelve_rank) {
        Row row;
        row.views = {i};
        row.least = least_h;
        row.cap = places[i].height > 0.0f ? std::max(least_h, places[i].height) : 0.0f;
        row.weight = isMain(i) ? 4.0f : weight;
        row.shelve_rank = isMain(i) ? 0 : shelve_rank;
        if (isMain(i)) // the lesson's view: at least main_share of the column (or all it can use)
            row.least = std::max(least_h, std::round(body_h * main_share));
        if (isMain(i) && row.cap > 0.0f) // all of its content, while a shelf fits under it
            row.least = std::max(least_h, std::min(row.cap, std::max(row.least, body_h - least_h - tabs_h)));
        if (places[i].compact)
            row.weight = 0.5f;
        rows.push_back(row);
    };
    int band_rank = 100;
    for (LayoutArea area : {LayoutArea::Timeline, LayoutArea::Band, LayoutArea::LowerBand})
        for (size_t i = 0; i < views.size(); ++i)
            if (views[i]->open && places[i].area == area) {
                if (area == LayoutArea::Timeline)
                    addRow(i, 2.0f, 10);
                else
                    addRow(i, 1.0f, ++band_rank);
            }
    Row bottom;
    bottom.least = least_h;
    bottom.weight = 1.5f;
    bottom.shelve_rank = 1000;
    for (size_t i = 0; i < views.size(); ++i)
        if (views[i]->open && places[i].area == LayoutArea::Bottom) {
            if (isMain(i)) { // memory for ZeRO / FSDP: a row of its own, under the timeline
                addRow(i, 4.0f, 0);
                std::rotate(rows.begin() + std::min<size_t>(1, rows.size() - 1), rows.end() - 1, rows.end());
            } else {
                bottom.views.push_back(i);
            }
        }

    // 3. The shelf: the Bottom row when too narrow, then rows until the least heights fit.
    Row shelf;
    shelf.is_shelf = true;
    shelf.least = least_h + tabs_h;
    shelf.weight = 1.5f;
    float bottom_named = 0.0f; // the width shares the Bottom views ask for
    int bottom_rest = 0;
    for (size_t i : bottom.views) {
        bottom_named += places[i].width_share;
        bottom_rest += places[i].width_share > 0.0f ? 0 : 1;
    }
    const float share_scale = bottom_rest == 0 && bottom_named > 0.0f ? 1.0f / bottom_named : 1.0f;
    bool bottom_fits = true;
    for (size_t i : bottom.views) {
        const float share = places[i].width_share > 0.0f
                                ? places[i].width_share * share_scale
                                : std::max(0.0f, 1.0f - bottom_named) / float(bottom_rest);
        bottom_fits = bottom_fits && right_w * share >= least_w;
    }
    if (!bottom.views.empty()) {
        if (bottom_fits || bottom.views.size() == 1)
            rows.push_back(bottom);
        else
            shelf.views = bottom.views;
    }
    auto leastSum = [&]() {
        float sum = shelf.views.empty() ? 0.0f : shelf.least;
        for (const Row& r : rows)
            sum += r.least;
        return sum;
    };
    while (leastSum() > body_h) {
        auto victim = std::max_element(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
            return a.shelve_rank < b.shelve_rank;
        });
        if (victim == rows.end() || victim->shelve_rank == 0)
            break; // only the main view is left: it takes what there is
        shelf.views.insert(shelf.views.begin(), victim->views.begin(), victim->views.end());
        rows.erase(victim);
    }
    if (!shelf.views.empty()) {
        std::sort(shelf.views.begin(), shelf.views.end()); // tabs in the view list's order
        rows.push_back(shelf);
    }

    // 4. Heights: the least, then the rest by weight, capped; what is left to the top row.
    float left = body_h;
    for (Row& r : rows) {
        r.height = r.least;
        left -= r.least;
    }
    for (int round = 0; round < 8 && left > 0.5f; ++round) {
        float weights = 0.0f;
        for (const Row& r : rows)
            if (r.cap == 0.0f || r.height < r.cap)
                weights += r.weight;
        if (weights <= 0.0f)
            break;
        float given = 0.0f;
        for (Row& r : rows) {
            if (r.cap > 0.0f && r.height >= r.cap)
                continue;
            float add = left * r.weight / weights;
            if (r.cap > 0.0f)
                add = std::min(add, r.cap - r.height);
            r.height += add;
            given += add;
        }
        left -= given;
    }
    if (left > 0.5f && !rows.empty())
        rows.front().height += left; // every row at its natural height: the top row takes the rest

    float y = y0;
    for (size_t k = 0; k < rows.size(); ++k) {
        const Row& r = rows[k];
        const float top = std::round(y);
        y += r.height;
        const float h = (k + 1 == rows.size() ? y0 + body_h : std::round(y)) - top;
        if (r.is_shelf) {
            tiling.shelf = ImVec4(left_w, top, right_w, h);
            for (size_t i : r.views) {
                tiling.rects[i] = tiling.shelf;
                tiling.shelved[i] = true;
            }
            continue;
        }
        float x = left_w;
        for (size_t n = 0; n < r.views.size(); ++n) {
            const size_t i = r.views[n];
            const LayoutPlace& place = places[i];
            float w = right_w;
            if (r.views.size() > 1)
                w = place.width_share > 0.0f
                        ? std::round(right_w * place.width_share * share_scale)
                        : std::round(right_w * std::max(0.0f, 1.0f - bottom_named) / float(bottom_rest));
            if (n + 1 == r.views.size())
                w = left_w + right_w - x;
            tiling.rects[i] = ImVec4(x, top, w, h);
            x += w;
        }
    }
    return tiling;
}

// How far the items of `window` and of its child regions (drawn this frame, not
// scrolling sideways) reach past their right edge: text cut by the edge
// without a mark shows up here (DC.CursorMaxPos is the furthest item corner).
static void horizontalOverflow(const ImGuiWindow* window, float& overflow, std::string& where) {
    const ImGuiContext& g = *GImGui;
    for (const ImGuiWindow* w : g.Windows) {
        if (w->RootWindow != window->RootWindow || !w->Active || w->Hidden ||
            (w->Flags & ImGuiWindowFlags_HorizontalScrollbar) != 0 || w->ScrollbarX)
            continue;
        const float past = w->DC.CursorMaxPos.x - w->WorkRect.Max.x;
        if (past > overflow) {
            overflow = past;
            where = w->Name;
        }
    }
}

void AppContext::drawViews() {
    // Closing or opening a view (its X, the View menu, the script) tiles the rest again.
    std::vector<bool> open_now;
    for (const auto& view : m_views)
        open_now.push_back(view->open);
    if (open_now != m_open_views) {
        m_open_views = open_now;
        m_layout_dirty = true;
    }
    const float menu_height = ImGui::GetFrameHeight();
    const ImGuiCond cond = m_layout_dirty ? ImGuiCond_Always : ImGuiCond_FirstUseEver;
    const ViewTiling tiling = layoutViews(m_views, m_scenario, menu_height, m_layouts, m_drawn_heights);
    if (m_layout_dirty) { // the main view's height this tiling was sized from (drawing updates it)
        const auto main = m_drawn_heights.find(tiling.main_view);
        m_main_height_tiled = main != m_drawn_heights.end() ? main->second : 0.0f;
    }
    auto record = [&](const View& view, float content_h) {
        const ImVec2 pos = ImGui::GetWindowPos();
        const ImVec2 size = ImGui::GetWindowSize();
        WindowRect rect{
            view.id(), view.name(), pos, ImVec2(pos.x + size.x, pos.y + size.y), ImGui::GetWindowDrawList(),
            content_h, 0.0f,        ""};
        horizontalOverflow(ImGui::GetCurrentWindow(), rect.overflow_x, rect.overflow_where);
        m_windows_drawn.push_back(rect);
    };
    for (size_t i = 0; i < m_views.size(); ++i) {
        View& view = *m_views[i];
        if (!view.open || tiling.shelved[i])
            continue;
        const ImVec4 r = tiling.rects[i];
        ImGui::SetNextWindowPos(ImVec2(r.x, r.y), cond);
        ImGui::SetNextWindowSize(ImVec2(r.z, r.w), cond);
        const ImGuiWindowFlags flags = view.windowFlags() | ImGuiWindowFlags_NoCollapse;
        const std::string title = view.name() + "###" + view.id();
        float content_h = 0.0f;
        if (ImGui::Begin(title.c_str(), view.closable() ? &view.open : nullptr, flags)) {
            content_h = ImGui::GetContentRegionAvail().y;
            if ((flags & ImGuiWindowFlags_NoTitleBar) == 0)
                drawTitleHelp(view);
            view.draw(viewInputs());
            noteDrawnHeight(view, tiling);
        }
        record(view, content_h);
        ImGui::End();
    }
    drawShelf(tiling, cond, record);
    m_layout_dirty = m_retile_for_content;
    m_tiling_for_content = m_retile_for_content;
    m_retile_for_content = false;
}

// Keeps what the view just drew (its window's cursor reach), and tiles again when
// the main view's content has grown or shrunk by more than a line and a half
// since the last tiling (its first measured step arrived, its text wrapped
// anew). At most 4 such retiles between other causes: a scrollbar that comes
// and goes with the height can never make the layout flicker.
void AppContext::noteDrawnHeight(const View& view, const ViewTiling& tiling) {
    const ImGuiWindow* window = ImGui::GetCurrentWindow();
    const float height =
        window->DC.CursorMaxPos.y - window->DC.CursorStartPos.y + view.heightSavedByCompacting();
    m_drawn_heights[view.id()] = height;
    if (view.id() != tiling.main_view)
        return;
    if (m_layout_dirty) // this frame tiles for another cause: the retile budget starts again
        m_content_retiles = m_tiling_for_content ? m_content_retiles : 0;
    // A new moment to look at (a hold, the picture frozen, the next narration step): the budget
    // starts again, so the main view shows what the moment added (a kill's stopwatch lines).
    const int moment = m_narration_index * 4 + (m_frozen_since_ns != 0 ? 2 : 0) + (narrationHeld() ? 1 : 0);
    if (moment != m_retile_moment) {
        m_retile_moment = moment;
        m_content_retiles = 0;
    }
    if (std::fabs(height - m_main_height_tiled) > ImGui::GetTextLineHeightWithSpacing() * 1.5f &&
        m_content_retiles < 4) {
        ++m_content_retiles;
        m_retile_for_content = true;
    }
}

// The views that did not fit a row of their own, as tabs of one window. The
// narration's "look at" selects its view's tab once per step.
void AppContext::drawShelf(const ViewTiling& tiling, ImGuiCond cond,
                           const std::function<void(const View&, float)>& record) {
    if (tiling.shelf.z <= 0.0f)
        return;
    const ImVec4 r = tiling.shelf;
    ImGui::SetNextWindowPos(ImVec2(r.x, r.y), cond);
    ImGui::SetNextWindowSize(ImVec2(r.z, r.w), cond);
    const std::string& look_at = highlightedView();
    const bool select_look_at = !look_at.empty() && m_shelf_selected_for_step != m_narration_index;
    if (ImGui::Begin("###shelf", nullptr, ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoTitleBar) &&
        ImGui::BeginTabBar("##shelf_tabs", ImGuiTabBarFlags_FittingPolicyScroll)) {
        for (size_t i = 0; i < m_views.size(); ++i) {
            View& view = *m_views[i];
            if (!view.open || !tiling.shelved[i])
                continue;
            ImGuiTabItemFlags flags = ImGuiTabItemFlags_None;
            if (select_look_at && view.id() == look_at) {
                flags |= ImGuiTabItemFlags_SetSelected;
                m_shelf_selected_for_step = m_narration_index;
            }
            const std::string label = view.name() + "###tab_" + view.id();
            const bool shown =
                ImGui::BeginTabItem(label.c_str(), view.closable() ? &view.open : nullptr, flags);
            if (ImGui::IsItemHovered() && GImGui->HoveredIdTimer > 0.6f) { // a moment's rest, not a pass-over
                ImGui::BeginTooltip();
                ImGui::PushTextWrapPos(ImGui::GetFontSize() * 36.0f);
                ImGui::TextUnformatted(view.helpText());
                ImGui::PopTextWrapPos();
                ImGui::EndTooltip();
            }
            if (shown) {
                const float content_h = ImGui::GetContentRegionAvail().y;
                view.draw(viewInputs());
                record(view, content_h); // after drawing: the overflow check sees what the view drew
                m_windows_drawn.back().tab = true;
                ImGui::EndTabItem();
            }
        }
        ImGui::EndTabBar();
    }
    ImGui::End();
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
