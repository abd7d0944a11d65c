// view_toolbar.hpp: the control bar across the top of the window.
//
//   Run | Pause | Step     step gates: run freely, stop every rank at its next
//                          step boundary, let every rank through one more step
//   Pace                   at most N steps per second (0 = off), for a room to
//                          follow; a "PACED 1.0 step/s" badge is shown whenever
//                          it is active, so nobody mistakes the pace for speed
//   status                 scenario, step n/N, mean loss, elapsed time, state
//   Save recording         the whole event stream so far (dtlab --replay FILE)
#pragma once

#include "views/view.hpp"

#include <imgui.h>

namespace dt::app {

class ToolbarView final : public View {
  public:
    ToolbarView() : View("controls", "Controls") {}
    [[nodiscard]] const char* helpText() const override;
    [[nodiscard]] ImGuiWindowFlags windowFlags() const override;
    [[nodiscard]] LayoutPlace layoutPlace(const LayoutContext& context) const override;
    [[nodiscard]] bool closable() const override { return false; }
    [[nodiscard]] bool isEmpty(const ViewInputs& inputs) const override;
    void drawEmptyState(const ViewInputs& inputs) override;
    void drawContent(const ViewInputs& inputs) override;

  private:
    float m_pace = 0.0f; // slider value (steps per second)
    bool m_pace_editing = false;
};

// A filled, rounded label on the current line ("PACED 1.0 step/s", "PAUSED").
void drawBadge(const char* text, ImU32 fill);

} // namespace dt::app
