// test_asset_files.cpp: dtlab's looks as files the app loads (assets/themes,
// assets/layouts.toml, assets/icons.toml): the shipped files load whole, a
// mistake is named by FILE:LINE:COLUMN, and a missing file falls back and says so.
#include "gui/views_fixture.hpp"
#include "integration/process_helpers.hpp"
#include "layout_file.hpp"
#include "model/asset_toml.hpp"
#include "model/icon_file.hpp"
#include "theme.hpp"
#include "views/view_list.hpp"
#include "widgets/family_icon.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace dt::app;

namespace {

const std::string kAssets = std::string(DTLAB_SOURCE_DIR) + "/assets";

std::vector<std::string> viewIds() {
    std::vector<std::string> ids;
    for (const auto& view : makeViews())
        ids.push_back(view->id());
    return ids;
}

// The error a file with `text` gives, or "" when it loads.
std::string themeError(it::TempDir& dir, const std::string& text) {
    try {
        (void)loadThemeFile(dir.write("t.toml", text));
    } catch (const AssetError& e) {
        return e.what();
    }
    return "";
}

const std::string kStates =
    "[rank_states]\npending = \"#5a5e68\"\nstarting = \"#466eaa\"\nrunning = \"#2ea05a\"\n"
    "paused = \"#c8aa32\"\nhung = \"#e6781e\"\nfinished = \"#4682c8\"\nfailed = \"#c8323c\"\n"
    "killed = \"#961e28\"\nrestarting = \"#9650aa\"\nhealing = \"#28aaaa\"\n";
const std::string kMarks = "[marks]\naccent = \"#ffc828\"\nwarning = \"#ff8c28\"\n";

} // namespace

TEST_CASE("The shipped themes, layouts and icons load whole", "[gui][assets]") {
    dt::test::HeadlessImGui imgui;
    SECTION("two themes, dark first, each with every rank state's colour") {
        const ThemeSet set = loadThemes(kAssets + "/themes");
        CHECK(set.problems.empty());
        REQUIRE(set.themes.size() >= 2);
        CHECK(set.themes[0].name == "dark");
        std::set<std::string> names;
        for (const Theme& t : set.themes)
            names.insert(t.name);
        CHECK(names.count("light") == 1);
        const Theme& dark = set.themes[0];
        CHECK_FALSE(dark.light_base);
        REQUIRE(dark.colors[ImGuiCol_WindowBg].has_value());
        CHECK(ImGui::ColorConvertFloat4ToU32(*dark.colors[ImGuiCol_WindowBg]) ==
              IM_COL32(0x17, 0x1a, 0x1f, 255));
        CHECK(rankStateColor(dt::RankState::Running, dark) == IM_COL32(46, 160, 90, 255));
        CHECK(rankStateTextColor(dt::RankState::Paused, dark) == IM_COL32(20, 20, 20, 255));
        // Applying the light theme sets ImGui's style from the file.
        const Theme& light = *std::find_if(set.themes.begin(), set.themes.end(),
                                           [](const Theme& t) { return t.name == "light"; });
        applyTheme(light, 16.0f);
        CHECK(ImGui::GetStyle().FrameBorderSize == 1.0f);
        CHECK(ImGui::ColorConvertFloat4ToU32(ImGui::GetStyle().Colors[ImGuiCol_WindowBg]) == IM_COL32_WHITE);
    }
    SECTION("every family has a layout whose main view exists, and an icon") {
        const FamilyLayouts layouts = loadFamilyLayouts(kAssets + "/layouts.toml", viewIds());
        CHECK(layouts.problems.empty());
        CHECK(layouts.of(ScenarioFamily::Pipeline).main_view == "pipeline");
        CHECK(layouts.of(ScenarioFamily::FaultTolerance).main_view == "quorum");
        CHECK(layouts.of(ScenarioFamily::Sharded).main_view == "memory");
        const FamilyIcons icons = loadFamilyIcons(kAssets + "/icons.toml");
        CHECK(icons.problems.empty());
        std::set<size_t> shape_counts;
        for (ScenarioFamily family : kAllFamilies) {
            INFO(familyKey(family));
            CHECK(icons.of(family).size() >= 3);
            shape_counts.insert(icons.of(family).size());
        }
        CHECK(shape_counts.size() >= 5); // the icons differ
    }
    SECTION("an icon from the file draws its shapes; none draws a plain square") {
        const FamilyIcons icons = loadFamilyIcons(kAssets + "/icons.toml");
        int pipeline_vertices = 0, plain_vertices = 0;
        imgui.frame([&] {
            ImDrawList* draw = ImGui::GetWindowDrawList();
            const int before = draw->VtxBuffer.Size;
            drawFamilyIcon(draw, ImVec2(10, 10), 64.0f, icons.of(ScenarioFamily::Pipeline), IM_COL32_WHITE,
                           IM_COL32(255, 0, 0, 255));
            pipeline_vertices = draw->VtxBuffer.Size - before;
            drawFamilyIcon(draw, ImVec2(10, 10), 64.0f, {}, IM_COL32_WHITE, IM_COL32(255, 0, 0, 255));
            plain_vertices = draw->VtxBuffer.Size - before - pipeline_vertices;
        });
        CHECK(pipeline_vertices >= 16 * 4); // 16 microbatch squares
        CHECK(plain_vertices > 0);
        CHECK(plain_vertices < pipeline_vertices);
    }
}

