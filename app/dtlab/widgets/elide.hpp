// elide.hpp: text that does not fit is shortened at a word or character with
// a visible "...", never cut mid-word without a mark, and shows in full on hover.
//
//   elideToWidth(text, w)          the longest prefix + "..." that is <= w px wide
//   wrapLines(text, w, max_lines)  word-wrapped lines, the last one elided when more follow
//   textElided(text, w)            draws elideToWidth; hovering it shows the whole text
#pragma once

#include <imgui.h>

#include <string>
#include <vector>

namespace dt::app {

[[nodiscard]] std::string elideToWidth(const std::string& text, float width);
[[nodiscard]] std::vector<std::string> wrapLines(const std::string& text, float width, int max_lines);
// True when the text was shortened.
bool textElided(const std::string& text, float width);
// textElided in the disabled (dim) text colour, to the rest of the line: a view's subtitle.
bool textDisabledElided(const std::string& text);

// A line of several parts ("p = 2 stages, m = 8 | pipeline 0 of 1 | step 3"): after an
// item, the next part of `width` px follows on the same line if it fits, else it starts
// the next line.
void sameLineOrWrap(float width);
// One such part as text: on this line if it fits, else on the next, wrapped at the edge
// if even a whole line is too short. `color` 0 = the text colour.
void flowText(const std::string& text, ImU32 color = 0);
void flowTextDisabled(const std::string& text);

} // namespace dt::app
