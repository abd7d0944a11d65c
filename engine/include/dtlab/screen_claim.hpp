// screen_claim.hpp: what a narration step says about the screen, checked.
//
// At a held moment dtlab describes what its views show as a JSON document
// (every field in screen_fields.def). A [[steps]] `expect` is a claim over that
// document in the closing checks' grammar (closing_check.hpp):
//
//   expect = "ranks[1].dead == 1 and quorum.id == 1 and stopwatch.new_quorum_ms < 0"
//
// and a step's text may bind values of it in braces, so the sentence says
// what the screen shows: "noticed {stopwatch.detected_ms} ms after the kill
// ({stopwatch.detected_by})". `{{` is a literal brace. dtrun check refuses a
// field that does not exist (file:line:column); the walk test evaluates every
// claim at its hold.
#pragma once

#include "dtlab/closing_check.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dt {

struct ScreenField {
    const char* name;    // "ranks.dead"
    const char* meaning; // for `dtrun check` messages and docs
};
[[nodiscard]] const std::vector<ScreenField>& screenFields();
// The fields as the grammar's vocabulary (subject "screen").
[[nodiscard]] const CheckVocabulary& screenVocabulary();

// nullopt when `expect` is a well-formed claim over known screen fields.
[[nodiscard]] std::optional<CheckSyntaxProblem> findScreenClaimProblem(const std::string& expect);
[[nodiscard]] CheckOutcome evaluateScreenClaim(const std::string& expect, const std::string& screen_json);

// nullopt when every {...} of `text` is a measure over known screen fields and
// the braces pair up; offset points into text.
[[nodiscard]] std::optional<CheckSyntaxProblem> findBoundTextProblem(const std::string& text);
// `text` with each {...} replaced by its value on the screen: a string as is,
// a whole number or one from 100 up without decimals (1061), else 3
// significant digits (27.2, 1.45); "?" when it
// cannot be evaluated. Without a screen (screen_json "": before the step's
// moment), each {...} reads "...".
[[nodiscard]] std::string bindScreenValues(const std::string& text, const std::string& screen_json);
// The {...} expressions of a text, in order (for tests and messages).
[[nodiscard]] std::vector<std::string> boundExpressions(const std::string& text);

} // namespace dt
