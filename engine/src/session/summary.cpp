// summary.cpp: the run summary JSON (dtrun --summary FILE), computed from a RunRecord.
//
// Format: one JSON object, pretty-printed with an indent of 2 and ending with a
// newline; "schema_version": 1. Arrays named "per rank" are indexed by rank
// (length = record.ranks.size()). Every field is described in docs/summary.md.
//
// One pass over the events fills a RankTally per rank; the JSON is built from
// the tallies. Events of the Session itself (rank -1) or of a rank outside the
// record are not counted.
#include "dtlab/summary.hpp"

#include "session/clock_report.hpp"

#include "dtlab/collective_cost.hpp"
#include "dtlab/hung_collectives.hpp"
#include "dtlab/pipeline_measure.hpp"
#include "dtlab/recovery_measure.hpp"
#include "dtlab/sharding_theory.hpp"
#include "dtlab/swarm_measure.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

namespace dt {
namespace {

using Json = nlohmann::ordered_json; // keeps fields in the documented order

// Peak memory slots, in the order of the "peak_memory" object.
enum MemSlot {
    kMemParameters,
    kMemGradients,
    kMemOptimizer,
    kMemActivations,
    kMemCommBuffers,
    kMemLivePeak,
    kMemParamsMaterialized,
    kMemHost,
    kMemStepPeak,                          // MemPeak alone: the allocator's peak since set-up ended
    kMemStartupPeak,                       // the allocator's peak during set-up
    kMemRss,                               // the process's resident set
    kMemMeasuredFirst,                     // the allocator's peak per owner tag, kMemoryOwners slots
    kMemHeldFirst = kMemMeasuredFirst + 6, // the largest live bytes per owner tag at a sample point
    kMemSlots = kMemHeldFirst + 6
};
// The measured categories in MemoryOwner order (memory/tracking_allocator.hpp)
// and the counter kind that carries each.
constexpr std::pair<const char*, EventKind> kMeasuredCategories[] = {
    {"parameters", EventKind::MemMeasuredParameters},     {"gradients", EventKind::MemMeasuredGradients},
    {"optimizer_state", EventKind::MemMeasuredOptimizer}, {"comm_buffers", EventKind::MemMeasuredCommBuffers},
    {"activations", EventKind::MemMeasuredActivations},   {"temporaries", EventKind::MemMeasuredTemporaries},
};
static_assert(std::size(kMeasuredCategories) == kMemSlots - kMemHeldFirst);

// Everything the summary needs to know about one rank.
struct RankTally {
    std::map<int, int64_t> step_dur_ns;              // step -> duration of its Step span (the last one seen)
    std::map<int, int64_t> step_end_ns;              // step -> end of that span (Session clock)
    std::map<int, double> loss_by_step;              // step -> last LossValue counter seen for that step
    std::map<int, double> eval_loss, eval_loss_fp32; // step -> EvalLoss / EvalLossFp32 ([run] eval_every)
    double bytes_sent = 0.0;                         // last cumulative BytesSent counter
    double bytes_received = 0.0;                     // last cumulative BytesReceived counter
    double bytes_sent_measured = 0.0;                // last cumulative BytesSentMeasured counter
    double mem_peak[kMemSlots] = {};                 // max over the Mem* counters
    bool has_checksum = false;
    uint64_t checksum = 0;       // seq of the last ParamsChecksum instant
    double dropped_events = 0.0; // last cumulative DroppedEvents counter
    // offload_optimizer: each step's copies and host-side AdamW
    std::vector<double> grads_to_host_ms, params_to_device_ms, optimizer_ms;
    int64_t offload_bytes = 0; // bytes of one copy (the last seen)
};

struct CollectiveTally {
    int64_t count = 0;     // WorkCompleted records, all ranks together
    int64_t bytes = 0;     // their payload bytes
    int64_t max_bytes = 0; // the largest payload of one record (DiLoCo: the peak per sync)
};

// A counter carrying bytes or a count: a double on the wire, an integer here.
int64_t toInteger(double value) {
    if (!std::isfinite(value))
        return 0;
    return static_cast<int64_t>(std::llround(value));
}

// Median of a list of numbers (mean of the middle two when the count is even).
double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    if (n % 2 == 1)
        return values[n / 2];
    return 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::string checksumHex(uint64_t checksum) {
    char text[17];
    std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(checksum));
    return text;
}

// Mean over ranks of the loss reported for `step`; null when no rank reported one.
Json meanLoss(const std::vector<RankTally>& tallies, int step) {
    double sum = 0.0;
    int count = 0;
    for (const RankTally& tally : tallies) {
        auto it = tally.loss_by_step.find(step);
        if (it == tally.loss_by_step.end())
            continue;
        sum += it->second;
        ++count;
    }
    if (count == 0)
        return nullptr;
    const double mean = sum / count;
    if (!std::isfinite(mean))
        return nullptr; // a diverged loss is not valid JSON
    return mean;
}

// offload_optimizer: per rank, the median time of each step's two copies and of
// AdamW on the host, the copy rate measured here (one RAM: memcpy speed) and,
// labelled as theory, what the same bytes take over a PCIe 4.0 x16 link.
Json offloadJson(const std::vector<RankTally>& tallies) {
    constexpr double kPcie4x16GBs = 31.5; // theory: 16 GT/s x 16 lanes, 128b/130b, one direction
    const auto medianOrNull = [](const std::vector<double>& v) {
        return v.empty() ? Json(nullptr) : Json(median(v));
    };
    Json bytes = Json::array(), down = Json::array(), up = Json::array(), adam = Json::array(),
         rate = Json::array(), pcie = Json::array();
    for (const RankTally& t : tallies) {
        bytes.push_back(t.offload_bytes);
        down.push_back(medianOrNull(t.grads_to_host_ms));
        up.push_back(medianOrNull(t.params_to_device_ms));
        adam.push_back(medianOrNull(t.optimizer_ms));
        if (t.grads_to_host_ms.empty() || t.params_to_device_ms.empty()) {
            rate.push_back(nullptr);
        } else {
            const double ms = median(t.grads_to_host_ms) + median(t.params_to_device_ms);
            rate.push_back(ms > 0.0 ? Json(2.0 * double(t.offload_bytes) / (ms * 1e6)) : Json(nullptr));
        }
        pcie.push_back(double(t.offload_bytes) / (kPcie4x16GBs * 1e9) * 1e3);
    }
    return Json{{"bytes_each_way_per_step", bytes}, {"grads_to_host_ms_median", down},
                {"params_to_device_ms_median", up}, {"host_optimizer_ms_median", adam},
                {"copy_gb_s_measured", rate},       {"pcie4_x16_ms_each_way_theory", pcie}};
}

void raisePeak(RankTally& tally, MemSlot slot, double value) {
    if (value > tally.mem_peak[slot])
        tally.mem_peak[slot] = value; // NaN never raises
}

void tallyCounter(RankTally& tally, const Event& e) {
    switch (e.kind) {
    case EventKind::LossValue:
        if (e.step >= 0)
            tally.loss_by_step[e.step] = e.value;
        break;
    case EventKind::EvalLoss:
        tally.eval_loss[e.step] = e.value;
        break;
    case EventKind::EvalLossFp32:
        tally.eval_loss_fp32[e.step] = e.value;
        break;
    case EventKind::BytesSent:
        tally.bytes_sent = e.value;
        break;
    case EventKind::BytesReceived:
        tally.bytes_received = e.value;
        break;
    case EventKind::BytesSentMeasured:
        tally.bytes_sent_measured = e.value;
        break;
    case EventKind::DroppedEvents:
        tally.dropped_events = e.value;
        break;
    case EventKind::MemParameters:
        raisePeak(tally, kMemParameters, e.value);
        break;
    case EventKind::MemGradients:
        raisePeak(tally, kMemGradients, e.value);
        break;
    case EventKind::MemOptimizer:
        raisePeak(tally, kMemOptimizer, e.value);
        break;
    case EventKind::MemActivations:
        raisePeak(tally, kMemActivations, e.value);
        break;
    case EventKind::MemCommBuffers:
        raisePeak(tally, kMemCommBuffers, e.value);
        break;
    case EventKind::MemParamsMaterialized:
        raisePeak(tally, kMemParamsMaterialized, e.value);
        break;
    case EventKind::MemHost:
        raisePeak(tally, kMemHost, e.value);
        break;
    // The peak of live memory: the MemPeak counter, or a higher MemLive sample.
    case EventKind::MemPeak:
        raisePeak(tally, kMemStepPeak, e.value);
        raisePeak(tally, kMemLivePeak, e.value);
        break;
    case EventKind::MemLive:
        raisePeak(tally, kMemLivePeak, e.value);
        break;
    case EventKind::MemStartupPeak:
        raisePeak(tally, kMemStartupPeak, e.value);
        break;
    case EventKind::MemRss:
        raisePeak(tally, kMemRss, e.value);
        break;
    default:
        for (size_t k = 0; k < std::size(kMeasuredCategories); ++k)
            if (e.kind == kMeasuredCategories[k].second) { // bytes: the allocator's own peak for the owner
                raisePeak(tally, MemSlot(kMemMeasuredFirst + k), std::max(e.value, double(e.bytes)));
                raisePeak(tally, MemSlot(kMemHeldFirst + k), e.value);
            }
        break;
    }
}

// [strategy] kind = "collectives": per (backend, op, size) the mean over
// ranks of each rank's median call time and bus bandwidth, and the
// alpha-beta cost model fitted per (backend, op) (collective_cost.hpp).
Json busBandwidthJson(const RunRecord& record) {
    const BusBandwidthMeasure m = measureBusBandwidth(record.events);
    Json points = Json::array();
    for (const BusBandwidthPoint& p : m.points)
        points.push_back(Json{{"backend", std::string(commBackendLabel(p.backend))},
                              {"op", p.op},
                              {"size_bytes", p.size_bytes},
                              {"time_us", p.seconds * 1e6},
                              {"bus_bandwidth_gbs", p.gbs}});
    Json model = Json::array();
    for (const BusBandwidthModel& f : m.models)
        model.push_back(Json{{"backend", std::string(commBackendLabel(f.backend))},
                             {"op", f.op},
                             {"alpha_us", f.fit.alpha_s * 1e6},
                             {"bandwidth_gbs", f.fit.bandwidth_bytes_s / 1e9}});
    return Json{{"ranks", m.ranks}, {"points", points}, {"cost_model", model}};
}

// Committed vs attempted steps and one entry per fault (recovery_measure.hpp).
Json faultToleranceJson(const RunRecord& record) {
    const RecoveryMeasure m =
        measureRecoveries(record.events, int(record.ranks.size()), ftGroupSize(record.scenario));
    const auto time = [](double ms) { return ms < 0 ? Json(nullptr) : Json(ms); };
    Json recoveries = Json::array();
    for (const Recovery& r : m.recoveries)
        recoveries.push_back(Json{{"fault", r.fault},
                                  {"replica", r.replica},
                                  {"fault_s", double(r.fault_ns - record.t_start_ns) / 1e9},
                                  {"detected_ms", time(r.detected_ms)},
                                  {"detected_by", r.detected_by},
                                  {"new_quorum_ms", time(r.new_quorum_ms)},
                                  {"new_quorum_id", r.new_quorum_id},
                                  {"survivors_commit_ms", time(r.survivors_commit_ms)},
                                  {"restarted_ms", time(r.restarted_ms)},
                                  {"heal_end_ms", time(r.heal_ms)},
                                  {"heal_duration_ms", time(r.heal_duration_ms)},
                                  {"heal_bytes", r.heal_bytes},
                                  {"heal_source", r.heal_source},
                                  {"heal_transport", r.heal_transport},
                                  {"heal_chunks", r.heal_chunks},
                                  {"rejoined_ms", time(r.rejoined_ms)}});
    Json committed = Json::array(), aborted = Json::array(), heals = Json::array();
    for (const ReplicaCommits& c : m.replicas) {
        committed.push_back(c.committed);
        aborted.push_back(c.aborted);
        heals.push_back(c.heals);
    }
    return Json{{"committed_steps", committed},
                {"aborted_steps", aborted},
                {"attempted_steps_total", m.committed_total + m.aborted_total},
                {"committed_steps_total", m.committed_total},
                {"heals", heals},
                {"steps_rolled_back", m.steps_rolled_back},
                {"rollbacks", m.rollbacks},
                {"quorums", m.quorums},
                {"recoveries", recoveries}};
}

} // namespace

