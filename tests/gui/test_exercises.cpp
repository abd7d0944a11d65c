// test_exercises.cpp: predict, then run in the real dtlab under Xvfb
// (app_exercises.cpp). A small scenario asks three questions; the script
// answers each through the narration panel's own path (answer, reveal), and
// the app judges them on the run's summary at each step's moment: the first
// prediction right, the second wrong, the third a choice decided at the end.
#include "gui/e2e_support.hpp"
#include "integration/process_helpers.hpp"

#include <catch2/catch.hpp>

#include <string>

namespace {

// Three narrated steps with a question each. `steps` at a step that pauses the
// run is measured when every rank waits at the pause: 2, or 3 when a rank had
// already begun its third step (within the tolerance of 0.5 either way).
std::string exerciseScenario(const it::TempDir& dir) {
    it::ScenarioSpec spec;
    spec.name = "exercise e2e";
    spec.ranks = 2;
    spec.steps = 12;
    spec.d_model = 64;
    spec.layers = 2;
    spec.heads = 2;
    spec.run_toml = "step_delay_ms = 100\n";
    std::string toml = it::scenarioToml(spec);
    toml += R"(
[[steps]]
text = "Two steps."
until = "step >= 2"
pause = true
[steps.question]
ask = "How many steps will every rank have completed at this pause?"
answer = "steps"
tolerance = 0.5

[[steps]]
text = "Four steps."
until = "step >= 4"
pause = true
[steps.question]
ask = "And now?"
answer = "steps"
tolerance = 0.5

[[steps]]
text = "The end."
until = "run finished"
[steps.question]
ask = "Do the two ranks end with the same weights?"
choices = ["yes", "no"]
answer = "distinct(params_checksum) > 1"
explain = "DDP keeps them identical."
)";
    return dir.write("exercise.toml", toml);
}

} // namespace

TEST_CASE("dtlab judges the narration's predictions on the real run: right, wrong, and a choice at the end",
          "[e2e][exercise]") {
    const auto display = e2e::startDisplay();
    if (!display)
        return;
    it::TempDir dir("dtlab-exercise");
    const std::string art = e2e::artifactDir();
    const std::string script = dir.write("exercise.script", "answer 2\n"
                                                            "expect_exercise right\n"
                                                            "screenshot exercise_right.png\n"
                                                            "next\n"
                                                            "answer 10\n"
                                                            "expect_exercise wrong\n"
                                                            "screenshot exercise_wrong.png\n"
                                                            "next\n"
                                                            "answer 0\n"
                                                            "expect_exercise right\n"
                                                            "wait_finished\n"
                                                            "screenshot exercise_choice.png\n"
                                                            "quit\n");
    const it::ProcessResult r =
        it::runProcess({e2e::kDtlab, exerciseScenario(dir), "--script", script, "--screenshot-dir", art},
                       e2e::displayOptions(*display, 180.0));
    INFO(it::describe(r) << "\nstdout:\n" << r.out);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("dtlab: exercise: step 1: predicted 2") != std::string::npos);
    CHECK(r.out.find("dtlab: exercise: step 1: measured ") != std::string::npos);
    CHECK(r.out.find(": right (steps = ") != std::string::npos);
    CHECK(r.out.find("dtlab: exercise: step 2: predicted 10") != std::string::npos);
    CHECK(r.out.find(": wrong (steps = ") != std::string::npos);
    CHECK(r.out.find("dtlab: exercise: step 3: measured yes: right") != std::string::npos);
    CHECK(r.out.find("dtlab: script done") != std::string::npos);
    e2e::checkNoWorkerLeft(r.out, 2);
    e2e::checkScreenshot(art + "/exercise_wrong.png");
}

TEST_CASE("A script cannot answer where there is no question, nor expect a verdict before a prediction",
          "[e2e][exercise]") {
    const auto display = e2e::startDisplay();
    if (!display)
        return;
    it::TempDir dir("dtlab-exercise-bad");
    it::ScenarioSpec spec;
    spec.steps = 4;
    const std::string scenario = dir.write("plain.toml", it::scenarioToml(spec));
    const std::string script = dir.write("bad.script", "answer 3\nquit\n");
    const it::ProcessResult r =
        it::runProcess({e2e::kDtlab, scenario, "--script", script}, e2e::displayOptions(*display, 120.0));
    INFO(it::describe(r) << "\nstdout:\n" << r.out);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 1);
    CHECK(r.out.find("answer: this narration step has no open question") != std::string::npos);
}
