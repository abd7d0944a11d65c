// what_if.hpp: the what-if knobs (change a scenario's main parameters and
// rerun it) and the comparison of the last two runs. No ImGui: tests read it.
//
//   knobsFor(scenario)        the knobs that mean something for its strategy
//   knobValue / setKnob       a knob as text; setKnob validates the whole scenario
//                             as dtrun would (validateScenario) and returns its
//                             message, or "" when the change is accepted
//   describeChanges(a, b)     "overlap off, bucket_mb 4": what a rerun changes
//   compareRuns(before, now)  rows of the two runs' summaries: step time, bytes
//                             per step, peak memory, bubble, final loss; each
//                             read with a measure (closing_check.hpp's grammar)
#pragma once

#include "dtlab/scenario.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dt::app {

enum class Knob {
#define DT_KNOB(id, name, help) id,
#include "model/what_if_knobs.def"
#undef DT_KNOB
};

[[nodiscard]] const char* knobName(Knob knob); // "bucket_mb": the scenario key it changes
[[nodiscard]] const char* knobHelp(Knob knob);
// The values a knob takes from a short list ("on"/"off", the strategies, the schedules); empty: free text.
[[nodiscard]] std::vector<std::string> knobChoices(Knob knob);

[[nodiscard]] std::vector<Knob> knobsFor(const Scenario& scenario);
[[nodiscard]] std::string knobValue(const Scenario& scenario, Knob knob);
// Applies `text` to `scenario` if the result is a valid scenario; else leaves
// it as it was and returns why ("what-if ranks: ...").
[[nodiscard]] std::string setKnob(Scenario& scenario, Knob knob, const std::string& text);
[[nodiscard]] std::string describeChanges(const Scenario& before, const Scenario& after);

// One run's side of the comparison.
struct RunSide {
    std::string label;   // "ddp_basics (overlap on)"
    std::string summary; // its summary JSON ("" = none yet)
    bool finished = false;
};

struct ComparisonRow {
    std::string label; // "step time (median)"
    std::string unit;  // "ms"
    std::optional<double> before, now;
    bool recovery = false; // a fault-tolerance row: the Quorum view shows it beside its stopwatch
    [[nodiscard]] std::optional<double> change() const; // now / before - 1, when both are there
};

[[nodiscard]] std::vector<ComparisonRow> compareRuns(const RunSide& before, const RunSide& now);

} // namespace dt::app
