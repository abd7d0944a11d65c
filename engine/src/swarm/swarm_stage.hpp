// swarm_stage.hpp: the part of the model one SWARM server serves, and its
// inner optimizer.
//
// Stage s of S holds blocks [s L/S, (s+1) L/S); stage 0 also the embeddings,
// stage S-1 the final norm and the head (the whole model is built from the
// run's seed, the other stages' parameters are freed: every server of a
// stage starts from the same bits).
//   forward(x)        no graph kept: x (B/m,T) tokens or (B/m,T,C) -> y
//                     (B/m,T,C), or the logits (B/m,T,V) from the last stage
//   backward(x, dy)   stateless, as Hivemind's ModuleBackend.backward: the
//                     forward again with a graph, then autograd.grad w.r.t.
//                     the stage's parameters and x; returns dx (undefined for
//                     stage 0) and the parameter gradients, which the server
//                     adds with accumulate() unless the call is stale
//   innerStep()       gradients = the sum / microbatches accumulated, then
//                     AdamW ([optimizer]); 4 P_s bytes of summed gradients
//                     (and 4 P_s more during the step) and 8 P_s of AdamW
//                     state per server.
#pragma once

#include "dtlab/scenario.hpp"
#include "model/model.hpp"

#include <ATen/ATen.h>

#include <memory>
#include <vector>

namespace torch::optim {
class Optimizer;
}

namespace dt::swarm {

class StageModule {
  public:
    StageModule(const Scenario& scenario, int stage);
    ~StageModule();

    [[nodiscard]] at::Tensor forward(const at::Tensor& x);
    [[nodiscard]] at::Tensor backward(const at::Tensor& x, const at::Tensor& dy,
                                      std::vector<at::Tensor>& grads);
    void accumulate(const std::vector<at::Tensor>& grads);
    [[nodiscard]] int accumulated() const { return m_accumulated; }
    void innerStep();

    [[nodiscard]] const std::vector<NamedParameter>& parameters() const { return m_owned; }
    [[nodiscard]] std::vector<at::Tensor> tensors() const;
    [[nodiscard]] int64_t numel() const { return m_numel; } // P_s
    [[nodiscard]] int64_t optimizerBytes() const;

  private:
    [[nodiscard]] at::Tensor run(const at::Tensor& x);

    int m_stage = 0;
    int m_stages = 1;
    int m_first_block = 0;
    int m_last_block = 0;
    std::unique_ptr<TrainableModel> m_model;
    StagedModel* m_staged = nullptr;
    std::vector<NamedParameter> m_owned;
    std::vector<at::Tensor> m_sum; // accumulated gradients
    int m_accumulated = 0;
    int64_t m_numel = 0;
    std::unique_ptr<torch::optim::Optimizer> m_optimizer;
};

} // namespace dt::swarm
