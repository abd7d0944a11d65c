// short_pane.hpp: a view that draws tighter when its window is shorter than
// its content (the Pipeline, Quorum and Memory views' short panes).
//
//   begin()        at the top of drawContent: true = draw the short pane now.
//                  Compact while the window is shorter than the content was
//                  the last time it was drawn in full, so the choice does not
//                  flip from frame to frame
//   end(content, reach)   after drawing: the px the content took since
//                  begin(), and the px the app measures of it (its window's
//                  cursor reach: the same, or the window's height for a view
//                  whose child region fills it)
//   savedPx()      what the app adds to the reach so the layout sizes the row
//                  for the content in full (View::heightSavedByCompacting)
#pragma once

#include <imgui.h>

#include <algorithm>

namespace dt::app {

class ShortPane {
  public:
    bool begin() {
        m_top = ImGui::GetCursorPosY();
        m_avail = ImGui::GetContentRegionAvail().y;
        m_compact = m_full_h > 0.0f && m_avail < m_full_h;
        return m_compact;
    }
    // The content's height since begin(), in the window's own coordinates.
    [[nodiscard]] float heightSinceBegin() const { return ImGui::GetCursorPosY() - m_top; }
    [[nodiscard]] float topY() const { return m_top; }
    [[nodiscard]] float availAtBegin() const { return m_avail; }
    void end(float content_h, float reach_h) {
        if (!m_compact)
            m_full_h = content_h;
        m_saved_px = std::max(0.0f, m_full_h - reach_h);
    }
    void end() { end(heightSinceBegin(), heightSinceBegin()); }
    void reset() { m_saved_px = 0.0f; } // an empty state: nothing saved
    [[nodiscard]] bool compact() const { return m_compact; }
    [[nodiscard]] float savedPx() const { return m_saved_px; }

  private:
    float m_top = 0.0f, m_avail = 0.0f;
    float m_full_h = 0.0f; // px the content took when last drawn in full
    bool m_compact = false;
    float m_saved_px = 0.0f;
};

} // namespace dt::app
