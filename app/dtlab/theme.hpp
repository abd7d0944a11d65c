// theme.hpp: dtlab's looks, read from assets/themes/*.toml, and the crisp,
// scalable font.
//
// A theme file names ImGui's base style (dark or light), overrides any of
// ImGui's colours by their ImGui names, and gives the colours dtlab adds: one
// per rank state (tile accents, badges), the text drawn on each, the accent
// (highlights, the narration's flash) and the warning colour. The shipped
// files are dark.toml (the default, for a screen) and light.toml (black on
// white for a projector in a bright room); a new file is a new theme in the
// View menu and for the script's `theme NAME`. When no file loads, dtlab uses
// ImGui's stock dark style with evenly spaced hues for the rank states and
// says why.
//
// Fonts: DejaVu Sans from Debian's fonts-dejavu-core is rasterised at the
// chosen pixel size (not scaled up from a small bitmap), so text stays crisp at
// any size. Rebuilding the atlas must happen between frames; FontManager does
// it when asked, then the OpenGL backend uploads the new texture.
#pragma once

#include "dtlab/session.hpp"

#include <imgui.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace dt::app {

inline constexpr size_t kRankStateCount = size_t(RankState::Healing) + 1;

struct Theme {
    std::string name;          // the file's stem: `theme NAME` in a script
    std::string label;         // the View menu's text
    std::string path;          // the file it came from ("" = the built-in fallback)
    bool light_base = false;   // ImGui's StyleColorsLight underneath, else StyleColorsDark
    float frame_border = 0.0f; // px: a border around every frame (buttons, fields), at any text size
    std::array<std::optional<ImVec4>, ImGuiCol_COUNT> colors{}; // overrides of ImGui's colours
    std::array<ImU32, kRankStateCount> rank_state{};
    std::array<ImU32, kRankStateCount> rank_state_text{};
    ImU32 accent = 0;
    ImU32 warning = 0;
};

// One theme file; a mistake is an AssetError (FILE:LINE:COLUMN: ...).
[[nodiscard]] Theme loadThemeFile(const std::string& path);

struct ThemeSet {
    std::vector<Theme> themes;         // "dark" first, then by name; never empty
    std::vector<std::string> problems; // files that did not load, each FILE:LINE:COLUMN: why
};
// Every *.toml of `dir`; the built-in fallback alone when none loads.
[[nodiscard]] ThemeSet loadThemes(const std::string& dir);

// ImGui's stock dark style, rank states in evenly spaced hues: used when no theme file loads,
// and by headless tests that draw views without the app.
[[nodiscard]] const Theme& fallbackTheme();

// Sets ImGui's style for the theme, with sizes scaled for the font size
// (`font_px` / 16: paddings, roundings and scrollbars grow with the text).
void applyTheme(const Theme& theme, float font_px);

// Colour of a rank state (tile background accent, badges), readable in the theme.
[[nodiscard]] ImU32 rankStateColor(RankState state, const Theme& theme);
// Colour of text drawn on top of rankStateColor.
[[nodiscard]] ImU32 rankStateTextColor(RankState state, const Theme& theme);
// The accent used for highlights, badges and the narration flash.
[[nodiscard]] ImU32 accentColor(const Theme& theme);
[[nodiscard]] ImU32 warningColor(const Theme& theme);

// The UI font at a chosen pixel size. Without the TTF (fonts-dejavu-core not
// installed) it falls back to ImGui's built-in bitmap font, scaled, and says so.
class FontManager {
  public:
    static constexpr float kDefaultPx = 16.0f;
    static constexpr float kMinPx = 10.0f;
    static constexpr float kMaxPx = 48.0f;
    static constexpr const char* kFontPath = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
    static constexpr const char* kMonoPath = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf";

    // Ask for a new size; the atlas is rebuilt by the next applyPending().
    void request(float px);
    [[nodiscard]] float pixels() const { return m_px; }
    [[nodiscard]] bool pending() const { return m_pending; }
    [[nodiscard]] bool usingFallback() const { return m_fallback; }
    // The monospace font at the same size (nullptr when missing: use the UI font).
    [[nodiscard]] ImFont* mono() const { return m_mono; }

    // Rebuild the atlas if a size was requested. Call between frames (before
    // ImGui_ImplOpenGL3_NewFrame / ImGui::NewFrame). Returns true if rebuilt;
    // with `upload` the OpenGL texture is recreated as well.
    bool applyPending(bool upload);

  private:
    float m_px = kDefaultPx;
    bool m_pending = true;
    bool m_fallback = false;
    ImFont* m_mono = nullptr;
};

} // namespace dt::app
