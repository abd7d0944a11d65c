// icon_file.cpp: see icon_file.hpp.
#include "model/icon_file.hpp"

#include "model/asset_toml.hpp"

namespace dt::app {

namespace {

ImVec2 point(const std::string& path, const toml::node* node, const char* what) {
    const toml::array* xy = node ? node->as_array() : nullptr;
    if (!xy || xy->size() != 2 || !(*xy)[0].value<double>() || !(*xy)[1].value<double>())
        throw assetError(path, node, std::string(what) + " must be a point [x, y] in the unit square");
    const float x = float(*(*xy)[0].value<double>()), y = float(*(*xy)[1].value<double>());
    if (!(x >= 0.0f && x <= 1.0f && y >= 0.0f && y <= 1.0f)) // NaN fails too
        throw assetError(path, node, std::string(what) + " is outside the unit square [0, 1] x [0, 1]");
    return ImVec2(x, y);
}

IconShape readShape(const std::string& path, const toml::table& t) {
    rejectUnknownKeys(path, t, {"shape", "from", "to", "at", "radius", "points", "fill", "ink", "width"});
    IconShape shape;
    const std::string kind = t["shape"].value_or(std::string());
    auto need = [&](const char* key) {
        if (!t.get(key))
            throw assetError(path, &t, "a " + kind + " needs '" + key + "'");
        return t.get(key);
    };
    if (kind == "rect" || kind == "line") {
        shape.kind = kind == "rect" ? IconShape::Kind::Rect : IconShape::Kind::Line;
        shape.points = {point(path, need("from"), "from"), point(path, need("to"), "to")};
    } else if (kind == "circle") {
        shape.kind = IconShape::Kind::Circle;
        shape.points = {point(path, need("at"), "at")};
        need("radius");
        shape.radius = float(assetNumber(path, t, "radius", 0.0));
        if (shape.radius <= 0.0f || shape.radius > 0.5f)
            throw assetError(path, t.get("radius"), "radius must be in (0, 0.5]");
    } else if (kind == "triangle") {
        shape.kind = IconShape::Kind::Triangle;
        const toml::array* corners = need("points")->as_array();
        if (!corners || corners->size() != 3)
            throw assetError(path, t.get("points"), "a triangle's points are three [x, y]");
        for (const toml::node& corner : *corners)
            shape.points.push_back(point(path, &corner, "a corner"));
    } else {
        throw assetError(path, t.get("shape") ? t.get("shape") : &t,
                         "shape must be \"rect\", \"circle\", \"line\" or \"triangle\"");
    }
    shape.fill = t["fill"].value_or(false);
    const std::string ink = t["ink"].value_or(std::string("ink"));
    if (ink != "ink" && ink != "accent")
        throw assetError(path, t.get("ink"), "ink must be \"ink\" or \"accent\"");
    shape.accent = ink == "accent";
    shape.width = float(assetNumber(path, t, "width", 1.0));
    if (shape.width <= 0.0f || shape.width > 4.0f)
        throw assetError(path, t.get("width"), "width must be in (0, 4]");
    return shape;
}

} // namespace

FamilyIcons loadFamilyIcons(const std::string& path) {
    FamilyIcons icons;
    if (path.empty())
        return icons;
    try {
        const toml::table root = parseAssetFile(path);
        rejectUnknownKeys(path, root, familyKeys());
        for (ScenarioFamily family : kAllFamilies) {
            const toml::node* node = root.get(familyKey(family));
            if (!node)
                continue;
            const toml::array* shapes = node->as_array();
            if (!shapes)
                throw assetError(path, node,
                                 std::string("write each shape as [[") + familyKey(family) + "]]");
            for (const toml::node& s : *shapes) {
                const toml::table* t = s.as_table();
                if (!t)
                    throw assetError(path, &s, "a shape is a table");
                icons.by_family[size_t(family)].push_back(readShape(path, *t));
            }
        }
    } catch (const std::exception& e) {
        icons = FamilyIcons{};
        icons.problems.push_back(e.what());
    }
    return icons;
}

} // namespace dt::app
