// format.hpp: numbers as people read them (durations, bytes, counts, axis ticks).
//
// Every view formats through here so units agree everywhere:
//   durations   850 ns, 12.3 us, 4.56 ms, 1.23 s
//   bytes       512 B, 1.50 KiB, 12.3 MiB, 1.20 GiB (powers of 1024), exact "1,290,240 B"
// The char-buffer versions do not allocate (the timeline calls them per span).
#pragma once

#include "dtlab/events.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace dt::app {

void formatDuration(char* out, size_t size, double ns);
void formatBytes(char* out, size_t size, double bytes);
void formatCount(char* out, size_t size, uint64_t value); // 1,234,567

// The kind's label from event_kinds.def ("all-reduce"), NUL-terminated.
[[nodiscard]] const char* kindLabel(EventKind kind);

[[nodiscard]] std::string formatDuration(double ns);
[[nodiscard]] std::string formatBytes(double bytes);
[[nodiscard]] std::string formatBytesExact(int64_t bytes); // "1,290,240 B"
[[nodiscard]] std::string formatCount(uint64_t value);

// Axis ticks: the smallest "nice" step (1, 2 or 5 x 10^k) that is >= raw.
[[nodiscard]] double niceStep(double raw);
// A time tick label at `ns` with the unit and decimals chosen from the tick
// step, so neighbouring labels differ: step 2 ms -> "14 ms", step 0.5 s -> "6.5 s".
void formatTimeTick(char* out, size_t size, double ns, double step_ns);
// A value tick label with decimals chosen from the step ("0.25", "120", "1.5k").
void formatValueTick(char* out, size_t size, double value, double step);

// Byte axes: one unit for the whole axis, picked from its largest value
// (1024^k: B, KiB, MiB, GiB); the step is nice in that unit.
[[nodiscard]] double bytesUnit(double max_bytes, const char** name);
[[nodiscard]] double niceBytesStep(double raw_bytes, double unit);
void formatBytesTick(char* out, size_t size, double bytes, double step, double unit, const char* unit_name);

} // namespace dt::app
