// what_if.cpp: see what_if.hpp.
#include "model/what_if.hpp"

#include "dtlab/closing_check.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/pipeline_schedule.hpp"
#include "dtlab/strategy_kind.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace dt::app {

namespace {

struct KnobInfo {
    const char* name;
    const char* help;
};

constexpr KnobInfo kKnobs[] = {
#define DT_KNOB(id, name, help) {name, help},
#include "model/what_if_knobs.def"
#undef DT_KNOB
};

std::string number(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
}

bool parseDouble(const std::string& text, double& out) {
    if (text.empty())
        return false;
    char* end = nullptr;
    errno = 0;
    out = std::strtod(text.c_str(), &end);
    return errno == 0 && end && *end == '\0' && std::isfinite(out);
}

bool parseInt(const std::string& text, int& out) {
    double v = 0.0;
    if (!parseDouble(text, v) || v != std::floor(v) || std::fabs(v) > 1e6)
        return false;
    out = int(v);
    return true;
}

} // namespace

const char* knobName(Knob knob) {
    return kKnobs[size_t(knob)].name;
}

const char* knobHelp(Knob knob) {
    return kKnobs[size_t(knob)].help;
}

std::vector<std::string> knobChoices(Knob knob) {
    switch (knob) {
    case Knob::Strategy: {
        std::vector<std::string> names;
        for (const std::string& name : strategyKindNames())
            if (name != "collectives") // the backend comparison is not a training strategy
                names.push_back(name);
        return names;
    }
    case Knob::Overlap:
    case Knob::ForwardPrefetch:
    case Knob::BackwardPrefetch:
        return {"on", "off"};
    case Knob::Schedule:
        return pipelineScheduleNames();
    case Knob::HealTransport:
        return {"pg", "http"};
    case Knob::Detection:
        return {"connection", "heartbeat"};
    default:
        return {};
    }
}

std::vector<Knob> knobsFor(const Scenario& s) {
    if (s.strategy.kind == StrategyKind::Collectives)
        return {Knob::Ranks, Knob::LinkMbit}; // the backend comparison keeps its shape
    if (s.fault_tolerance.enabled) // the quorum keeps its shape; how it heals and detects can change
        return {Knob::Ranks, Knob::LinkMbit, Knob::HealTransport, Knob::HealChunks, Knob::Detection};
    const StrategyTraits& t = strategyTraits(s.strategy.kind);
    std::vector<Knob> knobs = {Knob::Ranks, Knob::Strategy};
    if (s.strategy.kind == StrategyKind::Ddp)
        knobs.push_back(Knob::BucketMb);
    if (s.strategy.kind == StrategyKind::Ddp || s.strategy.kind == StrategyKind::Zero1 ||
        s.strategy.kind == StrategyKind::Zero2)
        knobs.push_back(Knob::Overlap);
    knobs.push_back(Knob::Microbatches);
    if (t.uses_stages) {
        knobs.push_back(Knob::Stages);
        knobs.push_back(Knob::Schedule);
    }
    if (t.shards_parameters) {
        knobs.push_back(Knob::ForwardPrefetch);
        knobs.push_back(Knob::BackwardPrefetch);
    }
    if (s.strategy.kind == StrategyKind::Diloco) {
        knobs.push_back(Knob::InnerSteps);
        knobs.push_back(Knob::Fragments);
    }
    knobs.push_back(Knob::LinkMbit);
    return knobs;
}

std::string knobValue(const Scenario& s, Knob knob) {
    switch (knob) {
    case Knob::Ranks:
        return std::to_string(s.topology.ranks);
    case Knob::Strategy:
        return strategyKindName(s.strategy.kind);
    case Knob::BucketMb:
        return number(s.strategy.bucket_mb);
    case Knob::Overlap:
        return s.strategy.overlap ? "on" : "off";
    case Knob::Microbatches:
        return std::to_string(s.strategy.microbatches);
    case Knob::Schedule:
        return s.strategy.schedule;
    case Knob::Stages:
        return std::to_string(s.topology.stages);
    case Knob::ForwardPrefetch:
        return s.strategy.forward_prefetch ? "on" : "off";
    case Knob::BackwardPrefetch:
        return s.strategy.backward_prefetch ? "on" : "off";
    case Knob::LinkMbit:
        return number(s.network.bandwidth_mbit_s);
    case Knob::InnerSteps:
        return std::to_string(s.diloco.inner_steps);
    case Knob::Fragments:
        return std::to_string(s.diloco.fragments);
    case Knob::HealTransport:
        return s.fault_tolerance.heal_transport;
    case Knob::HealChunks:
        return std::to_string(s.fault_tolerance.heal_chunks);
    case Knob::Detection:
        return s.fault_tolerance.detection;
    }
    return "";
}

