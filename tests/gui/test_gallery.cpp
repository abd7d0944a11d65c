// test_gallery.cpp: the scenario gallery (model/scenario_catalog.hpp,
// gallery_screen.hpp): the catalog read from assets/gallery.toml and the
// scenarios folder, headless; and the real dtlab under Xvfb, opening on the
// gallery and starting three scenarios by clicking their cards, with every
// view keeping its content area at 1600x900 and 1920x1080, 14 and 32 px text.
#include "gui/e2e_support.hpp"
#include "gui/views_fixture.hpp"
#include "integration/process_helpers.hpp"

#include "gallery_screen.hpp"
#include "model/scenario_catalog.hpp"

#include <GLFW/glfw3.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

using namespace dt::app;

namespace {

const std::string kSource = DTLAB_SOURCE_DIR;

std::set<std::string> shippedScenarioNames() {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(kSource + "/scenarios"))
        if (entry.path().extension() == ".toml")
            names.insert(entry.path().stem().string());
    return names;
}

// Every "`name`" in docs/workshop.md's topic table (its numbered rows), in order.
std::vector<std::string> workshopTableNames() {
    std::ifstream in(kSource + "/docs/workshop.md");
    std::vector<std::string> names;
    const std::regex tick("`([a-z0-9_]+)`");
    bool in_table = false; // the topic table: from its "| # | Topic" header to the next blank line
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("| # | Topic", 0) == 0)
            in_table = true;
        else if (line.empty())
            in_table = false;
        if (!in_table || !std::regex_search(line, std::regex("^\\| [0-9]+ \\|"))) // "| 3 | Topic | ..."
            continue;
        for (std::sregex_iterator m(line.begin(), line.end(), tick), end; m != end; ++m)
            names.push_back((*m)[1]);
    }
    return names;
}

} // namespace

TEST_CASE("The gallery's catalog has a card for every shipped scenario, grouped by the workshop's topics",
          "[gui][gallery]") {
    const ScenarioCatalog catalog =
        loadScenarioCatalog(kSource + "/assets/gallery.toml", kSource + "/scenarios");
    INFO(catalog.problem);
    REQUIRE(catalog.problem.empty());

    SECTION("every scenario of the folder is on a card, and no card is left over in Other") {
        std::set<std::string> on_cards;
        for (const CatalogTopic& topic : catalog.topics) {
            CHECK(topic.title != "Other scenarios");
            for (const ScenarioCard& card : topic.cards)
                on_cards.insert(card.name);
        }
        CHECK(on_cards == shippedScenarioNames());
    }
    SECTION("the topics come in docs/workshop.md's order, each with its scenarios") {
        const std::vector<std::string> table = workshopTableNames();
        REQUIRE(table.size() >= 20);
        std::vector<std::string> cards;
        for (const CatalogTopic& topic : catalog.topics)
            for (const ScenarioCard& card : topic.cards)
                cards.push_back(card.name);
        CHECK(cards == table);
    }
    SECTION("a shipped card carries what the scenario file says") {
        const ScenarioCard* ddp = nullptr;
        for (const CatalogTopic& topic : catalog.topics)
            for (const ScenarioCard& card : topic.cards)
                if (card.name == "ddp_basics")
                    ddp = &card;
        REQUIRE(ddp != nullptr);
        const dt::Scenario s = dt::loadScenarioFile(kSource + "/scenarios/ddp_basics.toml");
        CHECK(ddp->error.empty());
        CHECK(ddp->title == s.name);
        CHECK(ddp->ranks == s.topology.ranks);
        CHECK(ddp->setup == "ddp");
        CHECK(ddp->family == ScenarioFamily::DataParallel);
        CHECK(ddp->narration_steps == int(s.steps.size()));
        CHECK(ddp->narration_minutes > 0.5);
        CHECK(ddp->summary.back() == '.');
        CHECK(s.description.rfind(ddp->summary, 0) == 0);
    }
    SECTION("the families pick the icons: pipelines, fault tolerance, ZeRO/FSDP, DiLoCo") {
        std::map<std::string, ScenarioFamily> family;
        for (const CatalogTopic& topic : catalog.topics)
            for (const ScenarioCard& card : topic.cards)
                family[card.name] = card.family;
        CHECK(family["pipeline_microbatches"] == ScenarioFamily::Pipeline);
        CHECK(family["ft_kill_replica"] == ScenarioFamily::FaultTolerance);
        CHECK(family["zero_stages"] == ScenarioFamily::Sharded);
        CHECK(family["diloco_streaming"] == ScenarioFamily::Diloco);
        CHECK(family["backends_compare"] == ScenarioFamily::Backends);
    }
}

