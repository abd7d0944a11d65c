// family_icon.cpp: see family_icon.hpp. Coordinates are fractions of the square.
#include "widgets/family_icon.hpp"

#include <algorithm>

namespace dt::app {

void drawFamilyIcon(ImDrawList* draw, ImVec2 min, float size, const std::vector<IconShape>& shapes, ImU32 ink,
                    ImU32 accent) {
    auto at = [&](ImVec2 f) { return ImVec2(min.x + f.x * size, min.y + f.y * size); };
    const float line = std::max(1.5f, size / 28.0f);
    if (shapes.empty()) {
        draw->AddRect(at(ImVec2(0.15f, 0.15f)), at(ImVec2(0.85f, 0.85f)), ink, size * 0.08f, 0, line);
        return;
    }
    for (const IconShape& s : shapes) {
        const ImU32 color = s.accent ? accent : ink;
        const float width = line * s.width;
        switch (s.kind) {
        case IconShape::Kind::Rect:
            if (s.fill)
                draw->AddRectFilled(at(s.points[0]), at(s.points[1]), color, 2.0f);
            else
                draw->AddRect(at(s.points[0]), at(s.points[1]), color, 2.0f, 0, width);
            break;
        case IconShape::Kind::Circle:
            if (s.fill)
                draw->AddCircleFilled(at(s.points[0]), size * s.radius, color);
            else
                draw->AddCircle(at(s.points[0]), size * s.radius, color, 32, width);
            break;
        case IconShape::Kind::Line:
            draw->AddLine(at(s.points[0]), at(s.points[1]), color, width);
            break;
        case IconShape::Kind::Triangle:
            if (s.fill)
                draw->AddTriangleFilled(at(s.points[0]), at(s.points[1]), at(s.points[2]), color);
            else
                draw->AddTriangle(at(s.points[0]), at(s.points[1]), at(s.points[2]), color, width);
            break;
        }
    }
}

} // namespace dt::app
