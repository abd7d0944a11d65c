// schedule_list.cpp: the list of schedule specs (schedules.def) and the lookups
// of pipeline_schedule.hpp that read it.
#include "dtlab/errors.hpp"
#include "dtlab/pipeline_schedule.hpp"
#include "dtlab/scenario.hpp"

#include <algorithm>

namespace dt {
namespace schedules {
#define DT_SCHEDULE(spec) extern const PipelineScheduleSpec spec;
#include "core/schedules/schedules.def"
#undef DT_SCHEDULE
} // namespace schedules

const std::vector<const PipelineScheduleSpec*>& pipelineSchedules() {
    static const std::vector<const PipelineScheduleSpec*> list = {
#define DT_SCHEDULE(spec) &schedules::spec,
#include "core/schedules/schedules.def"
#undef DT_SCHEDULE
    };
    return list;
}

const std::vector<std::string>& pipelineScheduleNames() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const PipelineScheduleSpec* spec : pipelineSchedules())
            out.push_back(spec->name);
        return out;
    }();
    return names;
}

const PipelineScheduleSpec* findPipelineSchedule(const std::string& name) {
    for (const PipelineScheduleSpec* spec : pipelineSchedules())
        if (name == spec->name)
            return spec;
    return nullptr;
}

const PipelineScheduleSpec& pipelineSchedule(const std::string& name) {
    if (const PipelineScheduleSpec* spec = findPipelineSchedule(name))
        return *spec;
    throw UsageError("unknown pipeline schedule \"" + name + "\" (expected " + pipelineScheduleNameList() +
                     ")");
}

std::string pipelineScheduleNameList() {
    const std::vector<std::string>& names = pipelineScheduleNames();
    std::string out;
    for (size_t k = 0; k < names.size(); ++k)
        out += (k == 0 ? "" : k + 1 == names.size() ? " or " : ", ") + names[k];
    return out;
}

PipelineShape pipelineShapeOf(const Scenario& scenario) {
    PipelineShape shape;
    shape.stages = std::max(1, scenario.topology.stages);
    shape.microbatches = std::max(1, scenario.strategy.microbatches);
    shape.chunks_per_rank = std::max(1, scenario.strategy.chunks_per_rank);
    return shape;
}

bool splitsBackward(const Scenario& scenario) {
    const PipelineScheduleSpec* spec = findPipelineSchedule(scenario.strategy.schedule);
    return spec && spec->splits_backward;
}

std::string pipelineShapeProblem(const std::string& name, const PipelineShape& s) {
    const PipelineScheduleSpec* spec = findPipelineSchedule(name);
    if (!spec)
        return "unknown pipeline schedule \"" + name + "\" (expected " + pipelineScheduleNameList() + ")";
    if (s.stages < 1 || s.microbatches < 1 || s.chunks_per_rank < 1)
        return "stages, microbatches and chunks must be >= 1";
    if (spec->several_chunks && s.chunks_per_rank < 2)
        return name + " needs chunks_per_rank >= 2 (with 1 chunk per rank it is plain 1f1b)";
    if (!spec->several_chunks && s.chunks_per_rank != 1)
        return name + " runs one chunk per rank: chunks_per_rank must be 1 (use schedule = \"interleaved\")";
    return spec->shape_problem ? spec->shape_problem(s) : "";
}

PipelineSchedule makePipelineSchedule(const std::string& name, const PipelineShape& shape) {
    const std::string problem = pipelineShapeProblem(name, shape);
    if (!problem.empty())
        throw UsageError(problem);
    return pipelineSchedule(name).generate(shape);
}

double bubbleTheory(const std::string& name, const PipelineShape& s, double t_f, double t_b, double t_w) {
    const PipelineScheduleSpec* spec = findPipelineSchedule(name);
    return spec ? spec->bubble(s, t_f, t_b, t_w) : 0.0;
}

} // namespace dt
