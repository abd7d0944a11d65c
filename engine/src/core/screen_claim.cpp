// screen_claim.cpp: narration claims and bound values over the screen
// document (screen_claim.hpp, fields in screen_fields.def).
//
// Steps: a claim is parsed and evaluated by the closing checks' grammar with
// the screen's vocabulary; a bound text is scanned for {...} spans (a `{{` is
// a literal brace), each a measure over the same vocabulary, replaced by its
// value formatted for a sentence.
#include "dtlab/screen_claim.hpp"

#include <cmath>
#include <cstdio>

namespace dt {

const std::vector<ScreenField>& screenFields() {
    static const std::vector<ScreenField> fields = {
#define X(name, meaning) {name, meaning},
#include "dtlab/screen_fields.def"
#undef X
    };
    return fields;
}

const CheckVocabulary& screenVocabulary() {
    static const CheckVocabulary vocabulary = [] {
        CheckVocabulary v;
        v.subject = "screen";
        for (const ScreenField& f : screenFields())
            v.fields.emplace_back(f.name);
        return v;
    }();
    return vocabulary;
}

std::optional<CheckSyntaxProblem> findScreenClaimProblem(const std::string& expect) {
    return findCheckSyntaxProblem(expect, screenVocabulary());
}

CheckOutcome evaluateScreenClaim(const std::string& expect, const std::string& screen_json) {
    return evaluateCheck(expect, screen_json, screenVocabulary());
}

namespace {

// One {...} of a text: where it starts (the brace) and what is inside.
struct BoundSpan {
    size_t open = 0, close = 0; // offsets of '{' and '}'
    std::string expression;
};

// The spans of `text`; `problem` says why it cannot be read (an unclosed brace).
std::vector<BoundSpan> boundSpans(const std::string& text, std::optional<CheckSyntaxProblem>* problem) {
    std::vector<BoundSpan> spans;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '{')
            continue;
        if (i + 1 < text.size() && text[i + 1] == '{') {
            ++i; // "{{": a literal brace
            continue;
        }
        const size_t close = text.find('}', i + 1);
        const size_t nested = text.find('{', i + 1);
        if (close == std::string::npos || (nested != std::string::npos && nested < close)) {
            if (problem)
                *problem = CheckSyntaxProblem{i, "a '{' without its '}' (write {{ for a literal brace)"};
            return spans;
        }
        spans.push_back(BoundSpan{i, close, text.substr(i + 1, close - i - 1)});
        i = close;
    }
    return spans;
}

std::string formatBound(const MeasureOutcome& m) {
    if (!m.ok)
        return "?";
    if (!m.text.empty() || std::isnan(m.value))
        return m.text;
    char buf[48];
    if ((m.value == std::floor(m.value) || std::fabs(m.value) >= 100) && std::fabs(m.value) < 1e15)
        std::snprintf(buf, sizeof(buf), "%.0f", m.value); // 1061 ms, not 1.06e+03
    else
        std::snprintf(buf, sizeof(buf), "%.3g", m.value);
    return buf;
}

} // namespace

std::optional<CheckSyntaxProblem> findBoundTextProblem(const std::string& text) {
    std::optional<CheckSyntaxProblem> problem;
    for (const BoundSpan& span : boundSpans(text, &problem)) {
        if (auto p = findMeasureSyntaxProblem(span.expression, screenVocabulary()))
            return CheckSyntaxProblem{span.open + 1 + p->offset, "{" + span.expression + "}: " + p->message};
    }
    return problem;
}

std::vector<std::string> boundExpressions(const std::string& text) {
    std::vector<std::string> out;
    for (const BoundSpan& span : boundSpans(text, nullptr))
        out.push_back(span.expression);
    return out;
}

std::string bindScreenValues(const std::string& text, const std::string& screen_json) {
    std::string out;
    size_t at = 0;
    for (const BoundSpan& span : boundSpans(text, nullptr)) {
        out += text.substr(at, span.open - at);
        out += screen_json.empty()
                   ? "..."
                   : formatBound(evaluateMeasure(span.expression, screen_json, screenVocabulary()));
        at = span.close + 1;
    }
    out += text.substr(at);
    // "{{" reads as one brace.
    std::string result;
    for (size_t i = 0; i < out.size(); ++i) {
        result += out[i];
        if (out[i] == '{' && i + 1 < out.size() && out[i + 1] == '{')
            ++i;
    }
    return result;
}

} // namespace dt
