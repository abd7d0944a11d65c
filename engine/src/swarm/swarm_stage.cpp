// swarm_stage.cpp: a server's stage (see swarm_stage.hpp).
#include "swarm/swarm_stage.hpp"

#include "sharding/flat_unit.hpp"
#include "strategy/optimizer_factory.hpp"

#include "dtlab/errors.hpp"

#include <torch/csrc/autograd/autograd.h>
#include <torch/optim/optimizer.h>

namespace dt::swarm {

StageModule::StageModule(const Scenario& scenario, int stage)
    : m_stage(stage), m_stages(scenario.topology.stages),
      m_model(makeModel(scenario.model, scenario.run.seed)) { // the same seed on every server of the stage
    m_staged = m_model->staged();
    DT_ENFORCE(m_staged, "a swarm stage needs a model with stages (tiny_gpt)");
    const int per_stage = m_staged->blockCount() / m_stages;
    m_first_block = stage * per_stage;
    m_last_block = (stage + 1) * per_stage;
    const auto named = m_model->trainableParameters();
    const std::vector<int> stage_of = m_staged->parameterChunks(m_stages);
    std::vector<at::Tensor> owned;
    for (size_t i = 0; i < named.size(); ++i) {
        if (stage_of[i] == stage) {
            m_owned.push_back(named[i]);
            owned.push_back(named[i].tensor);
            m_sum.push_back(at::zeros_like(named[i].tensor));
            m_numel += named[i].tensor.numel();
        } else {
            releaseStorage(named[i].tensor); // another stage's: its bytes go
        }
    }
    m_optimizer = makeOptimizer(owned, scenario.optimizer);
}

StageModule::~StageModule() = default;

at::Tensor StageModule::run(const at::Tensor& x) {
    at::Tensor h = m_stage == 0 ? m_staged->embed(x) : x;
    h = m_staged->runBlocks(h, m_first_block, m_last_block);
    return m_stage == m_stages - 1 ? m_staged->headLogits(h) : h;
}

at::Tensor StageModule::forward(const at::Tensor& x) {
    at::NoGradGuard no_grad;
    return run(x);
}

at::Tensor StageModule::backward(const at::Tensor& x, const at::Tensor& dy, std::vector<at::Tensor>& grads) {
    const bool takes_tokens = m_stage == 0;
    at::Tensor input = takes_tokens ? x : x.detach().requires_grad_(true);
    const at::Tensor y = run(input);
    DT_ENFORCE(y.sizes() == dy.sizes(),
               "swarm backward: the output gradient's shape does not match the stage's output");
    std::vector<at::Tensor> wrt;
    for (const auto& p : m_owned)
        wrt.push_back(p.tensor);
    if (!takes_tokens)
        wrt.push_back(input);
    std::vector<at::Tensor> out = torch::autograd::grad({y}, wrt, {dy}, /*retain_graph=*/false,
                                                        /*create_graph=*/false, /*allow_unused=*/true);
    at::Tensor dx;
    if (!takes_tokens) {
        dx = out.back();
        out.pop_back();
    }
    for (size_t i = 0; i < out.size(); ++i)
        if (!out[i].defined())
            out[i] = at::zeros_like(m_owned[i].tensor);
    grads = std::move(out);
    return dx;
}

void StageModule::accumulate(const std::vector<at::Tensor>& grads) {
    for (size_t i = 0; i < m_sum.size(); ++i)
        m_sum[i].add_(grads[i]);
    ++m_accumulated;
}

void StageModule::innerStep() {
    if (m_accumulated == 0)
        return;
    for (size_t i = 0; i < m_owned.size(); ++i) {
        at::Tensor& p = m_owned[i].tensor;
        p.mutable_grad() = m_sum[i].div(double(m_accumulated));
    }
    m_optimizer->step();
    for (auto& p : m_owned)
        p.tensor.mutable_grad() = at::Tensor(); // only the running sum stays between steps: 4 P_s
    for (auto& s : m_sum)
        s.zero_();
    m_accumulated = 0;
}

std::vector<at::Tensor> StageModule::tensors() const {
    std::vector<at::Tensor> out;
    for (const auto& p : m_owned)
        out.push_back(p.tensor);
    return out;
}

int64_t StageModule::optimizerBytes() const {
    return optimizerStateBytes(*m_optimizer);
}

} // namespace dt::swarm
