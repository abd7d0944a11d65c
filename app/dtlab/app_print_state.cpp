// app_print_state.cpp: what each view shows of the run at the views' moment
// (the cursor, else now), read once into a ScreenMoment (screen_moment.hpp)
// from the same inputs and the same last-drawn state the views drew from.
// Its readers:
//   print_state    one line per view, so tests and people can compare the views in text:
//     dtlab: state: toolbar: paused (held at narration step 2)
//     dtlab: state: topology: rank 0 paused step 14, rank 1 restarting step 14, ...
//     dtlab: state: quorum: id 1 members [0 2] badges healthy restarting healthy decision quorum 1 "..."
//     dtlab: state: stopwatch: kill replica 1: detected +1 ms, new quorum pending (0.0 s), ...
//     dtlab: state: memory: rank 0 1.2 MB, rank 1 1.2 MB (measured)
//     dtlab: state: content: pipeline shows 2 of 2 measured stage rows at 1600x900, 28 px text
//   check_claims   the narration step's `expect` over the screen document
//   the narration  its text's {values}, bound to the same document
// The quorum and stopwatch come from the Quorum view's own pure functions at
// the view's moment (quorumViewState, latestRecovery).
#include "app.hpp"

#include "dtlab/screen_claim.hpp"
#include "screen_moment.hpp"

#include <algorithm>
#include <cstdio>

