// training_strategy.cpp: picks the strategy a scenario names.
#include "strategy/training_strategy.hpp"

#include "dtlab/scenario.hpp"

namespace dt {

std::unique_ptr<TrainingStrategy> makeDdpStrategy(const StrategyContext& context);     // ddp_strategy.cpp
std::unique_ptr<TrainingStrategy> makeShardedStrategy(const StrategyContext& context); // sharded_strategy.cpp
std::unique_ptr<TrainingStrategy> makePipelineStrategy(const StrategyContext& context); // pipeline_strategy.cpp
std::unique_ptr<TrainingStrategy> makeDilocoStrategy(const StrategyContext& context);   // diloco_strategy.cpp
std::unique_ptr<TrainingStrategy> makeTensorParallelStrategy(const StrategyContext& context); // tensor_parallel_strategy.cpp

std::unique_ptr<TrainingStrategy> makeStrategy(const StrategyContext& context) {
    if (context.scenario->strategy.kind == "ddp") return makeDdpStrategy(context);
    if (context.scenario->strategy.kind == "diloco") return makeDilocoStrategy(context);
    if (context.scenario->strategy.kind == "pipeline") return makePipelineStrategy(context);
    if (context.scenario->strategy.kind == "tensor_parallel") return makeTensorParallelStrategy(context);
    return makeShardedStrategy(context); // zero1, zero2, fsdp, hsdp
}

} // namespace dt
