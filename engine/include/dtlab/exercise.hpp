// exercise.hpp: predict, then run. A narration step's question
// ([steps.question], scenario.hpp's NarrationQuestion) is decided by the run:
//
//   1. the measure (`answer`) is evaluated over the run's summary JSON at the
//      step's moment (closing_check.hpp's evaluateMeasure)
//   2. a number is right when |prediction - measured| <= tolerance x |measured|
//      (an exact 0 needs an exact 0); a choice is right when its index is the
//      measured value rounded
//   3. the verdict carries both numbers and the measure's detail, so the app
//      shows the measured value beside the prediction and the formula
// No answer is ever written in the scenario: only the expression that reads it
// from what the run did.
#pragma once

#include "dtlab/scenario.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dt {

struct ExerciseVerdict {
    bool decided = false; // the run gave a value (else `detail` says why not)
    double measured = 0.0;
    int right_choice = -1;     // choices: the index the run picked; -1 out of range or not decided
    bool answered = false;     // a prediction was given
    bool right = false;        // answered and within tolerance / the right choice
    std::string measured_text; // "1.67 MB", "the loss of every rank is the same"
    std::string detail;        // the measure and its value ("max(...) / 1e6 = 1.67"), or why undecided
};

// `prediction`: the learner's number, or the chosen index for a question with choices; nullopt = none given.
[[nodiscard]] ExerciseVerdict judgeExercise(const NarrationQuestion& question,
                                            std::optional<double> prediction,
                                            const std::string& summary_json);

// Whether `prediction` is right for a measured value (the rule of step 2, for the tests and the app).
[[nodiscard]] bool predictionIsRight(const NarrationQuestion& question, double prediction, double measured);

// The summary JSON with an `exercises` array added (docs/summary.md): per
// question, in narration order, what this run's summary decides: `step`
// (1-based narration step), `ask`, `answer` (the measure), `decided`,
// `measured` (number or null), `measured_text`, `detail`. dtrun judges on the
// final summary; the app judges at each step's moment. "" exercises: unchanged.
[[nodiscard]] std::string summaryWithExercises(const std::string& summary_json, const Scenario& scenario);

// Each question of a scenario, in narration order, judged once on a summary
// with no prediction: what summaryWithExercises writes, for a caller that
// also prints them (dtrun run --check).
struct ScenarioExercise {
    int step = 0; // 1-based narration step
    const NarrationQuestion* question = nullptr;
    ExerciseVerdict verdict;
};
[[nodiscard]] std::vector<ScenarioExercise> judgeScenarioExercises(const Scenario& scenario,
                                                                   const std::string& summary_json);
[[nodiscard]] std::string summaryWithExercises(const std::string& summary_json,
                                               const std::vector<ScenarioExercise>& exercises);

// "1.67 MB": 3 significant digits and the unit.
[[nodiscard]] std::string formatWithUnit(double value, const std::string& unit);

} // namespace dt
