// family_icon.cpp: see family_icon.hpp. Coordinates are fractions of the square.
#include "widgets/family_icon.hpp"

#include <algorithm>
#include <cmath>

namespace dt::app {

void drawFamilyIcon(ImDrawList* draw, ImVec2 min, float size, ScenarioFamily family, ImU32 ink,
                    ImU32 accent) {
    auto at = [&](float fx, float fy) { return ImVec2(min.x + fx * size, min.y + fy * size); };
    const float line = std::max(1.5f, size / 28.0f);
    const float pi = 3.14159265f;
    switch (family) {
    case ScenarioFamily::DataParallel: {
        for (int i = 0; i < 4; ++i) {
            const float a = pi / 4.0f + i * pi / 2.0f;
            const ImVec2 c = at(0.5f + 0.32f * std::cos(a), 0.5f + 0.32f * std::sin(a));
            draw->AddCircleFilled(c, size * 0.11f, ink);
        }
        draw->AddCircle(at(0.5f, 0.5f), size * 0.32f, accent, 32, line);
        break;
    }
    case ScenarioFamily::Sharded: {
        draw->AddRect(at(0.1f, 0.18f), at(0.9f, 0.36f), ink, 2.0f, 0, line);
        for (int i = 0; i < 4; ++i) {
            const float x0 = 0.1f + i * 0.2f;
            draw->AddRectFilled(at(x0 + 0.02f, 0.5f + i * 0.1f), at(x0 + 0.18f, 0.62f + i * 0.1f), accent,
                                2.0f);
            draw->AddLine(at(x0 + 0.1f, 0.36f), at(x0 + 0.1f, 0.5f + i * 0.1f), ink, line * 0.6f);
        }
        break;
    }
    case ScenarioFamily::TensorParallel: {
        draw->AddRect(at(0.15f, 0.15f), at(0.85f, 0.85f), ink, 2.0f, 0, line);
        for (int i = 0; i < 2; ++i)
            draw->AddRectFilled(at(0.19f + i * 0.34f, 0.19f), at(0.47f + i * 0.34f, 0.81f),
                                i == 0 ? accent : ink, 2.0f);
        break;
    }
    case ScenarioFamily::Pipeline: {
        for (int stage = 0; stage < 4; ++stage)
            for (int mb = 0; mb < 4; ++mb) {
                const float x0 = 0.08f + (stage + mb) * 0.12f, y0 = 0.12f + stage * 0.2f;
                draw->AddRectFilled(at(x0, y0), at(x0 + 0.11f, y0 + 0.16f), mb == 0 ? accent : ink, 1.5f);
            }
        break;
    }
    case ScenarioFamily::FaultTolerance: {
        draw->AddTriangleFilled(at(0.5f, 0.12f), at(0.42f, 0.42f), at(0.58f, 0.42f), accent);
        for (int i = 0; i < 3; ++i) {
            const ImVec2 c = at(0.2f + i * 0.3f, 0.72f);
            draw->AddCircleFilled(c, size * 0.1f, ink);
            draw->AddLine(at(0.5f, 0.42f), c, ink, line * 0.6f);
        }
        draw->AddLine(at(0.73f, 0.6f), at(0.97f, 0.84f), accent, line * 1.4f);
        draw->AddLine(at(0.97f, 0.6f), at(0.73f, 0.84f), accent, line * 1.4f);
        break;
    }
    case ScenarioFamily::Diloco: {
        for (int island = 0; island < 2; ++island) {
            const float cx = island == 0 ? 0.24f : 0.76f;
            draw->AddCircle(at(cx, 0.5f), size * 0.2f, ink, 24, line);
            draw->AddCircleFilled(at(cx - 0.07f, 0.45f), size * 0.06f, ink);
            draw->AddCircleFilled(at(cx + 0.07f, 0.56f), size * 0.06f, ink);
        }
        draw->AddLine(at(0.44f, 0.5f), at(0.56f, 0.5f), accent, line);
        break;
    }
    case ScenarioFamily::Backends: {
        for (int lane = 0; lane < 2; ++lane) {
            const float y = 0.3f + lane * 0.4f;
            draw->AddLine(at(0.1f, y), at(0.9f, y), ink, line);
            draw->AddRectFilled(at(0.25f, y - 0.09f), at(lane == 0 ? 0.6f : 0.8f, y + 0.09f), accent, 2.0f);
        }
        break;
    }
    }
}

} // namespace dt::app
