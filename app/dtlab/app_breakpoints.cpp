// app_breakpoints.cpp: breakpoints, as in a debugger (model/breakpoints.hpp):
// the Run menu lists them (a checkbox each, with its step or milliseconds),
// `break` / `unbreak` set them from a script, and a live run's new events are
// checked as they arrive: a hit pauses the run at the next step boundary and
// says which breakpoint and what happened.
#include "app.hpp"

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
    m_session->pause();
    m_last_breakpoint_hit = hit->breakpoint.describe() + ": " + hit->what;
    m_toast = "Breakpoint: " + m_last_breakpoint_hit + ". Paused; Run or Pace goes on.";
    m_toast_until = wallSeconds() + 8.0;
    say("breakpoint: " + m_last_breakpoint_hit + "; paused at the next step boundary");
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
        return true;
    }
    if (breakpointKindInfo(k).has_arg && arg <= 0) {
        error = std::string(k == BreakpointKind::Step ? "a step number N >= 1" : "a duration in ms > 0") +
                " is needed, e.g. 'break " + kind + (k == BreakpointKind::Step ? " 10'" : " 500'");
        return false;
    }
    Breakpoint b{k, arg};
    m_breakpoints.add(b);
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
    if (ImGui::MenuItem("Remove every breakpoint", nullptr, false, !m_breakpoints.list().empty()))
        m_breakpoints.clear();
    ImGui::EndMenu();
}

} // namespace dt::app
