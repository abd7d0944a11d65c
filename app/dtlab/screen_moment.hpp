// screen_moment.hpp: what the views show of the run at one moment, as data.
//
// AppContext::screenMoment() (app_print_state.cpp) reads it from the same
// inputs and pure functions the views draw from; two readers share it:
//   print_state      one line per view ("dtlab: state: quorum: id 1 members [0 2] ...")
//   the narration    a step's `expect` claims and the {values} bound into its
//                    text, over its JSON (every field of dtlab/screen_fields.def)
// so the text a test compares, the claims and the screen cannot disagree.
#pragma once

#include "dtlab/recovery_measure.hpp"
#include "dtlab/session.hpp"
#include "views/view.hpp"
#include "views/view_memory.hpp"
#include "views/view_quorum.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dt::app {

struct ScreenMoment {
    bool has_run = false;
    bool live = false, replay = false, finished = false;
    bool held = false;      // paused, or held at a moment
    std::string toolbar;    // the toolbar's state line: "paused (held at narration step 2)"
    int narration_step = 0; // 1-based; 0 = no narration
    std::vector<RankProgress> ranks;
    bool fault_tolerant = false;
    QuorumViewState quorum;           // as the Quorum view computes it at the moment
    std::optional<Recovery> recovery; // the stopwatch's fault
    int64_t held_ns = 0;              // the job held since that fault (not counted)
    double since_ms = 0;              // run time since that fault
    std::vector<MemoryBars> memory;   // index = rank
    std::string main_view;            // the family's main view
    std::optional<ShownContent> content;
    float width = 0, height = 0, font_px = 0;
};

// print_state's lines, in order: (view, text).
[[nodiscard]] std::vector<std::pair<std::string, std::string>> screenMomentLines(const ScreenMoment& m);
// The screen document: every field of dtlab/screen_fields.def, no other.
[[nodiscard]] std::string screenMomentJson(const ScreenMoment& m);

} // namespace dt::app
