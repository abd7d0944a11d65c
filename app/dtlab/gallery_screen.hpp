// gallery_screen.hpp: the scenario gallery, dtlab's start screen and its
// File > Open: every scenario as a card, grouped by the workshop's topics.
//
// One click (or the arrow keys and Enter) on a card starts its scenario. A
// card shows the title, the lesson's family as a drawn icon, ranks and
// strategy, how many narration steps and how long they take to read aloud,
// and the description's first sentence (the whole one on hover). A scenario
// that does not load shows the loader's error in full, file:line:column, and
// does not start. A filter box narrows the cards; a path field opens any
// other file (a recording, a scenario elsewhere). Each card is a scriptable
// area named after its file ("click_button ddp_basics").
//
// The catalog itself (which cards, in what order) is model/scenario_catalog.hpp.
#pragma once

#include "model/scenario_catalog.hpp"
#include "views/view_actions.hpp"

#include <imgui.h>

#include "model/icon_file.hpp"

#include <string>
#include <vector>

namespace dt::app {

struct GalleryLook {
    ImU32 accent = 0;                   // the focused card's border, the icons' point
    ImU32 error = 0;                    // a broken card's message
    const FamilyIcons* icons = nullptr; // assets/icons.toml (nullptr: plain squares)
};

class GalleryScreen {
  public:
    // Reads the catalog again (so an edited scenario shows its new state).
    void reload(const std::string& gallery_toml, const std::string& scenarios_dir);
    [[nodiscard]] const ScenarioCatalog& catalog() const { return m_catalog; }

    struct Outcome {
        std::string open_path; // a card or the path field chose this file ("" = nothing)
        bool close = false;    // back to the run (Esc, or the button)
    };
    // Draws into the current window. `keys`: GLFW keys pressed this frame.
    // `can_close`: a run is open behind the gallery.
    Outcome draw(ViewActions& actions, const GalleryLook& look, const std::vector<int>& keys, bool can_close);
    // The last open attempt failed: shown under the path field until the next one.
    void setOpenError(std::string error) { m_open_error = std::move(error); }

    // The focused card's file name ("" = none), for tests and the script.
    [[nodiscard]] std::string focusedName() const;

  private:
    struct Shown {
        const ScenarioCard* card;
        const CatalogTopic* topic;
        int topic_index;
    };
    [[nodiscard]] std::vector<Shown> shownCards() const;
    void drawCard(ViewActions& actions, const GalleryLook& look, const Shown& shown, bool focused,
                  ImVec2 size, bool& clicked);
    [[nodiscard]] float cardHeight(const ScenarioCard& card, float width) const;

    ScenarioCatalog m_catalog;
    int m_focus = 0;
    int m_columns = 1; // of the last frame: Up / Down move by a row
    bool m_scroll_to_focus = false;
    char m_filter[128] = {};
    char m_path[1024] = {};
    std::string m_open_error;
    std::string m_focused_name;
};

} // namespace dt::app
