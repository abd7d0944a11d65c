// palette.cpp: kind -> colour table (see palette.hpp).
#include "widgets/palette.hpp"

#include <algorithm>

namespace dt::app::palette {

ImU32 kindColor(EventKind kind) {
    switch (kind) {
    // compute
    case EventKind::Step:
        return IM_COL32(140, 153, 166, 255); // slate
    case EventKind::Data:
        return IM_COL32(77, 182, 172, 255); // teal
    case EventKind::Forward:
        return IM_COL32(66, 133, 244, 255); // blue
    case EventKind::Backward:
        return IM_COL32(149, 117, 205, 255); // violet
    case EventKind::Loss:
        return IM_COL32(206, 120, 190, 255); // pink
    case EventKind::Optimizer:
        return IM_COL32(240, 166, 50, 255); // amber
    case EventKind::Wait:
        return IM_COL32(176, 176, 176, 255); // light grey: doing nothing
    case EventKind::SlowDelay:
        return IM_COL32(215, 110, 80, 255); // brick: injected slowness
    case EventKind::Paused:
    case EventKind::GateWait:
        return IM_COL32(120, 132, 140, 255); // grey: held at a gate
    case EventKind::Recompute:
        return IM_COL32(121, 134, 203, 255); // indigo: forward again, inside backward
    case EventKind::BackwardInput:
        return IM_COL32(106, 76, 170, 255); // dark violet: zero bubble's input half of backward
    case EventKind::BackwardWeight:
        return IM_COL32(200, 182, 236, 255); // light violet: the weight half, run later
    // communication
    case EventKind::AllReduce:
        return IM_COL32(46, 173, 107, 255); // green
    case EventKind::AllGather:
        return IM_COL32(38, 166, 204, 255); // cyan
    case EventKind::ReduceScatter:
        return IM_COL32(139, 195, 74, 255); // lime
    case EventKind::Broadcast:
        return IM_COL32(0, 137, 123, 255); // dark teal
    case EventKind::Send:
        return IM_COL32(236, 112, 160, 255); // rose
    case EventKind::Recv:
        return IM_COL32(194, 71, 122, 255); // raspberry
    case EventKind::Barrier:
        return IM_COL32(160, 160, 90, 255); // olive
    // memory categories (counters)
    case EventKind::MemParameters:
    case EventKind::MemMeasuredParameters:
        return IM_COL32(66, 133, 244, 255); // like forward: the weights
    case EventKind::MemGradients:
    case EventKind::MemMeasuredGradients:
        return IM_COL32(149, 117, 205, 255); // like backward: what it makes
    case EventKind::MemOptimizer:
    case EventKind::MemMeasuredOptimizer:
        return IM_COL32(240, 166, 50, 255); // like optimizer
    case EventKind::MemActivations:
    case EventKind::MemMeasuredActivations:
        return IM_COL32(77, 182, 172, 255); // teal
    case EventKind::MemCommBuffers:
    case EventKind::MemMeasuredCommBuffers:
        return IM_COL32(46, 173, 107, 255); // like all-reduce
    case EventKind::MemHost:
        return IM_COL32(190, 130, 40, 255); // darker amber: optimizer state moved to the host
    case EventKind::MemMeasuredTemporaries:
        return IM_COL32(150, 150, 150, 255); // grey: scratch of the step
    // lifecycle markers
    case EventKind::RankStarted:
    case EventKind::RankReady:
        return IM_COL32(46, 173, 107, 255);
    case EventKind::RankFinished:
        return IM_COL32(66, 133, 244, 255);
    case EventKind::RankFailed:
    case EventKind::ProcessExited:
        return kFailed;
    case EventKind::FaultInjected:
        return kWarning;
    case EventKind::UnitMaterialized:
        return IM_COL32(38, 166, 204, 255); // like all-gather: what makes it whole
    case EventKind::UnitFreed:
        return IM_COL32(140, 153, 166, 255);
    case EventKind::CheckpointSaved:
    case EventKind::CheckpointLoaded:
        return IM_COL32(0, 137, 123, 255);
    // fault tolerance
    case EventKind::QuorumWait:
        return IM_COL32(255, 183, 77, 255); // orange: asking the lighthouse
    case EventKind::Reconfigure:
        return IM_COL32(171, 71, 188, 255); // purple: a new process group
    case EventKind::Heal:
        return IM_COL32(0, 172, 193, 255); // cyan: state from a live peer
    case EventKind::Heartbeat:
        return IM_COL32(150, 150, 150, 255);
    case EventKind::QuorumFormed:
        return IM_COL32(255, 152, 0, 255);
    case EventKind::Commit:
        return IM_COL32(67, 160, 71, 255); // green: applied
    case EventKind::Abort:
        return kFailed; // red: not applied
    case EventKind::ReplicaLost:
        return kFailed;
    case EventKind::RankRestarted:
        return IM_COL32(171, 71, 188, 255);
    case EventKind::LighthouseDown:
        return kFailed;
    case EventKind::LighthouseUp:
        return IM_COL32(67, 160, 71, 255);
    // DiLoCo
    case EventKind::PseudoGradient:
        return IM_COL32(255, 112, 67, 255); // deep orange: global - local, encoded, sent
    case EventKind::OuterStep:
        return IM_COL32(175, 140, 30, 255); // dark gold: the outer optimizer
    // SWARM
    case EventKind::SwarmCall:
        return IM_COL32(92, 107, 192, 255); // indigo: a trainer's call to a server
    case EventKind::SwarmServe:
        return IM_COL32(0, 150, 136, 255); // teal: a server answering one
    case EventKind::SwarmOuterSync:
        return IM_COL32(175, 140, 30, 255); // dark gold, like DiLoCo's outer step
    case EventKind::SwarmReroute:
        return kWarning; // a call sent again elsewhere
    case EventKind::SwarmStageEmpty:
        return kFailed; // no live server for a stage
    case EventKind::SwarmJoined:
        return IM_COL32(46, 173, 107, 255); // like ready
    // optimizer offload
    case EventKind::GradsToHost:
        return IM_COL32(255, 138, 101, 255); // salmon: down to the host
    case EventKind::ParamsToDevice:
        return IM_COL32(100, 181, 246, 255); // light blue: back up to the device
    // No colour of their own: counters drawn as numbers and lines (the metrics
    // plots pick a colour per rank), and markers that no view draws as a block.
    // No `default`: a new kind in event_kinds.def is a build error here
    // (-Werror=switch in app/CMakeLists.txt) until it is given its colour or listed.
    case EventKind::LossValue:
    case EventKind::EvalLoss:
    case EventKind::EvalLossFp32:
    case EventKind::StepTimeMs:
    case EventKind::BytesSent:
    case EventKind::BytesReceived:
    case EventKind::BytesSentMeasured:
    case EventKind::BusBandwidth:
    case EventKind::ClockDriftPpm:
    case EventKind::ClockSync:
    case EventKind::DroppedEvents:
    case EventKind::GradReady:
    case EventKind::JobHeld:
    case EventKind::MemLive:
    case EventKind::MemParamsMaterialized:
    case EventKind::MemPeak:
    case EventKind::MemRss:
    case EventKind::MemStartupPeak:
    case EventKind::ParamsChecksum:
    case EventKind::Count: // the number of kinds, not a kind
        return IM_COL32(150, 150, 150, 255);
    }
    return IM_COL32(150, 150, 150, 255); // not reached: every kind is listed above
}

ImU32 rankColor(int rank) {
    // Tableau 10: distinct, and mid-tone enough for both themes.
    static constexpr ImU32 colors[] = {
        IM_COL32(78, 121, 167, 255),  IM_COL32(242, 142, 43, 255),  IM_COL32(225, 87, 89, 255),
        IM_COL32(118, 183, 178, 255), IM_COL32(89, 161, 79, 255),   IM_COL32(237, 201, 72, 255),
        IM_COL32(176, 122, 161, 255), IM_COL32(255, 157, 167, 255), IM_COL32(156, 117, 95, 255),
        IM_COL32(186, 176, 172, 255),
    };
    return colors[size_t(std::max(rank, 0)) % (sizeof(colors) / sizeof(colors[0]))];
}

ImU32 levelColor(LogLevel level) {
    switch (level) {
    case LogLevel::Warning:
        return kWarning;
    case LogLevel::Error:
        return kFailed;
    default:
        return ImGui::GetColorU32(ImGuiCol_Text);
    }
}

ImU32 textOn(ImU32 fill) {
    const float r = float((fill >> IM_COL32_R_SHIFT) & 0xFF);
    const float g = float((fill >> IM_COL32_G_SHIFT) & 0xFF);
    const float b = float((fill >> IM_COL32_B_SHIFT) & 0xFF);
    const float luminance = 0.299f * r + 0.587f * g + 0.114f * b;
    return luminance > 150.0f ? IM_COL32(20, 20, 20, 255) : IM_COL32(250, 250, 250, 255);
}

ImU32 withAlpha(ImU32 color, float alpha) {
    const ImU32 a = ImU32(std::clamp(alpha, 0.0f, 1.0f) * float((color >> IM_COL32_A_SHIFT) & 0xFF));
    return (color & ~IM_COL32_A_MASK) | (a << IM_COL32_A_SHIFT);
}

ImU32 shade(ImU32 color, float factor) {
    auto channel = [&](int shift) {
        const float v = float((color >> shift) & 0xFF) * factor;
        return ImU32(std::clamp(v, 0.0f, 255.0f)) << shift;
    };
    return channel(IM_COL32_R_SHIFT) | channel(IM_COL32_G_SHIFT) | channel(IM_COL32_B_SHIFT) |
           (color & IM_COL32_A_MASK);
}

} // namespace dt::app::palette