TEST_CASE("A broken or missing scenario gets a card with its error in full", "[gui][gallery]") {
    it::TempDir dir("dtlab-gallery");
    std::filesystem::create_directories(dir.file("scenarios"));
    {
        std::ofstream(dir.file("scenarios/good.toml"))
            << std::ifstream(kSource + "/scenarios/ddp_basics.toml").rdbuf();
        std::ofstream(dir.file("scenarios/broken.toml"))
            << "[scenario]\nname = \"x\"\n[topology]\nranks = \"four\"\n";
        std::ofstream(dir.file("scenarios/extra.toml"))
            << std::ifstream(kSource + "/scenarios/zero_stages.toml").rdbuf();
    }
    const std::string gallery = dir.write("gallery.toml", "[[topics]]\ntitle = \"One\"\nminutes = 3\n"
                                                          "scenarios = [\"good\", \"broken\", \"gone\"]\n");
    const ScenarioCatalog catalog = loadScenarioCatalog(gallery, dir.file("scenarios"));
    REQUIRE(catalog.topics.size() == 2);
    const CatalogTopic& one = catalog.topics[0];
    REQUIRE(one.cards.size() == 3);
    CHECK(one.minutes == 3);
    CHECK(one.cards[0].error.empty());
    SECTION("the broken file's card has the loader's file:line:column message, whole") {
        const std::string& error = one.cards[1].error;
        INFO(error);
        CHECK(std::regex_search(error, std::regex("broken\\.toml:4:\\d+")));
        CHECK(error.find("ranks") != std::string::npos);
        bool threw = false;
        try {
            (void)dt::loadScenarioFile(dir.file("scenarios/broken.toml"));
        } catch (const std::exception& e) {
            threw = true;
            CHECK(error == e.what()); // the same message dtrun check prints, not a summary of it
        }
        CHECK(threw);
    }
    SECTION("a listed file that is missing says so") {
        CHECK(one.cards[2].error.find("no such scenario file") != std::string::npos);
    }
    SECTION("a scenario no topic lists is under Other scenarios") {
        CHECK(catalog.topics[1].title == "Other scenarios");
        REQUIRE(catalog.topics[1].cards.size() == 1);
        CHECK(catalog.topics[1].cards[0].name == "extra");
    }
    SECTION("a gallery.toml that does not parse is reported, and every scenario still gets a card") {
        const std::string bad = dir.write("bad.toml", "[[topics]\ntitle = \"x\"\n");
        const ScenarioCatalog fallback = loadScenarioCatalog(bad, dir.file("scenarios"));
        CHECK(std::regex_search(fallback.problem, std::regex("bad\\.toml:1:\\d+")));
        REQUIRE(fallback.topics.size() == 1);
        CHECK(fallback.topics[0].cards.size() == 3);
    }
}

