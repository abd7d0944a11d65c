// view.hpp: the contract every dtlab window implements (one view per file).
//
// A view says, for the app:
//   relevantTo(scenario)   whether it belongs on screen for a scenario; opening
//                          a run or a recording sets `open` from it. nullopt:
//                          every run has it, it stays as the user left it
//   windowFlags()          its ImGui window flags (the app adds NoCollapse)
//   layoutPlace(context)   where the default tiling puts it (layout_place.hpp)
//   closable()             false: no close button, not in the View menu (the control bar)
// and draws itself from ViewInputs alone (view_inputs.hpp), acting through
// inputs.actions (view_actions.hpp):
//   isEmpty(inputs)        nothing to show: drawEmptyState() is drawn instead
//                          of drawContent(), an explicit title and hint
//   helpText()             what it shows, for the "(?)" in its title bar
//   shownContent()         its core content and how much of it the last draw put
//                          inside the window's visible rect (a family's main view
//                          says it; layout tests and print_state read it)
//   heightSavedByCompacting()  px its last draw saved by drawing tighter (layout)
// No view includes app.hpp: headless tests draw any view with draw(inputs),
// from a ViewInputs they fill, and a fake ViewActions when they press buttons.
//
// A new view is two files, views/view_NAME.hpp and .cpp (the CMake lists
// glob them), and one line in views/view_list.cpp.
#pragma once

#include "dtlab/scenario.hpp"
#include "views/layout_place.hpp"
#include "views/view_inputs.hpp"

#include <imgui.h>

#include <optional>
#include <string>

namespace dt::app {

// A view's core content and how much of it its last draw showed without
// scrolling: "2 of 2 measured stage rows", "3 of 3 replica rows".
struct ShownContent {
    std::string what; // "measured stage rows", plural, what is counted
    int shown = 0;    // drawn whole inside the window's visible rect
    int total = 0;    // what the run has to show
};

// Counts a row [top, bottom] (screen px) as shown when it lies whole inside
// the current window's visible rect (InnerClipRect: under the title bar, left
// of a scrollbar, scrolled into view).
[[nodiscard]] bool rowInsideWindow(float top, float bottom);

class View {
  public:
    View(std::string id, std::string name) : m_id(std::move(id)), m_name(std::move(name)) {}
    virtual ~View() = default;

    // "timeline", "quorum", ...: narration highlights, the script's show / hide, print_layout.
    [[nodiscard]] const std::string& id() const { return m_id; }
    // "Timeline", "Quorum", ...: the window title and the View menu entry.
    [[nodiscard]] const std::string& name() const { return m_name; }
    [[nodiscard]] virtual const char* helpText() const = 0;

    [[nodiscard]] virtual std::optional<bool> relevantTo(const Scenario&) const { return std::nullopt; }
    [[nodiscard]] virtual ImGuiWindowFlags windowFlags() const { return ImGuiWindowFlags_None; }
    [[nodiscard]] virtual LayoutPlace layoutPlace(const LayoutContext&) const { return {}; }
    [[nodiscard]] virtual bool closable() const { return true; }
    // The timeline returns itself, so the app can hand it to other views (ViewInputs::navigator).
    [[nodiscard]] virtual TimelineNavigator* navigator() { return nullptr; }

    [[nodiscard]] virtual std::optional<ShownContent> shownContent() const { return std::nullopt; }
    // Px the last draw saved by drawing tighter than its natural layout because its
    // window was short (the pipeline's rows): the layout adds it back when it sizes
    // the view's row from what it drew, so a short window never stays short.
    [[nodiscard]] virtual float heightSavedByCompacting() const { return 0.0f; }

    [[nodiscard]] virtual bool isEmpty(const ViewInputs& inputs) const = 0;
    virtual void drawEmptyState(const ViewInputs& inputs) = 0;
    virtual void drawContent(const ViewInputs& inputs) = 0;

    // Draws the view into the current ImGui window: its empty state or its content.
    void draw(const ViewInputs& inputs) {
        if (isEmpty(inputs))
            drawEmptyState(inputs);
        else
            drawContent(inputs);
    }

    bool open = true; // shown (the View menu toggles it)

  private:
    std::string m_id;
    std::string m_name;
};

} // namespace dt::app
