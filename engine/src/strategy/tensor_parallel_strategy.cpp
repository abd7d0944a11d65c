// tensor_parallel_strategy.cpp: tensor parallelism (Megatron style) as a
// TrainingStrategy. The model (model/tiny_gpt_tensor_parallel.cpp) splits each
// block's attention heads and MLP columns over the ranks and all-reduces
// activations inside forward and backward; this strategy zeroes the gradients,
// runs AdamW on what this rank holds and gathers the whole model at the end.
//
// Every rank reads the same batch (one data-parallel replica). Per rank:
//   parameters  the whole embeddings, norms and head + 1/N of each block's
//               Linear weights (about 12 C^2 L / N of the 12 C^2 L)
//   gradients   the same shapes; AdamW state twice that
//   wire        4 all-reduces of B x T x C fp32 per block and step:
//               4 L x 2 (N-1)/N x 4 B T C bytes sent per rank and step
#include "strategy/training_strategy.hpp"

#include "dtlab/errors.hpp"
#include "dtlab/scenario.hpp"
#include "memory/memory_accounting.hpp"
#include "model/tensor_parallel_model.hpp"
#include "strategy/optimizer_factory.hpp"

#include <torch/optim/optimizer.h>

namespace dt {

namespace {

class TensorParallelStrategy final : public TrainingStrategy {
  public:
    explicit TensorParallelStrategy(const StrategyContext& c) : m_comm(*c.world) {
        m_model = dynamic_cast<TensorParallelModel*>(c.model);
        DT_ENFORCE(m_model != nullptr, "tensor_parallel needs the model built by makeTensorParallelGpt");
        for (const auto& p : m_model->trainableParameters())
            m_params.push_back(p.tensor);
        m_optimizer = makeOptimizer(m_params, c.scenario->optimizer);
    }

    std::string name() const override { return "tensor_parallel"; }

    void beginStep(int step) override {
        m_model->setStep(step);
        for (at::Tensor& p : m_params)
            if (p.grad().defined())
                p.mutable_grad().zero_();
    }
    // The activations' all-reduces are inside forward and backward: nothing waits here.
    void beginMicrobatch(int, bool) override {}
    void finishMicrobatch() override {}
    void optimizerStep() override { m_optimizer->step(); }

    StrategyMemory memory() const override {
        StrategyMemory m;
        m.parameters = storageBytes(m_params);
        std::vector<at::Tensor> grads;
        for (const at::Tensor& p : m_params)
            if (p.grad().defined())
                grads.push_back(p.grad());
        m.gradients = storageBytes(grads);
        m.optimizer_state = optimizerStateBytes(*m_optimizer);
        return m;
    }

    std::vector<NamedParameter> fullParameters() override { return m_model->gatherFullParameters(); }
    int64_t modeledBytesSent() const override { return m_comm.modeledBytesSent(); }
    int64_t modeledBytesReceived() const override { return m_comm.modeledBytesReceived(); }

    int64_t saveCheckpoint(const std::string&, int) override {
        throw UsageError("tensor_parallel does not write checkpoints yet");
    }
    int loadCheckpoint(const std::string&, int64_t&) override {
        throw UsageError("tensor_parallel does not read checkpoints yet");
    }

  private:
    Communicator& m_comm;
    TensorParallelModel* m_model = nullptr;
    std::vector<at::Tensor> m_params;
    std::unique_ptr<torch::optim::Optimizer> m_optimizer;
};

} // namespace

std::unique_ptr<TrainingStrategy> makeTensorParallelStrategy(const StrategyContext& context) {
    return std::make_unique<TensorParallelStrategy>(context);
}

} // namespace dt
