// test_closing_check.cpp: closing checks ([[checks]]): the expression grammar,
// its evaluation over a summary JSON (values computed by hand), the messages
// for mistakes, and the [[checks]] table in a scenario file.
#include "dtlab/closing_check.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/scenario.hpp"

#include <catch2/catch.hpp>

#include <string>

namespace {

// A small summary: 2 ranks, a loss curve, per-rank memory and a pipeline object.
const std::string kSummary = R"({
  "ok": true, "ranks": 2, "steps": 3,
  "initial_loss": 4.0, "final_loss": 3.0, "loss_by_step": [4.0, 3.5, 3.0],
  "peak_memory": [{"parameters": 100, "optimizer_state": 200}, {"parameters": 110, "optimizer_state": 180}],
  "theory": {"parameters": 100, "optimizer_state": 200},
  "pipeline": {"bubble_measured": 0.6, "bubble_theory": 0.5},
  "params_checksum": ["aa", "aa"],
  "collectives": {"all-reduce": {"count": 8}},
  "final_loss_null": null,
  "fault_tolerance": null
})";

dt::CheckOutcome check(const std::string& expect, const std::string& baseline = "") {
    return dt::evaluateCheck(expect, kSummary, baseline);
}

std::string syntaxProblem(const std::string& expect, bool has_baseline = false) {
    const auto p = dt::findCheckSyntaxProblem(expect, has_baseline);
    return p ? std::to_string(p->offset) + ": " + p->message : "";
}

const std::string kHeader = "[scenario]\nname = \"t\"\n";

} // namespace

