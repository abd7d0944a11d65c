// test_exercise.cpp: predict, then run (engine/include/dtlab/exercise.hpp):
// the [steps.question] table read with file:line:column errors, the measure
// evaluated over a summary, and a prediction judged right or wrong by it.
#include "dtlab/closing_check.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/exercise.hpp"
#include "dtlab/scenario.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

namespace {

const std::string kHeader = "[scenario]\nname = \"t\"\n[[steps]]\ntext = \"look\"\nuntil = \"step >= 1\"\n";

// A summary shaped like dtrun's: 4 ranks, AdamW state sharded by ZeRO-2, two checksums equal.
const std::string kSummary = R"({
  "ranks": 4, "steps": 10,
  "peak_memory": [{"optimizer_state": 1668608}, {"optimizer_state": 1668608},
                  {"optimizer_state": 1668608}, {"optimizer_state": 1668700}],
  "params_checksum": ["00aa", "00aa", "00aa", "00aa"],
  "collectives": {"all-reduce": {"count": 640, "bytes": 1, "max_bytes": 1}},
  "final_loss": null
})";

std::string usageError(const std::string& text) {
    try {
        (void)dt::parseScenarioText(text, "t.toml");
    } catch (const dt::UsageError& e) {
        return e.what();
    }
    return "";
}

dt::NarrationQuestion numberQuestion(const std::string& answer, double tolerance) {
    dt::NarrationQuestion q;
    q.ask = "how many?";
    q.answer = answer;
    q.unit = "MB";
    q.tolerance = tolerance;
    return q;
}

} // namespace

TEST_CASE("A narration step's question is read from [steps.question] and mistakes point at their place",
          "[exercise][scenario]") {
    SECTION("ask, answer, unit, tolerance and explain are read; a choice question keeps its choices") {
        const dt::Scenario s = dt::parseScenarioText(
            kHeader +
                "[steps.question]\nask = \"MB per rank?\"\nanswer = \"max(peak_memory.optimizer_state) "
                "/ 1e6\"\n"
                "unit = \"MB\"\ntolerance = 0.2\nexplain = \"8 Psi / N\"\nformula_answer = 1.67\n"
                "typical_mistake = 6.67\n"
                "[[steps]]\ntext = \"next\"\nuntil = \"run finished\"\n[steps.question]\nask = \"same?\"\n"
                "choices = [\"yes\", \"no\"]\nanswer = \"distinct(params_checksum) > 1\"\n",
            "t.toml");
        REQUIRE(s.steps.size() == 2);
        REQUIRE(s.steps[0].question);
        CHECK(s.steps[0].question->ask == "MB per rank?");
        CHECK(s.steps[0].question->unit == "MB");
        CHECK(s.steps[0].question->tolerance == 0.2);
        CHECK(s.steps[0].question->explain == "8 Psi / N");
        CHECK(s.steps[0].question->formula_answer == std::optional<double>(1.67));
        CHECK(s.steps[0].question->typical_mistake == std::optional<double>(6.67));
        REQUIRE(s.steps[1].question);
        CHECK(s.steps[1].question->choices == std::vector<std::string>{"yes", "no"});
        CHECK_FALSE(s.steps[1].question->formula_answer.has_value()); // the run's measurement decides
    }
    SECTION("an answer key that is not a number points at its place") {
        const std::string e = usageError(kHeader + "[steps.question]\nask = \"a\"\nanswer = \"ranks\"\n"
                                                   "formula_answer = \"four\"\n");
        INFO(e);
        CHECK(e.rfind("t.toml:9:", 0) == 0);
        CHECK(e.find("formula_answer") != std::string::npos);
    }
    SECTION("an answer that does not parse points at its column inside the string") {
        const std::string e = usageError(
            kHeader + "[steps.question]\nask = \"a\"\nanswer = \"max(peak_memory.optimizer_state) / \"\n");
        INFO(e);
        // answer = "...": the quote is column 10; the end of the text is offset 35.
        CHECK(e.rfind("t.toml:8:46: error: [steps.question] answer:", 0) == 0);
    }
    SECTION("a question needs its step's until: the moment the run decides it") {
        const std::string e = usageError("[scenario]\nname = \"t\"\n[[steps]]\ntext = \"look\"\n"
                                         "[steps.question]\nask = \"a\"\nanswer = \"ranks\"\n");
        CHECK(e.rfind("t.toml:3:1: error: [[steps]] with a [steps.question]: set its 'until'", 0) == 0);
    }
    SECTION("an unknown summary field in the answer is refused") {
        const std::string e = usageError(kHeader + "[steps.question]\nask = \"a\"\nanswer = \"peak_mem\"\n");
        CHECK(e.find("unknown summary field 'peak_mem'") != std::string::npos);
    }
    SECTION("a missing ask or answer, one choice, a tolerance with choices and an unknown key are refused") {
        CHECK(usageError(kHeader + "[steps.question]\nanswer = \"ranks\"\n").find("missing key 'ask'") !=
              std::string::npos);
        CHECK(usageError(kHeader + "[steps.question]\nask = \"a\"\n").find("missing key 'answer'") !=
              std::string::npos);
        CHECK(usageError(kHeader + "[steps.question]\nask = \"a\"\nanswer = \"ranks\"\nchoices = [\"x\"]\n")
                  .find("at least two choices") != std::string::npos);
        CHECK(usageError(kHeader +
                         "[steps.question]\nask = \"a\"\nanswer = \"ranks\"\nchoices = [\"x\", \"y\"]\n"
                         "tolerance = 0.1\n")
                  .find("has no tolerance") != std::string::npos);
        CHECK(usageError(kHeader + "[steps.question]\nask = \"a\"\nanswer = \"ranks\"\nhint = \"x\"\n")
                  .find("hint") != std::string::npos);
        CHECK(usageError(kHeader + "[steps.question]\nask = \"a\"\nanswer = \"ranks\"\ntolerance = -1\n")
                  .find("t.toml:9:13") != std::string::npos);
    }
}

