// theme.cpp: themes read from assets/themes/*.toml (see theme.hpp), applied
// to ImGui's style, and the TrueType font atlas rebuilt at the chosen pixel size.
//
// A theme file:
//   label = "light (high contrast)"
//   base = "light"                  # ImGui's StyleColorsLight or StyleColorsDark underneath
//   frame_border = 1.0              # optional, px (0..4; ImGui does not scale it with the text)
//   [imgui]   WindowBg = "#ffffff"  # any ImGui colour by its name (ImGui::GetStyleColorName)
//   [rank_states] running = "#00823c" ...   every state of rankStateLabel, all required
//   [rank_state_text] paused = "#141414"    optional per state (default white)
//   [marks] accent = "#e60078"  warning = "#c83c00"
#include "theme.hpp"

#include "model/asset_toml.hpp"

#include <backends/imgui_impl_opengl3.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sys/stat.h>

namespace dt::app {

namespace {

bool fileExists(const char* path) {
    struct stat st {};
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int imguiColorIndex(const std::string& name) {
    for (int i = 0; i < ImGuiCol_COUNT; ++i)
        if (name == ImGui::GetStyleColorName(i))
            return i;
    return -1;
}

} // namespace

Theme loadThemeFile(const std::string& path) {
    const toml::table root = parseAssetFile(path);
    rejectUnknownKeys(path, root,
                      {"label", "base", "frame_border", "imgui", "rank_states", "rank_state_text", "marks"});
    Theme theme;
    theme.path = path;
    theme.name = std::filesystem::path(path).stem().string();
    theme.label = root["label"].value_or(theme.name);
    const toml::node* base = root.get("base");
    const std::optional<std::string> base_name = base ? base->value<std::string>() : std::nullopt;
    if (!base_name || (*base_name != "dark" && *base_name != "light"))
        throw assetError(path, base, "base must be \"dark\" or \"light\" (ImGui's style underneath)");
    theme.light_base = *base_name == "light";
    theme.frame_border = float(assetNumber(path, root, "frame_border", 0.0));
    if (!(theme.frame_border >= 0.0f && theme.frame_border <= 4.0f))
        throw assetError(path, root.get("frame_border"), "frame_border must be between 0 and 4 px");

    if (const toml::table* imgui = root["imgui"].as_table())
        for (const auto& [key, node] : *imgui) {
            const int index = imguiColorIndex(std::string(key.str()));
            if (index < 0)
                throw assetError(path, key,
                                 "'" + std::string(key.str()) +
                                     "' is not an ImGui colour (ImGuiCol_ names without the prefix: "
                                     "WindowBg, Text, Button, ...)");
            theme.colors[size_t(index)] = assetColor(path, node);
        }

    const toml::table* states = root["rank_states"].as_table();
    if (!states)
        throw assetError(path, nullptr, "[rank_states] is missing: one colour per rank state");
    const toml::table* texts = root["rank_state_text"].as_table();
    std::vector<std::string> state_names;
    for (size_t i = 0; i < kRankStateCount; ++i) {
        const std::string state(rankStateLabel(RankState(i)));
        state_names.push_back(state);
        const toml::node* color = states->get(state);
        if (!color)
            throw assetError(path, states, "[rank_states] has no colour for '" + state + "'");
        theme.rank_state[i] = ImGui::ColorConvertFloat4ToU32(assetColor(path, *color));
        const toml::node* text = texts ? texts->get(state) : nullptr;
        theme.rank_state_text[i] =
            text ? ImGui::ColorConvertFloat4ToU32(assetColor(path, *text)) : IM_COL32(255, 255, 255, 255);
    }
    rejectUnknownKeys(path, *states, state_names);
    if (texts)
        rejectUnknownKeys(path, *texts, state_names);

    const toml::table* marks = root["marks"].as_table();
    if (!marks || !marks->get("accent") || !marks->get("warning"))
        throw assetError(path, marks, "[marks] needs accent and warning colours");
    rejectUnknownKeys(path, *marks, {"accent", "warning"});
    theme.accent = ImGui::ColorConvertFloat4ToU32(assetColor(path, *marks->get("accent")));
    theme.warning = ImGui::ColorConvertFloat4ToU32(assetColor(path, *marks->get("warning")));
    return theme;
}

ThemeSet loadThemes(const std::string& dir) {
    ThemeSet set;
    std::vector<std::string> paths;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
        if (entry.path().extension() == ".toml")
            paths.push_back(entry.path().string());
    if (ec && !dir.empty())
        set.problems.push_back(dir + ": " + ec.message());
    std::sort(paths.begin(), paths.end());
    for (const std::string& path : paths) {
        try {
            set.themes.push_back(loadThemeFile(path));
        } catch (const std::exception& e) {
            set.problems.push_back(e.what());
        }
    }
    std::stable_sort(set.themes.begin(), set.themes.end(),
                     [](const Theme& a, const Theme& b) { return a.name == "dark" && b.name != "dark"; });
    if (set.themes.empty()) {
        if (set.problems.empty())
            set.problems.push_back((dir.empty() ? std::string("assets/themes") : dir) +
                                   ": no theme file (*.toml): using ImGui's stock dark style");
        set.themes.push_back(fallbackTheme());
    }
    return set;
}

const Theme& fallbackTheme() {
    static const Theme theme = [] {
        Theme t;
        t.name = "stock";
        t.label = "stock ImGui (no theme file)";
        for (size_t i = 0; i < kRankStateCount; ++i)
            t.rank_state[i] = ImColor::HSV(float(i) / float(kRankStateCount), 0.65f, 0.75f);
        t.rank_state_text.fill(IM_COL32(255, 255, 255, 255));
        t.accent = ImColor::HSV(0.13f, 0.85f, 1.0f);
        t.warning = ImColor::HSV(0.07f, 0.85f, 1.0f);
        return t;
    }();
    return theme;
}

void applyTheme(const Theme& theme, float font_px) {
    ImGuiStyle style;
    if (theme.light_base)
        ImGui::StyleColorsLight(&style);
    else
        ImGui::StyleColorsDark(&style);
    for (int i = 0; i < ImGuiCol_COUNT; ++i)
        if (theme.colors[size_t(i)])
            style.Colors[i] = *theme.colors[size_t(i)];
    style.WindowRounding = 3.0f;
    style.FrameRounding = 3.0f;
    style.GrabRounding = 3.0f;
    style.ChildRounding = 3.0f;
    style.WindowBorderSize = 1.0f;
    style.FrameBorderSize = theme.frame_border;
    style.WindowPadding = ImVec2(8, 6);
    style.ItemSpacing = ImVec2(7, 5);
    style.ScaleAllSizes(font_px / FontManager::kDefaultPx);
    ImGui::GetStyle() = style;
}

ImU32 rankStateColor(RankState state, const Theme& theme) {
    return theme.rank_state[std::min(size_t(state), kRankStateCount - 1)];
}

ImU32 rankStateTextColor(RankState state, const Theme& theme) {
    return theme.rank_state_text[std::min(size_t(state), kRankStateCount - 1)];
}

ImU32 accentColor(const Theme& theme) {
    return theme.accent;
}

ImU32 warningColor(const Theme& theme) {
    return theme.warning;
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
