// tracking_allocator.hpp: a CPU allocator that counts live and peak bytes,
// by owner.
//
// Installed through c10's allocator hook (c10::SetAllocator) before the model
// is built, so every CPU tensor LibTorch allocates in a rank passes through
// it. Each block carries a 64-byte header holding its size and its owner (the
// category it was allocated for), so frees are counted exactly, against the
// category that allocated the block, without a lookup table.
//
// The owner of an allocation is the thread's current AllocationOwnerScope
// (innermost wins; none = Temporaries). The engine opens scopes where the
// bytes are made: model build = Parameters, DDP buckets and shard gradients
// = Gradients, the optimizer step (AdamW creates its moments lazily) =
// OptimizerState, flattened gradients for a collective = CommBuffers, the
// forward pass (what autograd saves) = Activations. A block handed to a new
// owner (autograd's gradient becoming a parameter's .grad) can be re-tagged;
// its bytes move between the categories and its free subtracts from the new one.
//
// Peaks: "step peak" is the peak since markStartupEnd() (or resetTrackedPeak);
// "start-up peak" is the peak reached before markStartupEnd() (building the
// whole model before sharding it counts there).
#pragma once

#include <cstdint>

namespace c10 {
class DataPtr;
}

namespace dt {

// One list: the order is the order of the summary's "measured" object and the view's bars.
enum class MemoryOwner : uint8_t {
    Parameters,
    Gradients,
    OptimizerState,
    CommBuffers,
    Activations,
    Temporaries
};
constexpr int kMemoryOwners = 6;
[[nodiscard]] const char* memoryOwnerName(MemoryOwner owner); // "parameters", "optimizer_state", ...

// RAII: allocations on this thread belong to `owner` until the scope ends.
class AllocationOwnerScope {
  public:
    explicit AllocationOwnerScope(MemoryOwner owner);
    ~AllocationOwnerScope();
    AllocationOwnerScope(const AllocationOwnerScope&) = delete;
    AllocationOwnerScope& operator=(const AllocationOwnerScope&) = delete;

  private:
    MemoryOwner m_previous;
};
[[nodiscard]] MemoryOwner currentAllocationOwner();

void installTrackingAllocator(); // idempotent; also keepFreedMemoryForReuse()
// Tells glibc to keep freed memory in the heap for the next step instead of
// giving it back to the kernel (and faulting it in again): see the .cpp.
void keepFreedMemoryForReuse();
[[nodiscard]] bool trackingAllocatorInstalled();
[[nodiscard]] int64_t trackedLiveBytes();                  // all owners
[[nodiscard]] int64_t trackedLiveBytes(MemoryOwner owner); // one owner
[[nodiscard]] int64_t trackedPeakBytes();                  // since the last reset: the step peak
[[nodiscard]] int64_t trackedPeakBytes(MemoryOwner owner); // one owner's peak since the last reset
[[nodiscard]] int64_t trackedStartupPeakBytes();           // the peak when markStartupEnd ran; 0 before
void resetTrackedPeak();                                   // every peak := its live bytes
void markStartupEnd();                                     // start-up peak := peak; peak := live

// Moves a block this allocator made to `owner` (its bytes change category);
// returns false (and does nothing) for memory from elsewhere (host memory,
// from_blob, an empty tensor).
bool retagAllocation(const c10::DataPtr& data, MemoryOwner owner);

} // namespace dt
