// ddp_strategy.cpp: DDP as a TrainingStrategy: every rank holds the whole
// model, gradients are all-reduced in buckets (ddp.hpp), every rank runs the
// same optimizer step (AdamW, or SGD) on the same averaged gradients.
//
// Bytes on the wire per rank and step: 2 (N-1)/N x 4 Psi (per microbatch when
// sync_every_microbatch is on). Memory per rank: 4 Psi + 4 Psi + 8 Psi.
//
// In a replica group under [fault_tolerance] (ft_group_training.cpp) the
// world is the group: the buckets average over its G ranks, then rank i's
// manager averages every gradient with rank i of the other groups, and a
// healing rank receives the whole state from its twin (every rank of a
// group holds the same bits).
#include "strategy/ddp.hpp"
#include "strategy/training_strategy.hpp"

#include "dtlab/scenario.hpp"
#include "memory/memory_accounting.hpp"
#include "memory/tracking_allocator.hpp"
#include "strategy/optimizer_factory.hpp"

#include <torch/optim/adamw.h>
#include <torch/optim/optimizer.h>

namespace dt {

namespace {

class DdpStrategy final : public TrainingStrategy {
  public:
    explicit DdpStrategy(const StrategyContext& c)
        : m_scenario(*c.scenario), m_model(*c.model), m_comm(*c.world) {
        for (const auto& p : m_model.trainableParameters())
            m_params.push_back(p.tensor);
        const StrategyConfig& st = m_scenario.strategy;
        {
            const AllocationOwnerScope owner(MemoryOwner::Gradients); // the bucket buffers the .grad view
            m_sync = std::make_unique<DdpGradientSync>(m_params, m_comm, st.bucket_mb, st.overlap, c.sink);
        }
        m_optimizer = makeOptimizer(m_params, m_scenario.optimizer);
    }

    std::string name() const override { return "ddp"; }

    void beginStep(int step) override { m_sync->beginStep(step); }

    void beginMicrobatch(int microbatch, bool last) override {
        m_sync->beginMicrobatch(microbatch, last || m_scenario.strategy.sync_every_microbatch);
    }

    void finishMicrobatch() override { m_sync->finishBackward(); }

    void optimizerStep() override { m_optimizer->step(); }

    StrategyMemory memory() const override {
        StrategyMemory m;
        m.parameters = storageBytes(m_params);
        m.gradients = storageBytes(m_sync->bucketBuffers());
        m.optimizer_state = optimizerStateBytes(*m_optimizer);
        return m;
    }

    std::vector<NamedParameter> fullParameters() override { return m_model.trainableParameters(); }
    int64_t modeledBytesSent() const override { return m_comm.modeledBytesSent(); }
    int64_t modeledBytesReceived() const override { return m_comm.modeledBytesReceived(); }

    // Under a quorum: every gradient (the group's mean: DdpGradientSync
    // divides by the group's size before its all-reduce), all parameters,
    // and the AdamW that steps them.
    std::vector<at::Tensor> replicaGradients() override {
        std::vector<at::Tensor> grads;
        for (const auto& p : m_params)
            grads.push_back(p.grad()); // views into the buckets
        return grads;
    }
    std::vector<at::Tensor> optimizedTensors() override { return m_params; }
    torch::optim::AdamW* adamW() override { return dynamic_cast<torch::optim::AdamW*>(m_optimizer.get()); }

    int64_t saveCheckpoint(const std::string&, int) override {
        throw UsageError("checkpoints are sharded: use [strategy] kind = zero1, zero2, fsdp or hsdp");
    }
    int loadCheckpoint(const std::string&, int64_t&) override {
        throw UsageError("checkpoints are sharded: use [strategy] kind = zero1, zero2, fsdp or hsdp");
    }

  private:
    const Scenario& m_scenario;
    TrainableModel& m_model;
    Communicator& m_comm;
    std::vector<at::Tensor> m_params;
    std::unique_ptr<DdpGradientSync> m_sync;
    std::unique_ptr<torch::optim::Optimizer> m_optimizer;
};

} // namespace

std::unique_ptr<TrainingStrategy> makeDdpStrategy(const StrategyContext& context) {
    return std::make_unique<DdpStrategy>(context);
}

} // namespace dt
