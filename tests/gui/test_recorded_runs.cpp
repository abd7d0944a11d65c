// test_recorded_runs.cpp: real recordings, one per strategy, read by the
// app's model. The views read RunModel and runStateAt (the state at the time
// cursor), which the app computes from the events on its own; the engine's
// summary computes the same facts from the same run in summary.cpp. If either
// side drifts (an event kind renamed, a counter's meaning changed, a span
// paired wrongly), the two stop agreeing here, not in front of a room.
//
// Per strategy: `dtrun run --record R --summary S` on a small model (3 steps),
// then readRecording(R) -> RunModel -> runStateAt(end), and per rank:
//   state           finished (every rank, every strategy)
//   steps           the last completed step (committed steps under fault tolerance)
//   loss            the mean of the last step's LossValue counters == final_loss
//   bytes sent      the cost model's counter == bytes_sent
//   memory          the largest sample per category == measured_held; the
//                   allocator's peak == step_peak
//   checksum        the rank details' checksum (checksumAt) == params_checksum
//   collectives     closed comm spans == the summary's collective count
#include "dtlab/recording.hpp"
#include "integration/process_helpers.hpp"
#include "model/run_model.hpp"
#include "model/run_state_at.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using dt::EventKind;
using dt::app::RunModel;

struct RecordedCase {
    std::string name;
    std::string toml;
    bool fault_tolerant = false;
};

it::ScenarioSpec smallSpec(const std::string& strategy, int ranks) {
    it::ScenarioSpec spec;
    spec.name = "recorded " + strategy;
    spec.strategy = strategy;
    spec.ranks = ranks;
    spec.steps = 3;
    spec.d_model = 32;
    spec.layers = 2;
    spec.heads = 2;
    return spec;
}

std::vector<RecordedCase> cases() {
    std::vector<RecordedCase> out;
    for (const char* kind : {"ddp", "zero1", "zero2", "fsdp", "tensor_parallel"})
        out.push_back({kind, it::scenarioToml(smallSpec(kind, 2))});
    {
        it::ScenarioSpec spec = smallSpec("hsdp", 4);
        spec.replicas = 2;
        out.push_back({"hsdp", it::scenarioToml(spec)});
    }
    {
        it::ScenarioSpec spec = smallSpec("pipeline", 2);
        spec.strategy_toml = "microbatches = 2\n";
        std::string toml = it::scenarioToml(spec);
        const std::string replicas = "replicas = 1\n";
        toml.replace(toml.find(replicas), replicas.size(), replicas + "stages = 2\n");
        out.push_back({"pipeline", toml});
    }
    {
        it::ScenarioSpec spec = smallSpec("diloco", 2);
        spec.extra_toml = "[diloco]\ninner_steps = 2\n";
        out.push_back({"diloco", it::scenarioToml(spec)});
    }
    {
        it::ScenarioSpec spec = smallSpec("ddp", 2);
        spec.extra_toml = "[fault_tolerance]\nenabled = true\n";
        out.push_back({"fault-tolerant ddp", it::scenarioToml(spec), true});
    }
    return out;
}

std::string hex16(uint64_t v) {
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
    return buf;
}

} // namespace

TEST_CASE("Real recordings of every strategy say in the app's model what the summary says",
          "[gui][recorded]") {
    it::TempDir dir("dtlab-recorded");
    for (const RecordedCase& c : cases()) {
        DYNAMIC_SECTION(c.name) {
            const std::string scenario = dir.write("run.toml", c.toml);
            const std::string recording = dir.file("run.dtrec"), summary_path = dir.file("s.json");
            const auto r =
                it::runDtrun({"run", scenario, "--record", recording, "--summary", summary_path, "--quiet"},
                             it::ProcessOptions{{}, {}, 180.0, ""});
            INFO(it::describe(r));
            REQUIRE(r.exit_code == 0);
            const auto summary = it::readJsonFile(summary_path);
            REQUIRE(summary["ok"] == true);
            const int steps = summary["steps"];
            REQUIRE(steps == 3);

            const dt::RecordingLoad load = dt::readRecording(recording);
            REQUIRE(load.complete);
            const dt::RunRecord& record = load.record;
            RunModel model;
            model.reset(record.scenario, int(record.ranks.size()));
            model.ingest(record.events.data(), record.events.size());
            model.ingestLogs(record.logs.data(), record.logs.size());
            const dt::app::RunStateAt at = dt::app::runStateAt(model, model.tEnd());
            REQUIRE(int(at.ranks.size()) == int(summary["ranks"]));

            double loss_sum = 0.0;
            int loss_ranks = 0;
            int64_t comm_spans = 0;
            for (int rank = 0; rank < model.world(); ++rank) {
                CAPTURE(rank);
                const dt::RankProgress& p = at.ranks[size_t(rank)];
                CHECK(p.state == dt::RankState::Finished);
                if (c.fault_tolerant)
                    CHECK(p.committed == steps);
                else
                    CHECK(p.step == steps - 1);
                CHECK(at.bytes_sent[size_t(rank)] == summary["bytes_sent"][size_t(rank)].get<double>());

                // The memory view's bars: the largest sample of each category, and the allocator's peak.
                const dt::app::RankMemoryAt& m = at.memory[size_t(rank)];
                const auto& peaks = summary["peak_memory"][size_t(rank)];
                REQUIRE(m.measured);
                const auto& held = peaks["measured_held"];
                CHECK(m.peak[0] == held["parameters"].get<int64_t>());
                CHECK(m.peak[1] == held["gradients"].get<int64_t>());
                CHECK(m.peak[2] == held["optimizer_state"].get<int64_t>());
                CHECK(m.peak[3] == held["activations"].get<int64_t>());
                CHECK(m.peak[4] == held["comm_buffers"].get<int64_t>());
                CHECK(m.allocator_peak == peaks["step_peak"].get<double>());

                // The rank details' weights checksum: the rank's last ParamsChecksum.
                const dt::Event* checksum = dt::app::checksumAt(model.lane(rank), model.tEnd());
                REQUIRE(checksum != nullptr);
                CHECK(hex16(checksum->seq) == summary["params_checksum"][size_t(rank)].get<std::string>());

                // The metrics view's loss at the last step (a pipeline: its last stage only).
                for (const dt::app::CounterPoint& point :
                     model.lane(rank).counters[size_t(EventKind::LossValue)])
                    if (point.step == steps - 1) {
                        loss_sum += point.value;
                        ++loss_ranks;
                        break;
                    }
                for (const dt::app::SpanRecord& s : model.lane(rank).comm)
                    comm_spans += !s.open() && !s.failed;
            }
            REQUIRE(loss_ranks > 0);
            CHECK(loss_sum / loss_ranks == Approx(summary["final_loss"].get<double>()).epsilon(1e-12));
            int64_t summary_collectives = 0;
            for (const auto& [kind, tally] : summary["collectives"].items())
                summary_collectives += tally["count"].get<int64_t>();
            CHECK(comm_spans == summary_collectives);
            CHECK(model.openCollectives() == 0);
        }
    }
}
