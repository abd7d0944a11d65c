// view_inputs.hpp: everything a view reads from the app, in one struct.
//
// AppContext::viewInputs() fills it for each view each frame; a view draws
// from it alone and acts through `actions` (view_actions.hpp), so no view
// includes app.hpp. Headless tests and the frame benchmark fill only what the
// view under test reads (a RunModel built from synthetic events, mostly).
//
// Fields:
//   model          the run being shown (its scenario: model->scenario());
//                  nullptr = nothing opened yet
//   now_ns         the live clock (Session clock, ns), or model->tEnd() for a replay;
//                  open (hung) collectives are drawn up to it
//   live           true while a Session runs (follow-live and the "now" line)
//   replay         a recording is shown (nothing runs; fault buttons are disabled)
//   selected_rank  the rank selected across views (topology, timeline, event log);
//                  -1 = none; nullptr = the app does not share one
//   navigator      the timeline's "jump there" interface (the event log calls it);
//                  nullptr = no timeline
//   memory_theory  optional: expected bytes per memory category for a rank, in
//                  the order parameters, gradients, optimizer state, activations,
//                  comm buffers; empty function or std::nullopt = draw no theory
//   memory_theory_label  the formula behind memory_theory, shown with the
//                  word "theory" ("DDP: params 4 Psi + grads 4 Psi + ...")
//   memory_host_theory   offload_optimizer: host bytes per rank in theory
//   facts          the run's facts (run control, per-rank progress, finished,
//                  elapsed; run_facts.hpp); nullptr = none
//   ranks          live per-rank state (states, incarnations, commits, links); nullptr = none
//   lighthouse     the Session's lighthouse status (live fault-tolerant runs only)
//   cursor_ns      the shared time cursor (Session clock): set by a click in the
//                  timeline, the FSDP flow view's slider, the playback or the
//                  script's `cursor`; every view shows that moment. nullptr = the
//                  app does not share one; an empty optional = no cursor (now)
//   state          the run at the views' moment (model/run_state_at.hpp): the
//                  cursor when one is set, else now (live) or the end (replay);
//                  per rank its state, memory and latest metrics, from the events
//                  up to that moment. nullptr = none (views read the model then).
//                  With a cursor, `ranks` points at state->ranks too, so a view
//                  that reads `ranks` shows the rank as it was at the cursor
//   playback       the cursor's playback (playing, speed, instant replay) for the
//                  time controls (playback.hpp)
//   theme          the app's theme (rank-state and accent colours)
//   failure_reason why the run failed ("" = it did not)
//   closing_checks the scenario's closing checks once the run has finished; nullptr or empty before
//   narration      the narration's position and whether Next / Back are possible
//   actions        the buttons' actions; nullptr = none (buttons draw, nothing happens)
#pragma once

#include "dtlab/autograd_graph.hpp"
#include "dtlab/closing_check.hpp"
#include "dtlab/lighthouse.hpp"
#include "dtlab/session.hpp"
#include "model/exercise_state.hpp"
#include "model/run_model.hpp"
#include "model/run_state_at.hpp"
#include "model/what_if.hpp"
#include "playback.hpp"
#include "run_facts.hpp"
#include "theme.hpp"
#include "views/view_actions.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dt::app {

// Moves the timeline's view. The timeline view implements it; AppContext holds
// a pointer to it so any view (the event log, the narration) can jump there.
class TimelineNavigator {
  public:
    virtual ~TimelineNavigator() = default;
    // Centre the view on t_ns (Session clock) keeping the zoom, stop following
    // live, and scroll to `rank`'s lane when rank >= 0.
    virtual void centerOn(int64_t t_ns, int rank = -1) = 0;
    // Show [t0_ns, t1_ns] across the whole width (stops following live).
    virtual void showRange(int64_t t0_ns, int64_t t1_ns) = 0;
};

// Memory categories in the order the memory view and memory_theory use.
inline constexpr std::array<EventKind, 5> kMemoryCategories = {
    EventKind::MemParameters,  EventKind::MemGradients,   EventKind::MemOptimizer,
    EventKind::MemActivations, EventKind::MemCommBuffers,
};
// The same categories measured by the tracking allocator (its owner tags), same order;
// temporaries, its sixth tag, is shown apart (MemMeasuredTemporaries).
inline constexpr std::array<EventKind, 5> kMeasuredMemoryCategories = {
    EventKind::MemMeasuredParameters,  EventKind::MemMeasuredGradients,   EventKind::MemMeasuredOptimizer,
    EventKind::MemMeasuredActivations, EventKind::MemMeasuredCommBuffers,
};

