// exercise_state.hpp: where the learner is with one narration step's
// question (predict, then run; engine/include/dtlab/exercise.hpp judges it).
//
//   open      nothing locked: the narration panel asks for a prediction
//   locked    a prediction is in (or "show me" skipped it); the app waits for
//             the step's moment: its `until` holds and, for a step that
//             pauses the run, every rank is waiting at the pause (so counts
//             per step are of whole steps); a step without `until` waits for
//             the end of the run
//   judged    the run's summary at that moment decided it: the verdict
#pragma once

#include "dtlab/exercise.hpp"

#include <optional>
#include <string>

namespace dt::app {

struct ExerciseState {
    bool locked = false;     // a prediction was locked in
    bool skipped = false;    // revealed without a prediction
    double prediction = 0.0; // the number, or the chosen choice's index
    std::optional<ExerciseVerdict> verdict;
    double moment_seen_s = 0.0; // wall time the step's event was first seen (0 = not yet)
    [[nodiscard]] bool waiting() const { return (locked || skipped) && !verdict; }
};

} // namespace dt::app
