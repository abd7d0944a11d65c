// asset_toml.cpp: see asset_toml.hpp.
#include "model/asset_toml.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

namespace dt::app {

toml::table parseAssetFile(const std::string& path) {
    try {
        return toml::parse_file(path);
    } catch (const toml::parse_error& e) {
        std::ostringstream msg;
        msg << path << ":" << e.source().begin.line << ":" << e.source().begin.column << ": "
            << e.description();
        throw AssetError(msg.str());
    }
}

AssetError assetError(const std::string& path, const toml::node* node, const std::string& message) {
    std::ostringstream msg;
    msg << path;
    if (node && node->source().begin.line > 0)
        msg << ":" << node->source().begin.line << ":" << node->source().begin.column;
    msg << ": " << message;
    return AssetError(msg.str());
}

AssetError assetError(const std::string& path, const toml::key& key, const std::string& message) {
    std::ostringstream msg;
    msg << path;
    if (key.source().begin.line > 0)
        msg << ":" << key.source().begin.line << ":" << key.source().begin.column;
    msg << ": " << message;
    return AssetError(msg.str());
}

ImVec4 assetColor(const std::string& path, const toml::node& node) {
    const std::optional<std::string> text = node.value<std::string>();
    auto hex = [](const std::string& s) {
        return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c) != 0; });
    };
    if (!text || text->size() < 7 || (*text)[0] != '#' || (text->size() != 7 && text->size() != 9) ||
        !hex(text->substr(1)))
        throw assetError(path, &node,
                         "'" + (text ? *text : std::string("(not a string)")) +
                             "' is not a colour: write \"#RRGGBB\" or \"#RRGGBBAA\"");
    auto channel = [&](size_t at) { return float(std::stoi(text->substr(at, 2), nullptr, 16)) / 255.0f; };
    return ImVec4(channel(1), channel(3), channel(5), text->size() == 9 ? channel(7) : 1.0f);
}

double assetNumber(const std::string& path, const toml::table& table, const char* key, double fallback) {
    const toml::node* node = table.get(key);
    if (!node)
        return fallback;
    if (const auto f = node->value<double>(); f && std::isfinite(*f))
        return *f;
    throw assetError(path, node, std::string(key) + " must be a finite number");
}

void rejectUnknownKeys(const std::string& path, const toml::table& table,
                       const std::vector<std::string>& known) {
    for (const auto& entry : table) {
        const toml::key& key = entry.first;
        if (std::find(known.begin(), known.end(), std::string(key.str())) == known.end()) {
            std::string list;
            for (const std::string& k : known)
                list += (list.empty() ? "" : ", ") + k;
            throw assetError(path, key, "unknown key '" + std::string(key.str()) + "' (known: " + list + ")");
        }
    }
}

} // namespace dt::app
