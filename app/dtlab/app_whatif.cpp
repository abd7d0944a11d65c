// app_whatif.cpp: the what-if copy of the scenario and the comparison of the
// last two runs (views/view_whatif.hpp draws them; model/what_if.hpp holds
// the rules). When a scenario opens, the run it replaces becomes the
// comparison's "before" side; the new run is "now", its summary refreshed
// every 2 s while the What if view is open, and taken once more at its end.
#include "app.hpp"

#include "dtlab/summary.hpp"
#include "wall_clock.hpp"

#include <cmath>
#include <cstdio>

namespace dt::app {

namespace {
constexpr double kRefreshS = 2.0; // a live run's side of the comparison
} // namespace

// Called by openScenario before the old run stops: it becomes "before".
void AppContext::keepRunForComparison() {
    if (!m_session && !m_replay)
        return;
    m_before_side.label = m_now_side.label.empty() ? m_scenario.name : m_now_side.label;
    m_before_side.summary = m_session ? summaryJson(m_session->snapshot()) : summaryJson(*m_replay);
    m_before_side.finished = m_facts.finished || m_replay.has_value();
    // A rerun started during a hold compares against a run that did not end:
    // its label says so, so "steps done: 2 -> 30" reads as what it is.
    if (!m_before_side.finished)
        m_before_side.label += " (stopped at step " + std::to_string(m_facts.stepsCompletedMax()) + " of " +
                               std::to_string(m_scenario.run.steps) + ")";
}

// Called by openScenario once the new run started.
void AppContext::startComparisonSide(const std::string& label) {
    m_now_side = RunSide{label.empty() ? m_scenario.name : label, "", false};
    m_comparison.clear();
    m_whatif_edit = m_scenario;
    ++m_whatif_serial;
    m_comparison_refreshed_s = 0.0;
}

std::string AppContext::setWhatIfKnob(const std::string& name, const std::string& value) {
    if (!hasRun())
        return "no run is open";
    for (Knob knob : knobsFor(m_scenario))
        if (name == knobName(knob)) {
            const std::string problem = setKnob(m_whatif_edit, knob, value);
            say("what-if " + name + " " + value + (problem.empty() ? "" : ": refused: " + problem));
            return problem;
        }
    std::string names;
    for (Knob knob : knobsFor(m_scenario))
        names += (names.empty() ? "" : ", ") + std::string(knobName(knob));
    return "no knob '" + name + "' (this scenario has: " + names + ")";
}

void AppContext::rerunWhatIf() {
    if (!hasRun())
        return;
    const Scenario next = m_whatif_edit;
    const std::string label = describeChanges(m_scenario, next);
    say("what-if: rerun with " + label);
    try {
        openScenario(next, label);
    } catch (const std::exception& e) {
        m_toast = std::string("what-if rerun: ") + e.what();
        m_toast_until = wallSeconds() + 8.0;
        say(m_toast);
    }
}

void AppContext::refreshComparison() {
    // Read while the What if view or, for a fault-tolerant run, the Quorum view (its recovery rows) shows it.
    const View* whatif = findView("whatif");
    const View* quorum = findView("quorum");
    const bool shown = (whatif && whatif->open) || m_script ||
                       (quorum && quorum->open && m_scenario.fault_tolerance.enabled);
    if (!m_session || !shown || m_before_side.summary.empty())
        return;
    const double now = wallSeconds();
    const bool final = m_facts.finished;
    if (m_now_side.finished || (!final && now - m_comparison_refreshed_s < kRefreshS))
        return;
    m_comparison_refreshed_s = now;
    m_now_side.summary = summaryJson(m_session->snapshot());
    m_now_side.finished = final;
    m_comparison = compareRuns(m_before_side, m_now_side);
}

void AppContext::printComparison() {
    if (m_session && !m_now_side.finished) { // read the live run now
        m_comparison_refreshed_s = 0.0;
        refreshComparison();
    }
    if (m_comparison.empty())
        return say("compare: nothing to compare yet (rerun a scenario first)");
    say("compare: before = " + m_before_side.label + "; now = " + m_now_side.label);
    char line[256];
    for (const ComparisonRow& row : m_comparison) {
        auto text = [&](const std::optional<double>& v) {
            char out[48];
            if (v)
                std::snprintf(out, sizeof(out), "%.4g%s%s", *v, row.unit.empty() ? "" : " ",
                              row.unit.c_str());
            else
                std::snprintf(out, sizeof(out), "-");
            return std::string(out);
        };
        const std::optional<double> change = row.change();
        std::snprintf(line, sizeof(line), "compare: %s: %s -> %s%s", row.label.c_str(),
                      text(row.before).c_str(), text(row.now).c_str(),
                      change ? (" (" + std::to_string(int(std::lround(*change * 100.0))) + " %)").c_str()
                             : "");
        say(line);
    }
}

WhatIfInputs AppContext::whatIfInputs() const {
    WhatIfInputs w;
    w.serial = m_whatif_serial;
    w.base = &m_scenario;
    w.edited = &m_whatif_edit;
    w.changes = describeChanges(m_scenario, m_whatif_edit);
    w.rows = &m_comparison;
    w.before_label = m_before_side.summary.empty() ? nullptr : &m_before_side.label;
    w.now_label = &m_now_side.label;
    w.now_finished = m_now_side.finished;
    return w;
}

} // namespace dt::app