TEST_CASE("A closing check compares values taken from the run summary", "[checks]") {
    SECTION("a comparison of two fields holds or fails as the numbers say") {
        CHECK(check("final_loss < initial_loss").passed);
        CHECK_FALSE(check("final_loss > initial_loss").passed);
        CHECK(check("final_loss == 3").passed);
        CHECK(check("final_loss != 4").passed);
    }
    SECTION("arithmetic follows the usual precedence") {
        CHECK(check("final_loss == 0.5 * initial_loss + 1").passed);         // 3 == 2 + 1
        CHECK_FALSE(check("final_loss <= 0.5 * (initial_loss + 1)").passed); // 3 <= 2.5
        CHECK(check("final_loss <= 0.75 * (initial_loss + 0)").passed);      // 3 <= 3
        CHECK(check("-final_loss < 0").passed);
        CHECK(check("initial_loss / 2 == 2").passed);
    }
    SECTION("a name on an array of objects takes that field of every element") {
        const auto o = check("max(peak_memory.parameters) == 110");
        CHECK(o.passed);
        CHECK(o.detail == "max(peak_memory.parameters) = 110 == 110");
        CHECK(check("min(peak_memory.parameters) == 100").passed);
        CHECK(check("mean(peak_memory.optimizer_state) == 190").passed);
        CHECK(check("sum(peak_memory.parameters) == 210").passed);
        CHECK(check("count(loss_by_step) == 3").passed);
    }
    SECTION("a comparison of an array holds only when it holds for every element") {
        CHECK(check("peak_memory.parameters >= theory.parameters").passed);
        const auto o = check("peak_memory.parameters <= theory.parameters");
        CHECK_FALSE(o.passed);
        CHECK(o.detail == "peak_memory.parameters = [100, 110], not <= theory.parameters = 100");
        CHECK(check("peak_memory.parameters <= 1.1 * theory.parameters").passed);
    }
    SECTION("indexes pick one element and negative indexes count from the end") {
        CHECK(check("loss_by_step[0] == 4").passed);
        CHECK(check("loss_by_step[-1] == 3").passed);
        CHECK(check("peak_memory[1].parameters == 110").passed);
        const auto o = check("loss_by_step[3] == 0");
        CHECK_FALSE(o.passed);
        CHECK(o.detail.find("index out of range (the array has 3 elements)") != std::string::npos);
    }
    SECTION("a quoted name in brackets reads a field that is not a plain word") {
        const auto o = check("collectives[\"all-reduce\"].count == 8");
        CHECK(o.passed);
        CHECK(o.detail == "collectives[\"all-reduce\"].count = 8 == 8");
        CHECK(check("collectives['all-reduce'].count == 8").passed);
        CHECK(check("collectives[\"all-gather\"].count == 0").detail ==
              "cannot evaluate: the summary has no field 'collectives[\"all-gather\"]'");
        CHECK(syntaxProblem("collectives[\"all-reduce].count == 8") ==
              "12: this quoted field name is never closed");
    }
    SECTION("distinct counts different strings, so equal checksums give 1") {
        CHECK(check("distinct(params_checksum) == 1").passed);
        const auto o = check("params_checksum == 1");
        CHECK_FALSE(o.passed);
        CHECK(o.detail.find("holds strings") != std::string::npos);
    }
    SECTION("distinct counts each null as a value of its own: ranks with no checksum never pass '== 1'") {
        const std::string one_null = R"({"params_checksum": ["aa", null, "aa"]})";
        CHECK(dt::evaluateCheck("distinct(params_checksum) == 2", one_null, "").passed);
        CHECK(dt::evaluateCheck("count(params_checksum) == 3", one_null, "").passed);
        const std::string all_null = R"({"params_checksum": [null, null, null, null]})";
        const auto o = dt::evaluateCheck("distinct(params_checksum) == 1", all_null, "");
        CHECK_FALSE(o.passed);
        CHECK(o.detail == "distinct(params_checksum) = 4, not == 1");
        CHECK(dt::evaluateCheck("distinct(dropped_events) == 2", R"({"dropped_events": [1, null, 1]})", "")
                  .passed);
    }
    SECTION("booleans are 1 and 0, and null fails every comparison") {
        CHECK(check("ok == 1").passed);
        CHECK_FALSE(check("final_loss_null < 1e9").passed);
        CHECK_FALSE(check("final_loss_null >= 0").passed);
        // A null against an array, and in arithmetic (found by the fuzzer under UBSan).
        CHECK_FALSE(dt::evaluateCheck("x < y", R"({"x": null, "y": [1, 2]})", "").passed);
        CHECK_FALSE(dt::evaluateCheck("x * 2 < y", R"({"x": null, "y": [1, 2]})", "").passed);
        CHECK_FALSE(dt::evaluateCheck("y < x", R"({"x": [], "y": 3})", "").passed);
    }
    SECTION("several comparisons joined by and must all hold, and each is reported") {
        const auto o =
            check("final_loss < initial_loss and pipeline.bubble_measured < pipeline.bubble_theory");
        CHECK_FALSE(o.passed);
        CHECK(o.detail == "final_loss = 3 < initial_loss = 4; pipeline.bubble_measured = 0.6, not < "
                          "pipeline.bubble_theory = 0.5");
    }
    SECTION("baseline paths read the baseline run's summary") {
        const std::string baseline = R"({"pipeline": {"bubble_measured": 0.2}})";
        CHECK(check("baseline.pipeline.bubble_measured < pipeline.bubble_measured", baseline).passed);
        CHECK_FALSE(check("baseline.pipeline.bubble_measured > pipeline.bubble_measured", baseline).passed);
        const auto missing = check("baseline.pipeline.bubble_measured < 1");
        CHECK_FALSE(missing.passed);
        CHECK(missing.detail.find("baseline run did not run") != std::string::npos);
    }
    SECTION("a field the summary lacks fails the check and names the field") {
        const auto o = check("pipeline.bubble_simulated < 1");
        CHECK_FALSE(o.passed);
        CHECK(o.detail == "cannot evaluate: the summary has no field 'pipeline.bubble_simulated'");
        const auto null_parent = check("fault_tolerance.heals == 1");
        CHECK(null_parent.detail.find("its parent is null") != std::string::npos);
        const auto object = check("theory < 1");
        CHECK(object.detail.find("an object; name one of its fields: optimizer_state, parameters") !=
              std::string::npos);
    }
}

