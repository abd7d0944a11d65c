// app_exercises.cpp: predict, then run (model/exercise_state.hpp). The
// learner locks in a prediction for the current narration step's question;
// at the step's moment the app judges it on the run's summary so far
// (engine/include/dtlab/exercise.hpp) and says the verdict on stdout.
//
// The moment: the step's `until` happened; for a step that pauses the run,
// also every rank waiting at that pause, so per-step counts are of whole
// steps; for a step without `until`, the end of the run. A recording is
// judged at once, on its whole summary.
#include "app.hpp"

#include "dtlab/summary.hpp"
#include "wall_clock.hpp"

#include <cmath>
#include <cstdio>

namespace dt::app {

namespace {
constexpr double kFreezeWaitS = 3.0; // the longest a verdict waits for every rank to stop at the pause
} // namespace

ExerciseState* AppContext::currentExercise() {
    const int i = m_narration_index;
    if (i < 0 || i >= int(m_scenario.steps.size()) || !m_scenario.steps[size_t(i)].question)
        return nullptr;
    if (m_exercises.size() < m_scenario.steps.size())
        m_exercises.resize(m_scenario.steps.size());
    return &m_exercises[size_t(i)];
}

const ExerciseState* AppContext::currentExercise() const {
    const int i = m_narration_index;
    if (i < 0 || i >= int(m_exercises.size()) || !m_scenario.steps[size_t(i)].question)
        return nullptr;
    return &m_exercises[size_t(i)];
}

void AppContext::lockPrediction(double value) {
    ExerciseState* state = currentExercise();
    if (!state || state->locked || state->skipped)
        return say("exercise: no open question at this step");
    const NarrationQuestion& question = *m_scenario.steps[size_t(m_narration_index)].question;
    if (!question.choices.empty() &&
        (value < 0 || value >= double(question.choices.size()) || value != std::floor(value)))
        return say("exercise: no choice " + formatWithUnit(value, "") + " (0.." +
                   std::to_string(question.choices.size() - 1) + ")");
    state->locked = true;
    state->prediction = value;
    const NarrationQuestion& q = *m_scenario.steps[size_t(m_narration_index)].question;
    say("exercise: step " + std::to_string(m_narration_index + 1) + ": predicted " +
        (q.choices.empty()
             ? formatWithUnit(value, q.unit)
             : "choice " + std::to_string(int(value)) + " of " + std::to_string(q.choices.size())));
}

void AppContext::revealAnswer() {
    ExerciseState* state = currentExercise();
    if (!state || state->locked || state->skipped)
        return;
    state->skipped = true;
    say("exercise: step " + std::to_string(m_narration_index + 1) + ": answer shown without a prediction");
}

std::string AppContext::exerciseStatus() const {
    const ExerciseState* state = currentExercise();
    if (!state) {
        const int i = m_narration_index;
        return i >= 0 && i < int(m_scenario.steps.size()) && m_scenario.steps[size_t(i)].question ? "open"
                                                                                                  : "none";
    }
    if (!state->locked && !state->skipped)
        return "open";
    if (!state->verdict)
        return "waiting";
    if (!state->verdict->decided)
        return "undecided";
    if (!state->verdict->answered)
        return "unanswered";
    return state->verdict->right ? "right" : "wrong";
}

bool AppContext::exerciseMomentReached(int step_index, ExerciseState& state) const {
    const NarrationStep& step = m_scenario.steps[size_t(step_index)];
    if (m_replay || m_facts.finished || step_index < m_narration_index)
        return true; // the narration moved on: Next needed the step's event
    if (step_index > m_narration_index || !narrationConditionMetNow())
        return false;
    const double now = wallSeconds();
    if (state.moment_seen_s == 0.0)
        state.moment_seen_s = now;
    // A step that holds the run: judge once every rank waits at the pause (whole
    // steps only), or after kFreezeWaitS if some rank never stops (a restarting replica).
    return !step.pause || !m_hold.active || m_frozen_since_ns != 0 ||
           now - state.moment_seen_s > kFreezeWaitS;
}

void AppContext::judgeExercises() {
    for (size_t i = 0; i < m_exercises.size() && i < m_scenario.steps.size(); ++i) {
        ExerciseState& state = m_exercises[i];
        const std::optional<NarrationQuestion>& q = m_scenario.steps[i].question;
        if (!q || !state.waiting() || !exerciseMomentReached(int(i), state))
            continue;
        const std::string summary = m_session ? summaryJson(m_session->snapshot()) : summaryJson(*m_replay);
        state.verdict =
            judgeExercise(*q, state.locked ? std::optional<double>(state.prediction) : std::nullopt, summary);
        const ExerciseVerdict& v = *state.verdict;
        std::string line = "exercise: step " + std::to_string(i + 1) + ": ";
        if (!v.decided)
            line += "not decided: " + v.detail;
        else
            line += "measured " + v.measured_text +
                    (v.answered ? (v.right ? ": right" : ": wrong") : ": no prediction") + " (" + v.detail +
                    ")";
        say(line);
    }
}

} // namespace dt::app
