// app_narration.cpp: the narration's position (Next only when the step's
// condition holds) and the highlight it puts on a view's window.
//
// Holding a step's moment: while a step with pause = true waits for its
// event, the Session is armed with that event (model/event_moment.hpp) and
// pauses the run at the event itself, as it records it; the app takes the
// hit at its next frame. A moment that is not one event (a hang), or that
// the Session saw before it was armed, is held when the app sees it, as
// before: a frame and a telemetry batch later.
#include "app.hpp"

#include "model/event_moment.hpp"

#include "wall_clock.hpp"

#include <algorithm>
#include <cmath>

namespace dt::app {

// The current step's condition; false when there is no step or its text does not parse.
static bool currentCondition(const Scenario& scenario, int index, NarrationCondition& out) {
    const auto& steps = scenario.steps;
    return index >= 0 && index < int(steps.size()) &&
           parseNarrationCondition(steps[size_t(index)].until, out);
}

bool AppContext::narrationCanNext() const {
    if (m_narration_index + 1 >= int(m_scenario.steps.size()))
        return false;
    if (m_hold.active && m_hold.held_index == m_narration_index)
        return true; // held at this step's event: its last telemetry may still be on the way
    NarrationCondition c;
    return !currentCondition(m_scenario, m_narration_index, c) || narrationConditionHolds(c, m_facts);
}

bool AppContext::narrationConditionMetNow() const {
    NarrationCondition c;
    return currentCondition(m_scenario, m_narration_index, c) && narrationConditionMet(c, m_facts);
}

// Whether the run's last step is still held for the narration: until the
// narration is on its last step or waits for the run to finish.
bool AppContext::endHoldWanted() const {
    const auto& steps = m_scenario.steps;
    if (steps.size() < 2 || m_hold.end_released)
        return false;
    const int index = std::clamp(m_narration_index, 0, int(steps.size()) - 1);
    NarrationCondition c;
    const bool waits_for_end =
        currentCondition(m_scenario, index, c) && c.kind == NarrationCondition::Kind::RunFinished;
    return index + 1 < int(steps.size()) && !waits_for_end;
}

// Per frame: keep the end hold in step with the narration, and pause at the
// current step's moment (pause = true) when its event happened, once per step.
void AppContext::holdNarrationMoment() {
    const auto& steps = m_scenario.steps;
    if (!live())
        return;
    const bool end_hold = m_facts.control.hold_before_step != INT64_MAX;
    if (end_hold && !endHoldWanted()) {
        m_session->holdBefore(INT64_MAX);
        say("narration: the run may finish now");
    }
    armNarrationHold();
    if (m_hold.active || m_hold.cancelled || m_narration_index < 0 || m_narration_index >= int(steps.size()))
        return;
    const NarrationStep& step = steps[size_t(m_narration_index)];
    if (!step.pause || m_hold.held_index == m_narration_index || !narrationConditionMetNow())
        return;
    m_hold.active = true;
    m_hold.held_index = m_narration_index;
    m_hold.before = m_session->runControl();
    m_session->pause();
    say("narration: paused at the moment of step " + std::to_string(m_narration_index + 1) + " (" +
        step.until + "); Next resumes the run");
}

// The Session is armed with the current step's event while that step waits
// for it (pause = true, not held yet, not happened yet); otherwise nothing.
void AppContext::armNarrationHold() {
    if (!live())
        return;
    const auto& steps = m_scenario.steps;
    const int index = m_narration_index;
    NarrationMoment moment;
    NarrationCondition c;
    if (!m_hold.active && !m_hold.cancelled && index >= 0 && index < int(steps.size()) &&
        steps[size_t(index)].pause && m_hold.held_index != index && currentCondition(m_scenario, index, c) &&
        !narrationConditionMet(c, m_facts))
        moment = narrationMoment(c, m_facts.first_quorum_id, m_scenario.fault_tolerance.enabled);
    // DiLoCo under a quorum commits a whole round at its sync: a gate before
    // inner step N would stop the ranks before the commit that says N steps
    // are done. Its step count is held at that commit, not ahead.
    if (m_scenario.fault_tolerance.enabled && m_scenario.strategy.kind == StrategyKind::Diloco)
        moment.before_step = INT64_MAX;
    const int wanted = moment.matches ? index : -1;
    if (m_hold.armed_index == wanted)
        return;
    if (moment.matches)
        m_session->armEventHold(kNarrationHoldSlot,
                                {std::move(moment.matches), steps[size_t(index)].until, moment.before_step});
    else
        m_session->disarmEventHold(kNarrationHoldSlot);
    m_hold.armed_index = wanted;
}

// The holds the Session made at events since the last frame. The
// narration's: held at the moment of the step it was armed for; one for a
// step the presenter already left (Next or Back came first) is undone. The
// breakpoints': re-armed (a hold fires once); the breakpoint's own message
// comes when the app reads its event (app_breakpoints.cpp).
void AppContext::takeEventHoldHits() {
    if (!live())
        return;
    for (const EventHoldHit& hit : m_session->takeEventHoldHits()) {
        if (hit.slot == kBreakpointHoldSlot) {
            m_breakpoints_armed = false;
            continue;
        }
        const bool for_this_step = m_hold.armed_index == m_narration_index && !m_hold.cancelled;
        m_hold.armed_index = -1; // the Session disarmed it
        if (for_this_step && m_hold.active && m_hold.held_index == m_narration_index) {
            m_hold.before = hit.before; // this frame saw the moment first: Next restores what ran before
            continue;
        }
        if (!for_this_step || m_hold.active) {
            if (!m_hold.active)
                restoreRunControl(hit.before); // the presenter moved on (or pressed Run) first
            continue;
        }
        m_hold.active = true;
        m_hold.held_index = m_narration_index;
        m_hold.before = hit.before;
        say("narration: held at the moment of step " + std::to_string(m_narration_index + 1) + " (" +
            hit.what + "), at the event itself: no rank starts a step after " + std::to_string(hit.held_at) +
            "; Next resumes the run");
    }
}

void AppContext::restoreRunControl(const RunControl& before) {
    if (!live())
        return;
    if (before.mode == RunMode::Paced)
        m_session->setPace(before.pace_steps_per_s);
    else if (before.mode == RunMode::Run)
        m_session->resume();
    if (before.mode != RunMode::Paused)
        m_frozen_since_ns = 0; // released: the held picture's "now" ends here
}

// Next after a held moment: the run goes on as it did before (free, or at its pace).
void AppContext::releaseNarrationHold() {
    if (!m_hold.active)
        return;
    m_hold.active = false;
    if (!live())
        return;
    restoreRunControl(m_hold.before);
    say("narration: the run goes on");
}

// The run waits at the end hold now (every rank at its last step's gate).
bool AppContext::waitingAtEndHold() const {
    const int64_t hold = m_facts.control.hold_before_step;
    return live() && hold != INT64_MAX && m_facts.stepsCompletedMax() >= hold;
}

// One line for print_narration and script failures:
// "step 2 of 5, until \"rank 1 dies\": held (the run is paused at this moment)".
std::string AppContext::narrationStatus() const {
    const auto& steps = m_scenario.steps;
    if (steps.empty())
        return "no narration";
    const int index = std::clamp(m_narration_index, 0, int(steps.size()) - 1);
    std::string line = "step " + std::to_string(index + 1) + " of " + std::to_string(steps.size());
    const NarrationStep& step = steps[size_t(index)];
    if (!step.until.empty())
        line += ", until \"" + step.until + "\"";
    NarrationCondition c;
    const bool has_condition =
        currentCondition(m_scenario, index, c) && c.kind != NarrationCondition::Kind::None;
    if (narrationHeld())
        line += ": held (the run is paused at this moment)";
    else if (waitingAtEndHold())
        line += ": the run waits before its last step for the narration";
    else if (!has_condition)
        line += ": nothing to wait for";
    else if (narrationConditionMet(c, m_facts))
        line += ": done";
    else if (narrationConditionHolds(c, m_facts))
        line += m_facts.replay ? ": did not happen (not in this recording)"
                               : ": did not happen (the run ended before it)";
    else
        line += ": waiting";
    line += m_facts.finished ? "; run ended" : (live() ? "; run live" : "");
    return line;
}

void AppContext::narrationNext() {
    if (narrationOnLastStep() && narrationHeld()) {
        say("narration: the last step's moment is let go: the run finishes");
        runFree(); // Next (or Finish) at a held last step never leaves the run parked
        return;
    }
    if (!narrationCanNext())
        return;
    ++m_narration_index;
    // The new step's moment already happened: the run stays held there
    // (no resume-then-pause flicker); else the run goes on.
    const bool moment_passed =
        m_scenario.steps[size_t(m_narration_index)].pause && live() && narrationConditionMetNow();
    if (moment_passed && m_hold.active) {
        m_hold.held_index = m_narration_index;
    } else {
        // The next moment is armed before the run goes on: a quorum that
        // forms a millisecond after the release is still held at its event.
        const bool was_held = m_hold.active;
        m_hold.active = false;
        armNarrationHold();
        m_hold.active = was_held;
        releaseNarrationHold();
    }
    m_narration_started_s = wallSeconds();
    say("narration step " + std::to_string(m_narration_index + 1) + " of " +
        std::to_string(m_scenario.steps.size()));
}

void AppContext::narrationBack() {
    if (m_narration_index <= 0)
        return;
    --m_narration_index;
    m_narration_started_s = wallSeconds();
    say("narration step " + std::to_string(m_narration_index + 1) + " of " +
        std::to_string(m_scenario.steps.size()));
}

const std::string& AppContext::highlightedView() const {
    static const std::string none;
    const auto& steps = m_scenario.steps;
    if (!hasRun() || steps.empty())
        return none;
    const View* narration = findView("narration");
    if (narration && !narration->open)
        return none;
    return steps[size_t(std::clamp(m_narration_index, 0, int(steps.size()) - 1))].highlight;
}

double AppContext::highlightAge() const {
    return wallSeconds() - m_narration_started_s;
}

// The narration's highlighted view: a thick pulsing border and a "LOOK HERE"
// tag for a few seconds after the step begins, then a steady thinner border.
void AppContext::drawHighlight() {
    const std::string& id = highlightedView();
    if (id.empty())
        return;
    const WindowRect* rect = nullptr;
    for (const WindowRect& w : m_windows_drawn)
        if (w.id == id)
            rect = &w;
    if (!rect)
        return;
    const double age = highlightAge();
    const bool flashing = age < 4.0;
    const float pulse = flashing ? 0.5f + 0.5f * float(std::cos(age * 2.0 * M_PI * 1.2)) : 1.0f;
    ImU32 color = accentColor(theme());
    const float alpha = flashing ? 0.35f + 0.65f * pulse : 0.85f;
    color = (color & 0x00FFFFFF) | (ImU32(alpha * 255.0f) << 24);
    // Drawn into the view's own draw list, so popups and the help overlay stay on top.
    ImDrawList* draw = rect->draw ? rect->draw : ImGui::GetForegroundDrawList();
    draw->PushClipRect(rect->min, rect->max, false);
    const float thick = flashing ? 5.0f : 3.0f;
    draw->AddRect(ImVec2(rect->min.x + 1, rect->min.y + 1), ImVec2(rect->max.x - 1, rect->max.y - 1), color,
                  4.0f, 0, thick);
    if (flashing) {
        const char* tag = "LOOK HERE";
        const ImVec2 size = ImGui::CalcTextSize(tag);
        // Right after the window's title, so the title stays readable; on a
        // shelf tab, at the tab bar's right end (after the title would cover
        // the next tab).
        const float title_w = ImGui::CalcTextSize(rect->title.c_str()).x;
        const float pad = 6.0f;
        const ImVec2 p(rect->tab ? rect->max.x - size.x - pad - ImGui::GetStyle().WindowPadding.x
                                 : rect->min.x + ImGui::GetStyle().FramePadding.x + title_w + 24.0f,
                       rect->min.y + 3.0f);
        draw->AddRectFilled(ImVec2(p.x - pad, p.y), ImVec2(p.x + size.x + pad, p.y + size.y + 2.0f), color,
                            4.0f);
        draw->AddText(ImVec2(p.x, p.y + 1.0f), IM_COL32(0, 0, 0, 255), tag);
    }
    draw->PopClipRect();
}

} // namespace dt::app