TEST_CASE("A closing check's mistakes are found before the run, with where they are", "[checks]") {
    SECTION("well-formed checks have no problem") {
        CHECK(syntaxProblem("final_loss < initial_loss") == "");
        CHECK(syntaxProblem("max(peak_memory.live_peak) < max(baseline.peak_memory.live_peak)", true) == "");
        CHECK(syntaxProblem("abs(final_loss - 3) <= 1e-3 and ok == 1") == "");
    }
    SECTION("each mistake names its offset and what was expected") {
        CHECK(syntaxProblem("") == "0: empty; write a comparison such as \"final_loss < initial_loss\"");
        CHECK(syntaxProblem("final_loss") ==
              "10: expected a comparison (<, <=, >, >=, ==, !=) after 'final_loss'");
        CHECK(syntaxProblem("final_los < 1")
                  .rfind("0: unknown summary field 'final_los'; expected one of: ok,", 0) == 0);
        CHECK(syntaxProblem("median(loss_by_step) < 1") ==
              "0: unknown function 'median'; expected max, min, mean, sum, count, distinct or abs");
        CHECK(syntaxProblem("final_loss = 1") == "11: '=' is not an operator; use == or !=");
        CHECK(syntaxProblem("max(loss_by_step < 1") == "17: expected ')' here");
        CHECK(syntaxProblem("loss_by_step[x] < 1") == "13: expected an integer index inside [ ]");
        CHECK(syntaxProblem("final_loss < 1 2") == "15: unexpected '2' (comparisons are joined with 'and')");
        CHECK(syntaxProblem("final_loss < $") == "13: unexpected character '$'");
    }
    SECTION("an expression nested too deeply is refused at the level past the limit, not a stack overflow") {
        const std::string tooDeep =
            ": the expression nests too deeply (more than 256 parentheses, functions, "
            "minus signs or chained operators inside one another)";
        // 10,000 parentheses and 100,000 minus signs once crashed dtrun check and dtlab (issue 23).
        CHECK(syntaxProblem(std::string(10000, '(') + "1" + std::string(10000, ')') + " < 2")
                  .rfind("256" + tooDeep, 0) == 0);
        CHECK(syntaxProblem(std::string(100000, '-') + "1 < 2").rfind("256" + tooDeep, 0) == 0);
        std::string functions;
        for (int i = 0; i < 1000; ++i)
            functions += "abs(";
        CHECK(syntaxProblem(functions + "final_loss" + std::string(1000, ')') + " < 1")
                  .rfind("1024" + tooDeep, 0) == 0);
        // A chain of 100,000 terms: the 256th '-' makes a subtree 257 deep.
        std::string chain = "1";
        for (int i = 0; i < 100000; ++i)
            chain += "-1";
        CHECK(syntaxProblem(chain + " < 2").rfind("511" + tooDeep, 0) == 0);
        // At the limit is fine, and evaluates.
        CHECK(syntaxProblem(std::string(255, '(') + "1" + std::string(255, ')') + " < 2") == "");
        CHECK(check(std::string(254, '-') + "1 < 2").passed);
        // The evaluator parses with the same limit.
        const auto deep = check(std::string(100000, '-') + "1 < 2");
        CHECK_FALSE(deep.passed);
        CHECK(deep.detail.find("nests too deeply") != std::string::npos);
    }
    SECTION("baseline without a baseline run is refused") {
        CHECK(syntaxProblem("baseline.final_loss < 1").rfind("0: 'baseline' needs a baseline run", 0) == 0);
    }
}

TEST_CASE("A scenario's [[checks]] table is read and checked with file:line:column", "[checks][scenario]") {
    SECTION("claim, expect and baseline are read") {
        const dt::Scenario s =
            dt::parseScenarioText(kHeader + "[[checks]]\nclaim = \"loss falls\"\n"
                                            "expect = \"final_loss < initial_loss\"\n"
                                            "[[checks]]\nclaim = \"less memory\"\n"
                                            "baseline = { strategy = \"ddp\", microbatches = 2 }\n"
                                            "expect = \"max(peak_memory.live_peak) < "
                                            "max(baseline.peak_memory.live_peak)\"\n",
                                  "t.toml");
        REQUIRE(s.checks.size() == 2);
        CHECK(s.checks[0].claim == "loss falls");
        CHECK(s.checks[0].baseline.empty());
        CHECK(s.checks[1].baseline.strategy == dt::StrategyKind::Ddp);
        CHECK(s.checks[1].baseline.microbatches == 2);
        CHECK(s.checks[1].baseline.describe() == "strategy = ddp, microbatches = 2");
        const dt::Scenario baseline = dt::scenarioForBaseline(s, s.checks[1].baseline);
        CHECK(baseline.strategy.kind == dt::StrategyKind::Ddp);
        CHECK(baseline.strategy.microbatches == 2);
        CHECK(baseline.checks.empty());
        // The checks travel with the scenario (recordings, the ranks' copy).
        const dt::Scenario back = dt::scenarioFromJson(dt::scenarioToJson(s));
        REQUIRE(back.checks.size() == 2);
        CHECK(back.checks[1].expect == s.checks[1].expect);
        CHECK(back.checks[1].baseline.describe() == "strategy = ddp, microbatches = 2");
    }
    SECTION("a syntax error in expect points at its column inside the string") {
        try {
            (void)dt::parseScenarioText(
                kHeader + "[[checks]]\nclaim = \"c\"\nexpect = \"final_loss < loss\"\n", "t.toml");
            FAIL("expected a UsageError");
        } catch (const dt::UsageError& e) {
            // expect = "final_loss < loss": the value's quote is column 10, 'loss' is offset 13.
            CHECK(std::string(e.what()).rfind(
                      "t.toml:5:24: error: [[checks]] expect: unknown summary field 'loss'", 0) == 0);
        }
    }
    SECTION("an expect nested too deeply points at the column where the limit is passed") {
        try {
            (void)dt::parseScenarioText(kHeader + "[[checks]]\nclaim = \"c\"\nexpect = \"" +
                                            std::string(10000, '(') + "1" + std::string(10000, ')') +
                                            " < 2\"\n",
                                        "t.toml");
            FAIL("expected a UsageError");
        } catch (const dt::UsageError& e) {
            // The quote is column 10; the 257th '(' is offset 256.
            CHECK(std::string(e.what()).rfind(
                      "t.toml:5:267: error: [[checks]] expect: the expression nests too deeply", 0) == 0);
        }
    }
    SECTION("missing keys, unknown keys and bad baselines are errors") {
        auto errorOf = [](const std::string& text) {
            try {
                (void)dt::parseScenarioText(text, "t.toml");
            } catch (const dt::UsageError& e) {
                return std::string(e.what());
            }
            return std::string("no error");
        };
        CHECK(errorOf(kHeader + "[[checks]]\nexpect = \"ok == 1\"\n") ==
              "t.toml:3:1: error: [[checks]]: missing key 'claim' (the sentence the run must show, for the "
              "presenter)");
        CHECK(errorOf(kHeader + "[[checks]]\nclaim = \"c\"\n")
                  .rfind("t.toml:3:1: error: [[checks]]: missing key 'expect'", 0) == 0);
        CHECK(errorOf(kHeader + "[[checks]]\nclaim = \"c\"\nexpect = \"ok == 1\"\nwhy = 1\n") ==
              "t.toml:6:1: error: unknown key 'why' in [[checks]]; expected one of: claim, expect, baseline");
        CHECK(
            errorOf(kHeader +
                    "[[checks]]\nclaim = \"c\"\nexpect = \"ok == 1\"\nbaseline = { strategy = \"zero9\" }\n")
                .find("[strategy] kind: expected one of") != std::string::npos);
        CHECK(errorOf(kHeader +
                      "[[checks]]\nclaim = \"c\"\nexpect = \"ok == 1\"\nbaseline = { steps = 3 }\n") ==
              "t.toml:6:14: error: unknown key 'steps' in [[checks]] baseline; expected one of: strategy, "
              "microbatches, schedule, overlap, activation_checkpointing, offload_optimizer, "
              "pipeline_data_parallel, pseudo_gradient");
    }
}