// Collectives that never completed, with the ranks that started them and the
// ranks that never joined (hung_collectives.hpp; the run is over, so every
// collective still open counts).
// [strategy] kind = "swarm": routing, failover and DiLoCo rounds (swarm_measure.hpp).
static Json swarmJson(const RunRecord& record) {
    const SwarmMeasure m = measureSwarm(record.scenario, record.events);
    Json servers = Json::array();
    for (const SwarmServerTally& s : m.servers)
        servers.push_back(Json{{"rank", s.rank},
                               {"stage", s.stage},
                               {"server", s.server},
                               {"forward_calls", s.forward_calls},
                               {"backward_calls", s.backward_calls},
                               {"dropped_calls", s.dropped_calls},
                               {"inner_steps", s.inner_steps},
                               {"rounds_led", s.rounds_led},
                               {"starts", s.starts},
                               {"bytes", s.bytes}});
    Json deaths = Json::array();
    for (const SwarmDeath& d : m.deaths)
        deaths.push_back(
            Json{{"rank", d.rank},
                 {"at_s", double(d.t_ns - record.t_start_ns) / 1e9},
                 {"gradients_lost", d.gradients_lost},
                 {"reroute_ms", d.reroute_ms < 0 ? Json(nullptr) : Json(d.reroute_ms)},
                 {"back_at_s",
                  d.back_ns < 0 ? Json(nullptr) : Json(double(d.back_ns - record.t_start_ns) / 1e9)}});
    const SwarmConfig& w = record.scenario.swarm;
    return Json{{"trainers", w.trainers},
                {"stages", record.scenario.topology.stages},
                {"servers_per_stage", w.servers_per_stage},
                {"routing", w.routing},
                {"microbatches", m.microbatches},
                {"microbatches_expected",
                 int64_t(w.trainers) * record.scenario.run.steps * record.scenario.strategy.microbatches},
                {"backward_by_stage", m.backward_by_stage},
                {"reroutes", m.reroutes_connection + m.reroutes_timeout},
                {"reroutes_connection", m.reroutes_connection},
                {"reroutes_timeout", m.reroutes_timeout},
                {"stage_empty_waits", m.stage_empty_waits},
                {"outer_rounds", m.outer_rounds},
                {"samples_per_s", m.samples_per_s},
                {"servers", servers},
                {"deaths", deaths}};
}

