// test_scenario_json.cpp: the scenario's JSON round trip (how the Session
// hands the resolved scenario to its ranks) keeps every field.
#include "dtlab/scenario.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <stdexcept>
#include <string>

using dt::Scenario;
using dt::UsageError;

namespace {

const std::string kSourceDir = DTLAB_SOURCE_DIR;

std::string scenarioPath(const std::string& name) {
    return kSourceDir + "/scenarios/" + name;
}

} // namespace

TEST_CASE("The JSON round trip preserves every field", "[scenario]") {
    Scenario s;
    s.name = "round trip";
    s.description = "every field \"quoted\" and\nmultiline";
    s.path = "/tmp/x.toml";
    s.topology.ranks = 7;
    s.model.kind = "mlp";
    s.model.vocab = 300;
    s.model.context = 33;
    s.model.d_model = 96;
    s.model.layers = 3;
    s.model.heads = 6;
    s.model.mlp_ratio = 2;
    s.model.hidden = {512, 64, 32};
    s.data.source = "fashion_mnist";
    s.data.path = "/data/fmnist";
    s.data.batch_per_rank = 48;
    s.topology.replicas = 7;
    s.strategy.kind = dt::StrategyKind::Hsdp;
    s.strategy.bucket_mb = 0.25;
    s.strategy.overlap = false;
    s.strategy.forward_prefetch = true;
    s.strategy.backward_prefetch = false;
    s.strategy.prefetch_limit = 3;
    s.strategy.microbatches = 4;
    s.strategy.sync_every_microbatch = false;
    s.strategy.activation_checkpointing = true;
    s.run.checkpoint_dir = "/tmp/ckpt";
    s.run.checkpoint_every = 5;
    s.run.resume_from = "/tmp/ckpt/step-9";
    s.optimizer.kind = "adamw";
    s.optimizer.lr = 1.2345678901234567e-4;
    s.optimizer.beta1 = 0.8;
    s.optimizer.beta2 = 0.95;
    s.optimizer.eps = 1e-6;
    s.optimizer.weight_decay = 0.1;
    s.run.steps = 123;
    s.run.seed = 18446744073709551615ull;
    s.run.timeout_s = 12.5;
    s.run.step_delay_ms = 3.25;
    s.telemetry.enabled = false;
    s.telemetry.queue_capacity = 1024;
    s.fault_tolerance.enabled = true;
    s.fault_tolerance.min_replicas = 2;
    s.fault_tolerance.heartbeat_timeout_ms = 750;
    s.fault_tolerance.restart = "manual";
    s.fault_tolerance.lighthouse = "10.0.0.1:29510";
    s.chaos.enabled = true;
    s.chaos.seed = 99;
    s.chaos.actions = {dt::FaultAction::Kill, dt::FaultAction::Partition};
    s.diloco.inner_steps = 40;
    s.diloco.outer_lr = 0.4;
    s.diloco.outer_momentum = 0.85;
    s.diloco.nesterov = false;
    s.diloco.fragments = 4;
    s.diloco.sync_delay = 3;
    s.diloco.alpha = 0.5;
    s.diloco.pseudo_gradient = "int4";
    s.network.bandwidth_mbit_s = 100;
    s.network.latency_ms = 50;
    s.faults.push_back(
        {dt::FaultAction::Hang, 5, 11, dt::FaultWhen::Step, 0.0, 2.5, 100.0, {"/tmp/x.toml", 40, 1}});
    s.faults.push_back(
        {dt::FaultAction::Kill, 2, 3, dt::FaultWhen::AllReduce, 0.0, 0.0, 100.0, {"/tmp/x.toml", 46, 2}});
    s.steps.push_back({"Watch the \"ranks\" start.\nTwo lines.",
                       "topology",
                       "step >= 1",
                       false,
                       "",
                       std::nullopt,
                       {"/tmp/x.toml", 50, 1}});
    s.steps.push_back({"Kill one.",
                       "",
                       "rank 3 dies",
                       true,
                       "ranks[3].dead == 1 and stopwatch.fault == 1",
                       dt::NarrationQuestion{"Which rank restarts?",
                                             "distinct(params_checksum) > 1",
                                             "",
                                             0.1,
                                             {"the same", "another"},
                                             "because",
                                             1.0,
                                             std::nullopt},
                       {"/tmp/x.toml", 54, 1}});

    Scenario r = dt::scenarioFromJson(dt::scenarioToJson(s));

    SECTION("scalars, strings and the hidden widths come back equal") {
        CHECK(r.name == s.name);
        CHECK(r.description == s.description);
        CHECK(r.path == s.path);
        CHECK(r.topology.ranks == 7);
        CHECK(r.model.kind == "mlp");
        CHECK(r.model.vocab == 300);
        CHECK(r.model.context == 33);
        CHECK(r.model.d_model == 96);
        CHECK(r.model.layers == 3);
        CHECK(r.model.heads == 6);
        CHECK(r.model.mlp_ratio == 2);
        CHECK(r.model.hidden == std::vector<int>{512, 64, 32});
        CHECK(r.data.source == "fashion_mnist");
        CHECK(r.data.path == "/data/fmnist");
        CHECK(r.data.batch_per_rank == 48);
        CHECK(r.topology.replicas == 7);
        CHECK(r.strategy.kind == dt::StrategyKind::Hsdp);
        CHECK(r.strategy.bucket_mb == 0.25);
        CHECK_FALSE(r.strategy.overlap);
        CHECK(r.strategy.forward_prefetch);
        CHECK_FALSE(r.strategy.backward_prefetch);
        CHECK(r.strategy.prefetch_limit == 3);
        CHECK(r.strategy.microbatches == 4);
        CHECK_FALSE(r.strategy.sync_every_microbatch);
        CHECK(r.strategy.activation_checkpointing);
        CHECK(r.run.checkpoint_dir == "/tmp/ckpt");
        CHECK(r.run.checkpoint_every == 5);
        CHECK(r.run.resume_from == "/tmp/ckpt/step-9");
        CHECK(r.optimizer.kind == "adamw");
        CHECK(r.optimizer.lr == s.optimizer.lr); // exact: doubles round-trip bit for bit
        CHECK(r.optimizer.beta1 == 0.8);
        CHECK(r.optimizer.beta2 == 0.95);
        CHECK(r.optimizer.eps == 1e-6);
        CHECK(r.optimizer.weight_decay == 0.1);
        CHECK(r.run.steps == 123);
        CHECK(r.run.seed == 18446744073709551615ull);
        CHECK(r.run.timeout_s == 12.5);
        CHECK(r.run.step_delay_ms == 3.25);
        CHECK_FALSE(r.telemetry.enabled);
        CHECK(r.telemetry.queue_capacity == 1024);
    }

    SECTION("faults come back in order with their source locations") {
        REQUIRE(r.faults.size() == 2);
        for (size_t i = 0; i < 2; ++i) {
            CHECK(r.faults[i].action == s.faults[i].action);
            CHECK(r.faults[i].rank == s.faults[i].rank);
            CHECK(r.faults[i].step == s.faults[i].step);
            CHECK(r.faults[i].when == s.faults[i].when);
            CHECK(r.faults[i].where.file == s.faults[i].where.file);
            CHECK(r.faults[i].where.line == s.faults[i].where.line);
            CHECK(r.faults[i].where.column == s.faults[i].where.column);
            CHECK(r.faults[i].duration_s == s.faults[i].duration_s);
            CHECK(r.faults[i].delay_ms == s.faults[i].delay_ms);
        }
    }

    SECTION("the fault-tolerance and chaos tables come back whole") {
        CHECK(r.fault_tolerance.enabled == s.fault_tolerance.enabled);
        CHECK(r.fault_tolerance.min_replicas == s.fault_tolerance.min_replicas);
        CHECK(r.fault_tolerance.heartbeat_timeout_ms == s.fault_tolerance.heartbeat_timeout_ms);
        CHECK(r.fault_tolerance.restart == s.fault_tolerance.restart);
        CHECK(r.fault_tolerance.lighthouse == s.fault_tolerance.lighthouse);
        CHECK(r.chaos.enabled == s.chaos.enabled);
        CHECK(r.chaos.seed == s.chaos.seed);
        CHECK(r.chaos.actions == s.chaos.actions);
        CHECK(r.diloco.inner_steps == 40);
        CHECK(r.diloco.outer_lr == 0.4);
        CHECK(r.diloco.outer_momentum == 0.85);
        CHECK(r.diloco.nesterov == false);
        CHECK(r.diloco.fragments == 4);
        CHECK(r.diloco.sync_delay == 3);
        CHECK(r.diloco.alpha == 0.5);
        CHECK(r.diloco.pseudo_gradient == "int4");
        CHECK(r.network.bandwidth_mbit_s == 100);
        CHECK(r.network.latency_ms == 50);
    }

    SECTION("narration steps come back in order with their source locations") {
        REQUIRE(r.steps.size() == 2);
        for (size_t i = 0; i < 2; ++i) {
            CHECK(r.steps[i].text == s.steps[i].text);
            CHECK(r.steps[i].highlight == s.steps[i].highlight);
            CHECK(r.steps[i].until == s.steps[i].until);
            CHECK(r.steps[i].pause == s.steps[i].pause);
            CHECK(r.steps[i].expect == s.steps[i].expect);
            CHECK(r.steps[i].question.has_value() == s.steps[i].question.has_value());
            CHECK(r.steps[i].where.file == s.steps[i].where.file);
            CHECK(r.steps[i].where.line == s.steps[i].where.line);
            CHECK(r.steps[i].where.column == s.steps[i].where.column);
        }
        REQUIRE(r.steps[1].question);
        CHECK(r.steps[1].question->ask == "Which rank restarts?");
        CHECK(r.steps[1].question->answer == "distinct(params_checksum) > 1");
        CHECK(r.steps[1].question->choices == std::vector<std::string>{"the same", "another"});
        CHECK(r.steps[1].question->explain == "because");
        CHECK(r.steps[1].question->formula_answer == std::optional<double>(1.0));
        CHECK_FALSE(r.steps[1].question->typical_mistake.has_value());
    }

    SECTION("a loaded scenario survives the round trip too") {
        for (const char* name : {"ddp_kill_rank.toml", "ddp_basics.toml"}) {
            Scenario loaded = dt::loadScenarioFile(scenarioPath(name));
            CHECK(dt::scenarioToJson(dt::scenarioFromJson(dt::scenarioToJson(loaded))) ==
                  dt::scenarioToJson(loaded));
        }
    }

    SECTION("JSON written before narration steps existed loads with none") {
        nlohmann::json j = nlohmann::json::parse(dt::scenarioToJson(s));
        j.erase("steps");
        CHECK(dt::scenarioFromJson(j.dump()).steps.empty());
    }

    SECTION("broken JSON is a UsageError") {
        CHECK_THROWS_AS(dt::scenarioFromJson("{\"name\": 1"), UsageError);
        CHECK_THROWS_WITH(dt::scenarioFromJson("{\"name\": \"x\"}"),
                          Catch::Contains("invalid scenario JSON"));
    }
}
