// scenario_catalog.hpp: the scenarios the gallery offers, as cards grouped by
// the workshop's topics (assets/gallery.toml) -- no ImGui here, so tests read
// the catalog headless.
//
// loadScenarioCatalog:
//   1. read gallery.toml: [[topics]] with title, minutes, scenarios, spares
//   2. for each listed name, load scenarios/NAME.toml with the engine's own
//      loader (the same one dtrun check runs): a card with its title, first
//      sentence, ranks, strategy, family and narration length; a file that does
//      not load gets a card with the loader's error in full (file:line:column)
//   3. every other .toml of the folder gets a card under "Other scenarios"
// A broken or missing gallery.toml is not fatal: every scenario then shows
// under "Other scenarios" and `problem` says why.
#pragma once

#include "dtlab/scenario.hpp"

#include <string>
#include <vector>

namespace dt::app {

// What kind of lesson a scenario is: picks its gallery icon and its layout's main view.
enum class ScenarioFamily {
    DataParallel,
    Sharded,
    TensorParallel,
    Pipeline,
    FaultTolerance,
    Diloco,
    Backends,
    Swarm
};

inline constexpr ScenarioFamily kAllFamilies[] = {ScenarioFamily::DataParallel,   ScenarioFamily::Sharded,
                                                  ScenarioFamily::TensorParallel, ScenarioFamily::Pipeline,
                                                  ScenarioFamily::FaultTolerance, ScenarioFamily::Diloco,
                                                  ScenarioFamily::Backends,       ScenarioFamily::Swarm};
inline constexpr size_t kFamilyCount = sizeof(kAllFamilies) / sizeof(kAllFamilies[0]);

[[nodiscard]] ScenarioFamily familyOf(const Scenario& scenario);
[[nodiscard]] const char* familyLabel(ScenarioFamily family);
// "data_parallel", "sharded", ...: the family's table in assets/layouts.toml and assets/icons.toml.
[[nodiscard]] const char* familyKey(ScenarioFamily family);
// Every family's key, in kAllFamilies' order: the tables an asset file may hold.
[[nodiscard]] std::vector<std::string> familyKeys();

struct ScenarioCard {
    std::string name;        // "ddp_basics": the file's stem, the card's scriptable label
    std::string path;        // "scenarios/ddp_basics.toml"
    std::string error;       // non-empty: the file does not load (the loader's message, in full)
    std::string title;       // [scenario] name
    std::string summary;     // the description's first sentence
    std::string description; // the whole description (the card's tooltip)
    int ranks = 0;
    std::string setup; // "ddp", "fsdp, fault tolerant", "pipeline 1f1b x 4 stages"
    ScenarioFamily family = ScenarioFamily::DataParallel;
    int narration_steps = 0;
    double narration_minutes = 0.0; // its narration read aloud at kWordsPerMinute
    bool spare = false;             // the workshop's spare: open it if there is time
};

struct CatalogTopic {
    std::string title;
    int minutes = 0; // the workshop's time for it (0 = not given)
    std::vector<ScenarioCard> cards;
};

struct ScenarioCatalog {
    std::vector<CatalogTopic> topics;
    std::string problem; // gallery.toml could not be read or parsed ("" = fine)
    [[nodiscard]] int cardCount() const;
};

// A presenter's pace when reading narration aloud.
inline constexpr double kWordsPerMinute = 130.0;

// `gallery_toml` may be "" (no gallery file: every scenario under "Other scenarios").
[[nodiscard]] ScenarioCatalog loadScenarioCatalog(const std::string& gallery_toml,
                                                  const std::string& scenarios_dir);

// One card for one scenario file (exposed for tests).
[[nodiscard]] ScenarioCard loadScenarioCard(const std::string& path);

} // namespace dt::app
