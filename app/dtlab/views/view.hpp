// view.hpp: the base of every dtlab window (one view per file).
//
// Like ImHex's View::Window: a subclass draws its content and must explain
// itself (help text shown by the "(?)" marker and in the help overlay) and
// draw an explicit empty state when there is nothing to show yet.
#pragma once

#include <string>

namespace dt::app {

class AppContext; // app state every view reads (model, session, selection); defined in app.hpp

class View {
public:
    explicit View(std::string name) : m_name(std::move(name)) {}
    virtual ~View() = default;

    [[nodiscard]] const std::string& name() const { return m_name; }
    [[nodiscard]] virtual const char* helpText() const = 0;
    // True when there is nothing to draw; drawEmptyState() is called instead of drawContent().
    [[nodiscard]] virtual bool isEmpty(const AppContext& context) const = 0;
    virtual void drawEmptyState(AppContext& context) = 0;
    virtual void drawContent(AppContext& context) = 0;

    bool open = true;          // shown in the View menu

private:
    std::string m_name;
};

} // namespace dt::app
