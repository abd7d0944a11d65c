// view_narration.cpp: the narration panel (see view_narration.hpp).
#include "views/view_narration.hpp"

#include "theme.hpp"
#include "widgets/elide.hpp"
#include "widgets/help.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dt::app {

std::string describeCondition(const std::string& until) {
    NarrationCondition c;
    if (!parseNarrationCondition(until, c))
        return "\"" + until + "\"";
    switch (c.kind) {
    case NarrationCondition::Kind::None:
        return "nothing";
    case NarrationCondition::Kind::StepAtLeast:
        return std::to_string(c.value) + (c.value == 1 ? " step" : " steps") + " completed by every rank";
    case NarrationCondition::Kind::FirstAllReduceEnds:
        return "the first all-reduce to end";
    case NarrationCondition::Kind::FirstAllGatherEnds:
        return "the first all-gather to end";
    case NarrationCondition::Kind::FirstReduceScatterEnds:
        return "the first reduce-scatter to end";
    case NarrationCondition::Kind::RankDies:
        return "rank " + std::to_string(c.value) + " to die";
    case NarrationCondition::Kind::RankHeals:
        return "rank " + std::to_string(c.value) +
               " to heal (a live peer's state, or a swarm stage's mirror)";
    case NarrationCondition::Kind::NewQuorumForms:
        return "a new quorum to form";
    case NarrationCondition::Kind::FirstOuterSyncEnds:
        return "the first DiLoCo outer sync to end";
    case NarrationCondition::Kind::CollectiveHangs:
        return "a collective to hang (a rank never joins it)";
    case NarrationCondition::Kind::RunFinished:
        return "the run to finish";
    }
    return until;
}

std::string describeHappened(const std::string& until) {
    NarrationCondition c;
    if (!parseNarrationCondition(until, c))
        return "\"" + until + "\"";
    switch (c.kind) {
    case NarrationCondition::Kind::FirstAllReduceEnds:
        return "the first all-reduce ended";
    case NarrationCondition::Kind::FirstAllGatherEnds:
        return "the first all-gather ended";
    case NarrationCondition::Kind::FirstReduceScatterEnds:
        return "the first reduce-scatter ended";
    case NarrationCondition::Kind::RankDies:
        return "rank " + std::to_string(c.value) + " died";
    case NarrationCondition::Kind::RankHeals:
        return "rank " + std::to_string(c.value) + " healed (a live peer's state, or a swarm stage's mirror)";
    case NarrationCondition::Kind::NewQuorumForms:
        return "a new quorum formed";
    case NarrationCondition::Kind::FirstOuterSyncEnds:
        return "the first DiLoCo outer sync ended";
    case NarrationCondition::Kind::CollectiveHangs:
        return "a collective hangs (a rank never joined it)";
    case NarrationCondition::Kind::RunFinished:
        return "the run finished";
    default: // nothing; "N steps completed by every rank" reads the same
        return describeCondition(until);
    }
}

namespace {

// Text in a colour, wrapped at the panel's edge (a narrow panel at large text never cuts it).
void wrappedIn(ImU32 color, const std::string& text) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(color));
    ImGui::TextWrapped("%s", text.c_str());
    ImGui::PopStyleColor();
}

// The scenario's closing checks ([[checks]]) under the last step: what the
// run has shown, each claim marked passed or failed once the run is over.
void drawClosingChecks(const ViewInputs& inputs) {
    const Scenario& scenario = inputs.model->scenario();
    const std::vector<ClosingCheck>& checks = scenario.checks;
    if (checks.empty())
        return;
    const Theme& theme = *inputs.theme;
    ImGui::Spacing();
    ImGui::Separator();
    wrappedIn(accentColor(theme), "Closing checks: what this run showed");
    static const std::vector<ClosingCheckResult> none;
    const std::vector<ClosingCheckResult>& results = inputs.closing_checks ? *inputs.closing_checks : none;
    if (results.empty()) {
        wrappedIn(ImGui::GetColorU32(ImGuiCol_TextDisabled), "They are evaluated when the run ends (" +
                                                                 std::to_string(checks.size()) + " claim" +
                                                                 (checks.size() == 1 ? "" : "s") + ").");
        for (const ClosingCheck& c : checks) {
            ImGui::Bullet();
            ImGui::SameLine();
            ImGui::TextWrapped("%s", c.claim.c_str());
        }
        return;
    }
    for (const ClosingCheckResult& r : results) {
        const char* mark = r.run_failed   ? "[not judged: the run failed]"
                           : !r.evaluated ? "[needs dtrun]"
                           : r.passed     ? "[shown]"
                                          : "[NOT shown]";
        const ImU32 color = !r.evaluated ? ImGui::GetColorU32(ImGuiCol_TextDisabled)
                            : r.passed   ? rankStateColor(RankState::Running, theme)
                                         : warningColor(theme);
        ImGui::TextColored(ImColor(color), "%s", mark);
        ImGui::SameLine();
        ImGui::TextWrapped("%s", r.claim.c_str());
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("%s\n%s", r.expect.c_str(),
                              r.evaluated || r.run_failed ? r.detail.c_str()
                                                          : ("compared with a baseline run { " + r.baseline +
                                                             " }: dtrun run " + scenario.path + " --check")
                                                                .c_str());
    }
}

} // namespace