TEST_CASE("A measure is one number from the summary", "[exercise][checks]") {
    SECTION("a sum over fields, reduced to one number") {
        const dt::MeasureOutcome m = dt::evaluateMeasure("max(peak_memory.optimizer_state) / 1e6", kSummary);
        CHECK(m.ok);
        CHECK(m.value == Approx(1.6687));
        CHECK(m.detail.rfind("max(peak_memory.optimizer_state) / 1e6 = 1.66", 0) == 0);
    }
    SECTION("a comparison measures 1 when it holds and 0 when not") {
        CHECK(dt::evaluateMeasure("distinct(params_checksum) > 1", kSummary).value == 0.0);
        CHECK(dt::evaluateMeasure("distinct(params_checksum) == 1", kSummary).value == 1.0);
    }
    SECTION("an array, a null and a missing field do not decide") {
        const dt::MeasureOutcome per_rank = dt::evaluateMeasure("peak_memory.optimizer_state", kSummary);
        CHECK_FALSE(per_rank.ok);
        CHECK(per_rank.detail.find("take max(), min(), mean() or sum()") != std::string::npos);
        CHECK_FALSE(dt::evaluateMeasure("final_loss", kSummary).ok);
        CHECK_FALSE(dt::evaluateMeasure("pipeline.bubble_measured", kSummary).ok);
        CHECK_FALSE(dt::evaluateMeasure("steps / 0", kSummary).ok); // inf is not an answer
    }
    SECTION("a syntax problem is found before any run") {
        CHECK_FALSE(dt::findMeasureSyntaxProblem("ranks * steps"));
        CHECK(dt::findMeasureSyntaxProblem("ranks steps"));
        CHECK(dt::findMeasureSyntaxProblem(""));
        CHECK(dt::findMeasureSyntaxProblem("ranks < 1 and steps > 2")); // one comparison at most
    }
}

TEST_CASE("A prediction is judged by what the run measured", "[exercise]") {
    SECTION("a number is right within its tolerance of the measured value, either side") {
        const dt::NarrationQuestion q = numberQuestion("max(peak_memory.optimizer_state) / 1e6", 0.1);
        CHECK(dt::judgeExercise(q, 1.67, kSummary).right);
        CHECK(dt::judgeExercise(q, 1.51, kSummary).right);
        CHECK(dt::judgeExercise(q, 1.83, kSummary).right);
        CHECK_FALSE(dt::judgeExercise(q, 6.67, kSummary).right); // DDP's answer, not ZeRO-2's
        CHECK_FALSE(dt::judgeExercise(q, 1.49, kSummary).right);
        const dt::ExerciseVerdict v = dt::judgeExercise(q, 6.67, kSummary);
        CHECK(v.decided);
        CHECK(v.answered);
        CHECK(v.measured_text == "1.67 MB");
    }
    SECTION("an exact zero needs an exact zero") {
        const dt::NarrationQuestion q = numberQuestion("failed_collectives", 0.1);
        const std::string summary = R"({"failed_collectives": 0})";
        CHECK(dt::judgeExercise(q, 0.0, summary).right);
        CHECK_FALSE(dt::judgeExercise(q, 0.01, summary).right);
    }
    SECTION("a choice is right when it is the one the measure picks") {
        dt::NarrationQuestion q;
        q.ask = "same weights?";
        q.answer = "distinct(params_checksum) > 1";
        q.choices = {"yes", "no"};
        const dt::ExerciseVerdict right = dt::judgeExercise(q, 0.0, kSummary);
        CHECK(right.right);
        CHECK(right.right_choice == 0);
        CHECK(right.measured_text == "yes");
        CHECK_FALSE(dt::judgeExercise(q, 1.0, kSummary).right);
        q.answer = "ranks"; // 4: no such choice
        CHECK_FALSE(dt::judgeExercise(q, 0.0, kSummary).decided);
    }
    SECTION("no prediction: the measured value is shown, nothing is right") {
        const dt::ExerciseVerdict v = dt::judgeExercise(numberQuestion("ranks", 0.1), std::nullopt, kSummary);
        CHECK(v.decided);
        CHECK_FALSE(v.answered);
        CHECK_FALSE(v.right);
        CHECK(v.measured == 4.0);
    }
    SECTION("the summary gets one exercises entry per question, decided by it") {
        dt::Scenario s;
        s.steps.resize(3);
        s.steps[1].question = numberQuestion("collectives[\"all-reduce\"].count / (ranks * steps)", 0.05);
        const nlohmann::json j = nlohmann::json::parse(dt::summaryWithExercises(kSummary, s));
        REQUIRE(j["exercises"].size() == 1);
        CHECK(j["exercises"][0]["step"] == 2);
        CHECK(j["exercises"][0]["decided"] == true);
        CHECK(j["exercises"][0]["measured"] == 16.0);
        dt::Scenario none;
        CHECK(dt::summaryWithExercises(kSummary, none) == kSummary);
    }
}
