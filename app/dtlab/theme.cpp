// theme.cpp: dtlab's dark and high-contrast light styles, rank-state colours,
// and the TrueType font atlas rebuilt at the chosen pixel size.
#include "theme.hpp"

#include <backends/imgui_impl_opengl3.h>

#include <algorithm>
#include <cstdio>
#include <sys/stat.h>

namespace dt::app {

namespace {

bool fileExists(const char* path) {
    struct stat st {};
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

void darkColors(ImGuiStyle& s) {
    ImGui::StyleColorsDark(&s);
    ImVec4* c = s.Colors;
    c[ImGuiCol_WindowBg] = ImVec4(0.09f, 0.10f, 0.12f, 1.00f);
    c[ImGuiCol_ChildBg] = ImVec4(0.11f, 0.12f, 0.14f, 1.00f);
    c[ImGuiCol_PopupBg] = ImVec4(0.12f, 0.13f, 0.16f, 0.98f);
    c[ImGuiCol_Border] = ImVec4(0.28f, 0.30f, 0.35f, 1.00f);
    c[ImGuiCol_TitleBg] = ImVec4(0.13f, 0.15f, 0.19f, 1.00f);
    c[ImGuiCol_TitleBgActive] = ImVec4(0.16f, 0.22f, 0.32f, 1.00f);
    c[ImGuiCol_MenuBarBg] = ImVec4(0.13f, 0.14f, 0.17f, 1.00f);
    c[ImGuiCol_FrameBg] = ImVec4(0.18f, 0.20f, 0.24f, 1.00f);
    c[ImGuiCol_Button] = ImVec4(0.22f, 0.27f, 0.36f, 1.00f);
    c[ImGuiCol_ButtonHovered] = ImVec4(0.30f, 0.40f, 0.56f, 1.00f);
    c[ImGuiCol_ButtonActive] = ImVec4(0.36f, 0.50f, 0.72f, 1.00f);
}

// High contrast for projectors: pure black text on white, dark borders on
// every frame, saturated selection colours.
void lightColors(ImGuiStyle& s) {
    ImGui::StyleColorsLight(&s);
    ImVec4* c = s.Colors;
    c[ImGuiCol_Text] = ImVec4(0.00f, 0.00f, 0.00f, 1.00f);
    c[ImGuiCol_TextDisabled] = ImVec4(0.35f, 0.35f, 0.35f, 1.00f);
    c[ImGuiCol_WindowBg] = ImVec4(1.00f, 1.00f, 1.00f, 1.00f);
    c[ImGuiCol_ChildBg] = ImVec4(0.97f, 0.97f, 0.97f, 1.00f);
    c[ImGuiCol_PopupBg] = ImVec4(1.00f, 1.00f, 1.00f, 0.99f);
    c[ImGuiCol_Border] = ImVec4(0.15f, 0.15f, 0.15f, 1.00f);
    c[ImGuiCol_FrameBg] = ImVec4(0.90f, 0.90f, 0.90f, 1.00f);
    c[ImGuiCol_FrameBgHovered] = ImVec4(0.80f, 0.86f, 1.00f, 1.00f);
    c[ImGuiCol_TitleBg] = ImVec4(0.85f, 0.85f, 0.85f, 1.00f);
    c[ImGuiCol_TitleBgActive] = ImVec4(0.70f, 0.78f, 0.95f, 1.00f);
    c[ImGuiCol_MenuBarBg] = ImVec4(0.88f, 0.88f, 0.88f, 1.00f);
    c[ImGuiCol_Button] = ImVec4(0.82f, 0.86f, 0.95f, 1.00f);
    c[ImGuiCol_ButtonHovered] = ImVec4(0.65f, 0.75f, 0.98f, 1.00f);
    c[ImGuiCol_ButtonActive] = ImVec4(0.45f, 0.60f, 0.95f, 1.00f);
    c[ImGuiCol_Header] = ImVec4(0.75f, 0.82f, 0.98f, 1.00f);
    c[ImGuiCol_CheckMark] = ImVec4(0.00f, 0.20f, 0.70f, 1.00f);
    c[ImGuiCol_SliderGrab] = ImVec4(0.00f, 0.25f, 0.75f, 1.00f);
    c[ImGuiCol_PlotLines] = ImVec4(0.00f, 0.00f, 0.00f, 1.00f);
}

} // namespace

const char* themeLabel(ThemeKind kind) {
    return kind == ThemeKind::Dark ? "dark" : "light (high contrast)";
}

void applyTheme(ThemeKind kind, float font_px) {
    ImGuiStyle style;
    if (kind == ThemeKind::Dark)
        darkColors(style);
    else
        lightColors(style);
    style.WindowRounding = 3.0f;
    style.FrameRounding = 3.0f;
    style.GrabRounding = 3.0f;
    style.ChildRounding = 3.0f;
    style.WindowBorderSize = 1.0f;
    style.FrameBorderSize = kind == ThemeKind::Light ? 1.0f : 0.0f;
    style.WindowPadding = ImVec2(8, 6);
    style.ItemSpacing = ImVec2(7, 5);
    style.ScaleAllSizes(font_px / FontManager::kDefaultPx);
    ImGui::GetStyle() = style;
}

ImU32 rankStateColor(RankState state, ThemeKind kind) {
    const bool dark = kind == ThemeKind::Dark;
    switch (state) {
    case RankState::Pending:
        return dark ? IM_COL32(90, 94, 104, 255) : IM_COL32(170, 170, 170, 255);
    case RankState::Starting:
        return dark ? IM_COL32(70, 110, 170, 255) : IM_COL32(60, 110, 200, 255);
    case RankState::Running:
        return dark ? IM_COL32(46, 160, 90, 255) : IM_COL32(0, 130, 60, 255);
    case RankState::Paused:
        return dark ? IM_COL32(200, 170, 50, 255) : IM_COL32(190, 140, 0, 255);
    case RankState::Hung:
        return dark ? IM_COL32(230, 120, 30, 255) : IM_COL32(210, 90, 0, 255);
    case RankState::Finished:
        return dark ? IM_COL32(70, 130, 200, 255) : IM_COL32(20, 70, 160, 255);
    case RankState::Failed:
        return dark ? IM_COL32(200, 50, 60, 255) : IM_COL32(190, 0, 20, 255);
    case RankState::Killed:
        return dark ? IM_COL32(150, 30, 40, 255) : IM_COL32(120, 0, 10, 255);
    case RankState::Restarting:
        return dark ? IM_COL32(150, 80, 170, 255) : IM_COL32(120, 50, 150, 255);
    case RankState::Healing:
        return dark ? IM_COL32(40, 170, 170, 255) : IM_COL32(0, 130, 140, 255);
    }
    return IM_COL32(128, 128, 128, 255);
}

ImU32 rankStateTextColor(RankState state, ThemeKind kind) {
    if (state == RankState::Paused && kind == ThemeKind::Dark)
        return IM_COL32(20, 20, 20, 255);
    if (state == RankState::Pending && kind == ThemeKind::Light)
        return IM_COL32(0, 0, 0, 255);
    return IM_COL32(255, 255, 255, 255);
}

ImU32 accentColor(ThemeKind kind) {
    return kind == ThemeKind::Dark ? IM_COL32(255, 200, 40, 255) : IM_COL32(230, 0, 120, 255);
}

ImU32 warningColor(ThemeKind kind) {
    return kind == ThemeKind::Dark ? IM_COL32(255, 140, 40, 255) : IM_COL32(200, 60, 0, 255);
}

void FontManager::request(float px) {
    px = std::clamp(px, kMinPx, kMaxPx);
    if (px == m_px && !m_pending)
        return;
    m_px = px;
    m_pending = true;
}

bool FontManager::applyPending(bool upload) {
    if (!m_pending)
        return false;
    m_pending = false;
    ImGuiIO& io = ImGui::GetIO();
    io.Fonts->Clear();
    ImFontConfig config;
    config.OversampleH = 2;
    config.OversampleV = 1;
    m_mono = nullptr;
    ImFont* font = nullptr;
    if (fileExists(kFontPath))
        font = io.Fonts->AddFontFromFileTTF(kFontPath, m_px, &config);
    m_fallback = font == nullptr;
    if (m_fallback) {
        ImFontConfig fallback;
        fallback.SizePixels = m_px; // the built-in ProggyClean, rasterised at this size (blurry past ~20 px)
        io.Fonts->AddFontDefault(&fallback);
    } else if (fileExists(kMonoPath)) {
        m_mono = io.Fonts->AddFontFromFileTTF(kMonoPath, m_px, &config);
    }
    io.Fonts->Build();
    if (upload) {
        ImGui_ImplOpenGL3_DestroyFontsTexture();
        ImGui_ImplOpenGL3_CreateFontsTexture();
    }
    return true;
}

} // namespace dt::app