std::string setKnob(Scenario& scenario, Knob knob, const std::string& text) {
    const std::string origin = std::string("what-if ") + knobName(knob);
    Scenario s = scenario;
    double d = 0.0;
    int i = 0;
    auto onOff = [&](bool& out) { // "on" or "off": the choices check below refused anything else
        out = text == "on";
        return std::string();
    };
    auto integer = [&](int& out) {
        if (!parseInt(text, i))
            return origin + ": expected a whole number, got '" + text + "'";
        out = i;
        return std::string();
    };
    // A knob with a short list of values takes one of them.
    if (const std::vector<std::string> choices = knobChoices(knob);
        !choices.empty() && std::find(choices.begin(), choices.end(), text) == choices.end()) {
        std::string list;
        for (const std::string& c : choices)
            list += (list.empty() ? "" : ", ") + c;
        return origin + ": expected one of " + list + ", got '" + text + "'";
    }
    std::string problem;
    switch (knob) {
    case Knob::Ranks:
        problem = integer(s.topology.ranks);
        break;
    case Knob::Strategy:
        try {
            s.strategy.kind = strategyKindFromOverride(text, origin);
        } catch (const std::exception& e) {
            problem = e.what();
        }
        break;
    case Knob::BucketMb:
        if (!parseDouble(text, d))
            problem = origin + ": expected a number of MiB, got '" + text + "'";
        s.strategy.bucket_mb = d;
        break;
    case Knob::Overlap:
        problem = onOff(s.strategy.overlap);
        break;
    case Knob::Microbatches:
        problem = integer(s.strategy.microbatches);
        break;
    case Knob::Schedule:
        s.strategy.schedule = text;
        break;
    case Knob::Stages:
        problem = integer(s.topology.stages);
        break;
    case Knob::ForwardPrefetch:
        problem = onOff(s.strategy.forward_prefetch);
        break;
    case Knob::BackwardPrefetch:
        problem = onOff(s.strategy.backward_prefetch);
        break;
    case Knob::LinkMbit:
        if (!parseDouble(text, d))
            problem = origin + ": expected Mbit/s (0 = uncapped), got '" + text + "'";
        s.network.bandwidth_mbit_s = d;
        break;
    case Knob::InnerSteps:
        problem = integer(s.diloco.inner_steps);
        break;
    case Knob::Fragments:
        problem = integer(s.diloco.fragments);
        break;
    case Knob::HealTransport:
        s.fault_tolerance.heal_transport = text;
        break;
    case Knob::HealChunks:
        problem = integer(s.fault_tolerance.heal_chunks);
        break;
    case Knob::Detection:
        s.fault_tolerance.detection = text;
        break;
    }
    if (!problem.empty())
        return problem;
    try {
        validateScenario(s, origin);
    } catch (const std::exception& e) {
        return e.what();
    }
    scenario = std::move(s);
    return "";
}

std::string describeChanges(const Scenario& before, const Scenario& after) {
    std::string out;
    for (size_t k = 0; k < std::size(kKnobs); ++k) {
        const Knob knob = Knob(k);
        const std::string a = knobValue(before, knob), b = knobValue(after, knob);
        if (a != b)
            out += (out.empty() ? "" : ", ") + std::string(knobName(knob)) + " " + b;
    }
    return out.empty() ? "the same settings" : out;
}

std::optional<double> ComparisonRow::change() const {
    if (!before || !now || *before == 0.0)
        return std::nullopt;
    return *now / *before - 1.0;
}

