// event_meaning.hpp: what one event says about a rank, in one place, for the
// narration's facts (run_facts.hpp), the breakpoints and the RunModel:
//   a death        ProcessExited with a signal (-signo) or an error code (!= 0)
//   a hang         FaultInjected with the Hang action's code (SIGSTOP)
//   a kill sent    FaultInjected with the Kill action's code (SIGKILL): the death is certain,
//                  its exit is reaped a monitor tick later
//   a heal         a receiving Heal span (value 0): a restarted replica got a peer's state;
//                  or a restarted SWARM server serving again (SwarmJoined, incarnation > 0)
//                  with its stage's state from the param mirror
//   an outer sync  a DiLoCo OuterStep span, or a SWARM stage's round (SwarmOuterSync)
#pragma once

#include "dtlab/events.hpp"
#include "dtlab/fault_action.hpp"

namespace dt::app {

[[nodiscard]] inline bool isRankDeath(const Event& e) {
    return e.kind == EventKind::ProcessExited && e.value != 0 && e.rank >= 0;
}
[[nodiscard]] inline bool isRankHang(const Event& e) {
    return e.kind == EventKind::FaultInjected && e.rank >= 0 &&
           int(e.value) == faultActionTraits(FaultAction::Hang).event_code;
}
[[nodiscard]] inline bool isKillSent(const Event& e) {
    return e.kind == EventKind::FaultInjected && e.rank >= 0 &&
           int(e.value) == faultActionTraits(FaultAction::Kill).event_code;
}
[[nodiscard]] inline bool isHealReceived(const Event& e) {
    return e.rank >= 0 && ((e.kind == EventKind::Heal && e.phase == EventPhase::Span && e.value == 0) ||
                           (e.kind == EventKind::SwarmJoined && e.value > 0));
}
[[nodiscard]] inline bool isOuterSyncEnd(const Event& e) {
    return (e.kind == EventKind::OuterStep || e.kind == EventKind::SwarmOuterSync) &&
           e.phase == EventPhase::Span;
}

} // namespace dt::app
