// app_autograd.cpp: the model's real autograd graph for the Autograd view
// (dtlab/autograd_graph.hpp). Building the model and running one forward and
// backward takes a moment, so it runs on a thread of its own (std::async)
// when the view is open and the run has no graph yet; each frame collects it
// if it is ready. The GUI never waits for it.
#include "app.hpp"

#include <chrono>

namespace dt::app {

void AppContext::updateAutogradGraph() {
    if (m_autograd_future.valid()) {
        if (m_autograd_future.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
            return;
        try {
            m_autograd_graph = m_autograd_future.get();
            m_autograd_status.clear();
            say("autograd graph: " + std::to_string(m_autograd_graph->nodes.size()) + " nodes, " +
                std::to_string(m_autograd_graph->leaves()) + " AccumulateGrad leaves");
        } catch (const std::exception& e) {
            m_autograd_status = std::string("cannot build the model's graph: ") + e.what();
            say(m_autograd_status);
        }
        return;
    }
    const View* view = findView("autograd");
    if (!view || !view->open || !hasRun() || m_autograd_serial == m_whatif_serial)
        return;
    m_autograd_serial = m_whatif_serial; // once per run
    m_autograd_graph.reset();
    m_autograd_status = "building the model's graph...";
    const ModelConfig model = m_scenario.model;
    const uint64_t seed = m_scenario.run.seed;
    m_autograd_future = std::async(std::launch::async, [model, seed] { return autogradGraph(model, seed); });
}

} // namespace dt::app
