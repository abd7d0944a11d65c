// replica_loop.hpp: the compute side of one replica, shared by the
// fault-tolerant loops (ft_training.cpp: DDP, ft_diloco.cpp: DiLoCo); the
// quorum side is ft::Manager (ft_manager.hpp).
//
// Steps of the parts a loop calls:
//  1. ReplicaModel: the data source, the model (the same seed on every
//     replica, so they start identical: P fp32 parameters) and AdamW (2P fp32
//     of state once it has stepped).
//  2. beginReplicaStep (rank/replica_step.hpp, shared with SWARM): the
//     Session's step gate; beginGroupReplicaStep for a group of G ranks.
//  3. ReplicaModel::forwardBackward: the replica's batch of the step (shard =
//     replica index), forward and backward, each a span (unit -2: the whole
//     model), gradients in the parameters' .grad. No communication.
//  4. endReplicaStep (rank/replica_step.hpp): the step's slow-down, the Step
//     span, the step time and the modelled bytes sent so far.
//  5. emitReplicaMemory: memory by category, as the other strategies report
//     it (detailed telemetry only).
#pragma once

#include "data/data_source.hpp"
#include "ft/ft_training.hpp"
#include "memory/memory_accounting.hpp"
#include "model/model.hpp"
#include "rank/rank_telemetry.hpp"
#include "rank/replica_step.hpp"
#include "rank/step_gate.hpp"

#include <ATen/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace torch::optim {
class AdamW;
}

namespace dt::ft {

class ReplicaModel {
  public:
    explicit ReplicaModel(const Scenario& scenario);
    ~ReplicaModel();

    [[nodiscard]] std::string describe() const; // "<model>; <data>"
    // Data, forward and backward for `step` on shard `shard` of `shards`;
    // returns the loss. The gradients are left in the parameters' .grad.
    double forwardBackward(int64_t step, int shard, int shards, const RankTelemetry& telemetry);

    TrainableModel& model() { return *m_model; }
    torch::optim::AdamW& optimizer() { return *m_optimizer; }
    const std::vector<at::Tensor>& params() const { return m_params; }
    [[nodiscard]] int64_t numel() const { return m_numel; } // P
    [[nodiscard]] std::vector<at::Tensor> grads() const;    // undefined where none yet

  private:
    const Scenario& m_scenario;
    std::unique_ptr<DataSource> m_data;
    std::unique_ptr<TrainableModel> m_model;
    std::vector<at::Tensor> m_params;
    int64_t m_numel = 0;
    std::unique_ptr<torch::optim::AdamW> m_optimizer;
    UnitTimer m_timer; // no per-unit spans: one Forward and one Backward span per step
};

// One flat fp32 copy of tensors laid end to end, and its way back (the
// DiLoCo loop's parameters, the group loop's shard gradients).
[[nodiscard]] at::Tensor flatten(const std::vector<at::Tensor>& tensors);
void copyInto(const std::vector<at::Tensor>& tensors, const at::Tensor& flat);

// MemCommBuffers is reported only when `comm_buffers` (the DDP loop's flat gradient).
void emitReplicaMemory(const RankTelemetry& telemetry, int64_t step, const MemorySample& m,
                       bool comm_buffers);

} // namespace dt::ft
