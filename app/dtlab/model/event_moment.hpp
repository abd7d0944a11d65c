// event_moment.hpp: the one event at which a narration step's moment
// happens, for the Session to hold the run at that event itself
// (Session::armEventHold) rather than a GUI frame later.
//
//   step >= N             the first Step span of step N-1 (a Commit of it under a quorum);
//                         known ahead, so the gate closes before step N at once
//   first all-reduce ends the first WorkCompleted of an all-reduce (all-gather, reduce-scatter alike)
//   rank R dies           the Session's SIGKILL to R (FaultInjected), or R's exit with a signal or error
//   rank R heals          R receives a live peer's state (event_meaning.hpp's isHealReceived)
//   new quorum forms      a QuorumFormed whose id differs from the first one seen
//   first outer sync ends a DiLoCo OuterStep span, or a SWARM stage's round
// "collective hangs" is time passing, not an event, and "run finished" never
// holds: those have no matcher (an empty function) and the app holds them
// when it sees them, as before.
#pragma once

#include "dtlab/events.hpp"
#include "dtlab/scenario.hpp"

#include <cstdint>
#include <functional>

namespace dt::app {

struct NarrationMoment {
    std::function<bool(const Event&)> matches; // empty: the condition is not one event
    // "step >= N": the gate closes before step N ahead (EventHold::before_step).
    int64_t before_step = INT64_MAX;
};

// The moment of `c`. `first_quorum_id` is the first quorum id the app has
// seen (-1: none yet; the matcher then takes the first one it sees as the
// first). `committed_steps`: under a quorum a step is done when committed
// (a Commit), not when an attempt ends (a Step span, aborted ones too).
[[nodiscard]] NarrationMoment narrationMoment(const NarrationCondition& c, double first_quorum_id,
                                              bool committed_steps);

} // namespace dt::app
