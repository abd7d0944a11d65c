// memory_events.hpp: a MemorySample's measured side as counters on a rank's lane.
//
// One counter per allocator owner tag (MemMeasuredParameters .. MemMeasuredTemporaries:
// value = live bytes now, bytes = that owner's peak since set-up ended),
// the step peak (MemPeak), the start-up peak (MemStartupPeak) and the resident set (MemRss).
#pragma once

#include "dtlab/events.hpp"
#include "memory/memory_accounting.hpp"

#include <cstdint>

namespace dt {

class RankTelemetry;

// emits always (detailed or not is the caller's choice: it calls this only when it wants them)
void emitMeasuredMemory(const RankTelemetry& telemetry, int64_t step, const MeasuredMemory& m);

// the counter kind of one owner tag
[[nodiscard]] EventKind measuredMemoryKind(MemoryOwner owner);

} // namespace dt
