// help.hpp: the small pieces every view shares: "(?)" help, empty state, legend swatches.
#pragma once

#include <imgui.h>

namespace dt::app {

// A dim "(?)" on the current line; hovering shows `text` wrapped to a readable width.
void helpMarker(const char* text);

// The explicit empty state of a view: a title line and a hint, centred in the
// remaining space, in the style's disabled text colour.
void emptyState(const char* title, const char* hint);

// One legend entry: a filled swatch and a label, laid out on the current line
// when it still fits, else on the next one (call it in a loop).
void legendItem(ImU32 color, const char* label, bool first);

// A swatch the height of a text line (for tooltips and legends).
void colorSwatch(ImU32 color);

} // namespace dt::app
