// training_strategy.cpp: picks the strategy a scenario names.
#include "strategy/training_strategy.hpp"

#include "dtlab/errors.hpp"
#include "dtlab/scenario.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace dt {

std::unique_ptr<TrainingStrategy> makeDdpStrategy(const StrategyContext& context);     // ddp_strategy.cpp
std::unique_ptr<TrainingStrategy> makeShardedStrategy(const StrategyContext& context); // sharded_strategy.cpp
std::unique_ptr<TrainingStrategy>
makePipelineStrategy(const StrategyContext& context);                                 // pipeline_strategy.cpp
std::unique_ptr<TrainingStrategy> makeDilocoStrategy(const StrategyContext& context); // diloco_strategy.cpp
std::unique_ptr<TrainingStrategy>
makeTensorParallelStrategy(const StrategyContext& context); // tensor_parallel_strategy.cpp

std::unique_ptr<TrainingStrategy> makeStrategy(const StrategyContext& context) {
    switch (context.scenario->strategy.kind) {
    case StrategyKind::Ddp:
        return makeDdpStrategy(context);
    case StrategyKind::Zero1:
    case StrategyKind::Zero2:
    case StrategyKind::Fsdp:
    case StrategyKind::Hsdp:
        return makeShardedStrategy(context);
    case StrategyKind::Pipeline:
        return makePipelineStrategy(context);
    case StrategyKind::Diloco:
        return makeDilocoStrategy(context);
    case StrategyKind::TensorParallel:
        return makeTensorParallelStrategy(context);
    case StrategyKind::Collectives:
        break; // no model: the worker times collectives (collectives_run.cpp)
    case StrategyKind::Swarm:
        break; // trainers and servers have their own loops (swarm/swarm.hpp)
    }
    throw UsageError(std::string("strategy \"") + strategyKindName(context.scenario->strategy.kind) +
                     "\" trains no model");
}

} // namespace dt

namespace dt {

void requireFiniteLoss(double loss, int step) {
    if (std::isfinite(loss))
        return;
    throw TrainingDiverged("the loss is " + std::string(std::isnan(loss) ? "NaN" : "infinite") + " at step " +
                           std::to_string(step) +
                           ": training diverged (is [optimizer] lr too large?); the run stops here");
}

} // namespace dt
