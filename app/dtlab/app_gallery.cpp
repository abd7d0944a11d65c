// app_gallery.cpp: the scenario gallery in the app (gallery_screen.hpp draws
// it): the start screen when dtlab opens with nothing, and File > Open
// (Ctrl+O) over a run, which goes on behind it until a card starts another.
#include "app.hpp"

namespace dt::app {

void AppContext::openGallery() {
    m_gallery.reload(m_options.gallery_toml, m_options.scenarios_dir);
    m_gallery_open = true;
    m_gallery_keys.clear();
    say("gallery: " + std::to_string(m_gallery.catalog().cardCount()) + " scenario cards in " +
        std::to_string(m_gallery.catalog().topics.size()) + " topics" +
        (m_gallery.catalog().problem.empty() ? "" : " (" + m_gallery.catalog().problem + ")"));
}

void AppContext::drawGallery() {
    const float menu_height = ImGui::GetFrameHeight();
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    ImGui::SetNextWindowPos(ImVec2(0.0f, menu_height));
    ImGui::SetNextWindowSize(ImVec2(d.x, d.y - menu_height));
    const ImGuiWindowFlags flags = ImGuiWindowFlags_NoTitleBar | ImGuiWindowFlags_NoResize |
                                   ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoCollapse |
                                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus;
    const std::vector<int> keys = std::move(m_gallery_keys);
    m_gallery_keys.clear();
    GalleryScreen::Outcome outcome;
    float content_h = 0.0f;
    if (ImGui::Begin("Scenarios###gallery", nullptr, flags)) {
        content_h = ImGui::GetContentRegionAvail().y; // as drawViews measures a view's
        GalleryLook look;
        look.accent = accentColor(theme());
        look.error = rankStateColor(RankState::Failed, theme());
        look.icons = &m_icons;
        outcome = m_gallery.draw(*this, look, keys, hasRun());
    }
    const ImVec2 pos = ImGui::GetWindowPos();
    const ImVec2 size = ImGui::GetWindowSize();
    m_windows_drawn.push_back(WindowRect{"gallery", "Scenarios", pos, ImVec2(pos.x + size.x, pos.y + size.y),
                                         ImGui::GetWindowDrawList(), content_h, 0.0f, ""});
    ImGui::End();

    if (!outcome.open_path.empty()) {
        std::string error;
        if (!openPath(outcome.open_path, error)) {
            say("gallery: cannot open " + outcome.open_path + ": " + error);
            m_gallery.setOpenError(error);
        }
    } else if (outcome.close && hasRun()) {
        m_gallery_open = false;
        m_layout_dirty = true;
    }
}

} // namespace dt::app
