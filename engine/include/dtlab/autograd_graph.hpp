// autograd_graph.hpp: the real autograd graph of a scenario's model, and the
// order LibTorch's engine runs it in.
//
//   1. build the model the ranks build (the same factory, config and seed)
//   2. run one forward on a batch of one of the model's shapes (tiny_gpt:
//      tokens (1, T) -> loss (); mlp: pixels (1, 784) -> loss ())
//   3. walk loss.grad_fn() through next_edges(): every backward function
//      (MmBackward0, NativeLayerNormBackward0, ...) and every AccumulateGrad
//      leaf, which writes one parameter's .grad (DDP's and FSDP's hooks sit on
//      these leaves: engine/src/strategy/gradient_ready_hook.hpp)
//   4. put a pre-hook on every node and run loss.backward(): the order the
//      hooks fire in is the order the engine executed the nodes, measured,
//      not derived from sequence numbers
// Nothing here talks to a rank: the graph of a model does not depend on the
// strategy (DDP, ZeRO and FSDP wrap the same graph; their hooks are extra).
#pragma once

#include "dtlab/scenario.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dt {

struct AutogradNode {
    std::string name;      // "MmBackward0", "AccumulateGrad", ...
    int param = -1;        // AccumulateGrad: the parameter (model order) it writes; -1 otherwise
    int order = -1;        // its place in the measured execution order (0 = first run); -1 = never ran
    uint64_t sequence = 0; // Node::sequence_nr(): creation order in forward (AccumulateGrad: UINT64_MAX)
    std::vector<int> next; // the nodes its gradients flow to (next_edges), indices into the graph
};

struct AutogradGraph {
    std::vector<AutogradNode> nodes;      // nodes[0] is the loss's grad_fn
    std::vector<int> execution;           // node indices in the order backward ran them
    std::vector<std::string> param_names; // the model's trainable parameters, model order
    std::vector<int64_t> param_numel;
    std::vector<int> param_units;     // -1 root (embeddings, final norm, head), else the block
    [[nodiscard]] int leaves() const; // AccumulateGrad nodes
};

// Throws UsageError for a model kind it cannot build.
[[nodiscard]] AutogradGraph autogradGraph(const ModelConfig& model, uint64_t seed);

} // namespace dt