TEST_CASE("Closing checks on a failed run are not judged, except those about the failure", "[checks]") {
    std::string failed = kSummary;
    failed.replace(failed.find("\"ok\": true"), 10, "\"ok\": false");
    std::vector<dt::ClosingCheck> checks(3);
    checks[0].claim = "the loss falls";
    checks[0].expect = "final_loss < initial_loss"; // would pass: the failure makes it meaningless
    checks[1].claim = "memory is as predicted";
    checks[1].expect = "max(peak_memory.parameters) <= 100"; // would fail
    checks[2].claim = "one lost rank stops plain DDP";
    checks[2].expect = "ok == 0 and steps < 4";

    SECTION("a failed run's checks say 'not judged: the run failed', pass or fail as they might") {
        const auto results = dt::evaluateClosingChecks(checks, failed, {});
        REQUIRE(results.size() == 3);
        for (int i : {0, 1}) {
            CHECK_FALSE(results[size_t(i)].evaluated);
            CHECK_FALSE(results[size_t(i)].passed);
            CHECK(results[size_t(i)].run_failed);
            CHECK(results[size_t(i)].detail == "not judged: the run failed");
        }
        SECTION("a check that reads ok is about the failure and is judged") {
            CHECK(results[2].evaluated);
            CHECK(results[2].passed);
            CHECK_FALSE(results[2].run_failed);
        }
        SECTION("the summary's checks array carries it") {
            const std::string with = dt::summaryWithChecks(failed, results);
            CHECK(with.find("\"run_failed\": true") != std::string::npos);
            CHECK(with.find("not judged: the run failed") != std::string::npos);
        }
    }

    SECTION("the same checks on a run that succeeded get verdicts") {
        const auto results = dt::evaluateClosingChecks(checks, kSummary, {});
        CHECK(results[0].evaluated);
        CHECK(results[0].passed);
        CHECK(results[1].evaluated);
        CHECK_FALSE(results[1].passed);
        CHECK(results[2].evaluated);
        CHECK_FALSE(results[2].passed);
        CHECK_FALSE(results[0].run_failed);
    }

    SECTION("only a path rooted at ok or failure_reason reads the outcome") {
        CHECK(dt::checkReadsRunOutcome("ok == 1"));
        CHECK(dt::checkReadsRunOutcome("steps > 2 and ok == 0"));
        CHECK_FALSE(dt::checkReadsRunOutcome("fault_tolerance.ok == 1"));
        CHECK_FALSE(dt::checkReadsRunOutcome("steps == steps_requested"));
    }
}