namespace {

// The fault-tolerance rows, from the summary's fault_tolerance.recoveries
// (docs/summary.md): every fault has a record, and a phase that never
// happened for it (a slow-down has no new quorum, a kill resumed from a
// checkpoint no heal) is null there, so each row takes the recoveries that
// have its values.
using Json = nlohmann::json;

// The summary's fault_tolerance.recoveries, or an empty array.
const Json& recoveriesOf(const Json& summary) {
    static const Json kNone = Json::array();
    if (const auto ft = summary.find("fault_tolerance"); ft != summary.end() && ft->is_object())
        if (const auto rec = ft->find("recoveries"); rec != ft->end() && rec->is_array())
            return *rec;
    return kNone;
}

std::optional<double> meanOfRecoveries(const Json& summary, const char* field) {
    double sum = 0.0;
    int n = 0;
    for (const Json& r : recoveriesOf(summary))
        if (const auto v = r.find(field); v != r.end() && v->is_number()) {
            sum += v->get<double>();
            n += 1;
        }
    return n > 0 ? std::optional<double>(sum / n) : std::nullopt;
}

std::optional<double> healRateGBps(const Json& summary) { // all heals' bytes over their time
    double bytes = 0.0, ms = 0.0;
    for (const Json& r : recoveriesOf(summary)) {
        const auto b = r.find("heal_bytes"), t = r.find("heal_duration_ms");
        if (b != r.end() && t != r.end() && b->is_number() && t->is_number() && t->get<double>() > 0) {
            bytes += b->get<double>();
            ms += t->get<double>();
        }
    }
    return ms > 0 ? std::optional<double>(bytes / ms / 1e6) : std::nullopt; // bytes per ms / 1e6 = GB/s
}

} // namespace

std::vector<ComparisonRow> compareRuns(const RunSide& before, const RunSide& now) {
    struct Measure {
        const char* label;
        const char* unit;
        const char* expression;                         // closing_check.hpp's grammar, or
        std::optional<double> (*recovery)(const Json&); // a recovery row computed here
        bool fault_tolerance = false;                   // the Quorum view shows it too
    };
    static const Measure kRows[] = {
        {"step time (mean of the ranks' medians)", "ms", "mean(step_ms_median)", nullptr},
        {"bytes sent per step and rank (cost model)", "MB", "mean(bytes_sent) / steps / 1e6", nullptr},
        {"peak memory per rank (allocator)", "MB", "max(peak_memory.step_peak) / 1e6", nullptr},
        {"pipeline bubble", "%", "pipeline.bubble_measured * 100", nullptr},
        {"death to new quorum (mean over faults)", "ms", nullptr,
         [](const Json& j) { return meanOfRecoveries(j, "new_quorum_ms"); }, true},
        {"heal transfer (mean over heals)", "ms", nullptr,
         [](const Json& j) { return meanOfRecoveries(j, "heal_duration_ms"); }, true},
        {"heal rate (all heals)", "GB/s", nullptr, &healRateGBps, true},
        {"steps aborted (all replicas)", "",
         "fault_tolerance.attempted_steps_total - fault_tolerance.committed_steps_total", nullptr, true},
        {"final loss", "", "final_loss", nullptr},
        {"steps done", "", "steps", nullptr},
    };
    const auto parse = [](const RunSide& side) {
        return side.summary.empty() ? Json() : Json::parse(side.summary, nullptr, /*allow_exceptions=*/false);
    };
    const Json before_json = parse(before), now_json = parse(now);
    std::vector<ComparisonRow> rows;
    for (const Measure& m : kRows) {
        ComparisonRow row{m.label, m.unit, std::nullopt, std::nullopt, m.fault_tolerance};
        const auto value = [&](const RunSide& side, const Json& json) -> std::optional<double> {
            if (side.summary.empty())
                return std::nullopt;
            if (m.recovery)
                return json.is_object() ? m.recovery(json) : std::nullopt;
            const MeasureOutcome o = evaluateMeasure(m.expression, side.summary);
            return o.ok ? std::optional<double>(o.value) : std::nullopt;
        };
        row.before = value(before, before_json);
        row.now = value(now, now_json);
        if (row.before || row.now)
            rows.push_back(row);
    }
    return rows;
}

} // namespace dt::app