// Where the narration is.
struct NarrationPosition {
    int index = 0;         // the step shown
    bool can_next = false; // the step's condition holds and it is not the last
    bool can_back = false;
    // What the step waits for really happened (narrationConditionMet): "Done".
    // can_next without it: the run ended (or a recording is shown) without it.
    bool condition_met = false;
    // The run is paused because this step's event happened (pause = true):
    // Next resumes it.
    bool held = false;
    // The run waits before its last steps until the narration's last step.
    bool held_at_end = false;
    // This step's question (predict, then run), when it has one.
    const ExerciseState* exercise = nullptr;
    // The title of the view the step's "Look at" names (its window title), "" = none.
    std::string look_at_title;
    // The step's text with its {values} bound to what the screen shows now
    // (dtlab/screen_claim.hpp); "" = no step.
    std::string text;
};

// Model state per rank for the Memory view's large bars (ZeRO / FSDP): what
// one full DDP replica holds per category (each bar's full width), the
// strategy's formula for this run, and the ZeRO ladder for the same model.
struct ModelStateReference {
    std::array<int64_t, 3> replica{}; // parameters, gradients, optimizer state of one DDP replica (bytes)
    std::array<int64_t, 3> theory{};  // this strategy's formula per rank, same order (theory)
    std::string formula;              // "ZeRO-2: 4 Psi + 12 Psi / N"
    int shards = 1;
    // The same model under ddp, zero1, zero2, fsdp (theory): label, bytes per category.
    std::vector<std::pair<std::string, std::array<int64_t, 3>>> ladder;
    int current_rung = -1; // the ladder's entry this run is (-1: none, e.g. hsdp)
};

// The what-if view's state (the app owns the edited copy; model/what_if.hpp).
struct WhatIfInputs {
    int serial = 0;                                   // a new run opened: the knobs' text resets
    const Scenario* base = nullptr;                   // the run shown
    const Scenario* edited = nullptr;                 // the copy the knobs change
    std::string changes;                              // describeChanges(base, edited)
    const std::vector<ComparisonRow>* rows = nullptr; // empty until a second run
    const std::string* before_label = nullptr;
    const std::string* now_label = nullptr;
    bool now_finished = false;
};

struct ViewInputs {
    const RunModel* model = nullptr;
    int64_t now_ns = 0;
    bool live = false;
    bool replay = false;
    int run_serial = 0; // changes whenever another run or recording is opened
    int* selected_rank = nullptr;
    TimelineNavigator* navigator = nullptr;
    std::function<std::optional<std::array<int64_t, 5>>(int rank)> memory_theory;
    std::string memory_theory_label;
    std::optional<int64_t> memory_host_theory;
    std::optional<ModelStateReference> model_state; // ZeRO / FSDP / DDP runs
    // The model's real autograd graph (dtlab/autograd_graph.hpp), built in the
    // background when the Autograd view opens; nullptr until then, with why.
    const AutogradGraph* autograd_graph = nullptr;
    std::string autograd_status;
    std::optional<int64_t>* cursor_ns = nullptr;
    const RunStateAt* state = nullptr;
    PlaybackState playback;
    const RunFacts* facts = nullptr;
    const std::vector<RankProgress>* ranks = nullptr;
    std::optional<ft::LighthouseStatus> lighthouse;
    const Theme* theme = &fallbackTheme(); // the app's; never null
    std::string failure_reason;
    const std::vector<ClosingCheckResult>* closing_checks = nullptr;
    NarrationPosition narration;
    const WhatIfInputs* whatif = nullptr;
    ViewActions* actions = nullptr;

    // The time cursor, if one is set.
    [[nodiscard]] std::optional<int64_t> cursor() const {
        return cursor_ns && cursor_ns->has_value() ? *cursor_ns : std::nullopt;
    }
    // The moment the views show: the cursor, else now (live) or the end (replay).
    [[nodiscard]] int64_t momentNs() const {
        if (const std::optional<int64_t> c = cursor())
            return *c;
        return model ? std::max(model->tEnd(), now_ns) : now_ns;
    }

    // The actions to call: `actions`, or ones that do nothing.
    [[nodiscard]] ViewActions& act() const {
        static NoViewActions none;
        return actions ? *actions : none;
    }
};

} // namespace dt::app
