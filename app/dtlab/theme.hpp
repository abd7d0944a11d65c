// theme.hpp: the two looks of dtlab and the crisp, scalable font.
//
// Dark is the default for a screen; Light is a high-contrast theme for a
// projector in a bright room (black text on white, strong borders). Both are
// hard-coded ImGui styles; the rank-state colours the topology view uses come
// from here too, so they stay readable in either theme.
//
// Fonts: DejaVu Sans from Debian's fonts-dejavu-core is rasterised at the
// chosen pixel size (not scaled up from a small bitmap), so text stays crisp at
// any size. Rebuilding the atlas must happen between frames; FontManager does
// it when asked, then the OpenGL backend uploads the new texture.
#pragma once

#include "dtlab/session.hpp"

#include <imgui.h>

#include <string>

namespace dt::app {

enum class ThemeKind { Dark, Light };

[[nodiscard]] const char* themeLabel(ThemeKind kind);

// Sets ImGui's style for the theme, with sizes scaled for the font size
// (`font_px` / 16: paddings, roundings and scrollbars grow with the text).
void applyTheme(ThemeKind kind, float font_px);

// Colour of a rank state (tile background accent, badges), readable in the theme.
[[nodiscard]] ImU32 rankStateColor(RankState state, ThemeKind kind);
// Colour of text drawn on top of rankStateColor.
[[nodiscard]] ImU32 rankStateTextColor(RankState state, ThemeKind kind);
// The accent used for highlights, badges and the narration flash.
[[nodiscard]] ImU32 accentColor(ThemeKind kind);
[[nodiscard]] ImU32 warningColor(ThemeKind kind);

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
