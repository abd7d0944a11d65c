// asset_toml.hpp: reading dtlab's asset files (assets/themes/*.toml,
// assets/layouts.toml, assets/icons.toml) with one error style:
// "FILE:LINE:COLUMN: what is wrong", the line and column of the offending
// value (toml++ records each node's source position).
#pragma once

#include <imgui.h>
#include <toml++/toml.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace dt::app {

// A mistake in an asset file, already formatted as FILE:LINE:COLUMN: message.
struct AssetError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Parses `path`; a TOML syntax error becomes an AssetError at its position.
[[nodiscard]] toml::table parseAssetFile(const std::string& path);

// "FILE:LINE:COLUMN: message" at `node` (no position: "FILE: message").
[[nodiscard]] AssetError assetError(const std::string& path, const toml::node* node,
                                    const std::string& message);

// "#RRGGBB" or "#RRGGBBAA" -> colour; anything else is an AssetError at the node.
[[nodiscard]] ImVec4 assetColor(const std::string& path, const toml::node& node);

// "FILE:LINE:COLUMN: message" at a table's key (where the key itself is written).
[[nodiscard]] AssetError assetError(const std::string& path, const toml::key& key,
                                    const std::string& message);

// A number (integer or float) at `key`, or `fallback` when the key is absent;
// another type is an AssetError.
[[nodiscard]] double assetNumber(const std::string& path, const toml::table& table, const char* key,
                                 double fallback);

// Every key of `table` must be one of `known`; the first other one is an AssetError.
void rejectUnknownKeys(const std::string& path, const toml::table& table,
                       const std::vector<std::string>& known);

} // namespace dt::app
