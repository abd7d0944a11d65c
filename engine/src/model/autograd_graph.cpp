// autograd_graph.cpp: see autograd_graph.hpp for the steps.
#include "dtlab/autograd_graph.hpp"

#include "model/model.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>

#include <map>
#include <memory>

namespace dt {

int AutogradGraph::leaves() const {
    int n = 0;
    for (const AutogradNode& node : nodes)
        n += node.param >= 0 ? 1 : 0;
    return n;
}

namespace {

using torch::autograd::Node;

// Appends its node's index to the execution order when the engine runs the node.
struct RecordRun final : torch::autograd::FunctionPreHook {
    RecordRun(std::vector<int>& order, int index) : order(order), index(index) {}
    torch::autograd::variable_list operator()(const torch::autograd::variable_list& grads) override {
        order.push_back(index);
        return grads;
    }
    std::vector<int>& order;
    int index;
};

// A batch of one with the model's shapes (the graph does not depend on the batch size).
std::pair<at::Tensor, at::Tensor> oneExample(const ModelConfig& model) {
    if (model.kind == "mlp")
        return {at::rand({1, 784}), at::zeros({1}, at::kLong)};
    const at::Tensor tokens = at::randint(model.vocab, {1, model.context}, at::kLong);
    return {tokens, at::randint(model.vocab, {1, model.context}, at::kLong)};
}

} // namespace

AutogradGraph autogradGraph(const ModelConfig& model_config, uint64_t seed) {
    std::unique_ptr<TrainableModel> model = makeModel(model_config, seed);
    AutogradGraph graph;
    const std::vector<NamedParameter> params = model->trainableParameters();
    std::map<const void*, int> param_of; // TensorImpl -> model order
    for (size_t i = 0; i < params.size(); ++i) {
        graph.param_names.push_back(params[i].name);
        graph.param_numel.push_back(params[i].tensor.numel());
        param_of[params[i].tensor.unsafeGetTensorImpl()] = int(i);
    }
    graph.param_units = model->parameterUnits();

    const auto [inputs, targets] = oneExample(model_config);
    const at::Tensor loss = model->loss(inputs, targets, UnitTimer{});

    // 3. Every node reachable from the loss, breadth first; nodes[0] = the loss's grad_fn.
    std::map<Node*, int> index_of;
    std::vector<std::shared_ptr<Node>> pending{loss.grad_fn()};
    std::vector<std::shared_ptr<Node>> all;
    index_of[loss.grad_fn().get()] = 0;
    all.push_back(loss.grad_fn());
    for (size_t k = 0; k < all.size(); ++k) {
        for (const torch::autograd::Edge& edge : all[k]->next_edges()) {
            if (!edge.function || index_of.count(edge.function.get()))
                continue;
            index_of[edge.function.get()] = int(all.size());
            all.push_back(edge.function);
        }
    }
    graph.nodes.resize(all.size());
    for (size_t k = 0; k < all.size(); ++k) {
        AutogradNode& node = graph.nodes[k];
        node.name = all[k]->name();
        node.sequence = all[k]->sequence_nr();
        if (const auto* accumulate = dynamic_cast<torch::autograd::AccumulateGrad*>(all[k].get())) {
            const auto found = param_of.find(accumulate->variable.unsafeGetTensorImpl());
            node.param = found == param_of.end() ? -1 : found->second;
            node.name = "AccumulateGrad";
        }
        for (const torch::autograd::Edge& edge : all[k]->next_edges())
            if (edge.function)
                node.next.push_back(index_of.at(edge.function.get()));
    }

    // 4. The measured execution order.
    for (size_t k = 0; k < all.size(); ++k)
        all[k]->add_pre_hook(std::make_unique<RecordRun>(graph.execution, int(k)));
    loss.backward();
    for (size_t pos = 0; pos < graph.execution.size(); ++pos)
        graph.nodes[size_t(graph.execution[pos])].order = int(pos);
    return graph;
}

} // namespace dt