namespace dt::app {

namespace {

std::string toolbarLine(const RunFacts& facts, bool held_by_narration, int narration_index) {
    if (facts.replay)
        return "replay";
    if (facts.finished)
        return "finished";
    if (!facts.live)
        return "no run";
    const RunControl& c = facts.control;
    std::string line = c.mode == RunMode::Paused  ? "paused"
                       : c.mode == RunMode::Paced ? "paced " + std::to_string(c.pace_steps_per_s) + " step/s"
                                                  : "running";
    if (held_by_narration)
        line += " (held at narration step " + std::to_string(narration_index + 1) + ")";
    return line;
}

} // namespace

ScreenMoment AppContext::screenMoment() {
    // The state at the views' moment as the next frame draws it: with the events read this frame
    // (a script command runs between reading them and drawing).
    updateStateAt();
    const ViewInputs in = viewInputs();
    ScreenMoment m;
    m.toolbar = toolbarLine(m_facts, narrationHeld(), m_narration_index);
    m.live = m_facts.live;
    m.replay = m_facts.replay;
    m.finished = m_facts.finished;
    m.held = m_facts.live && !m_facts.finished && m_facts.control.mode == RunMode::Paused;
    m.narration_step = m_scenario.steps.empty() ? 0 : m_narration_index + 1;
    m.has_run = in.model != nullptr;
    if (!m.has_run)
        return m;
    if (in.ranks)
        m.ranks = *in.ranks;
    m.fault_tolerant = m_scenario.fault_tolerance.enabled;
    if (m.fault_tolerant) {
        // As the Quorum view computes it (the same pure functions), at the same moment.
        const bool has_cursor = m_cursor_ns.has_value();
        const int64_t t = quorumViewTime(in);
        m.quorum = quorumViewState(m_model, in.ranks, has_cursor ? std::nullopt : in.lighthouse, t);
        m.recovery = latestRecovery(m_model, has_cursor ? t : INT64_MAX);
        if (m.recovery) {
            m.held_ns = heldNsBetween(m_model.ftEvents(), m.recovery->fault_ns, t); // run time, as the view
            m.since_ms = double(std::max<int64_t>(0, t - m.recovery->fault_ns - m.held_ns)) / 1e6;
        }
    }
    for (int r = 0; r < m_model.world(); ++r)
        m.memory.push_back(memoryBars(in, r));
    // The family's main view: how much of its core content its last draw showed without
    // scrolling (View::shownContent), at the window and text size of now.
    const std::string main = mainViewOf(m_scenario, m_layouts);
    for (const auto& view : m_views)
        if (view->id() == main) {
            m.main_view = main;
            m.content = view->open ? view->shownContent() : std::nullopt;
        }
    m.width = ImGui::GetIO().DisplaySize.x;
    m.height = ImGui::GetIO().DisplaySize.y;
    m.font_px = m_fonts.pixels();
    return m;
}

// The narration step's text with its {values} read off the screen. A text without braces is
// itself; one with braces is bound again when the run, the step, the cursor or the hold changed
// (screenMoment() reads viewInputs(), which asks for this text: while binding it is the raw text).
std::string AppContext::boundNarrationText() {
    if (m_narration_index < 0 || size_t(m_narration_index) >= m_scenario.steps.size())
        return "";
    const std::string& text = m_scenario.steps[size_t(m_narration_index)].text;
    if (text.find('{') == std::string::npos || m_binding_text)
        return text;
    // Before the step's moment its values are not on the screen yet: "..." stands for each.
    const bool moment = narrationConditionMetNow() || narrationHeld();
    const BoundTextKey key{moment ? m_model.generation() : 0, m_narration_index, m_cursor_ns.value_or(-1),
                           narrationHeld()};
    if (!(key == m_bound_text_key) || m_bound_text.empty()) {
        m_binding_text = true;
        m_bound_text =
            moment ? bindScreenValues(text, screenMomentJson(screenMoment())) : bindScreenValues(text, "");
        m_binding_text = false;
        m_bound_text_key = key;
    }
    return m_bound_text;
}

void AppContext::printState() {
    for (const auto& [view, text] : screenMomentLines(screenMoment()))
        std::printf("dtlab: state: %s: %s\n", view.c_str(), text.c_str());
    std::fflush(stdout);
}

void AppContext::printScreen() {
    std::printf("dtlab: screen: %s\n", screenMomentJson(screenMoment()).c_str());
    std::fflush(stdout);
}

// The narration step's `expect` over the screen now; prints what it compared:
//   dtlab: claims: step 2: moment: topology: rank 0 paused step 14, ... | quorum: ... | stopwatch: ...
//   dtlab: claims: step 2: text: <the text, its {values} bound>
//   dtlab: claims: step 2: holds: ranks[1].dead = 1 == 1; ...
//   dtlab: claims: step 2: FAIL: stopwatch.new_quorum_ms = 12, not < 0
bool AppContext::checkNarrationClaims(std::string& report) {
    const auto& steps = m_scenario.steps;
    if (m_narration_index < 0 || size_t(m_narration_index) >= steps.size()) {
        report = "no narration step";
        return false;
    }
    const NarrationStep& step = steps[size_t(m_narration_index)];
    const ScreenMoment moment = screenMoment();
    const std::string json = screenMomentJson(moment);
    const std::string prefix = "step " + std::to_string(m_narration_index + 1);
    bool passed = true;
    // The moment judged, in print_state's words (a walk compares consecutive holds' moments).
    std::string seen;
    for (const auto& [view, text] : screenMomentLines(moment))
        if (view == "topology" || view == "quorum" || view == "stopwatch")
            seen += (seen.empty() ? "" : " | ") + view + ": " + text;
    report = prefix + ": moment: " + seen + "\n" + prefix + ": text: " + bindScreenValues(step.text, json);
    if (step.expect.empty()) {
        report += "\n" + prefix + ": no claims";
    } else {
        const CheckOutcome outcome = evaluateScreenClaim(step.expect, json);
        passed = outcome.passed;
        report += "\n" + prefix + (passed ? ": holds: " : ": FAIL: ") + outcome.detail;
        if (!passed) // what the screen held, for the scenario's author
            report += "\n" + prefix + ": screen: " + json;
    }
    for (size_t at = 0; at <= report.size();) {
        const size_t end = std::min(report.find('\n', at), report.size());
        std::printf("dtlab: claims: %s\n", report.substr(at, end - at).c_str());
        at = end + 1;
    }
    std::fflush(stdout);
    return passed;
}

} // namespace dt::app
