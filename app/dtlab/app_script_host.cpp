// app_script_host.cpp: AppContext as the script's host (ScriptHost) and the
// scriptable button every view draws: clicks by label, print_layout,
// screenshots after the frame is rendered, show / hide views, theme, font
// size and full screen.
#include "app.hpp"

#include "screenshot.hpp"

#include <GLFW/glfw3.h>
#include <imgui_internal.h>

#include <cstdio>

namespace dt::app {

namespace {

// The visible part of an ImGui label ("Kill##rank1" -> "Kill").
std::string visibleLabel(const std::string& label) {
    const size_t hashes = label.find("##");
    return hashes == std::string::npos ? label : label.substr(0, hashes);
}

} // namespace

bool AppContext::drawButton(const char* label, bool enabled, const char* why_disabled, const ImVec2& size) {
    return noteScriptableItem(label, plainButton(label, enabled, why_disabled, size), enabled);
}

bool AppContext::noteScriptableItem(const char* label, bool pressed, bool enabled) {
    const ImGuiWindow* window = ImGui::GetCurrentWindow();
    m_buttons_drawing.push_back(ButtonRect{label, window ? window->Name : "", ImGui::GetItemRectMin(),
                                           ImGui::GetItemRectMax(), enabled});
    if (!m_click_label.empty() && (m_click_label == label || m_click_label == visibleLabel(label))) {
        m_click_state = enabled ? ClickState::Pressed : ClickState::Disabled;
        if (enabled) {
            pressed = true;
            say(std::string("clicked '") + label + "'");
        }
        m_click_label.clear();
    }
    return pressed && enabled;
}

void AppContext::requestClick(const std::string& label) {
    m_click_label = label;
    m_click_state = ClickState::Waiting;
}

void AppContext::printLayout() {
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    std::printf("dtlab: layout display %.0f %.0f\n", d.x, d.y);
    for (const WindowRect& w : m_windows_drawn)
        std::printf("dtlab: layout window %s \"%s\" %.0f %.0f %.0f %.0f\n", w.id.c_str(), w.title.c_str(),
                    w.min.x, w.min.y, w.max.x - w.min.x, w.max.y - w.min.y);
    for (const auto& [id, height] : m_drawn_heights) // what the tiling sizes rows from
        std::printf("dtlab: layout drawn %s %.0f\n", id.c_str(), height);
    for (const WindowRect& w : m_windows_drawn) {
        std::printf("dtlab: layout content %s %.0f\n", w.id.c_str(), w.content_height);
        if (w.overflow_x > 1.0f)
            std::printf("dtlab: layout overflow %s %.0f in %s\n", w.id.c_str(), w.overflow_x,
                        w.overflow_where.c_str());
    }
    for (const ButtonRect& b : m_buttons_drawn)
        std::printf("dtlab: layout button \"%s\" %.0f %.0f %.0f %.0f %s\n", b.label.c_str(), b.min.x, b.min.y,
                    b.max.x - b.min.x, b.max.y - b.min.y, b.enabled ? "enabled" : "disabled");
    std::fflush(stdout);
}

void AppContext::afterRender(int framebuffer_width, int framebuffer_height) {
    if (m_screenshot_path.empty())
        return;
    std::string error;
    if (writeFramebufferPng(framebuffer_width, framebuffer_height, m_screenshot_path, error))
        say("screenshot " + m_screenshot_path + " (" + std::to_string(framebuffer_width) + "x" +
            std::to_string(framebuffer_height) + ")");
    else
        say("screenshot failed: " + error);
    m_screenshot_path.clear();
}

bool AppContext::setThemeByName(const std::string& name) {
    for (size_t i = 0; i < m_themes.themes.size(); ++i)
        if (m_themes.themes[i].name == name) {
            setTheme(i);
            return true;
        }
    return false;
}

std::string AppContext::themeNames() const {
    std::string names;
    for (const Theme& t : m_themes.themes)
        names += (names.empty() ? "" : ", ") + t.name;
    return names;
}

bool AppContext::showView(const std::string& name, bool show) {
    View* view = findView(name);
    if (!view)
        return false;
    view->open = show;
    m_layout_dirty = true;
    return true;
}

void AppContext::setWindowSize(int width, int height) {
    if (!m_window)
        return say("window: no window");
    if (m_fullscreen)
        toggleFullscreen();
    glfwSetWindowSize(m_window, width, height);
    say("window " + std::to_string(width) + " x " + std::to_string(height));
}

WindowSize AppContext::displaySize() const {
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    return WindowSize{int(d.x), int(d.y)};
}

// From the last drawn frame's windows (the script runs before the next one).
std::string AppContext::viewsFitProblem(float min_px) const {
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    std::string problem;
    char line[256];
    for (const WindowRect& w : m_windows_drawn) {
        const View* view = findView(w.id);
        if (w.overflow_x > 1.0f) {
            std::snprintf(line, sizeof(line), "%s%s: an item runs %.0f px past the right edge of %s",
                          problem.empty() ? "" : "; ", w.title.c_str(), w.overflow_x,
                          w.overflow_where.c_str());
            problem += line;
        }
        if (view && !view->closable())
            continue; // the control bar: one row by design
        if (w.content_height + 0.5f < min_px) {
            std::snprintf(line, sizeof(line), "%s%s's content is %.0f px tall", problem.empty() ? "" : "; ",
                          w.title.c_str(), w.content_height);
            problem += line;
        }
        if (w.min.x < -0.5f || w.min.y < -0.5f || w.max.x > d.x + 0.5f || w.max.y > d.y + 0.5f) {
            std::snprintf(line, sizeof(line), "%s%s (%.0f,%.0f)-(%.0f,%.0f) leaves the %.0f x %.0f window",
                          problem.empty() ? "" : "; ", w.title.c_str(), w.min.x, w.min.y, w.max.x, w.max.y,
                          d.x, d.y);
            problem += line;
        }
    }
    if (m_windows_drawn.empty())
        problem = "no window was drawn";
    return problem;
}

void AppContext::setTheme(size_t index) {
    m_theme_index = std::min(index, m_themes.themes.size() - 1);
    m_theme_dirty = true;
    say("theme " + theme().label);
}

void AppContext::setFontPixels(float px) {
    m_fonts.request(px);
    char line[48];
    std::snprintf(line, sizeof(line), "text size %.0f px", m_fonts.pixels());
    say(line);
}

void AppContext::toggleFullscreen() {
    if (!m_window)
        return say("full screen: no window");
    if (!m_fullscreen) {
        GLFWmonitor* monitor = glfwGetPrimaryMonitor();
        const GLFWvidmode* mode = monitor ? glfwGetVideoMode(monitor) : nullptr;
        if (!mode)
            return say("full screen: no monitor found");
        glfwGetWindowPos(m_window, &m_windowed_x, &m_windowed_y);
        glfwGetWindowSize(m_window, &m_windowed_w, &m_windowed_h);
        glfwSetWindowMonitor(m_window, monitor, 0, 0, mode->width, mode->height, mode->refreshRate);
        m_fullscreen = true;
    } else {
        glfwSetWindowMonitor(m_window, nullptr, m_windowed_x, m_windowed_y, m_windowed_w, m_windowed_h, 0);
        m_fullscreen = false;
    }
    m_layout_dirty = true;
    say(m_fullscreen ? "full screen on" : "full screen off");
}

} // namespace dt::app
