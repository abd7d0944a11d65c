// view_glue.cpp: the View overrides of the timeline, memory, metrics, event
// log, FSDP flow, pipeline, quorum and DiLoCo views: the one place they meet AppContext.
//
// Each view draws from ViewInputs only (view_inputs.hpp), so the headless tests
// and the frame benchmark can draw it without an app. Here each override asks
// the app for its inputs and calls draw(). The views draw their own explicit
// empty state inside draw() (the tests check it), so isEmpty() says false and
// drawEmptyState() simply draws too.
#include "app.hpp"
#include "views/view_bandwidth.hpp"
#include "views/view_ddp_buckets.hpp"
#include "views/view_diloco.hpp"
#include "views/view_event_log.hpp"
#include "views/view_fsdp_flow.hpp"
#include "views/view_memory.hpp"
#include "views/view_metrics.hpp"
#include "views/view_pipeline.hpp"
#include "views/view_quorum.hpp"
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

void BandwidthView::drawEmptyState(AppContext& context) { draw(context.viewInputs()); }
void BandwidthView::drawContent(AppContext& context) { draw(context.viewInputs()); }

void DdpBucketsView::drawEmptyState(AppContext& context) { draw(context.viewInputs()); }
void DdpBucketsView::drawContent(AppContext& context) { draw(context.viewInputs()); }

void PipelineView::drawEmptyState(AppContext& context) { draw(context.viewInputs()); }
void PipelineView::drawContent(AppContext& context) { draw(context.viewInputs()); }

void QuorumView::drawEmptyState(AppContext& context) { draw(context.viewInputs()); }

// The fault buttons of a fault-tolerant run, for the selected replica (rank 0
// when none is selected), then the view itself.
void QuorumView::drawContent(AppContext& context) {
    if (context.scenario().fault_tolerance.enabled && context.live()) {
        const auto& ranks = context.facts().ranks;
        int r = context.selectedRank() >= 0 ? context.selectedRank() : 0;
        if (r >= int(ranks.size())) r = 0;
        if (!ranks.empty()) {
            const RankProgress& p = ranks[size_t(r)];
            const bool running = p.state == RankState::Running || p.state == RankState::Healing;
            const bool dead = p.state == RankState::Killed || p.state == RankState::Failed || p.state == RankState::Restarting;
            const char* not_running = "the replica is not running";
            ImGui::AlignTextToFramePadding();
            ImGui::Text("replica %d:", r);
            ImGui::SameLine();
            if (context.button("Kill##q", running, not_running)) context.killRank(r);
            ImGui::SameLine();
            if (context.button("NaN gradients##q", running, not_running)) context.nanGradients(r);
            ImGui::SameLine();
            if (context.button("Fail collective##q", running, not_running)) context.failNextCollective(r);
            ImGui::SameLine();
            if (context.button(p.partitioned ? "End partition##q" : "Partition##q", running || p.partitioned, not_running))
                context.partitionRank(r, !p.partitioned);
            ImGui::SameLine();
            if (context.button("Restart##q", dead, "only a dead replica can be restarted")) context.restartRank(r);
            ImGui::SameLine();
            const bool down = context.lighthouseDown();
            if (context.button(down ? "Start lighthouse" : "Stop lighthouse", true)) context.setLighthouseRunning(down);
        }
    }
    draw(context.viewInputs());
}

void DilocoView::drawEmptyState(AppContext& context) { draw(context.viewInputs()); }

// The view, with the link control of a live run (every rank's modelled link)
// under its header; a DDP run on a slow link (scenarios/ddp_slow_link.toml)
// gets it too, over the empty state, so the room can watch DDP stall.
void DilocoView::drawContent(AppContext& context) {
    std::function<void()> controls;
    if (context.live())
        controls = [&] {
            const auto button = [&](const char* label) { return context.button(label); };
            if (const std::optional<LinkRequest> link = drawLinkControl(context.facts().ranks, button))
                context.setLink(-1, link->bandwidth_mbit_s, link->latency_ms);
        };
    draw(context.viewInputs(), controls);
}

} // namespace dt::app
