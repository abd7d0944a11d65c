// view_glue.cpp: the View overrides of the timeline, memory, metrics, event
// log, FSDP flow and pipeline views: the one place they meet AppContext.
//
// Each view draws from ViewInputs only (view_inputs.hpp), so the headless tests
// and the frame benchmark can draw it without an app. Here each override asks
// the app for its inputs and calls draw(). The views draw their own explicit
// empty state inside draw() (the tests check it), so isEmpty() says false and
// drawEmptyState() simply draws too.
#include "app.hpp"
#include "views/view_event_log.hpp"
#include "views/view_fsdp_flow.hpp"
#include "views/view_memory.hpp"
#include "views/view_metrics.hpp"
#include "views/view_pipeline.hpp"
#include "views/view_timeline.hpp"

namespace dt::app {

bool TimelineView::isEmpty(const AppContext&) const { return false; }
void TimelineView::drawEmptyState(AppContext& context) { draw(context.viewInputs()); }
void TimelineView::drawContent(AppContext& context) { draw(context.viewInputs()); }

bool MemoryView::isEmpty(const AppContext&) const { return false; }
void MemoryView::drawEmptyState(AppContext& context) { draw(context.viewInputs()); }
void MemoryView::drawContent(AppContext& context) { draw(context.viewInputs()); }

bool MetricsView::isEmpty(const AppContext&) const { return false; }
void MetricsView::drawEmptyState(AppContext& context) { draw(context.viewInputs()); }
void MetricsView::drawContent(AppContext& context) { draw(context.viewInputs()); }

bool EventLogView::isEmpty(const AppContext&) const { return false; }
void EventLogView::drawEmptyState(AppContext& context) { draw(context.viewInputs()); }
void EventLogView::drawContent(AppContext& context) { draw(context.viewInputs()); }

void FsdpFlowView::drawEmptyState(AppContext& context) { draw(context.viewInputs()); }
void FsdpFlowView::drawContent(AppContext& context) { draw(context.viewInputs()); }

void PipelineView::drawEmptyState(AppContext& context) { draw(context.viewInputs()); }
void PipelineView::drawContent(AppContext& context) { draw(context.viewInputs()); }

} // namespace dt::app
