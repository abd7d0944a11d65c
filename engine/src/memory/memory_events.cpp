// memory_events.cpp: see the header.
#include "memory/memory_events.hpp"

#include "rank/rank_telemetry.hpp"

namespace dt {

EventKind measuredMemoryKind(MemoryOwner owner) {
    switch (owner) {
    case MemoryOwner::Parameters:
        return EventKind::MemMeasuredParameters;
    case MemoryOwner::Gradients:
        return EventKind::MemMeasuredGradients;
    case MemoryOwner::OptimizerState:
        return EventKind::MemMeasuredOptimizer;
    case MemoryOwner::CommBuffers:
        return EventKind::MemMeasuredCommBuffers;
    case MemoryOwner::Activations:
        return EventKind::MemMeasuredActivations;
    case MemoryOwner::Temporaries:
        return EventKind::MemMeasuredTemporaries;
    }
    return EventKind::MemMeasuredTemporaries;
}

void emitMeasuredMemory(const RankTelemetry& telemetry, int64_t step, const MeasuredMemory& m) {
    const auto counter = [&](EventKind kind, int64_t bytes) {
        telemetry.counter(kind).step(step).value(double(bytes)).emit();
    };
    for (int k = 0; k < kMemoryOwners; ++k) // value = live now, bytes = the owner's peak since set-up
        telemetry.counter(measuredMemoryKind(MemoryOwner(k)))
            .step(step)
            .value(double(m.by_owner[size_t(k)]))
            .bytes(m.peak_by_owner[size_t(k)])
            .emit();
    counter(EventKind::MemPeak, m.step_peak);
    counter(EventKind::MemStartupPeak, m.startup_peak);
    counter(EventKind::MemRss, m.rss);
}

} // namespace dt
