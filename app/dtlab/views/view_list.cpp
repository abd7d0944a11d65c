// view_list.cpp: the list of views (see view_list.hpp). A new view is one line here.
#include "views/view_list.hpp"

#include "views/view_autograd.hpp"
#include "views/view_bandwidth.hpp"
#include "views/view_ddp_buckets.hpp"
#include "views/view_diloco.hpp"
#include "views/view_event_log.hpp"
#include "views/view_fsdp_flow.hpp"
#include "views/view_memory.hpp"
#include "views/view_metrics.hpp"
#include "views/view_narration.hpp"
#include "views/view_pipeline.hpp"
#include "views/view_quorum.hpp"
#include "views/view_swarm.hpp"
#include "views/view_timeline.hpp"
#include "views/view_toolbar.hpp"
#include "views/view_topology.hpp"
#include "views/view_whatif.hpp"

namespace dt::app {

std::vector<std::unique_ptr<View>> makeViews() {
    std::vector<std::unique_ptr<View>> views;
    views.push_back(std::make_unique<ToolbarView>());
    views.push_back(std::make_unique<TopologyView>());
    views.push_back(std::make_unique<NarrationView>());
    views.push_back(std::make_unique<TimelineView>());
    views.push_back(std::make_unique<MetricsView>());
    views.push_back(std::make_unique<MemoryView>());
    views.push_back(std::make_unique<EventLogView>());
    views.push_back(std::make_unique<FsdpFlowView>());
    views.push_back(std::make_unique<DdpBucketsView>());
    views.push_back(std::make_unique<BandwidthView>());
    views.push_back(std::make_unique<PipelineView>());
    views.push_back(std::make_unique<QuorumView>());
    views.push_back(std::make_unique<DilocoView>());
    views.push_back(std::make_unique<SwarmView>());
    views.push_back(std::make_unique<WhatIfView>());
    views.push_back(std::make_unique<AutogradView>());
    return views;
}

} // namespace dt::app
