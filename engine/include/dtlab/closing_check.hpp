// closing_check.hpp: a scenario's closing checks ([[checks]] in the TOML file).
//
// A closing check states what the run must have shown for the scenario to
// have taught its point ("each rank holds a quarter of the AdamW state") and
// an expression over the run's summary JSON (docs/summary.md) that decides it:
//
//   expect = "max(peak_memory.optimizer_state) <= 1.05 * theory.optimizer_state"
//   expect = "baseline.pipeline.bubble_measured < pipeline.bubble_measured"
//
// Grammar (spaces anywhere between tokens):
//   check      := comparison ("and" comparison)*
//   comparison := sum ("<" | "<=" | ">" | ">=" | "==" | "!=") sum
//   sum        := product (("+" | "-") product)*
//   product    := unary (("*" | "/") unary)*
//   unary      := "-" unary | primary
//   primary    := NUMBER | path | FUNCTION "(" sum ")" | "(" sum ")"
//   path       := NAME ("." NAME | "[" INTEGER "]" | "[" QUOTED "]")*
//                 (a negative index counts from the end; collectives["all-reduce"]
//                 names a field that is not a plain word)
//   FUNCTION   := max | min | mean | sum | count | distinct | abs
// A path walks the summary JSON; a name applied to an array of objects takes
// that field of every element (peak_memory.parameters = one number per rank).
// `baseline.` walks the summary of the baseline run: the same scenario run
// again with the check's `baseline` overrides (dtrun run --check runs it).
// Arrays combine element by element (a scalar is used for every element), and
// a comparison of arrays holds when it holds for every element. true is 1,
// false is 0, null is NaN, and every comparison with NaN fails.
#pragma once

#include "dtlab/scenario.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dt {

// A syntax problem in an `expect` text: offset is 0-based into the text.
struct CheckSyntaxProblem {
    size_t offset = 0;
    std::string message;
};

// Parses `expect` without evaluating it; nullopt when it is well formed.
// Unknown functions, a path whose first name is not a summary field, a
// missing comparison, and `baseline.` without a baseline are problems.
[[nodiscard]] std::optional<CheckSyntaxProblem> findCheckSyntaxProblem(const std::string& expect,
                                                                       bool has_baseline);

// A measure: one number from the summary, in the same grammar without the
// comparison ("max(peak_memory.optimizer_state) / 1e6"), or one comparison,
// which measures 1 when it holds and 0 when not ("distinct(params_checksum) > 1").
// The narration's questions ([steps.question] answer) are measures.
[[nodiscard]] std::optional<CheckSyntaxProblem> findMeasureSyntaxProblem(const std::string& measure);

struct MeasureOutcome {
    bool ok = false;    // a finite number came out (or, over a vocabulary, one string: text)
    double value = 0.0; // NaN when not ok
    std::string text;   // over a vocabulary: the string a path named ("" for a number)
    std::string detail; // "max(peak_memory.optimizer_state) / 1e6 = 1.67", or why it could not be evaluated
};
// An array (one value per rank) is refused: reduce it with max(), min(), mean() or sum().
[[nodiscard]] MeasureOutcome evaluateMeasure(const std::string& measure, const std::string& summary_json);

// Another document the same grammar reads: the screen at a narration hold
// (screen_claim.hpp). Its paths must name one of `fields` exactly, indices
// aside ("ranks[1].dead" is the field "ranks.dead"); there is no `baseline.`.
struct CheckVocabulary {
    std::string subject;             // "screen": in messages ("unknown screen field 'x'")
    std::vector<std::string> fields; // every leaf, dotted, without indices: "ranks.dead"
};
[[nodiscard]] std::optional<CheckSyntaxProblem> findCheckSyntaxProblem(const std::string& expect,
                                                                       const CheckVocabulary& vocabulary);
[[nodiscard]] std::optional<CheckSyntaxProblem> findMeasureSyntaxProblem(const std::string& measure,
                                                                         const CheckVocabulary& vocabulary);
// Over a vocabulary's document a measure may also name one string (MeasureOutcome::text).
[[nodiscard]] MeasureOutcome evaluateMeasure(const std::string& measure, const std::string& json,
                                             const CheckVocabulary& vocabulary);

// The top-level summary field names a path may start with (for messages and checks).
[[nodiscard]] const std::vector<std::string>& checkSummaryRoots();

struct CheckOutcome {
    bool passed = false;
    std::string detail; // the values compared: "max(peak_memory.optimizer_state) = 2.1e+05 <= 2.2e+05"
};

// Evaluates `expect` against a summary JSON text. baseline_summary is the
// baseline run's summary JSON ("" when the check has no baseline or it did
// not run). A path missing from the summary fails the check and says which.
[[nodiscard]] CheckOutcome evaluateCheck(const std::string& expect, const std::string& summary_json,
                                         const std::string& baseline_summary_json);
// The same over a vocabulary's document.
[[nodiscard]] CheckOutcome evaluateCheck(const std::string& expect, const std::string& json,
                                         const CheckVocabulary& vocabulary);

// One check's result, as dtrun prints it and the summary's `checks` array holds it.
struct ClosingCheckResult {
    std::string claim;
    std::string expect;
    std::string baseline;    // CheckBaseline::describe(); "" without one
    bool evaluated = false;  // false: its baseline run did not run, or the run failed
    bool run_failed = false; // not judged: the run failed and the check is not about the failure
    bool passed = false;
    std::string detail; // the values compared, or why it could not be evaluated
};

// True when `expect` reads the run's outcome (a path rooted at `ok` or
// `failure_reason`): a check about a failure, judged even when the run failed.
[[nodiscard]] bool checkReadsRunOutcome(const std::string& expect);

// Evaluates every check of a scenario. baseline_summaries maps
// CheckBaseline::describe() to that baseline run's summary JSON; a check whose
// baseline is missing is reported as not evaluated. When the run failed
// (summary ok = false), a check that does not read the outcome
// (checkReadsRunOutcome) is not judged: run_failed, detail
// "not judged: the run failed".
[[nodiscard]] std::vector<ClosingCheckResult>
evaluateClosingChecks(const std::vector<ClosingCheck>& checks, const std::string& summary_json,
                      const std::map<std::string, std::string>& baseline_summaries);

// The summary JSON with a `checks` array added (docs/summary.md).
[[nodiscard]] std::string summaryWithChecks(const std::string& summary_json,
                                            const std::vector<ClosingCheckResult>& results);

} // namespace dt
