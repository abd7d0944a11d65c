// replica_loop.cpp: the compute side of one fault-tolerant replica (steps in
// replica_loop.hpp).
#include "ft/replica_loop.hpp"

#include "memory/memory_accounting.hpp"
#include "memory/memory_events.hpp"
#include "memory/tracking_allocator.hpp"

#include "strategy/training_strategy.hpp"

#include <torch/optim/adamw.h>

namespace dt::ft {

// The model's tensors are parameter memory (tracking_allocator.hpp's owner tags).
static std::unique_ptr<TrainableModel> buildParameters(const Scenario& scenario) {
    const AllocationOwnerScope owner(MemoryOwner::Parameters);
    return makeModel(scenario.model, scenario.run.seed); // the same seed: every replica starts identical
}

ReplicaModel::ReplicaModel(const Scenario& scenario)
    : m_scenario(scenario), m_data(makeDataSource(scenario.data, scenario.model, scenario.run.seed)),
      m_model(buildParameters(scenario)) {
    for (const auto& p : m_model->trainableParameters()) {
        m_params.push_back(p.tensor);
        m_numel += p.tensor.numel();
        // Autograd's gradient becomes the parameter's .grad: gradient memory from then on (as worker.cpp).
        if (p.tensor.requires_grad())
            p.tensor.register_hook(
                [](const at::Tensor& grad) { retagStorage(grad, MemoryOwner::Gradients); });
    }
    const OptimizerConfig& o = scenario.optimizer;
    m_optimizer = std::make_unique<torch::optim::AdamW>(
        m_params,
        torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay));
    m_timer.forward = [](int, bool) {};
}

ReplicaModel::~ReplicaModel() = default;

std::string ReplicaModel::describe() const {
    return m_model->describe() + "; " + m_data->describe();
}

std::vector<at::Tensor> ReplicaModel::grads() const {
    std::vector<at::Tensor> grads;
    for (const auto& p : m_params)
        grads.push_back(p.grad());
    return grads;
}

double ReplicaModel::forwardBackward(int64_t step, int shard, int shards, const RankTelemetry& telemetry) {
    int64_t t = telemetry.now();
    const Batch batch = m_data->batch(int(step), shard, shards, m_scenario.data.batch_per_rank);
    telemetry.span(EventKind::Data).from(t).step(step).emit();
    for (auto& p : m_params)
        if (p.grad().defined())
            p.mutable_grad().zero_();
    t = telemetry.now();
    at::Tensor loss;
    {
        const AllocationOwnerScope owner(MemoryOwner::Activations); // what forward keeps for backward
        loss = m_model->loss(batch.inputs, batch.targets, m_timer);
    }
    telemetry.span(EventKind::Forward).from(t).step(step).unit(-2).emit(); // the whole model: unit -2
    const double value = loss.item<double>();
    // Diverged (every replica holds the same weights, so every one sees it):
    // the job stops here, before a NaN gradient reaches the all-reduce, where
    // it would only abort the step again and again (TrainingDiverged: the
    // Session fails the run instead of restarting the replica).
    requireFiniteLoss(value, int(step));
    t = telemetry.now();
    loss.backward();
    telemetry.span(EventKind::Backward).from(t).step(step).unit(-2).emit();
    return value;
}

at::Tensor flatten(const std::vector<at::Tensor>& tensors) {
    std::vector<at::Tensor> parts;
    for (const auto& t : tensors)
        parts.push_back(t.detach().reshape({-1}));
    return at::cat(parts).contiguous();
}

void copyInto(const std::vector<at::Tensor>& tensors, const at::Tensor& flat) {
    at::NoGradGuard no_grad;
    int64_t offset = 0;
    for (const auto& t : tensors) {
        t.detach().copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
        offset += t.numel();
    }
}

void emitReplicaMemory(const RankTelemetry& telemetry, int64_t step, const MemorySample& m,
                       bool comm_buffers) {
    const auto counter = [&](EventKind kind, int64_t bytes) {
        telemetry.counter(kind).step(step).value(double(bytes)).emit();
    };
    counter(EventKind::MemParameters, m.parameters);
    counter(EventKind::MemGradients, m.gradients);
    counter(EventKind::MemOptimizer, m.optimizer_state);
    counter(EventKind::MemActivations, m.activations);
    if (comm_buffers)
        counter(EventKind::MemCommBuffers, m.comm_buffers);
    counter(EventKind::MemLive, m.live);
    emitMeasuredMemory(telemetry, step, m.measured); // the step peak (MemPeak) among them
}

} // namespace dt::ft