void NarrationView::drawExercise(const ViewInputs& inputs, const NarrationQuestion& q,
                                 const std::string& until) {
    const Theme& theme = *inputs.theme;
    if (m_input_step != inputs.narration.index || m_input_run != inputs.run_serial) {
        m_input_step = inputs.narration.index;
        m_input_run = inputs.run_serial;
        m_number = 0.0;
        m_choice = -1;
    }
    ImGui::Spacing();
    ImGui::Separator();
    ImGui::TextColored(ImColor(accentColor(theme)), "PREDICT, THEN RUN");
    ImGui::TextWrapped("%s", q.ask.c_str());
    const ExerciseState* state = inputs.narration.exercise;
    const bool open = !state || (!state->locked && !state->skipped);
    if (open) {
        if (q.choices.empty()) {
            ImGui::SetNextItemWidth(ImGui::GetFontSize() * 8.0f);
            ImGui::InputDouble("##prediction", &m_number, 0.0, 0.0, "%.6g"); // written back on every edit
            if (!q.unit.empty()) {
                ImGui::SameLine();
                ImGui::TextUnformatted(q.unit.c_str());
            }
        } else {
            for (size_t i = 0; i < q.choices.size(); ++i) { // the circle, then its words wrapped beside it
                if (ImGui::RadioButton(("##choice" + std::to_string(i)).c_str(), m_choice == int(i)))
                    m_choice = int(i);
                ImGui::SameLine();
                ImGui::TextWrapped("%s", q.choices[i].c_str());
                if (ImGui::IsItemClicked())
                    m_choice = int(i);
            }
        }
        const bool can_lock = q.choices.empty() || m_choice >= 0;
        // Beside the field while they fit, else on the next line (a narrow panel at large text).
        const auto buttonWidth = [](const char* label) {
            return ImGui::CalcTextSize(label, nullptr, true).x + ImGui::GetStyle().FramePadding.x * 2.0f;
        };
        if (q.choices.empty())
            sameLineOrWrap(buttonWidth("Lock in##exercise"));
        if (inputs.act().button("Lock in##exercise", can_lock, "Pick a choice first."))
            inputs.act().lockPrediction(q.choices.empty() ? m_number : double(m_choice));
        sameLineOrWrap(buttonWidth("Show the answer##exercise"));
        if (inputs.act().button("Show the answer##exercise"))
            inputs.act().revealAnswer();
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("The run decides it at this step's moment: %s.", describeCondition(until).c_str());
        ImGui::PopStyleColor();
        return;
    }
    const std::string predicted =
        !state->locked ? std::string("no prediction")
        : q.choices.empty()
            ? formatWithUnit(state->prediction, q.unit)
            : q.choices[size_t(std::clamp(int(state->prediction), 0, int(q.choices.size()) - 1))];
    ImGui::TextWrapped("Your prediction: %s", predicted.c_str());
    if (!state->verdict) {
        ImGui::TextDisabled("Waiting for the run to reach this step's moment...");
        return;
    }
    const ExerciseVerdict& v = *state->verdict;
    if (!v.decided) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(warningColor(theme)));
        ImGui::TextWrapped("The run did not decide it: %s", v.detail.c_str());
        ImGui::PopStyleColor();
        return;
    }
    ImGui::TextWrapped("Measured by this run: %s", v.measured_text.c_str());
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("%s", v.detail.c_str());
    if (v.answered) {
        const ImU32 color = v.right ? rankStateColor(RankState::Running, theme) : warningColor(theme);
        char tolerance[64] = "";
        if (q.choices.empty())
            std::snprintf(tolerance, sizeof(tolerance), " (within %.0f %%)", q.tolerance * 100.0);
        ImGui::TextColored(ImColor(color), "%s%s", v.right ? "RIGHT" : "NOT QUITE", v.right ? tolerance : "");
    }
    if (!q.explain.empty())
        ImGui::TextWrapped("%s", q.explain.c_str());
}