TEST_CASE("The gallery moves its focus with the arrow keys and opens the focused card with Enter",
          "[gui][gallery]") {
    dt::test::HeadlessImGui imgui;
    GalleryScreen gallery;
    gallery.reload(kSource + "/assets/gallery.toml", kSource + "/scenarios");
    NoViewActions actions;
    GalleryLook look;
    GalleryScreen::Outcome outcome;
    auto frame = [&](std::vector<int> keys) {
        imgui.frame([&] { outcome = gallery.draw(actions, look, keys, true); });
    };
    frame({});
    CHECK(gallery.focusedName() == "ranks_and_rendezvous");
    frame({GLFW_KEY_RIGHT});
    CHECK(gallery.focusedName() == "ddp_basics");
    frame({GLFW_KEY_RIGHT, GLFW_KEY_RIGHT, GLFW_KEY_LEFT});
    CHECK(gallery.focusedName() == "ddp_slow_link");
    frame({GLFW_KEY_ENTER});
    CHECK(outcome.open_path == kSource + "/scenarios/ddp_slow_link.toml");
    frame({GLFW_KEY_END});
    CHECK(gallery.focusedName() == "backends_compare");
    frame({GLFW_KEY_HOME});
    CHECK(gallery.focusedName() == "ranks_and_rendezvous");
    frame({GLFW_KEY_ESCAPE});
    CHECK(outcome.close);
    CHECK(outcome.open_path.empty());
}

// Issue 25's test: the real app opens on the gallery; three cards clicked
// start three scenarios; each is checked at two window sizes and two text
// sizes with the app's own layout numbers (expect_views_fit).
TEST_CASE("dtlab opens on the gallery, starts three scenarios from their cards, and every view keeps its "
          "content at 1600x900 and 1920x1080 with 14 and 32 px text",
          "[e2e][gallery]") {
    const auto display = e2e::startDisplay();
    if (!display)
        return;
    it::TempDir dir("dtlab-gallery-e2e");
    const std::string art = e2e::artifactDir();
    std::string script = "wait_frames 3\nscreenshot gallery_start.png\n";
    const std::vector<std::string> cards = {"ddp_slow_link", "pipeline_gpipe_vs_1f1b", "ft_kill_replica"};
    for (size_t c = 0; c < cards.size(); ++c) {
        if (c > 0)
            script += "gallery\nwait_frames 3\n";
        script += "click_button " + cards[c] + "\nwait_seconds 2\n";
        for (const char* size : {"1600 900", "1920 1080"})
            for (const char* font : {"14", "32"}) {
                script += std::string("window ") + size + "\nfont " + font + "\nexpect_views_fit 120\n";
                script += std::string("print_layout\n");
            }
        script += "screenshot gallery_" + cards[c] + "_1920_32.png\n";
    }
    script += "quit\n";
    const std::string path = dir.write("gallery.script", script);
    it::ProcessOptions options = e2e::displayOptions(*display, 240.0);
    options.cwd = kSource; // the gallery finds scenarios/ and assets/ there, as a presenter's checkout does
    const it::ProcessResult r =
        it::runProcess({e2e::kDtlab, "--script", path, "--screenshot-dir", art}, options);
    INFO(it::describe(r) << "\nstdout:\n" << r.out);
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("dtlab: gallery: ") != std::string::npos);
    for (const std::string& card : cards) {
        CHECK(r.out.find("dtlab: clicked '" + card + "##card") != std::string::npos);
    }
    CHECK(r.out.find("started \"DDP on a 100 Mbit/s link\"") != std::string::npos);
    CHECK(r.out.find("started \"Pipeline") != std::string::npos);
    CHECK(r.out.find("started \"Fault tolerance: kill a replica\"") != std::string::npos);
    CHECK(r.out.find("dtlab: script done") != std::string::npos);
    // The layout lines, 12 of them, each with at least the timeline or the main view drawn.
    size_t content_lines = 0;
    const std::regex content("dtlab: layout content (\\w+) (\\d+)");
    for (std::sregex_iterator m(r.out.begin(), r.out.end(), content), end; m != end; ++m) {
        if ((*m)[1] != "controls")
            CHECK(std::stoi((*m)[2]) >= 120);
        ++content_lines;
    }
    CHECK(content_lines >= 12 * 4);
    e2e::checkNoWorkerLeft(r.out, 2 + 2 + 3); // each run's ranks were stopped when the next card opened
    e2e::checkScreenshot(art + "/gallery_start.png");
    e2e::checkScreenshot(art + "/gallery_ft_kill_replica_1920_32.png");
}
