// view_narration.hpp: the scenario's narrated steps, one at a time.
//
// Each step ([[steps]] in the scenario, docs/scenarios.md) has a text, a view
// to highlight and a condition. The panel shows the text, what the step waits
// for and whether it happened yet; Next is enabled only when the condition
// holds in the live run (narrationConditionHolds in run_facts.hpp). Space or
// the Right arrow = Next, Left arrow = Back. The highlighted view's window
// gets a flashing coloured border (drawn by AppContext).
#pragma once

#include "views/view.hpp"

#include <string>

namespace dt::app {

// What a step waits for, in words ("rank 4 to die"): "Waiting for ...", "Did not happen: ...".
[[nodiscard]] std::string describeCondition(const std::string& until);
// The same once it happened ("rank 4 died"): "PAUSED AT THIS MOMENT: ...", "Done: ...".
[[nodiscard]] std::string describeHappened(const std::string& until);

class NarrationView final : public View {
  public:
    NarrationView() : View("narration", "Narration") {}
    [[nodiscard]] const char* helpText() const override;
    [[nodiscard]] std::optional<bool> relevantTo(const Scenario& scenario) const override;
    [[nodiscard]] LayoutPlace layoutPlace(const LayoutContext& context) const override;
    [[nodiscard]] bool isEmpty(const ViewInputs& inputs) const override;
    void drawEmptyState(const ViewInputs& inputs) override;
    void drawContent(const ViewInputs& inputs) override;

  private:
    // The step's question: the prediction's input, then the run's verdict.
    void drawExercise(const ViewInputs& inputs, const NarrationQuestion& question, const std::string& until);

    int m_input_step = -1;             // the step the input below belongs to (reset on a new step)
    int m_input_run = -1;              // ... and the run (ViewInputs::run_serial)
    double m_number = 0.0;             // the number being typed
    int m_choice = -1;                 // the choice picked (-1 = none yet)
    bool m_exercise_visible = true;    // the question's first lines were inside the text area last frame
    bool m_scroll_to_exercise = false; // bring its question into view this frame (the footer's button)
    bool m_scroll_to_verdict = false;  // bring its verdict into view this frame (it just arrived)
    bool m_verdict_shown = false;      // the current verdict was scrolled to already
};

} // namespace dt::app
