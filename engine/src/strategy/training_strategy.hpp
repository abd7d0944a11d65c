// training_strategy.hpp: how ranks share one training step. The worker's loop
// is the same for every strategy; the strategy owns the gradient
// synchronisation, the optimizer and (for FSDP) where parameters live.
//
// One step, as the worker drives it:
//   beginStep(step)
//   for each microbatch m of M:
//       beginMicrobatch(m, last = m == M-1)
//       loss = model.loss(...)       <- unit hooks: beforeUnitForward / afterUnitForward
//       (loss / M).backward()        <- beforeUnitBackward, gradient-ready hooks
//       finishMicrobatch()           <- waits for this microbatch's gradient collectives
//   optimizerStep()                  <- AdamW on what this rank owns; zero1/2 all-gather after
//
// Strategies: ddp (ddp_strategy.cpp), zero1 / zero2 / fsdp / hsdp
// (sharded_strategy.cpp), pipeline (pipeline_strategy.cpp), diloco
// (diloco_strategy.cpp), tensor_parallel (tensor_parallel_strategy.cpp).
// makeStrategy picks
// one from the scenario.
#pragma once

#include "comm/communicator.hpp"
#include "model/model.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace torch::optim {
class AdamW;
}

namespace dt {

class EventSink;
struct Scenario;

// Bytes by category that the strategy owns on this rank (the memory counters).
struct StrategyMemory {
    int64_t parameters = 0;              // everything parameter-shaped alive (sharded + materialized)
    int64_t parameters_materialized = 0; // fsdp/hsdp: unsharded unit copies alive now
    int64_t gradients = 0;
    int64_t optimizer_state = 0;
    int64_t comm_buffers = 0; // flattened gradients waiting for their reduce-scatter, ...
    int64_t host = 0;         // offload_optimizer: bytes in host memory (not in the device's live bytes)
};

class TrainingStrategy {
  public:
    virtual ~TrainingStrategy() = default;
    [[nodiscard]] virtual std::string name() const = 0;

    // Unit hooks (unit = block index, -1 = root); called by the model through
    // the worker's UnitTimer. Default: nothing to do (ddp, zero1, zero2).
    virtual void beforeUnitForward(int unit) { (void)unit; }
    virtual void afterUnitForward(int unit) { (void)unit; }
    virtual void beforeUnitBackward(int unit) { (void)unit; }

    // A pipeline runs a whole schedule per step instead of the worker's
    // microbatch loop: runStep does every forward and backward of the step and
    // returns the step's loss (NaN on ranks that do not compute it).
    [[nodiscard]] virtual bool runsWholeStep() const { return false; }
    virtual double runStep(int step, const at::Tensor& inputs, const at::Tensor& targets) {
        (void)step, (void)inputs, (void)targets;
        return 0.0;
    }

    virtual void beginStep(int step) = 0;
    virtual void beginMicrobatch(int microbatch, bool last) = 0;
    virtual void finishMicrobatch() = 0; // throws CommError if a peer failed
    virtual void optimizerStep() = 0;    // throws CommError if a peer failed

    [[nodiscard]] virtual StrategyMemory memory() const = 0;
    // The full parameters in model order, identical on every rank (fsdp
    // gathers every unit for it; a collective: every rank must call it).
    [[nodiscard]] virtual std::vector<NamedParameter> fullParameters() = 0;
    // The communicator whose cost-model bytes are this rank's traffic (hsdp adds its second group).
    [[nodiscard]] virtual int64_t modeledBytesSent() const = 0;
    [[nodiscard]] virtual int64_t modeledBytesReceived() const = 0;

    // Sharded checkpoints (sharded_checkpoint.hpp); ddp refuses (UsageError).
    // save: every rank calls it; returns the bytes this rank wrote.
    virtual int64_t saveCheckpoint(const std::string& step_dir, int last_step) = 0;
    // load: returns the step to resume after; throws UsageError naming the file and the problem.
    virtual int loadCheckpoint(const std::string& step_dir, int64_t& bytes_read) = 0;

    // ---- under a quorum: replica groups of several ranks (ft/ft_group_training.cpp)
    // The strategy runs inside one group (`world` = the group's ranks); the
    // quorum's manager averages across groups, rank i of a group with rank i
    // of every other. Defaults: not supported (empty, null).
    //
    // This rank's reduced gradients after finishMicrobatch, summed over the
    // group; the manager replaces each by its average over the groups before
    // optimizerStep (which divides by the group's size). zero1/zero2/fsdp:
    // each unit's shard gradient (S elements).
    [[nodiscard]] virtual std::vector<at::Tensor> replicaGradients() { return {}; }
    // What AdamW updates on this rank, and the AdamW (its state is keyed by
    // them): what a healing group's rank i receives from rank i of a live
    // group (checkpoint/replica_state.hpp's layout).
    [[nodiscard]] virtual std::vector<at::Tensor> optimizedTensors() { return {}; }
    [[nodiscard]] virtual torch::optim::AdamW* adamW() { return nullptr; }
    // After a heal overwrote optimizedTensors(): rebuild what derives from
    // them (zero1/zero2: all-gather the whole parameters; a collective, every
    // rank of the group calls it).
    virtual void afterStateLoaded() {}
};

struct StrategyContext {
    const Scenario* scenario = nullptr;
    TrainableModel* model = nullptr;
    Communicator* world = nullptr; // all ranks
    // hsdp only: the shard group (ranks of this replica) and the replicate group
    // (ranks holding the same shard in every replica); null otherwise.
    Communicator* shard_group = nullptr;
    Communicator* replicate_group = nullptr;
    // pipeline only: the data-parallel group (the same stage in every pipeline); null when one pipeline.
    Communicator* data_parallel_group = nullptr;
    EventSink* sink = nullptr; // null = no detailed telemetry
    // The rank's live slow-down (the GUI's Slow button), in ms; a pipeline
    // spends it in every forward and backward instead of once per step.
    std::function<double()> slow_delay_ms;
    int rank = 0;
};

[[nodiscard]] std::unique_ptr<TrainingStrategy> makeStrategy(const StrategyContext& context);

// A rank whose step loss is NaN or infinite stops the run here: the training
// diverged, and every step after it would report ok on garbage. Throws
// TrainingDiverged "the loss is NaN at step 12: training diverged ..."
// (the rank exits with kExitDiverged; a fault-tolerant replica is not restarted).
void requireFiniteLoss(double loss, int step);

} // namespace dt
