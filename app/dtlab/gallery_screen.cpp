// gallery_screen.cpp: see gallery_screen.hpp.
//
// Per frame:
//   1. header: what the gallery is, the filter box, the path field
//   2. keys: arrows move the focus (Up / Down by a row), Enter opens it, Esc closes
//   3. per topic: its title and workshop minutes, then its cards in rows of
//      `columns` (as many ~19-em cards as fit); a row is as tall as its tallest card
#include "gallery_screen.hpp"

#include "widgets/elide.hpp"
#include "widgets/family_icon.hpp"

#include <GLFW/glfw3.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace dt::app {

namespace {

std::string lower(std::string s) {
    for (char& c : s)
        c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

bool matches(const ScenarioCard& card, const CatalogTopic& topic, const std::string& filter) {
    if (filter.empty())
        return true;
    const std::string needle = lower(filter);
    for (const std::string* field : {&card.name, &card.title, &card.setup, &card.description, &topic.title})
        if (lower(*field).find(needle) != std::string::npos)
            return true;
    return std::string(familyLabel(card.family)).find(needle) != std::string::npos;
}

// "4 ranks  ·  zero2" with ASCII only (the atlas has Latin-1).
std::string setupLine(const ScenarioCard& card) {
    return std::to_string(card.ranks) + (card.ranks == 1 ? " rank, " : " ranks, ") + card.setup;
    // (the family is the icon's; the tooltip names it)
}

std::string narrationLine(const ScenarioCard& card) {
    if (card.narration_steps == 0)
        return "no narration";
    char line[96];
    const double minutes = std::max(0.5, std::round(card.narration_minutes * 2.0) / 2.0);
    std::snprintf(line, sizeof(line), "%d step%s, ~%.3g min to narrate", card.narration_steps,
                  card.narration_steps == 1 ? "" : "s", minutes);
    return line;
}

constexpr float kCardEms = 19.0f; // a card's least width, in font sizes

} // namespace

void GalleryScreen::reload(const std::string& gallery_toml, const std::string& scenarios_dir) {
    m_catalog = loadScenarioCatalog(gallery_toml, scenarios_dir);
    m_open_error.clear();
    m_focus = std::clamp(m_focus, 0, std::max(0, m_catalog.cardCount() - 1));
}

std::string GalleryScreen::focusedName() const {
    return m_focused_name;
}

std::vector<GalleryScreen::Shown> GalleryScreen::shownCards() const {
    std::vector<Shown> shown;
    for (size_t t = 0; t < m_catalog.topics.size(); ++t)
        for (const ScenarioCard& card : m_catalog.topics[t].cards)
            if (matches(card, m_catalog.topics[t], m_filter))
                shown.push_back(Shown{&card, &m_catalog.topics[t], int(t)});
    return shown;
}

float GalleryScreen::cardHeight(const ScenarioCard& card, float width) const {
    const float pad = ImGui::GetFontSize() * 0.5f;
    const float line = ImGui::GetTextLineHeightWithSpacing();
    if (!card.error.empty()) {
        const float text_w = width - 2.0f * pad;
        const float error_h = ImGui::CalcTextSize(card.error.c_str(), nullptr, false, text_w).y;
        return 2.0f * pad + line * 1.5f + error_h;
    }
    return 2.0f * pad + line * 5.0f;
}

void GalleryScreen::drawCard(ViewActions& actions, const GalleryLook& look, const Shown& shown, bool focused,
                             ImVec2 size, bool& clicked) {
    const ScenarioCard& card = *shown.card;
    const ImVec2 min = ImGui::GetCursorScreenPos();
    const std::string label = card.name + "##card" + std::to_string(shown.topic_index);
    clicked = actions.clickArea(label.c_str(), size);
    const bool hovered = ImGui::IsItemHovered();
    const ImVec2 max(min.x + size.x, min.y + size.y);
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImGuiStyle& style = ImGui::GetStyle();
    draw->AddRectFilled(min, max, ImGui::GetColorU32(hovered ? ImGuiCol_FrameBgHovered : ImGuiCol_FrameBg),
                        style.FrameRounding * 2.0f);
    const bool broken = !card.error.empty();
    const ImU32 border = focused ? look.accent : broken ? look.error : ImGui::GetColorU32(ImGuiCol_Border);
    draw->AddRect(min, max, border, style.FrameRounding * 2.0f, 0, focused ? 3.0f : 1.0f);

    const float font = ImGui::GetFontSize();
    const float pad = font * 0.5f;
    const float line = ImGui::GetTextLineHeightWithSpacing();
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
    const ImU32 dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    if (broken) {
        const float text_w = size.x - 2.0f * pad;
        const std::string title = elideToWidth(card.name + ".toml does not load", text_w);
        draw->AddText(ImVec2(min.x + pad, min.y + pad), look.error, title.c_str());
        draw->AddText(nullptr, 0.0f, ImVec2(min.x + pad, min.y + pad + line * 1.5f), text, card.error.c_str(),
                      nullptr, text_w);
    } else {
        const float icon = std::min(font * 3.2f, size.y - 2.0f * pad);
        static const std::vector<IconShape> kNoShapes;
        drawFamilyIcon(draw, ImVec2(min.x + pad, min.y + pad), icon,
                       look.icons ? look.icons->of(card.family) : kNoShapes, dim, look.accent);
        const float x = min.x + pad * 2.0f + icon;
        const float text_w = max.x - pad - x;
        float y = min.y + pad;
        auto put = [&](const std::string& s, ImU32 color) {
            draw->AddText(ImVec2(x, y), color, elideToWidth(s, text_w).c_str());
            y += line;
        };
        put(card.title, text);
        put(setupLine(card) + (card.spare ? "  (spare)" : ""), dim);
        put(narrationLine(card), dim);
        for (const std::string& l : wrapLines(card.summary, text_w, 2))
            put(l, text);
    }
    if (hovered) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(font * 36.0f);
        ImGui::TextUnformatted(card.title.c_str());
        ImGui::TextDisabled("%s", card.path.c_str());
        if (broken)
            ImGui::TextUnformatted(card.error.c_str());
        else {
            ImGui::TextUnformatted(card.description.c_str());
            ImGui::TextDisabled("%s  (%s)", setupLine(card).c_str(), familyLabel(card.family));
            ImGui::TextDisabled("Click to start it: its ranks start now; a run that is open stops.");
        }
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
}

GalleryScreen::Outcome GalleryScreen::draw(ViewActions& actions, const GalleryLook& look,
                                           const std::vector<int>& keys, bool can_close) {
    Outcome outcome;
    const float font = ImGui::GetFontSize();

    // 1. Header.
    ImGui::TextUnformatted("Pick a scenario");
    ImGui::SameLine();
    ImGui::TextDisabled("real rank processes start on this machine; the narration says what to watch");
    if (can_close) {
        ImGui::SameLine();
        if (actions.button("Back to the run (Esc)##gallery"))
            outcome.close = true;
    }
    ImGui::SetNextItemWidth(std::min(font * 22.0f, ImGui::GetContentRegionAvail().x * 0.4f));
    if (ImGui::InputTextWithHint("##gallery_filter", "filter: a word, a strategy, a topic", m_filter,
                                 sizeof(m_filter)))
        m_focus = 0; // a new filter: Enter starts its first match
    const bool filter_active = ImGui::IsItemActive();
    ImGui::SameLine();
    ImGui::SetNextItemWidth(std::max(font * 8.0f, ImGui::GetContentRegionAvail().x - font * 7.0f));
    const bool path_enter =
        ImGui::InputTextWithHint("##gallery_path", "or a file: a recording (.dtrec), a scenario elsewhere",
                                 m_path, sizeof(m_path), ImGuiInputTextFlags_EnterReturnsTrue);
    const bool path_active = ImGui::IsItemActive();
    ImGui::SameLine();
    if ((actions.button("Open file##gallery") || path_enter) && m_path[0] != '\0')
        outcome.open_path = m_path;
    if (!m_open_error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(look.error));
        ImGui::TextWrapped("%s", m_open_error.c_str());
        ImGui::PopStyleColor();
    }
    if (!m_catalog.problem.empty())
        ImGui::TextDisabled("assets/gallery.toml: %s (every scenario is under Other scenarios)",
                            m_catalog.problem.c_str());
    ImGui::Separator();

