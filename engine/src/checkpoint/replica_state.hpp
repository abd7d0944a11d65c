// replica_state.hpp: what a healing replica receives from a live peer, as one
// flat fp32 tensor (TorchFT's checkpoint transport over the process group).
//
// Layout, P = number of trainable parameter elements:
//   [0]            committed steps of the sender (exact in fp32 up to 2^24)
//   [1]            AdamW's step count (0 = no optimizer state yet)
//   [2, 2+P)       parameters, model order, flattened
//   [2+P, 2+2P)    AdamW exp_avg
//   [2+2P, 2+3P)   AdamW exp_avg_sq
// Bytes on the wire: 4 (3P + 2), one point-to-point message.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace torch::optim {
class AdamW;
}

namespace dt {

[[nodiscard]] int64_t replicaStateNumel(const std::vector<at::Tensor>& params);

// A copy of the state (safe to send while training goes on).
[[nodiscard]] at::Tensor packReplicaState(const std::vector<at::Tensor>& params,
                                          torch::optim::AdamW& optimizer, int64_t committed_steps);

// The same layout without the copy: a 2-float header, then views of the live
// parameters, exp_avg and exp_avg_sq (flattened; zeros where AdamW has no
// state yet). Laid end to end they are packReplicaState's bytes. Valid
// while nothing steps the optimizer: the HTTP heal serves them between the
// quorum and the vote, as TorchFT's HTTPTransport serves its live state dict.
[[nodiscard]] std::vector<at::Tensor> replicaStateViews(const std::vector<at::Tensor>& params,
                                                        torch::optim::AdamW& optimizer,
                                                        int64_t committed_steps);

// The element counts of replicaStateViews' pieces, in order: {2, each
// parameter's numel, the same for exp_avg, the same for exp_avg_sq}. Fixed for
// a run, so a healer knows where each piece it receives goes.
[[nodiscard]] std::vector<int64_t> replicaStateViewNumels(const std::vector<at::Tensor>& params);

// How the heal over the process group sends those pieces: consecutive pieces
// [begin, end) as one message of `numel` elements. A piece of at least
// kReplicaStateInPlaceNumel goes alone, from the live tensor itself (no
// copy); smaller neighbours are packed together up to that size (one small
// copy), never across a boundary of `message_numels` (the flat messages the
// healer receives into). A TinyGPT of a few layers goes in one or two
// messages, a 100 MB one in about one message per weight matrix.
struct ReplicaStateRun {
    size_t begin = 0, end = 0;
    int64_t numel = 0;
};
inline constexpr int64_t kReplicaStateInPlaceNumel = int64_t(1) << 18; // 1 MiB of fp32
[[nodiscard]] std::vector<ReplicaStateRun> replicaStateRuns(const std::vector<int64_t>& piece_numels,
                                                            const std::vector<int64_t>& message_numels);

// The heal's metadata over the process group, sent before the state (TorchFT's
// PGTransport sends its _StateDictMeta first: the step, then each tensor's
// size), int64: {committed steps of the source, n, numel of message 0, ...,
// numel of message n - 1}. 8 (n + 2) bytes, after an int64 of its length.
[[nodiscard]] at::Tensor replicaStateMetadata(int64_t committed_steps,
                                              const std::vector<int64_t>& message_numels);
// The healer's check of that metadata against the quorum's step (TorchFT
// asserts meta.step == step) and its own layout: "" when they agree, else
// what differs, naming both sides.
[[nodiscard]] std::string replicaStateMetadataMismatch(const at::Tensor& meta, int64_t expected_step,
                                                       const std::vector<int64_t>& expected_numels);

// Overwrites the parameters and the optimizer state; returns the sender's committed steps.
int64_t unpackReplicaState(const at::Tensor& state, const std::vector<at::Tensor>& params,
                           torch::optim::AdamW& optimizer);

} // namespace dt
