// fault_action.hpp: the faults the Session injects ([[faults]] action, [chaos]
// actions, the GUI's buttons) as an enum with names and traits, all from the
// one list in fault_actions.def; and when a scenario fault fires.
//
// A new fault: one row in fault_actions.def, its case in the fault injector
// (engine/src/session/fault_injector.cpp), and, when a rank must act on it, a
// wire::ControlCommand and its handling in the worker.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dt {

enum class FaultAction : uint8_t {
#define DT_FAULT_ACTION(id, name, event_code, needs_fault_tolerance, in_chaos) id,
#include "dtlab/fault_actions.def"
#undef DT_FAULT_ACTION
};

struct FaultActionTraits {
    const char* name;
    int event_code; // the FaultInjected event's value
    bool needs_fault_tolerance;
    bool in_chaos;
};

inline constexpr FaultActionTraits kFaultActionTraits[] = {
#define DT_FAULT_ACTION(id, name, event_code, needs_fault_tolerance, in_chaos)                               \
    {name, event_code, needs_fault_tolerance, in_chaos},
#include "dtlab/fault_actions.def"
#undef DT_FAULT_ACTION
};

[[nodiscard]] constexpr const FaultActionTraits& faultActionTraits(FaultAction action) {
    return kFaultActionTraits[static_cast<size_t>(action)];
}
[[nodiscard]] constexpr const char* faultActionName(FaultAction action) {
    return faultActionTraits(action).name;
}

[[nodiscard]] inline bool parseFaultAction(std::string_view text, FaultAction& out) {
    for (size_t i = 0; i < std::size(kFaultActionTraits); ++i)
        if (text == kFaultActionTraits[i].name) {
            out = static_cast<FaultAction>(i);
            return true;
        }
    return false;
}

// The action a FaultInjected event's value stands for; false for an unknown code.
[[nodiscard]] inline bool faultActionFromEventCode(int code, FaultAction& out) {
    for (size_t i = 0; i < std::size(kFaultActionTraits); ++i)
        if (kFaultActionTraits[i].event_code == code && code != 0) {
            out = static_cast<FaultAction>(i);
            return true;
        }
    return false;
}

// Names in the list's order; `chaos_only` keeps the ones [chaos] may draw.
[[nodiscard]] inline std::vector<std::string> faultActionNames(bool chaos_only = false) {
    std::vector<std::string> names;
    for (const FaultActionTraits& t : kFaultActionTraits)
        if (!chaos_only || t.in_chaos)
            names.push_back(t.name);
    return names;
}

// When a [[faults]] entry fires.
//   AllReduce  when that step's first all-reduce starts on the rank
//   Step       when that step starts
//   Time       at_s seconds after the run starts
enum class FaultWhen : uint8_t { AllReduce, Step, Time };
inline constexpr const char* kFaultWhenNames[] = {"allreduce", "step", "time"};

[[nodiscard]] constexpr const char* faultWhenName(FaultWhen when) {
    return kFaultWhenNames[static_cast<size_t>(when)];
}
[[nodiscard]] inline bool parseFaultWhen(std::string_view text, FaultWhen& out) {
    for (size_t i = 0; i < std::size(kFaultWhenNames); ++i)
        if (text == kFaultWhenNames[i]) {
            out = static_cast<FaultWhen>(i);
            return true;
        }
    return false;
}

} // namespace dt