static Json hungCollectivesJson(const RunRecord& record) {
    const HangQuery query = hangQueryFor(record.scenario, record.t_end_ns, true);
    const int world = static_cast<int>(record.ranks.size());
    Json out = Json::array();
    for (const HungCollective& h : findHungCollectives(workPartsFromEvents(record.events),
                                                       groupMembersFor(record.scenario, world), query))
        out.push_back(Json{{"collective", h.what},
                           {"kind", std::string(eventKindLabel(h.kind))},
                           {"group", int(h.group)},
                           {"seq", h.seq},
                           {"step", h.step},
                           {"unit", h.unit},
                           {"group_ranks", h.group_ranks},
                           {"started_ranks", h.started_ranks},
                           {"failed_ranks", h.failed_ranks},
                           {"missing_ranks", h.missing_ranks},
                           {"queued_ranks", h.queued_ranks},
                           {"open_since_s", static_cast<double>(h.open_since_ns - record.t_start_ns) / 1e9},
                           {"diagnosis", h.diagnosis}});
    return out;
}

std::string summaryJson(const RunRecord& record) {
    const int worldSize = static_cast<int>(record.ranks.size());
    std::vector<RankTally> tallies(static_cast<size_t>(worldSize));

    // Collectives: Work records are correlated by (rank, kind, group, backend,
    // peer, seq): seq counts per communicator.
    using WorkKey = std::tuple<int, EventKind, uint8_t, CommBackend, int16_t, uint64_t>;
    std::map<EventKind, CollectiveTally> collectives;
    std::map<WorkKey, int64_t> openWork; // started, not yet ended -> bytes of the start
    int64_t failedCollectives = 0;
    int64_t openCollectiveWorks = 0; // per-rank Works started and never ended

    // ---- one pass over the events -------------------------------------------
    for (const Event& e : record.events) {
        if (e.rank < 0 || e.rank >= worldSize)
            continue;
        RankTally& tally = tallies[static_cast<size_t>(e.rank)];
        const WorkKey key{e.rank, e.kind, e.group, e.backend, e.peer, e.seq};
        switch (e.phase) {
        case EventPhase::Span:
            if (e.kind == EventKind::Step && e.step >= 0) {
                tally.step_dur_ns[e.step] = e.dur_ns;
                tally.step_end_ns[e.step] = e.t_ns + e.dur_ns;
            } else if (e.kind == EventKind::GradsToHost) {
                tally.grads_to_host_ms.push_back(double(e.dur_ns) / 1e6);
                tally.offload_bytes = e.bytes;
            } else if (e.kind == EventKind::ParamsToDevice) {
                tally.params_to_device_ms.push_back(double(e.dur_ns) / 1e6);
            } else if (e.kind == EventKind::Optimizer && e.value == kOptimizerOnHost) {
                tally.optimizer_ms.push_back(double(e.dur_ns) / 1e6);
            }
            break;
        case EventPhase::Counter:
            tallyCounter(tally, e);
            break;
        case EventPhase::Instant:
            if (e.kind == EventKind::ParamsChecksum) {
                tally.has_checksum = true;
                tally.checksum = e.seq;
            }
            break;
        case EventPhase::WorkScheduled:
            break;
        case EventPhase::WorkStarted: {
            auto [it, inserted] = openWork.emplace(key, e.bytes);
            if (!inserted) { // the same (rank, kind, seq) started again: the first never ended
                ++openCollectiveWorks;
                it->second = e.bytes;
            }
            break;
        }
        case EventPhase::WorkCompleted:
        case EventPhase::WorkFailed: {
            int64_t bytes = e.bytes;
            auto it = openWork.find(key);
            if (it != openWork.end()) {
                if (bytes <= 0)
                    bytes = it->second; // the start carried the size
                openWork.erase(it);
            }
            if (e.phase == EventPhase::WorkFailed) {
                ++failedCollectives;
            } else {
                CollectiveTally& c = collectives[e.kind];
                c.count += 1;
                c.bytes += bytes;
                c.max_bytes = std::max<int64_t>(c.max_bytes, bytes);
            }
            break;
        }
        }
    }
    openCollectiveWorks += static_cast<int64_t>(openWork.size());

    // ---- steps completed by every rank --------------------------------------
    std::vector<int> completedSteps; // ascending
    if (record.scenario.fault_tolerance.enabled) {
        // Replicas come and go and a healed one skips steps: a step counts
        // once any replica committed it (has its loss).
        std::set<int> committed;
        for (const RankTally& tally : tallies)
            for (const auto& [step, loss] : tally.loss_by_step) {
                (void)loss;
                committed.insert(step);
            }
        completedSteps.assign(committed.begin(), committed.end());
    } else if (worldSize > 0) {
        // A swarm's servers have no steps: its trainers' count.
        const size_t stepping = record.scenario.strategy.kind == StrategyKind::Swarm
                                    ? size_t(std::clamp(record.scenario.swarm.trainers, 1, worldSize))
                                    : tallies.size();
        for (const auto& [step, dur] : tallies[0].step_dur_ns) {
            (void)dur;
            bool everyRank = true;
            for (size_t r = 0; r < stepping; ++r)
                everyRank = everyRank && tallies[r].step_dur_ns.count(step) > 0;
            if (everyRank)
                completedSteps.push_back(step);
        }
    }

    // ---- the JSON, in the documented order ------------------------------------
    Json j;
    j["schema_version"] = 1;
    j["scenario"] = record.scenario.name;
    j["ok"] = record.ok;
    j["failure_reason"] = record.failure_reason;
    j["ranks"] = worldSize;
    j["strategy"] = strategyKindName(record.scenario.strategy.kind);
    j["steps_requested"] = record.scenario.run.steps;
    j["steps"] = static_cast<int64_t>(completedSteps.size());
    j["initial_loss"] = completedSteps.empty() ? Json(nullptr) : meanLoss(tallies, completedSteps.front());
    j["final_loss"] = completedSteps.empty() ? Json(nullptr) : meanLoss(tallies, completedSteps.back());
    Json lossByStep = Json::array();
    for (int step : completedSteps)
        lossByStep.push_back(meanLoss(tallies, step));
    j["loss_by_step"] = lossByStep;
    // [run] eval_every: rank 0's eval loss on its fixed batch, as trained and
    // (QAT) in fp32; null where a value is not finite.
    {
        Json eval = Json::object();
        Json steps = Json::array(), loss = Json::array(), fp32 = Json::array();
        const auto finite = [](double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); };
        if (worldSize > 0)
            for (const auto& [step, value] : tallies[0].eval_loss) {
                steps.push_back(step);
                loss.push_back(finite(value));
                const auto it = tallies[0].eval_loss_fp32.find(step);
                fp32.push_back(it == tallies[0].eval_loss_fp32.end() ? Json(nullptr) : finite(it->second));
            }
        eval["quantize"] = record.scenario.model.quantize;
        eval["every"] = record.scenario.run.eval_every;
        eval["steps"] = steps;
        eval["loss"] = loss;
        eval["loss_fp32"] = fp32;
        eval["final_loss"] = loss.empty() ? Json(nullptr) : loss.back();
        eval["final_loss_fp32"] = fp32.empty() ? Json(nullptr) : fp32.back();
        j["eval"] = eval;
    }
    // Wall-clock: seconds from the run's start to the end of each completed
    // step on its slowest rank (loss against time, for DiLoCo vs DDP).
    Json stepEndS = Json::array();
    for (int step : completedSteps) {
        int64_t end = 0;
        for (const RankTally& tally : tallies) {
            auto it = tally.step_end_ns.find(step);
            if (it != tally.step_end_ns.end())
                end = std::max(end, it->second);
        }
        stepEndS.push_back(end > 0 ? Json(double(end - record.t_start_ns) / 1e9) : Json(nullptr));
    }
    j["step_end_s_by_step"] = stepEndS;

    Json stepMs = Json::array();
    Json bytesSent = Json::array();
    Json bytesReceived = Json::array();
    Json bytesSentMeasured = Json::array();
    Json peakMemory = Json::array();
    Json checksums = Json::array();
    Json dropped = Json::array();
    int64_t droppedTotal = 0;
    for (const RankTally& tally : tallies) {
        // Median step time; the first step is warm-up and skipped when there are 3 or more.
        std::vector<double> durMs;
        for (const auto& [step, dur] : tally.step_dur_ns)
            durMs.push_back(static_cast<double>(dur) / 1e6);
        if (durMs.size() >= 3)
            durMs.erase(durMs.begin());
        stepMs.push_back(durMs.empty() ? Json(nullptr) : Json(median(durMs)));

        bytesSent.push_back(toInteger(tally.bytes_sent));
        bytesReceived.push_back(toInteger(tally.bytes_received));
        bytesSentMeasured.push_back(toInteger(tally.bytes_sent_measured));

        Json peak;
        peak["parameters"] = toInteger(tally.mem_peak[kMemParameters]);
        peak["gradients"] = toInteger(tally.mem_peak[kMemGradients]);
        peak["optimizer_state"] = toInteger(tally.mem_peak[kMemOptimizer]);
        peak["activations"] = toInteger(tally.mem_peak[kMemActivations]);
        peak["comm_buffers"] = toInteger(tally.mem_peak[kMemCommBuffers]);
        peak["live_peak"] = toInteger(tally.mem_peak[kMemLivePeak]);
        peak["params_materialized"] = toInteger(tally.mem_peak[kMemParamsMaterialized]);
        peak["host"] = toInteger(tally.mem_peak[kMemHost]);
        // Measured by the allocator (each block tagged with its owner where it was made).
        Json measured;
        for (size_t k = 0; k < std::size(kMeasuredCategories); ++k)
            measured[kMeasuredCategories[k].first] = toInteger(tally.mem_peak[kMemMeasuredFirst + k]);
        peak["measured"] = measured;
        // The same tags, live at the sample points (after forward, after the step): what stays
        // allocated, without the transients inside a phase.
        Json held;
        for (size_t k = 0; k < std::size(kMeasuredCategories); ++k)
            held[kMeasuredCategories[k].first] = toInteger(tally.mem_peak[kMemHeldFirst + k]);
        peak["measured_held"] = held;
        peak["step_peak"] = toInteger(tally.mem_peak[kMemStepPeak]);
        peak["startup_peak"] = toInteger(tally.mem_peak[kMemStartupPeak]);
        peak["rss"] = toInteger(tally.mem_peak[kMemRss]);
        peakMemory.push_back(peak);

        checksums.push_back(tally.has_checksum ? Json(checksumHex(tally.checksum)) : Json(nullptr));

        const int64_t rankDropped = toInteger(tally.dropped_events);
        dropped.push_back(rankDropped);
        droppedTotal += rankDropped;
    }
    j["step_ms_median"] = stepMs;
    j["bytes_sent"] = bytesSent;
    j["bytes_received"] = bytesReceived;
    j["bytes_sent_measured"] = bytesSentMeasured;
    j["peak_memory"] = peakMemory;
    if (strategyTraits(record.scenario.strategy.kind)
            .uses_stages) { // the bubble, measured and in theory (pipeline_measure.hpp)
        const PipelineMeasure pm = measurePipeline(record.events, record.scenario);
        j["pipeline"] = Json{{"schedule", record.scenario.strategy.schedule},
                             {"stages", record.scenario.topology.stages},
                             {"microbatches", record.scenario.strategy.microbatches},
                             {"chunks_per_rank", record.scenario.strategy.chunks_per_rank},
                             {"steps_measured", pm.steps_measured},
                             {"bubble_measured", pm.valid ? Json(pm.bubble) : Json(nullptr)},
                             {"bubble_per_rank", pm.bubble_per_rank},
                             {"bubble_theory", pm.valid ? Json(pm.bubble_theory) : Json(nullptr)},
                             {"bubble_simulated", pm.valid ? Json(pm.bubble_simulated) : Json(nullptr)},
                             {"t_forward_ms", pm.t_forward_ms},
                             {"t_backward_ms", pm.t_backward_ms},
                             {"t_weight_ms", pm.t_weight_ms}};
    }
    { // what the ZeRO / FSDP formulas predict per rank (sharding_theory.hpp), beside the measurement
        const ModelStateTheory t = modelStateTheory(record.scenario);
        j["theory"] = Json{{"formula", modelStateFormula(record.scenario.strategy)},
                           {"shards", shardCount(record.scenario)},
                           {"parameters", t.parameters},
                           {"gradients", t.gradients},
                           {"optimizer_state", t.optimizer_state},
                           {"params_materialized_peak", t.materialized_peak},
                           {"host", t.host},
                           {"offload_bytes_each_way_per_step", t.offload_bytes_each_way},
                           {"bytes_sent_per_step", bytesPerStepTheory(record.scenario)}};
    }
    if (record.scenario.strategy.offload_optimizer)
        j["offload"] = offloadJson(tallies);
    if (record.scenario.fault_tolerance.enabled)
        j["fault_tolerance"] = faultToleranceJson(record);
    if (record.scenario.strategy.kind == StrategyKind::Swarm)
        j["swarm"] = swarmJson(record);
    if (record.scenario.strategy.kind == StrategyKind::Collectives)
        j["bus_bandwidth"] = busBandwidthJson(record);
    j["backend"] = record.scenario.topology.backend;
    j["params_checksum"] = checksums;
    j["dropped_events"] = dropped;
    j["dropped_events_total"] = droppedTotal;

    Json collectivesJson = Json::object();
    for (const auto& [kind, c] : collectives) {
        collectivesJson[std::string(eventKindLabel(kind))] =
            Json{{"count", c.count}, {"bytes", c.bytes}, {"max_bytes", c.max_bytes}};
    }
    j["collectives"] = collectivesJson;
    j["failed_collectives"] = failedCollectives;
    j["open_collective_works"] = openCollectiveWorks;
    j["hung_collectives"] = hungCollectivesJson(record);

    Json exits = Json::array();
    for (const RankInfo& info : record.ranks) {
        Json ex;
        ex["pid"] = info.pid;
        ex["host"] = info.host;
        ex["exited"] = info.exited;
        ex["exit_code"] = (info.exited && info.term_signal == 0) ? Json(info.exit_code) : Json(nullptr);
        ex["signal"] = info.term_signal;
        ex["error"] = info.error;
        exits.push_back(ex);
    }
    j["exit"] = exits;
    j["clock"] = clockReportJson(record);
    j["wall_time_s"] = static_cast<double>(record.t_end_ns - record.t_start_ns) / 1e9;

    // Error text from a rank may hold invalid UTF-8: replace it rather than throw.
    return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

} // namespace dt
