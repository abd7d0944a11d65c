// layout_file.cpp: see layout_file.hpp.
#include "layout_file.hpp"

#include "model/asset_toml.hpp"

#include <algorithm>

namespace dt::app {

FamilyLayouts loadFamilyLayouts(const std::string& path, const std::vector<std::string>& view_ids) {
    FamilyLayouts layouts;
    if (path.empty())
        return layouts;
    try {
        const toml::table root = parseAssetFile(path);
        rejectUnknownKeys(path, root, familyKeys());
        for (ScenarioFamily family : kAllFamilies) {
            const toml::node* node = root.get(familyKey(family));
            if (!node)
                continue;
            const toml::table* table = node->as_table();
            if (!table)
                throw assetError(path, node, std::string("[") + familyKey(family) + "] must be a table");
            rejectUnknownKeys(path, *table, {"main_view", "main_share"});
            FamilyLayout layout;
            if (const toml::node* view = table->get("main_view")) {
                const std::optional<std::string> id = view->value<std::string>();
                if (!id || std::find(view_ids.begin(), view_ids.end(), *id) == view_ids.end()) {
                    std::string known;
                    for (const std::string& v : view_ids)
                        known += (known.empty() ? "" : ", ") + v;
                    throw assetError(path, view,
                                     "main_view '" + id.value_or("?") + "' is not a view (views: " + known +
                                         ")");
                }
                layout.main_view = *id;
            }
            layout.main_share = float(assetNumber(path, *table, "main_share", layout.main_share));
            if (layout.main_share < 0.1f || layout.main_share > 0.8f)
                throw assetError(path, table->get("main_share"), "main_share must be between 0.1 and 0.8");
            layouts.by_family[size_t(family)] = layout;
        }
    } catch (const std::exception& e) {
        layouts = FamilyLayouts{};
        layouts.problems.push_back(e.what());
    }
    return layouts;
}

} // namespace dt::app