const char* NarrationView::helpText() const {
    return "The scenario's narrated steps ([[steps]] in its TOML file). Each step says something, points at "
           "a view "
           "(its border flashes) and may wait for a real event in the run: a step count, the first "
           "all-reduce, a "
           "rank dying, a new quorum, the end of the run. Next unlocks when that event has happened. A step "
           "with pause = true also pauses the run when its event happens, so the room sees that moment "
           "frozen; Next resumes the run. The last step lists "
           "the "
           "scenario's closing checks ([[checks]]): once the run ends, each claim is marked shown or not "
           "shown "
           "by this run's numbers (hover for the values).\n\n"
           "A step may ask the room to predict a number or pick a choice first (PREDICT, THEN RUN): lock "
           "in the prediction, and at the step's moment the run's own summary decides it; the measured "
           "value, the verdict and the formula appear beside the prediction.\n\n"
           "Keys: Space or Right arrow = Next, Left arrow = Back.";
}

std::optional<bool> NarrationView::relevantTo(const Scenario& scenario) const {
    return !scenario.steps.empty();
}

LayoutPlace NarrationView::layoutPlace(const LayoutContext&) const {
    LayoutPlace place;
    place.area = LayoutArea::LeftBottom;
    return place;
}

bool NarrationView::isEmpty(const ViewInputs& inputs) const {
    return !inputs.model || inputs.model->scenario().steps.empty();
}

void NarrationView::drawEmptyState(const ViewInputs& inputs) {
    if (!inputs.model)
        emptyState("No scenario", "Open a scenario; its narrated steps appear here.");
    else
        emptyState(
            "This scenario has no narrated steps",
            "Add [[steps]] tables (text, highlight, until) to the scenario file: see docs/scenarios.md.");
}