    // 2. Keys (not while the path field is being typed in).
    const std::vector<Shown> shown = shownCards();
    const int count = int(shown.size());
    m_focus = std::clamp(m_focus, 0, std::max(0, count - 1));
    for (int key : keys) {
        if (path_active)
            break;
        const int before = m_focus;
        if (key == GLFW_KEY_ESCAPE && can_close)
            outcome.close = true;
        else if (count == 0)
            continue;
        else if (key == GLFW_KEY_RIGHT && !filter_active)
            m_focus = std::min(count - 1, m_focus + 1);
        else if (key == GLFW_KEY_LEFT && !filter_active)
            m_focus = std::max(0, m_focus - 1);
        else if (key == GLFW_KEY_DOWN)
            m_focus = std::min(count - 1, m_focus + m_columns);
        else if (key == GLFW_KEY_UP)
            m_focus = std::max(0, m_focus - m_columns);
        else if (key == GLFW_KEY_HOME && !filter_active)
            m_focus = 0;
        else if (key == GLFW_KEY_END && !filter_active)
            m_focus = count - 1;
        else if ((key == GLFW_KEY_ENTER || key == GLFW_KEY_KP_ENTER) &&
                 shown[size_t(m_focus)].card->error.empty())
            outcome.open_path = shown[size_t(m_focus)].card->path;
        m_scroll_to_focus = m_scroll_to_focus || m_focus != before;
    }
    m_focused_name = count > 0 ? shown[size_t(m_focus)].card->name : "";

