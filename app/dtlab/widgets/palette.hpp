// palette.hpp: the one colour table every view uses.
//
// Kinds (forward, all-reduce, ...) get the same colour in the timeline, the
// topology tiles, the memory bars and the legends. The colours are mid-tone
// so they read on both the dark and the light theme; text drawn on top of a
// filled shape picks black or white from the fill (textOn). Everything else
// (text, backgrounds, borders) comes from the ImGui style, not from here.
#pragma once

#include "dtlab/events.hpp"

#include <imgui.h>

namespace dt::app::palette {

[[nodiscard]] ImU32 kindColor(EventKind kind);  // spans, counters (memory categories), lifecycle markers
[[nodiscard]] ImU32 rankColor(int rank);        // one colour per rank in plots (10 distinct, then repeats)
[[nodiscard]] ImU32 levelColor(LogLevel level); // event log: info uses the style's text colour
[[nodiscard]] ImU32 textOn(ImU32 fill);         // black or white, whichever reads on `fill`
[[nodiscard]] ImU32 withAlpha(ImU32 color, float alpha);
[[nodiscard]] ImU32 shade(ImU32 color, float factor); // < 1 darker, > 1 lighter

// States that are not kinds.
inline constexpr ImU32 kHung = IM_COL32(230, 57, 53, 255);   // an open (never completed) collective
inline constexpr ImU32 kFailed = IM_COL32(230, 57, 53, 255); // a failed collective
inline constexpr ImU32 kWarning = IM_COL32(222, 146, 20, 255);
inline constexpr ImU32 kTheory = IM_COL32(128, 128, 128, 255); // theory overlays (with a "theory" label)
inline constexpr ImU32 kCursor =
    IM_COL32(214, 51, 232, 255); // the time cursor (not "now"), its badge and frame

} // namespace dt::app::palette
