#include "dtlab/events.hpp"

namespace dt {

std::string_view eventKindLabel(EventKind kind) {
    switch (kind) {
#define DT_EVENT_KIND(name, label, category)                                                                 \
    case EventKind::name:                                                                                    \
        return label;
#include "dtlab/event_kinds.def"
#undef DT_EVENT_KIND
    case EventKind::Count:
        break;
    }
    return "unknown";
}

EventCategory eventKindCategory(EventKind kind) {
    switch (kind) {
#define DT_EVENT_KIND(name, label, category)                                                                 \
    case EventKind::name:                                                                                    \
        return EventCategory::category;
#include "dtlab/event_kinds.def"
#undef DT_EVENT_KIND
    case EventKind::Count:
        break;
    }
    return EventCategory::Lifecycle;
}

std::string_view commBackendLabel(CommBackend backend) {
    switch (backend) {
    case CommBackend::Gloo:
        return "gloo";
    case CommBackend::Mpi:
        return "mpi";
    case CommBackend::Nccl:
        return "nccl";
    }
    return "unknown";
}

std::string_view eventPhaseLabel(EventPhase phase) {
    switch (phase) {
    case EventPhase::Span:
        return "span";
    case EventPhase::Instant:
        return "instant";
    case EventPhase::Counter:
        return "counter";
    case EventPhase::WorkScheduled:
        return "scheduled";
    case EventPhase::WorkStarted:
        return "started";
    case EventPhase::WorkCompleted:
        return "completed";
    case EventPhase::WorkFailed:
        return "failed";
    }
    return "unknown";
}

bool isWorkPhase(EventPhase phase) {
    return phase == EventPhase::WorkScheduled || phase == EventPhase::WorkStarted ||
           phase == EventPhase::WorkCompleted || phase == EventPhase::WorkFailed;
}

} // namespace dt
