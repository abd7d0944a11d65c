// app_breakpoints.cpp: breakpoints, as in a debugger (model/breakpoints.hpp):
// the Run menu lists them (a checkbox each, with its step or milliseconds),
// `break` / `unbreak` set them from a script. The Session holds a copy of
// them (armBreakpointHold) and pauses the run at the hitting event itself,
// as it records it; the app checks the same events as it reads them and says
// which breakpoint and what happened (and pauses, for a hang, which is no
// one event).
#include "app.hpp"

#include "model/event_meaning.hpp"

#include "wall_clock.hpp"

#include <cstdio>

namespace dt::app {

void AppContext::checkBreakpoint(const Event& e) {
    if (!live() || m_breakpoints.list().empty())
        return;
    if (const std::optional<BreakpointHit> hit = m_breakpoints.check(e))
        onBreakpointHit(*hit);
}

void AppContext::checkHungBreakpoint(const std::vector<HungCollective>& hung) {
    if (!live())
        return;
    if (const std::optional<BreakpointHit> hit = m_breakpoints.checkHung(hung))
        onBreakpointHit(*hit);
}

void AppContext::onBreakpointHit(const BreakpointHit& hit_) {
    const BreakpointHit* hit = &hit_;
    m_session->pause(); // already paused at the event by the Session's copy; a hang is paused here
    m_last_breakpoint_hit = hit->breakpoint.describe() + ": " + hit->what;
    m_toast = "Breakpoint: " + m_last_breakpoint_hit + ". Paused; Run or Pace goes on.";
    m_toast_until = wallSeconds() + 8.0;
    say("breakpoint: " + m_last_breakpoint_hit +
        "; paused at that event (ranks finish the step they are in)");
}

// The Session holds at the breakpoints' events: a copy of the list (its own
// memory of what it saw) matches each event as the Session records it.
void AppContext::armBreakpointHold() {
    if (!live() || m_breakpoints_armed)
        return;
    m_breakpoints_armed = true;
    if (m_breakpoints.list().empty()) {
        m_session->disarmEventHold(kBreakpointHoldSlot);
        return;
    }
    // "step N is completed" is known ahead: the gate closes before step N.
    // "a rank dies" holds at the kill the Session sends, before the signal
    // (the exit is reaped a monitor tick later, when the survivors may be a step further).
    int64_t before_step = INT64_MAX;
    bool on_kill = false;
    for (const Breakpoint& b : m_breakpoints.list()) {
        if (b.kind == BreakpointKind::Step && b.arg >= 1)
            before_step = int64_t(b.arg);
        on_kill = on_kill || b.kind == BreakpointKind::RankDies;
    }
    m_session->armEventHold(kBreakpointHoldSlot, {[copy = m_breakpoints, on_kill](const Event& e) mutable {
                                                      return (on_kill && isKillSent(e)) ||
                                                             copy.check(e).has_value();
                                                  },
                                                  "of a breakpoint", before_step});
}

bool AppContext::setBreakpoint(const std::string& kind, double arg, bool on, std::string& error) {
    BreakpointKind k;
    if (!parseBreakpointKind(kind, k)) {
        error = "unknown kind '" + kind + "'; one of:";
        for (const BreakpointKindInfo& info : breakpointKinds())
            error += std::string(" ") + info.id;
        return false;
    }
    if (!on) {
        if (!m_breakpoints.remove(k)) {
            error = "no breakpoint '" + kind + "' is set";
            return false;
        }
        say("breakpoint removed: " + std::string(breakpointKindInfo(k).id));
        m_breakpoints_armed = false;
        return true;
    }
    if (breakpointKindInfo(k).has_arg && arg <= 0) {
        error = std::string(k == BreakpointKind::Step ? "a step number N >= 1" : "a duration in ms > 0") +
                " is needed, e.g. 'break " + kind + (k == BreakpointKind::Step ? " 10'" : " 500'");
        return false;
    }
    Breakpoint b{k, arg};
    m_breakpoints.add(b);
    m_breakpoints_armed = false;
    say("breakpoint set: pause when " + b.describe());
    return true;
}

// Run > Breakpoints: one checkbox per kind, the argument beside the two that
// take one, and the last hit.
void AppContext::drawBreakpointsMenu() {
    if (!ImGui::BeginMenu("Breakpoints"))
        return;
    ImGui::TextDisabled("Pause the run when ...");
    for (const BreakpointKindInfo& info : breakpointKinds()) {
        double* arg = info.kind == BreakpointKind::Step               ? &m_breakpoint_step_arg
                      : info.kind == BreakpointKind::CollectiveSlower ? &m_breakpoint_ms_arg
                                                                      : nullptr;
        bool set = false;
        for (const Breakpoint& b : m_breakpoints.list())
            if (b.kind == info.kind) {
                set = true;
                if (arg)
                    *arg = b.arg; // a breakpoint set from a script shows its own N or X
            }
        const Breakpoint shown{info.kind, arg ? *arg : 0.0};
        const std::string label = shown.describe() + "##break_" + info.id;
        std::string error;
        if (ImGui::Checkbox(label.c_str(), &set))
            setBreakpoint(info.id, shown.arg, set, error);
        if (arg) {
            ImGui::SameLine();
            ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5.0f);
            const std::string field = std::string("##arg_") + info.id;
            if (ImGui::InputDouble(field.c_str(), arg, 0.0, 0.0, "%g") && set) {
                *arg = *arg > 0 ? *arg : 1.0;
                setBreakpoint(info.id, *arg, true, error); // re-arm with the new value
            }
        }
    }
    ImGui::Separator();
    if (m_breakpoints.list().empty())
        ImGui::TextDisabled("No breakpoint set.");
    if (!m_last_breakpoint_hit.empty())
        ImGui::TextWrapped("Last hit: %s", m_last_breakpoint_hit.c_str());
    if (ImGui::MenuItem("Remove every breakpoint", nullptr, false, !m_breakpoints.list().empty())) {
        m_breakpoints.clear();
        m_breakpoints_armed = false;
    }
    ImGui::EndMenu();
}

} // namespace dt::app
