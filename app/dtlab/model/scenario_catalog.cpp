// scenario_catalog.cpp: assets/gallery.toml plus the scenarios folder -> the
// gallery's cards (see scenario_catalog.hpp for the steps).
#include "model/scenario_catalog.hpp"

#include "dtlab/errors.hpp"
#include "dtlab/strategy_kind.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

namespace dt::app {

ScenarioFamily familyOf(const Scenario& s) {
    const StrategyTraits& traits = strategyTraits(s.strategy.kind);
    if (s.fault_tolerance.enabled)
        return ScenarioFamily::FaultTolerance;
    if (s.strategy.kind == StrategyKind::Swarm)
        return ScenarioFamily::Swarm;
    if (s.strategy.kind == StrategyKind::Diloco)
        return ScenarioFamily::Diloco;
    if (s.strategy.kind == StrategyKind::Collectives)
        return ScenarioFamily::Backends;
    if (traits.uses_stages)
        return ScenarioFamily::Pipeline;
    if (s.strategy.kind == StrategyKind::TensorParallel)
        return ScenarioFamily::TensorParallel;
    if (traits.shards_optimizer || traits.shards_gradients || traits.shards_parameters)
        return ScenarioFamily::Sharded;
    return ScenarioFamily::DataParallel;
}

const char* familyLabel(ScenarioFamily family) {
    switch (family) {
    case ScenarioFamily::DataParallel:
        return "data parallel";
    case ScenarioFamily::Sharded:
        return "ZeRO / FSDP";
    case ScenarioFamily::TensorParallel:
        return "tensor parallel";
    case ScenarioFamily::Pipeline:
        return "pipeline";
    case ScenarioFamily::FaultTolerance:
        return "fault tolerance";
    case ScenarioFamily::Diloco:
        return "DiLoCo";
    case ScenarioFamily::Backends:
        return "backends";
    case ScenarioFamily::Swarm:
        return "SWARM";
    }
    return "?";
}

const char* familyKey(ScenarioFamily family) {
    switch (family) {
    case ScenarioFamily::DataParallel:
        return "data_parallel";
    case ScenarioFamily::Sharded:
        return "sharded";
    case ScenarioFamily::TensorParallel:
        return "tensor_parallel";
    case ScenarioFamily::Pipeline:
        return "pipeline";
    case ScenarioFamily::FaultTolerance:
        return "fault_tolerance";
    case ScenarioFamily::Diloco:
        return "diloco";
    case ScenarioFamily::Backends:
        return "backends";
    case ScenarioFamily::Swarm:
        return "swarm";
    }
    return "?";
}

std::vector<std::string> familyKeys() {
    std::vector<std::string> keys;
    for (ScenarioFamily family : kAllFamilies)
        keys.push_back(familyKey(family));
    return keys;
}

int ScenarioCatalog::cardCount() const {
    int n = 0;
    for (const CatalogTopic& t : topics)
        n += int(t.cards.size());
    return n;
}

namespace {

// The description up to its first sentence's end ("... gradients. Then" -> "... gradients.").
// A sentence that ends in a colon runs on to the next full stop (it introduces a list).
std::string firstSentence(const std::string& text) {
    for (size_t i = 0; i + 1 < text.size(); ++i)
        if (text[i] == '.' && (text[i + 1] == ' ' || text[i + 1] == '\n'))
            return text.substr(0, i + 1);
    return text;
}

int wordCount(const std::string& text) {
    std::istringstream in(text);
    std::string word;
    int n = 0;
    while (in >> word)
        ++n;
    return n;
}

// "zero2", "pipeline 1f1b, 4 stages", "ddp, fault tolerant".
std::string setupOf(const Scenario& s) {
    std::string setup = strategyKindName(s.strategy.kind);
    if (strategyTraits(s.strategy.kind).uses_stages)
        setup += ", " + std::to_string(s.topology.stages) + " stages";
    if (s.topology.replicas > 1)
        setup += ", " + std::to_string(s.topology.replicas) + " replica groups";
    if (s.fault_tolerance.enabled)
        setup += ", fault tolerant";
    return setup;
}

std::string stemOf(const std::string& path) {
    return std::filesystem::path(path).stem().string();
}

} // namespace

ScenarioCard loadScenarioCard(const std::string& path) {
    ScenarioCard card;
    card.path = path;
    card.name = stemOf(path);
    card.title = card.name;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
        card.error = path + ": no such scenario file (listed in the gallery, missing from the folder)";
        return card;
    }
    try {
        const Scenario s = loadScenarioFile(path);
        if (!s.name.empty())
            card.title = s.name;
        card.description = s.description;
        card.summary = firstSentence(s.description);
        card.ranks = s.topology.ranks;
        card.setup = setupOf(s);
        card.family = familyOf(s);
        card.narration_steps = int(s.steps.size());
        int words = 0;
        for (const NarrationStep& step : s.steps)
            words += wordCount(step.text);
        card.narration_minutes = double(words) / kWordsPerMinute;
    } catch (const std::exception& e) {
        card.error = e.what();
    }
    return card;
}

ScenarioCatalog loadScenarioCatalog(const std::string& gallery_toml, const std::string& scenarios_dir) {
    ScenarioCatalog catalog;
    std::set<std::string> listed;
    auto pathOf = [&](const std::string& name) {
        return (std::filesystem::path(scenarios_dir) / (name + ".toml")).string();
    };

    if (!gallery_toml.empty()) {
        try {
            const toml::table root = toml::parse_file(gallery_toml);
            const toml::array* topics = root["topics"].as_array();
            if (!topics)
                throw std::runtime_error(gallery_toml + ": no [[topics]]");
            for (const toml::node& node : *topics) {
                const toml::table* t = node.as_table();
                if (!t)
                    continue;
                CatalogTopic topic;
                topic.title = (*t)["title"].value_or(std::string("(untitled)"));
                topic.minutes = int((*t)["minutes"].value_or(int64_t(0)));
                for (const char* key : {"scenarios", "spares"}) {
                    const toml::array* names = (*t)[key].as_array();
                    if (!names)
                        continue;
                    for (const toml::node& n : *names) {
                        const std::optional<std::string> name = n.value<std::string>();
                        if (!name)
                            continue;
                        ScenarioCard card = loadScenarioCard(pathOf(*name));
                        card.spare = std::string(key) == "spares";
                        listed.insert(*name);
                        topic.cards.push_back(std::move(card));
                    }
                }
                catalog.topics.push_back(std::move(topic));
            }
        } catch (const toml::parse_error& e) {
            std::ostringstream msg;
            msg << gallery_toml << ":" << e.source().begin.line << ":" << e.source().begin.column << ": "
                << e.description();
            catalog.problem = msg.str();
            catalog.topics.clear();
            listed.clear();
        } catch (const std::exception& e) {
            catalog.problem = e.what();
            catalog.topics.clear();
            listed.clear();
        }
    }

    // Every other scenario of the folder, by name.
    std::vector<std::string> others;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(scenarios_dir, ec))
        if (entry.path().extension() == ".toml" && !listed.count(entry.path().stem().string()))
            others.push_back(entry.path().string());
    std::sort(others.begin(), others.end());
    if (!others.empty()) {
        CatalogTopic topic;
        topic.title = "Other scenarios";
        for (const std::string& path : others)
            topic.cards.push_back(loadScenarioCard(path));
        catalog.topics.push_back(std::move(topic));
    }
    return catalog;
}

} // namespace dt::app
