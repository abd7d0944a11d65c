// exercise.cpp: see exercise.hpp.
#include "dtlab/exercise.hpp"

#include "dtlab/closing_check.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>

namespace dt {

std::string formatWithUnit(double value, const std::string& unit) {
    char text[64];
    std::snprintf(text, sizeof(text), "%.3g", value);
    return unit.empty() ? std::string(text) : std::string(text) + " " + unit;
}

bool predictionIsRight(const NarrationQuestion& question, double prediction, double measured) {
    if (!std::isfinite(prediction) || !std::isfinite(measured))
        return false;
    if (!question.choices.empty())
        return int(std::lround(prediction)) == int(std::lround(measured));
    return std::fabs(prediction - measured) <= question.tolerance * std::fabs(measured);
}

ExerciseVerdict judgeExercise(const NarrationQuestion& question, std::optional<double> prediction,
                              const std::string& summary_json) {
    ExerciseVerdict verdict;
    const MeasureOutcome measure = evaluateMeasure(question.answer, summary_json);
    verdict.detail = measure.detail;
    verdict.answered = prediction.has_value();
    if (!measure.ok)
        return verdict;
    verdict.decided = true;
    verdict.measured = measure.value;
    if (!question.choices.empty()) {
        const long index = std::lround(measure.value);
        if (index < 0 || index >= long(question.choices.size())) {
            verdict.decided = false;
            verdict.detail +=
                ": not the index of a choice (0.." + std::to_string(question.choices.size() - 1) + ")";
            return verdict;
        }
        verdict.right_choice = int(index);
        verdict.measured_text = question.choices[size_t(index)];
    } else {
        verdict.measured_text = formatWithUnit(measure.value, question.unit);
    }
    verdict.right = prediction && predictionIsRight(question, *prediction, measure.value);
    return verdict;
}

std::vector<ScenarioExercise> judgeScenarioExercises(const Scenario& scenario,
                                                     const std::string& summary_json) {
    std::vector<ScenarioExercise> out;
    for (size_t i = 0; i < scenario.steps.size(); ++i)
        if (const std::optional<NarrationQuestion>& q = scenario.steps[i].question)
            out.push_back(ScenarioExercise{int(i) + 1, &*q, judgeExercise(*q, std::nullopt, summary_json)});
    return out;
}

std::string summaryWithExercises(const std::string& summary_json,
                                 const std::vector<ScenarioExercise>& judged) {
    if (judged.empty())
        return summary_json;
    nlohmann::json exercises = nlohmann::json::array();
    for (const ScenarioExercise& e : judged) {
        const ExerciseVerdict& v = e.verdict;
        exercises.push_back({{"step", e.step},
                             {"ask", e.question->ask},
                             {"answer", e.question->answer},
                             {"decided", v.decided},
                             {"measured", v.decided ? nlohmann::json(v.measured) : nlohmann::json()},
                             {"measured_text", v.measured_text},
                             {"detail", v.detail}});
    }
    nlohmann::json summary = nlohmann::json::parse(summary_json);
    summary["exercises"] = exercises;
    return summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string summaryWithExercises(const std::string& summary_json, const Scenario& scenario) {
    return summaryWithExercises(summary_json, judgeScenarioExercises(scenario, summary_json));
}

} // namespace dt