    // 3. The cards, topic by topic.
    ImGui::BeginChild("##gallery_cards", ImVec2(0, 0), false);
    if (count == 0)
        ImGui::TextDisabled(m_catalog.cardCount() == 0
                                ? "No scenarios found: the scenarios folder is empty or missing."
                                : "No scenario matches the filter.");
    const float avail = ImGui::GetContentRegionAvail().x;
    const float gap = font * 0.6f;
    m_columns = std::max(1, int((avail + gap) / (font * kCardEms + gap)));
    const float card_w = std::floor((avail - gap * float(m_columns - 1)) / float(m_columns));
    int index = 0;
    int topic_number = 0;
    for (size_t t = 0; t < m_catalog.topics.size(); ++t) {
        const CatalogTopic& topic = m_catalog.topics[t];
        std::vector<const ScenarioCard*> cards;
        for (const ScenarioCard& card : topic.cards)
            if (matches(card, topic, m_filter))
                cards.push_back(&card);
        if (topic.title != "Other scenarios")
            ++topic_number;
        if (cards.empty())
            continue;
        ImGui::Spacing();
        if (topic.title == "Other scenarios")
            ImGui::TextUnformatted(topic.title.c_str());
        else
            ImGui::Text("%d. %s", topic_number, topic.title.c_str());
        if (topic.minutes > 0) {
            ImGui::SameLine();
            ImGui::TextDisabled("%d min in the workshop", topic.minutes);
        }
        for (size_t first = 0; first < cards.size(); first += size_t(m_columns)) {
            const size_t last = std::min(cards.size(), first + size_t(m_columns));
            float row_h = 0.0f;
            for (size_t c = first; c < last; ++c)
                row_h = std::max(row_h, cardHeight(*cards[c], card_w));
            for (size_t c = first; c < last; ++c, ++index) {
                if (c > first)
                    ImGui::SameLine(0.0f, gap);
                const bool focused = index == m_focus;
                bool clicked = false;
                drawCard(actions, look, Shown{cards[c], &topic, int(t)}, focused, ImVec2(card_w, row_h),
                         clicked);
                if (focused && m_scroll_to_focus) {
                    ImGui::SetScrollHereY(0.5f);
                    m_scroll_to_focus = false;
                }
                if (clicked) {
                    m_focus = index;
                    if (cards[c]->error.empty())
                        outcome.open_path = cards[c]->path;
                }
            }
            ImGui::Dummy(ImVec2(0.0f, gap * 0.5f));
        }
    }
    ImGui::EndChild();
    return outcome;
}

} // namespace dt::app
