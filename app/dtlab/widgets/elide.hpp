// elide.hpp: text that does not fit is shortened at a word or character with
// a visible "...", never cut mid-word without a mark, and shows in full on hover.
//
//   elideToWidth(text, w)          the longest prefix + "..." that is <= w px wide
//   wrapLines(text, w, max_lines)  word-wrapped lines, the last one elided when more follow
//   textElided(text, w)            draws elideToWidth; hovering it shows the whole text
#pragma once

#include <string>
#include <vector>

namespace dt::app {

[[nodiscard]] std::string elideToWidth(const std::string& text, float width);
[[nodiscard]] std::vector<std::string> wrapLines(const std::string& text, float width, int max_lines);
// True when the text was shortened.
bool textElided(const std::string& text, float width);

} // namespace dt::app