TEST_CASE("A mistake in an asset file is named by file, line and column, and the app falls back",
          "[gui][assets]") {
    dt::test::HeadlessImGui imgui;
    it::TempDir dir("dtlab-assets");
    const std::string head = "label = \"t\"\nbase = \"dark\"\n";
    SECTION("a theme: a bad colour, an unknown ImGui colour, a missing state, a bad base") {
        CHECK(themeError(dir, head + "[imgui]\nWindowBg = \"#12345\"\n" + kStates + kMarks) ==
              dir.path() + "/t.toml:4:12: '#12345' is not a colour: write \"#RRGGBB\" or \"#RRGGBBAA\"");
        CHECK(themeError(dir, head + "[imgui]\nWindowBackground = \"#123456\"\n" + kStates + kMarks)
                  .rfind(dir.path() + "/t.toml:4:1: 'WindowBackground' is not an ImGui colour", 0) == 0);
        CHECK(themeError(dir, head + "[rank_states]\nrunning = \"#00ff00\"\n" + kMarks)
                  .find("[rank_states] has no colour for 'pending'") != std::string::npos);
        CHECK(themeError(dir, "base = \"grey\"\n" + kStates + kMarks) ==
              dir.path() + "/t.toml:1:8: base must be \"dark\" or \"light\" (ImGui's style underneath)");
        CHECK(themeError(dir, head + kStates + kMarks) == "");
        CHECK(themeError(dir, head + "colour = 1\n" + kStates + kMarks)
                  .find("t.toml:3:1: unknown key 'colour'") != std::string::npos);
    }
    SECTION("a syntax error is at its line and column") {
        CHECK(themeError(dir, "label = \"t\nbase = \"dark\"\n").rfind(dir.path() + "/t.toml:1:", 0) == 0);
    }
    SECTION("a folder with one broken and one good theme: the good one loads, the broken one is reported") {
        it::TempDir themes("dtlab-themes");
        themes.write("broken.toml", "base = \"dark\"\n");
        themes.write("dark.toml", head + kStates + kMarks);
        themes.write("projector.toml", "label = \"projector\"\nbase = \"light\"\n" + kStates + kMarks);
        const ThemeSet set = loadThemes(themes.path());
        REQUIRE(set.themes.size() == 2);
        CHECK(set.themes[0].name == "dark");
        CHECK(set.themes[1].label == "projector"); // a new file is a new theme
        REQUIRE(set.problems.size() == 1);
        CHECK(set.problems[0].find("broken.toml") != std::string::npos);
    }
    SECTION("no theme file: ImGui's stock style, and the reason") {
        it::TempDir empty("dtlab-no-themes");
        const ThemeSet set = loadThemes(empty.path());
        REQUIRE(set.themes.size() == 1);
        CHECK(set.themes[0].name == "stock");
        REQUIRE(set.problems.size() == 1);
        CHECK(set.problems[0].find("no theme file") != std::string::npos);
    }
    SECTION("a layout naming a view that does not exist, or a share out of range") {
        const FamilyLayouts bad =
            loadFamilyLayouts(dir.write("l.toml", "[pipeline]\nmain_view = \"gantt\"\n"), viewIds());
        REQUIRE(bad.problems.size() == 1);
        CHECK(bad.problems[0].rfind(dir.path() + "/l.toml:2:13: main_view 'gantt' is not a view (views: ",
                                    0) == 0);
        CHECK(bad.of(ScenarioFamily::Pipeline).main_view == "timeline"); // the fallback
        const FamilyLayouts share =
            loadFamilyLayouts(dir.write("s.toml", "[sharded]\nmain_share = 0.95\n"), viewIds());
        REQUIRE(share.problems.size() == 1);
        CHECK(share.problems[0] == dir.path() + "/s.toml:2:14: main_share must be between 0.1 and 0.8");
        const FamilyLayouts family =
            loadFamilyLayouts(dir.write("f.toml", "[zero]\nmain_view = \"memory\"\n"), viewIds());
        REQUIRE(family.problems.size() == 1);
        CHECK(family.problems[0].find("unknown key 'zero'") != std::string::npos);
    }
    SECTION("an icon shape outside the unit square, or of an unknown kind") {
        const FamilyIcons outside = loadFamilyIcons(
            dir.write("i.toml", "[[pipeline]]\nshape = \"circle\"\nat = [1.5, 0.5]\nradius = 0.1\n"));
        REQUIRE(outside.problems.size() == 1);
        CHECK(outside.problems[0] ==
              dir.path() + "/i.toml:3:6: at is outside the unit square [0, 1] x [0, 1]");
        CHECK(outside.of(ScenarioFamily::Pipeline).empty());
        const FamilyIcons nan_radius = loadFamilyIcons(
            dir.write("n.toml", "[[pipeline]]\nshape = \"circle\"\nat = [0.5, nan]\nradius = 0.1\n"));
        REQUIRE(nan_radius.problems.size() == 1); // NaN passes no range check: refused, not drawn
        CHECK(nan_radius.problems[0].find("outside the unit square") != std::string::npos);
        const FamilyIcons nan_size = loadFamilyIcons(
            dir.write("r.toml", "[[pipeline]]\nshape = \"circle\"\nat = [0.5, 0.5]\nradius = nan\n"));
        REQUIRE(nan_size.problems.size() == 1);
        CHECK(nan_size.problems[0].find("radius must be a finite number") != std::string::npos);
        const FamilyIcons kind = loadFamilyIcons(dir.write("k.toml", "[[diloco]]\nshape = \"star\"\n"));
        REQUIRE(kind.problems.size() == 1);
        CHECK(kind.problems[0] ==
              dir.path() + "/k.toml:2:9: shape must be \"rect\", \"circle\", \"line\" or \"triangle\"");
    }
}
