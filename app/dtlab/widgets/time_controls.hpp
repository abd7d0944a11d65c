// time_controls.hpp: the time cursor's controls and its badge, on one line
// (the app draws them in the menu bar, so they are on screen whatever views
// are open):
//
//   [Play] [1x]   [Instant replay] [10 s] at [1/2x]   CURSOR +12.34 s (now +20.1 s)  [Live]  Esc
//
// Play plays the cursor from where it is (or the run's start) at the chosen
// speed; a replay stops at its end, a live run returns to live when the cursor
// catches up. Instant replay (live runs) plays the last seconds as a moving
// cursor while the run goes on, then returns to live. The badge, in the
// cursor's own colour, says that the views show the cursor and not now; Live
// (End in a replay) or Esc clears it. The buttons go through ViewActions, so a
// script can press them ("Play##time", "Pause##time", "Instant replay##time",
// "Live##time", "End##time").
#pragma once

#include "views/view_inputs.hpp"

#include <string>

namespace dt::app {

// What the controls remember between frames: the speeds and length chosen.
struct TimeControlsState {
    double speed = 1.0;           // Play's speed
    double replay_seconds = 10.0; // Instant replay: how far back
    double replay_speed = 0.5;    // ... and how fast
};

// The badge's text: "CURSOR +12.34 s (now +20.1 s)" live, "CURSOR +12.34 s of 30.2 s"
// in a replay, with "PLAYING 1/2x" or "INSTANT REPLAY 1/2x" in front while it plays;
// "" without a cursor (pure, for tests).
[[nodiscard]] std::string cursorBadgeText(const ViewInputs& inputs);

void drawTimeControls(const ViewInputs& inputs, TimeControlsState& ui);

} // namespace dt::app
