// view_inputs.hpp: everything the timeline, memory, metrics and event log views
// read from the app, in one small struct.
//
// CONTRACT with the app shell (app.hpp):
//   AppContext has a method
//       ViewInputs viewInputs();
//   that fills this struct each frame. The views' View::drawContent(AppContext&)
//   overrides (all in view_glue.cpp, the only view file that includes app.hpp)
//   call `draw(context.viewInputs())`. Everything else in the views sees only
//   ViewInputs, so headless tests and the frame benchmark call draw(ViewInputs)
//   directly with a RunModel built from synthetic events, no AppContext needed.
//
// Fields:
//   model          the run being shown; nullptr = nothing opened yet
//   now_ns         the live clock (Session clock, ns), or model->tEnd() for a replay;
//                  open (hung) collectives are drawn up to it
//   live           true while a Session runs (follow-live and the "now" line)
//   selected_rank  the rank selected across views (topology, timeline, event log);
//                  -1 = none; nullptr = the app does not share one
//   navigator      the timeline's "jump there" interface (the event log calls it);
//                  nullptr = no timeline
//   memory_theory  optional: expected bytes per memory category for a rank, in
//                  the order parameters, gradients, optimizer state, activations,
//                  comm buffers; empty function or std::nullopt = draw no theory
//   memory_theory_label  the formula behind memory_theory, shown with the
//                  word "theory" ("DDP: params 4 Psi + grads 4 Psi + ...")
//   ranks          live per-rank state (states, incarnations, commits); nullptr = none
//   lighthouse     the Session's lighthouse status (live fault-tolerant runs only)
//   cursor_ns      the shared time cursor (Session clock): set by a click in the
//                  timeline, the FSDP flow view's slider or the script's
//                  `cursor`; the flow view shows that moment. nullptr = the app
//                  does not share one; an empty optional = no cursor (now)
#pragma once

#include "dtlab/lighthouse.hpp"
#include "dtlab/session.hpp"
#include "model/run_model.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

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
    EventKind::MemParameters, EventKind::MemGradients, EventKind::MemOptimizer,
    EventKind::MemActivations, EventKind::MemCommBuffers,
};

struct ViewInputs {
    const RunModel* model = nullptr;
    int64_t now_ns = 0;
    bool live = false;
    int* selected_rank = nullptr;
    TimelineNavigator* navigator = nullptr;
    std::function<std::optional<std::array<int64_t, 5>>(int rank)> memory_theory;
    std::string memory_theory_label;
    std::optional<int64_t> memory_host_theory; // offload_optimizer: host bytes per rank in theory
    std::optional<int64_t>* cursor_ns = nullptr;
    const std::vector<RankProgress>* ranks = nullptr;
    std::optional<ft::LighthouseStatus> lighthouse;
};

} // namespace dt::app