void NarrationView::drawContent(const ViewInputs& inputs) {
    const std::vector<NarrationStep>& steps = inputs.model->scenario().steps;
    const int index = std::clamp(inputs.narration.index, 0, int(steps.size()) - 1);
    const NarrationStep& step = steps[size_t(index)];
    const Theme& theme = *inputs.theme;
    const ImGuiStyle& style = ImGui::GetStyle();

    // Progress: "Step 2 of 6" and one dot per step.
    ImGui::Text("Step %d of %d", index + 1, int(steps.size()));
    ImGui::SameLine();
    const float r = ImGui::GetTextLineHeight() * 0.22f;
    ImVec2 p = ImGui::GetCursorScreenPos();
    p.y += ImGui::GetTextLineHeight() * 0.5f;
    for (int i = 0; i < int(steps.size()); ++i) {
        const ImVec2 c(p.x + r + float(i) * r * 3.2f, p.y);
        if (i <= index)
            ImGui::GetWindowDrawList()->AddCircleFilled(c, r, accentColor(theme));
        else
            ImGui::GetWindowDrawList()->AddCircle(c, r, ImGui::GetColorU32(ImGuiCol_TextDisabled), 0, 1.5f);
    }
    ImGui::Dummy(ImVec2(float(steps.size()) * r * 3.2f, ImGui::GetTextLineHeight()));
    if (!step.highlight.empty()) {
        const std::string look_at =
            "Look at: " +
            (inputs.narration.look_at_title.empty() ? step.highlight : inputs.narration.look_at_title);
        sameLineOrWrap(
            ImGui::CalcTextSize(look_at.c_str()).x); // else a line of its own: it says where to look
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(accentColor(theme)));
        textElided(look_at, ImGui::GetContentRegionAvail().x);
        ImGui::PopStyleColor();
    }
    ImGui::Separator();

    const bool last = index + 1 >= int(steps.size());
    // The text, in the space left above the condition line and the buttons.
    const float footer = ImGui::GetFrameHeightWithSpacing() * 2.0f + style.ItemSpacing.y +
                         (inputs.narration.held_at_end ? ImGui::GetTextLineHeightWithSpacing() : 0.0f);
    // A question below the text that the panel cannot show whole gets a line
    // in the footer to bring it into view; its verdict scrolls itself into view.
    const ExerciseState* exercise = step.question ? inputs.narration.exercise : nullptr;
    const bool judged = exercise && exercise->verdict.has_value();
    if (judged && !m_verdict_shown) {
        m_verdict_shown = true;
        m_scroll_to_verdict = true;
    } else if (!judged) {
        m_verdict_shown = false;
    }
    const float question_line =
        step.question && !m_exercise_visible ? ImGui::GetFrameHeightWithSpacing() : 0.0f;
    ImGui::BeginChild("text", ImVec2(0, std::max(ImGui::GetTextLineHeight() * 2.0f,
                                                 ImGui::GetContentRegionAvail().y - footer - question_line)));
    ImGui::TextWrapped("%s",
                       inputs.narration.text.empty() ? step.text.c_str() : inputs.narration.text.c_str());
    if (step.question) {
        const float top = ImGui::GetCursorPosY();
        drawExercise(inputs, *step.question, step.until);
        const float bottom = ImGui::GetCursorPosY();
        if (m_scroll_to_exercise) // its question first
            ImGui::SetScrollY(top);
        else if (m_scroll_to_verdict) // its last lines: the measured value and the verdict
            ImGui::SetScrollY(std::max(0.0f, bottom - ImGui::GetWindowHeight()));
        m_scroll_to_exercise = m_scroll_to_verdict = false;
        m_exercise_visible = top >= ImGui::GetScrollY() - 1.0f &&
                             std::min(bottom, top + ImGui::GetTextLineHeightWithSpacing() * 4.0f) <=
                                 ImGui::GetScrollY() + ImGui::GetWindowHeight() + 1.0f;
    }
    if (last)
        drawClosingChecks(inputs);
    ImGui::EndChild();
    if (step.question && !m_exercise_visible &&
        inputs.act().button("Show the question for the room##exercise"))
        m_scroll_to_exercise = true;

    const bool ready = inputs.narration.can_next;
    if (inputs.narration.held_at_end)
        wrappedIn(accentColor(theme), "The run waits before its last steps until the narration's last step.");
    ImGui::AlignTextToFramePadding();
    if (last && inputs.narration.held) { // the story ends at this moment: say how the run ends
        ImGui::PushStyleColor(ImGuiCol_Text, accentColor(theme));
        ImGui::TextWrapped(
            "PAUSED AT THIS MOMENT: %s. This is the last step: Finish runs the rest of the run.",
            describeHappened(step.until).c_str());
        ImGui::PopStyleColor();
    } else if (step.until.empty() || last) {
        ImGui::TextDisabled(last ? "Last step." : "Nothing to wait for.");
    } else if (inputs.narration.held) {
        ImGui::PushStyleColor(ImGuiCol_Text, accentColor(theme));
        ImGui::TextWrapped("PAUSED AT THIS MOMENT: %s. Next resumes the run.",
                           describeHappened(step.until).c_str());
        ImGui::PopStyleColor();
    } else if (ready && inputs.narration.condition_met) {
        wrappedIn(rankStateColor(RankState::Running, theme), "Done: " + describeHappened(step.until));
    } else if (ready) { // unlocked because nothing more can happen, not because it did
        wrappedIn(warningColor(theme),
                  "Did not happen: " + describeCondition(step.until) + " (" +
                      (inputs.replay ? "not in this recording" : "the run ended before it") + ")");
    } else {
        const int dots = int(std::fmod(ImGui::GetTime() * 2.0, 4.0));
        wrappedIn(warningColor(theme),
                  "Waiting for " + describeCondition(step.until) + std::string(size_t(dots), '.'));
    }

    if (inputs.act().button("< Back##narration", inputs.narration.can_back, "this is the first step"))
        inputs.act().narrationBack();
    ImGui::SameLine();
    const std::string wait = "waiting for " + describeCondition(step.until);
    if (last && inputs.narration.held) {
        if (inputs.act().button("Finish the run >##narration", true))
            inputs.act().runFree(); // the held last moment never parks the run for good
    } else if (inputs.act().button("Next >##narration", ready && !last,
                                   last ? "this is the last step" : wait.c_str())) {
        inputs.act().narrationNext();
    }
    ImGui::SameLine();
    textDisabledElided("Space / Right = Next, Left = Back");
}

} // namespace dt::app
