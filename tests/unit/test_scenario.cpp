// test_scenario.cpp: scenario loading: the shipped files, defaults, every kind
// of error with its exact line and column, and narrated [[steps]] and their
// conditions. The JSON round trip and validateScenario after command-line
// overrides are in test_scenario_json.cpp and test_scenario_validate.cpp.
#include "dtlab/scenario.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>

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

// The UsageError that parsing `text` as "t.toml" throws (the test fails if none).
UsageError parseError(const std::string& text, const std::string& sourceName = "t.toml") {
    try {
        (void)dt::parseScenarioText(text, sourceName);
    } catch (const UsageError& e) {
        return e;
    }
    FAIL("expected a UsageError for:\n" << text);
    throw std::logic_error("unreachable");
}

const std::string kHeader = "[scenario]\nname = \"t\"\n"; // lines 1-2 of most inline texts

} // namespace

TEST_CASE("Shipped scenario files load", "[scenario]") {
    SECTION("every file in scenarios/ loads without error") {
        int count = 0;
        for (const auto& entry : std::filesystem::directory_iterator(kSourceDir + "/scenarios")) {
            if (entry.path().extension() != ".toml")
                continue;
            INFO(entry.path().string());
            Scenario s = dt::loadScenarioFile(entry.path().string());
            CHECK(!s.name.empty());
            CHECK(s.path == entry.path().string());
            ++count;
        }
        CHECK(count >= 3);
    }

    SECTION("ddp_basics is four ranks of TinyGPT with DDP") {
        Scenario s = dt::loadScenarioFile(scenarioPath("ddp_basics.toml"));
        CHECK(s.name == "DDP basics");
        CHECK(s.description.find("Four ranks") == 0);
        CHECK(s.topology.ranks == 4);
        CHECK(s.model.kind == "tiny_gpt");
        CHECK(s.model.vocab == 128);
        CHECK(s.model.context == 64);
        CHECK(s.model.d_model == 128);
        CHECK(s.model.layers == 4);
        CHECK(s.model.heads == 4);
        CHECK(s.model.mlp_ratio == 4);
        CHECK(s.data.source == "fortunes");
        CHECK(s.data.path.empty());
        CHECK(s.data.batch_per_rank == 16);
        CHECK(s.strategy.kind == dt::StrategyKind::Ddp);
        CHECK(s.strategy.bucket_mb == 1.0);
        CHECK(s.strategy.overlap);
        CHECK(s.optimizer.kind == "adamw");
        CHECK(s.optimizer.lr == 3e-4);
        CHECK(s.run.steps == 40);
        CHECK(s.run.seed == 1);
        CHECK(s.run.timeout_s == 30.0);
        CHECK(s.faults.empty());
    }

    SECTION("ddp_basics narrates DDP in 4 to 8 steps that wait for real events") {
        Scenario s = dt::loadScenarioFile(scenarioPath("ddp_basics.toml"));
        REQUIRE(s.steps.size() >= 4);
        REQUIRE(s.steps.size() <= 8);
        bool waitsForAllReduce = false;
        bool waitsForDeath = false;
        for (const dt::NarrationStep& step : s.steps) {
            INFO(step.text);
            CHECK(!step.text.empty());
            CHECK(step.where.line > 0);
            dt::NarrationCondition c;
            CHECK(dt::parseNarrationCondition(step.until, c));
            waitsForAllReduce |= c.kind == dt::NarrationCondition::Kind::FirstAllReduceEnds;
            waitsForDeath |= c.kind == dt::NarrationCondition::Kind::RankDies;
        }
        CHECK(waitsForAllReduce);
        CHECK(waitsForDeath);
    }

    SECTION("mlp_fashion is two ranks of an MLP on Fashion-MNIST") {
        Scenario s = dt::loadScenarioFile(scenarioPath("mlp_fashion.toml"));
        CHECK(s.topology.ranks == 2);
        CHECK(s.model.kind == "mlp");
        CHECK(s.model.hidden == std::vector<int>{256, 128});
        CHECK(s.data.source == "fashion_mnist");
        CHECK(s.data.batch_per_rank == 64);
        CHECK(s.strategy.kind == dt::StrategyKind::Ddp);
        CHECK(s.optimizer.lr == 1e-3);
        CHECK(s.run.steps == 30);
    }

    SECTION("ddp_kill_rank kills rank 2 at the first all-reduce of step 3") {
        const std::string path = scenarioPath("ddp_kill_rank.toml");
        Scenario s = dt::loadScenarioFile(path);
        CHECK(s.topology.ranks == 4);
        CHECK(s.model.kind == "tiny_gpt");
        CHECK(s.run.steps == 20);
        CHECK(s.run.timeout_s == 10.0);
        REQUIRE(s.faults.size() == 1);
        const dt::FaultConfig& f = s.faults[0];
        CHECK(f.action == dt::FaultAction::Kill);
        CHECK(f.rank == 2);
        CHECK(f.step == 3);
        CHECK(f.when == dt::FaultWhen::AllReduce);
        CHECK(f.where.file == path);
        CHECK(f.where.line > 0);
        CHECK(f.where.column == 1);
    }
}

TEST_CASE("Keys left out take the struct defaults", "[scenario]") {
    const Scenario d; // the defaults
    Scenario s = dt::parseScenarioText(kHeader, "inline.toml");

    SECTION("the name and path are set and everything else is default") {
        CHECK(s.name == "t");
        CHECK(s.description.empty());
        CHECK(s.path == "inline.toml");
        CHECK(s.topology.ranks == d.topology.ranks);
        CHECK(s.model.kind == d.model.kind);
        CHECK(s.model.vocab == d.model.vocab);
        CHECK(s.model.context == d.model.context);
        CHECK(s.model.d_model == d.model.d_model);
        CHECK(s.model.layers == d.model.layers);
        CHECK(s.model.heads == d.model.heads);
        CHECK(s.model.mlp_ratio == d.model.mlp_ratio);
        CHECK(s.model.hidden == d.model.hidden);
        CHECK(s.data.source == d.data.source);
        CHECK(s.data.path == d.data.path);
        CHECK(s.data.batch_per_rank == d.data.batch_per_rank);
        CHECK(s.strategy.kind == d.strategy.kind);
        CHECK(s.strategy.bucket_mb == d.strategy.bucket_mb);
        CHECK(s.strategy.overlap == d.strategy.overlap);
        CHECK(s.optimizer.kind == d.optimizer.kind);
        CHECK(s.optimizer.lr == d.optimizer.lr);
        CHECK(s.optimizer.beta1 == d.optimizer.beta1);
        CHECK(s.optimizer.beta2 == d.optimizer.beta2);
        CHECK(s.optimizer.eps == d.optimizer.eps);
        CHECK(s.optimizer.weight_decay == d.optimizer.weight_decay);
        CHECK(s.run.steps == d.run.steps);
        CHECK(s.run.seed == d.run.seed);
        CHECK(s.run.timeout_s == d.run.timeout_s);
        CHECK(s.run.step_delay_ms == d.run.step_delay_ms);
        CHECK(s.telemetry.enabled == d.telemetry.enabled);
        CHECK(s.telemetry.queue_capacity == d.telemetry.queue_capacity);
        CHECK(s.faults.empty());
        CHECK(s.steps.empty());
    }

    SECTION("a fault with only a rank takes the default action, step and when") {
        Scenario f = dt::parseScenarioText(kHeader + "[[faults]]\nrank = 1\n", "inline.toml");
        REQUIRE(f.faults.size() == 1);
        CHECK(f.faults[0].rank == 1);
        CHECK(f.faults[0].action == dt::FaultAction::Kill);
        CHECK(f.faults[0].step == 0);
        CHECK(f.faults[0].when == dt::FaultWhen::AllReduce);
        CHECK(f.faults[0].where.line == 3);
        CHECK(f.faults[0].where.column == 1);
    }

    SECTION("keys that are written override the defaults") {
        Scenario o = dt::parseScenarioText(
            kHeader + "[run]\nsteps = 7\nseed = 99\n[telemetry]\nenabled = false\n", "inline.toml");
        CHECK(o.run.steps == 7);
        CHECK(o.run.seed == 99);
        CHECK_FALSE(o.telemetry.enabled);
        CHECK(o.run.timeout_s == d.run.timeout_s);
    }
}

TEST_CASE("Integers are accepted where a float is expected", "[scenario]") {
    Scenario s = dt::parseScenarioText(kHeader + "[strategy]\nbucket_mb = 2\n"
                                                 "[optimizer]\nlr = 1\nweight_decay = 0\n"
                                                 "[run]\ntimeout_s = 5\nstep_delay_ms = 250\n",
                                       "t.toml");
    CHECK(s.strategy.bucket_mb == 2.0);
    CHECK(s.optimizer.lr == 1.0);
    CHECK(s.optimizer.weight_decay == 0.0);
    CHECK(s.run.timeout_s == 5.0);
    CHECK(s.run.step_delay_ms == 250.0);
}

TEST_CASE("Scenario errors point at file, line and column", "[scenario]") {
    SECTION("a TOML syntax error gives the parser's location") {
        UsageError e = parseError(kHeader + "[model]\nlayers = \n");
        CHECK(e.where().file == "t.toml");
        CHECK(e.where().line == 4);
        CHECK(e.where().column == 10);
        CHECK(std::string(e.what()).rfind("t.toml:4:10: error: invalid TOML: ", 0) == 0);
    }

    SECTION("an unknown key names the table and lists the allowed keys") {
        UsageError e = parseError(kHeader + "[model]\nkind = \"mlp\"\n  foo = 3\n");
        CHECK(e.where().line == 5);
        CHECK(e.where().column == 3);
        CHECK(std::string(e.what()) == "t.toml:5:3: error: unknown key 'foo' in [model]; expected one of: "
                                       "kind, vocab, context, d_model, "
                                       "layers, heads, mlp_ratio, hidden, quantize, quantize_weights");
    }

    SECTION("the first unknown key in the file is the one reported") {
        UsageError e = parseError(kHeader + "[run]\nzzz = 1\naaa = 2\n");
        CHECK(e.where().line == 4);
        CHECK(std::string(e.what()).find("unknown key 'zzz' in [run]") != std::string::npos);
    }

    SECTION("an unknown table lists the known tables") {
        UsageError e = parseError(kHeader + "\n[modle]\nkind = \"mlp\"\n");
        CHECK(e.where().line == 4);
        CHECK(e.where().column == 2);
        CHECK(std::string(e.what()) ==
              "t.toml:4:2: error: unknown table [modle]; expected one of: [scenario], [topology], [model], "
              "[data], "
              "[strategy], [optimizer], [run], [telemetry], [[faults]], [[steps]], [fault_tolerance], "
              "[chaos], [diloco], [swarm], [network], [collectives], [[checks]]");
    }

    SECTION("a key in [[faults]] that does not exist is reported") {
        UsageError e = parseError(kHeader + "[[faults]]\nrank = 1\nsignal = 9\n");
        CHECK(e.where().line == 5);
        CHECK(e.where().column == 1);
        CHECK(std::string(e.what()).find(
                  "unknown key 'signal' in [[faults]]; expected one of: action, rank, step, "
                  "when, at_s, duration_s, delay_ms") != std::string::npos);
    }

    SECTION("a fault-tolerance fault without [fault_tolerance] points at the fault") {
        UsageError e = parseError(kHeader + "[[faults]]\naction = \"nan_gradients\"\nrank = 1\n");
        CHECK(e.where().line == 4);
        CHECK(std::string(e.what()).find(
                  "action = \"nan_gradients\" needs [fault_tolerance] enabled = true") != std::string::npos);
    }

    SECTION("[fault_tolerance] on a strategy it does not support is refused") {
        UsageError e = parseError(
            kHeader + "[strategy]\nkind = \"tensor_parallel\"\n[fault_tolerance]\nenabled = true\n");
        CHECK(std::string(e.what()).find("[fault_tolerance] works with [strategy] kind = \"ddp\"") !=
              std::string::npos);
    }

    SECTION("hsdp under [fault_tolerance] is refused, pointing at fsdp with replica groups") {
        UsageError e = parseError(
            kHeader + "[topology]\nranks = 4\nreplicas = 2\n[strategy]\nkind = \"hsdp\"\n[fault_tolerance]\n"
                      "enabled = true\n");
        CHECK(std::string(e.what()).find("write kind = \"fsdp\" with [topology] replicas") !=
              std::string::npos);
    }

    SECTION("fsdp replica groups under [fault_tolerance] are accepted, and their count bounds min_replicas") {
        const std::string groups = kHeader +
                                   "[topology]\nranks = 4\nreplicas = 2\n[strategy]\nkind = \"fsdp\"\n"
                                   "[fault_tolerance]\nenabled = true\n";
        const dt::Scenario s = dt::parseScenarioText(groups, "groups.toml");
        CHECK(dt::ftReplicaGroups(s) == 2);
        CHECK(dt::ftGroupSize(s) == 2);
        UsageError e = parseError(groups + "min_replicas = 3\n");
        CHECK(std::string(e.what()).find("can never be met: the topology has 2 replica groups") !=
              std::string::npos);
    }

    SECTION("pipelines under [fault_tolerance] are replica groups of their stages, sharded across "
            "them refused without [topology] replicas") {
        const std::string pipelines =
            kHeader + "[topology]\nranks = 6\nstages = 2\n[model]\nkind = \"tiny_gpt\"\nlayers = "
                      "2\n[strategy]\nkind = \"pipeline\"\n";
        const dt::Scenario s =
            dt::parseScenarioText(pipelines + "[fault_tolerance]\nenabled = true\n", "p.toml");
        CHECK(dt::ftGroupSize(s) == 2);
        CHECK(dt::ftReplicaGroups(s) == 3);
        UsageError sharded = parseError(pipelines + "pipeline_data_parallel = \"zero1\"\n"
                                                    "[fault_tolerance]\nenabled = true\n");
        CHECK(std::string(sharded.what())
                  .find("shards each stage over the pipelines inside a replica group, and each group is "
                        "one pipeline") != std::string::npos);
        // Under the quorum a pipeline keeps stage checkpoints; without it, none.
        CHECK_NOTHROW(dt::parseScenarioText(
            pipelines + "[run]\ncheckpoint_dir = \"/nonexistent/ck\"\n[fault_tolerance]\nenabled = true\n",
            "p.toml"));
        UsageError checkpoints = parseError(pipelines + "[run]\ncheckpoint_dir = \"ck\"\n");
        CHECK(std::string(checkpoints.what()).find("or pipeline under [fault_tolerance]") !=
              std::string::npos);
    }

    SECTION("ddp under [fault_tolerance] is one rank per group, or [topology] replicas groups with "
            "replica checkpoints") {
        const std::string ddp = kHeader + "[topology]\nranks = 4\n[strategy]\nkind = \"ddp\"\n";
        const dt::Scenario ranks =
            dt::parseScenarioText(ddp + "[fault_tolerance]\nenabled = true\n", "d.toml");
        CHECK(dt::ftGroupSize(ranks) == 1);
        CHECK(dt::ftReplicaGroups(ranks) == 4);
        const std::string groups =
            kHeader + "[topology]\nranks = 4\nreplicas = 2\n[strategy]\nkind = \"ddp\"\n";
        const dt::Scenario g =
            dt::parseScenarioText(groups + "[fault_tolerance]\nenabled = true\n", "g.toml");
        CHECK(dt::ftGroupSize(g) == 2);
        CHECK(dt::ftReplicaGroups(g) == 2);
        CHECK_NOTHROW(dt::parseScenarioText(
            groups + "[run]\ncheckpoint_dir = \"/nonexistent/ck\"\n[fault_tolerance]\nenabled = true\n",
            "g.toml"));
        UsageError no_ft = parseError(groups);
        CHECK(std::string(no_ft.what()).find("needs [strategy] kind = \"hsdp\"") != std::string::npos);
    }

    SECTION("pipelines under [fault_tolerance]: one per group, or stages x pipelines per group with "
            "[topology] replicas") {
        const std::string pipe = kHeader + "[topology]\nranks = 8\nstages = 2\n[strategy]\nkind = "
                                           "\"pipeline\"\nmicrobatches = 2\n";
        const std::string ft = "[fault_tolerance]\nenabled = true\n";
        const dt::Scenario one = dt::parseScenarioText(pipe + ft, "p.toml");
        CHECK(dt::ftGroupSize(one) == 2);
        CHECK(dt::ftReplicaGroups(one) == 4);
        const std::string sharded = "pipeline_data_parallel = \"fsdp\"\n";
        UsageError no_replicas = parseError(pipe + sharded + ft);
        CHECK(std::string(no_replicas.what()).find("each group is one pipeline: set [topology] replicas") !=
              std::string::npos);
        const std::string grouped = kHeader +
                                    "[topology]\nranks = 8\nstages = 2\nreplicas = 2\n[strategy]\n"
                                    "kind = \"pipeline\"\nmicrobatches = 2\n" +
                                    sharded;
        const dt::Scenario g = dt::parseScenarioText(grouped + ft, "g.toml");
        CHECK(dt::ftGroupSize(g) == 4);
        CHECK(dt::ftReplicaGroups(g) == 2);
        // Stages sharded across the pipelines keep a file per shard; whole stages
        // (pipeline_data_parallel = "ddp", the default) a file per stage.
        CHECK_NOTHROW(dt::parseScenarioText(
            grouped + "[run]\ncheckpoint_dir = \"/nonexistent/dtlab-sharded-stages\"\n" + ft, "c.toml"));
        const std::string whole = kHeader + "[topology]\nranks = 8\nstages = 2\nreplicas = 2\n[strategy]\n"
                                            "kind = \"pipeline\"\nmicrobatches = 2\n";
        CHECK_NOTHROW(dt::parseScenarioText(
            whole + "[run]\ncheckpoint_dir = \"/nonexistent/dtlab-whole-stages\"\n" + ft, "w.toml"));
        UsageError uneven = parseError(kHeader +
                                       "[topology]\nranks = 12\nstages = 4\nreplicas = 2\n"
                                       "[strategy]\nkind = \"pipeline\"\nmicrobatches = 4\n" +
                                       ft);
        CHECK(std::string(uneven.what()).find("is not a whole number of pipelines of 4 stages") !=
              std::string::npos);
    }

    SECTION("QAT is a tiny_gpt option, and the eval needs the whole model on rank 0") {
        const std::string ddp = kHeader + "[topology]\nranks = 2\n[strategy]\nkind = \"ddp\"\n";
        const dt::Scenario q = dt::parseScenarioText(
            ddp + "[model]\nquantize = \"int4\"\nquantize_weights = \"tensor\"\n[run]\neval_every = 5\n",
            "q.toml");
        CHECK(q.model.quantize == "int4");
        CHECK(q.model.quantize_weights == "tensor");
        CHECK(q.run.eval_every == 5);
        UsageError bits = parseError(ddp + "[model]\nquantize = \"int2\"\n");
        CHECK(std::string(bits.what()).find("\"none\", \"int8\", \"int4\"") != std::string::npos);
        UsageError mlp = parseError(ddp + "[model]\nkind = \"mlp\"\nquantize = \"int8\"\n[data]\nsource = "
                                          "\"fashion_mnist\"\n");
        CHECK(
            std::string(mlp.what()).find("fake-quantizes tiny_gpt's Linear layers; not model kind \"mlp\"") !=
            std::string::npos);
        UsageError fsdp = parseError(kHeader + "[topology]\nranks = 2\n[strategy]\nkind = \"fsdp\"\n[run]\n"
                                               "eval_every = 5\n");
        CHECK(std::string(fsdp.what()).find("eval_every needs the whole model on rank 0") !=
              std::string::npos);
        UsageError negative = parseError(ddp + "[run]\neval_every = -1\n");
        CHECK(std::string(negative.what()).find("eval_every") != std::string::npos);
        // Not yet with QAT: the recompute, the zero-bubble tape, the quorum, checkpoints.
        const std::string qat = "[model]\nquantize = \"int8\"\n";
        UsageError recompute = parseError(ddp + "activation_checkpointing = true\n" + qat);
        CHECK(std::string(recompute.what()).find("not supported with activation_checkpointing") !=
              std::string::npos);
        UsageError ft = parseError(ddp + qat + "[fault_tolerance]\nenabled = true\n");
        CHECK(std::string(ft.what()).find("not supported with [fault_tolerance]") != std::string::npos);
        UsageError ck = parseError(ddp + qat + "[run]\ncheckpoint_dir = \"/nonexistent/ck\"\n");
        CHECK(std::string(ck.what()).find("not supported with checkpoints") != std::string::npos);
    }

    SECTION("heal_chunks without the HTTP transport is refused, and an unknown transport named") {
        const std::string ft = kHeader + "[fault_tolerance]\nenabled = true\n";
        UsageError chunks = parseError(ft + "heal_chunks = 4\n");
        CHECK(std::string(chunks.what()).find("heal_chunks splits the HTTP heal") != std::string::npos);
        UsageError transport = parseError(ft + "heal_transport = \"ftp\"\n");
        CHECK(std::string(transport.what()).find("expected one of \"pg\", \"http\"") != std::string::npos);
        UsageError range = parseError(ft + "heal_transport = \"http\"\nheal_chunks = 65\n");
        CHECK(std::string(range.what()).find("heal_chunks") != std::string::npos);
        const dt::Scenario s =
            dt::parseScenarioText(ft + "heal_transport = \"http\"\nheal_chunks = 8\n", "h.toml");
        CHECK(dt::healTransportOf(s.fault_tolerance) == dt::HealTransport::Http);
        CHECK(s.fault_tolerance.heal_chunks == 8);
    }

    SECTION("init_sync with diloco is refused: its first sync is never at step 0") {
        UsageError e =
            parseError(kHeader + "[strategy]\nkind = \"diloco\"\n[fault_tolerance]\nenabled = true\n"
                                 "init_sync = true\n");
        CHECK(std::string(e.what()).find("init_sync has no effect with diloco") != std::string::npos);
    }

    SECTION("replica groups under [fault_tolerance] take durable checkpoints") {
        const dt::Scenario s = dt::parseScenarioText(
            kHeader + "[topology]\nranks = 4\nreplicas = 2\n[strategy]\nkind = \"fsdp\"\n[run]\n"
                      "checkpoint_dir = \"/nonexistent/dtlab-ck\"\ncheckpoint_every = 5\n"
                      "[fault_tolerance]\nenabled = true\n",
            "ck.toml");
        CHECK(s.run.checkpoint_every == 5);
    }

    SECTION("a heartbeat timeout not longer than the interval is refused with the reason") {
        UsageError e = parseError(kHeader + "[fault_tolerance]\nenabled = true\nheartbeat_interval_ms = 200\n"
                                            "heartbeat_timeout_ms = 100\n");
        CHECK(std::string(e.what()).find("heartbeat_timeout_ms must be longer than heartbeat_interval_ms") !=
              std::string::npos);
    }

    SECTION("detection is connection or heartbeat, and only for the Session's own lighthouse") {
        UsageError bad = parseError(kHeader + "[fault_tolerance]\nenabled = true\ndetection = \"psychic\"\n");
        CHECK(bad.where().line == 5);
        CHECK(
            std::string(bad.what()).find("expected one of \"connection\", \"heartbeat\", got \"psychic\"") !=
            std::string::npos);
        UsageError external =
            parseError(kHeader + "[fault_tolerance]\nenabled = true\nlighthouse = \"127.0.0.1:29510\"\n"
                                 "detection = \"heartbeat\"\n");
        CHECK(external.where().line == 6);
        CHECK(std::string(external.what()).find("dtrun lighthouse --detection heartbeat") !=
              std::string::npos);
    }

    SECTION("an unknown chaos action names the accepted ones at its place") {
        UsageError e = parseError(kHeader + "[fault_tolerance]\nenabled = true\n[chaos]\nenabled = true\n"
                                            "actions = [\"kill\", \"explode\"]\n");
        CHECK(e.where().line == 7);
        CHECK(e.where().column == 20);
        CHECK(std::string(e.what()).find("explode") != std::string::npos);
        CHECK(std::string(e.what()).find("\"kill\", \"hang\", \"slow\"") != std::string::npos);
    }

    SECTION("diloco fragments that do not divide inner_steps are refused with the reason") {
        UsageError e = parseError(
            kHeader + "[strategy]\nkind = \"diloco\"\n[diloco]\ninner_steps = 10\nfragments = 3\n");
        CHECK(e.where().line == 7);
        CHECK(std::string(e.what()).find("[diloco] fragments 3 does not divide inner_steps 10") !=
              std::string::npos);
    }

    SECTION("a diloco sync delay as long as the fragment period is refused") {
        UsageError e =
            parseError(kHeader + "[strategy]\nkind = \"diloco\"\n[diloco]\ninner_steps = 10\nfragments = 2\n"
                                 "sync_delay = 5\n");
        CHECK(e.where().line == 8);
        CHECK(std::string(e.what()).find("sync_delay 5 must be below inner_steps / fragments = 5") !=
              std::string::npos);
    }

    SECTION("more diloco fragments than blocks are refused") {
        UsageError e = parseError(kHeader + "[model]\nlayers = 2\n[strategy]\nkind = \"diloco\"\n[diloco]\n"
                                            "inner_steps = 12\nfragments = 4\n");
        CHECK(std::string(e.what()).find("fragments 4 is more than the model's 2 blocks") !=
              std::string::npos);
    }

    SECTION("an unknown pseudo-gradient format lists the accepted ones") {
        UsageError e = parseError(kHeader + "[diloco]\npseudo_gradient = \"fp8\"\n");
        CHECK(e.where().line == 4);
        CHECK(std::string(e.what()).find("\"fp32\", \"bf16\", \"int8\", \"int4\"") != std::string::npos);
    }

    SECTION("sgd with a strategy that holds AdamW state is refused") {
        UsageError e = parseError(kHeader + "[strategy]\nkind = \"fsdp\"\n[optimizer]\nkind = \"sgd\"\n");
        CHECK(std::string(e.what()).find(
                  "[optimizer] kind = \"sgd\" works with [strategy] kind = \"ddp\" or \"diloco\"") !=
              std::string::npos);
    }

    SECTION("optimizer offload and pipeline ZeRO-1 are refused where they cannot work, pointing at the key") {
        UsageError offload = parseError(kHeader + "[strategy]\nkind = \"ddp\"\noffload_optimizer = true\n");
        CHECK(offload.where().line == 5);
        CHECK(std::string(offload.what()).find("offload_optimizer needs a sharded kind") !=
              std::string::npos);
        UsageError one_pipeline =
            parseError(kHeader + "[topology]\nranks = 2\nstages = 2\n[strategy]\nkind = "
                                 "\"pipeline\"\npipeline_data_parallel = \"zero1\"\n");
        CHECK(one_pipeline.where().line == 8);
        CHECK(std::string(one_pipeline.what()).find("is one pipeline") != std::string::npos);
        UsageError not_pipeline =
            parseError(kHeader + "[strategy]\nkind = \"zero2\"\npipeline_data_parallel = \"zero1\"\n");
        CHECK(std::string(not_pipeline.what()).find("pipeline_data_parallel is for kind = \"pipeline\"") !=
              std::string::npos);
        UsageError unknown =
            parseError(kHeader + "[strategy]\nkind = \"pipeline\"\npipeline_data_parallel = \"zero3\"\n");
        CHECK(std::string(unknown.what()).find("expected one of \"ddp\", \"zero1\", \"fsdp\"") !=
              std::string::npos);
    }

    SECTION("a negative bandwidth is out of range") {
        UsageError e = parseError(kHeader + "[network]\nbandwidth_mbit_s = -1\n");
        CHECK(e.where().line == 4);
        CHECK(std::string(e.what()).find("[network] bandwidth_mbit_s") != std::string::npos);
    }

    SECTION("fault tolerance on the mpi backend is refused with the reason") {
        UsageError e =
            parseError(kHeader + "[topology]\nbackend = \"mpi\"\n[fault_tolerance]\nenabled = true\n");
        CHECK(e.where().line == 4);
        CHECK(std::string(e.what()).find("backend = \"mpi\" cannot be fault tolerant") != std::string::npos);
        CHECK(std::string(e.what()).find("Open MPI aborts the whole job") != std::string::npos);
    }

    SECTION("an unknown backend lists the accepted ones") {
        UsageError e = parseError(kHeader + "[topology]\nbackend = \"nccl\"\n");
        CHECK(e.where().line == 4);
        CHECK(std::string(e.what()).find("\"gloo\", \"mpi\"") != std::string::npos);
    }

    SECTION("a collectives run with more steps than sizes is refused") {
        UsageError e =
            parseError(kHeader + "[strategy]\nkind = \"collectives\"\n[collectives]\nsizes_kb = [4, 64]\n"
                                 "[run]\nsteps = 3\n");
        CHECK(std::string(e.what()).find("steps = 3 but [collectives] sizes_kb has only 2 sizes") !=
              std::string::npos);
    }

    SECTION("a collectives backend named twice is refused") {
        UsageError e = parseError(kHeader + "[strategy]\nkind = \"collectives\"\n[collectives]\n"
                                            "backends = [\"gloo\", \"gloo\"]\n[run]\nsteps = 1\n");
        CHECK(std::string(e.what()).find("backends names \"gloo\" twice") != std::string::npos);
    }

    SECTION("a collectives op that does not exist names the accepted ones at its place") {
        UsageError e = parseError(kHeader + "[strategy]\nkind = \"collectives\"\n[collectives]\n"
                                            "ops = [\"all_reduce\", \"all_to_all\"]\n");
        CHECK(e.where().line == 6);
        CHECK(std::string(e.what()).find("all_to_all") != std::string::npos);
    }

    SECTION("[chaos] without fault tolerance is refused") {
        UsageError e = parseError(kHeader + "[chaos]\nenabled = true\n");
        CHECK(std::string(e.what()).find("[chaos] needs [fault_tolerance] enabled = true") !=
              std::string::npos);
    }

    SECTION("a string where an integer is expected is a wrong type") {
        UsageError e = parseError(kHeader + "[model]\nlayers = \"four\"\n");
        CHECK(e.where().line == 4);
        CHECK(e.where().column == 10);
        CHECK(std::string(e.what()) ==
              "t.toml:4:10: error: [model] layers: expected an integer, got a string");
    }

    SECTION("a float where an integer is expected is a wrong type") {
        UsageError e = parseError(kHeader + "[topology]\nranks = 2.0\n");
        CHECK(e.where().line == 4);
        CHECK(e.where().column == 9);
        CHECK(std::string(e.what()) ==
              "t.toml:4:9: error: [topology] ranks: expected an integer, got a float");
    }

    SECTION("a string where a float is expected is a wrong type") {
        UsageError e = parseError(kHeader + "[optimizer]\nlr = \"fast\"\n");
        CHECK(e.where().line == 4);
        CHECK(e.where().column == 6);
        CHECK(std::string(e.what()) == "t.toml:4:6: error: [optimizer] lr: expected a number, got a string");
    }

    SECTION("a wrong element type in hidden points at the element") {
        UsageError e = parseError(kHeader + "[model]\nhidden = [64,\n   \"x\"]\n");
        CHECK(e.where().line == 5);
        CHECK(e.where().column == 4);
        CHECK(std::string(e.what()).find("[model] hidden: expected an integer, got a string") !=
              std::string::npos);
    }

    SECTION("a table written as a plain value is a wrong type") {
        UsageError e = parseError("model = 3\n" + kHeader);
        CHECK(e.where().line == 1);
        CHECK(e.where().column == 9);
        CHECK(std::string(e.what()).find("model: expected a table [model], got an integer") !=
              std::string::npos);
    }

    SECTION("an integer out of range gives the range") {
        UsageError e = parseError(kHeader + "[topology]\nranks = 65\n");
        CHECK(e.where().line == 4);
        CHECK(e.where().column == 9);
        CHECK(std::string(e.what()) ==
              "t.toml:4:9: error: [topology] ranks: expected an integer in 1..64, got 65");
    }

    SECTION("an integer too large for the field is out of range, not truncated") {
        UsageError e = parseError(kHeader + "[model]\nheads = 4294967300\n");
        CHECK(e.where().line == 4);
        CHECK(std::string(e.what()).find("[model] heads: expected an integer in 1..256") !=
              std::string::npos);
    }

    SECTION("absurd model sizes are refused before anything starts (issue 23)") {
        CHECK(std::string(parseError(kHeader + "[model]\nd_model = 2000000000\n").what()) ==
              "t.toml:4:11: error: [model] d_model: expected an integer in 1..8192, got 2000000000");
        CHECK(std::string(parseError(kHeader + "[model]\nlayers = 2000000000\n").what()) ==
              "t.toml:4:10: error: [model] layers: expected an integer in 1..64, got 2000000000");
        CHECK(std::string(parseError(kHeader + "[model]\nkind = \"mlp\"\nhidden = [2000000000]\n").what())
                  .find("[model] hidden: expected an integer in 1..65536, got 2000000000") !=
              std::string::npos);
    }

    SECTION("a negative seed is out of range") {
        UsageError e = parseError(kHeader + "[run]\nseed = -1\n");
        CHECK(e.where().line == 4);
        CHECK(e.where().column == 8);
        CHECK(std::string(e.what()) == "t.toml:4:8: error: [run] seed: expected an integer >= 0, got -1");
    }

    SECTION("a float out of range gives the range") {
        UsageError e = parseError(kHeader + "[optimizer]\nbeta2 = 1\n");
        CHECK(e.where().line == 4);
        CHECK(e.where().column == 9);
        CHECK(std::string(e.what()) ==
              "t.toml:4:9: error: [optimizer] beta2: expected a number in [0, 1), got 1");
        UsageError lr = parseError(kHeader + "[optimizer]\nlr = -0.5\n");
        CHECK(std::string(lr.what()) ==
              "t.toml:4:6: error: [optimizer] lr: expected a number in (0, 1e+06), got -0.5");
        UsageError inf = parseError(kHeader + "[run]\ntimeout_s = inf\n");
        CHECK(std::string(inf.what()).find("[run] timeout_s: expected a finite number") != std::string::npos);
    }

    SECTION("a bad enum value lists the allowed values") {
        UsageError e = parseError(kHeader + "[model]\nkind = \"gpt5\"\n");
        CHECK(e.where().line == 4);
        CHECK(e.where().column == 8);
        CHECK(std::string(e.what()) ==
              "t.toml:4:8: error: [model] kind: expected one of \"tiny_gpt\", \"mlp\", got \"gpt5\"");
        UsageError when = parseError(kHeader + "[[faults]]\nwhen = \"later\"\n");
        CHECK(when.where().line == 4);
        CHECK(
            std::string(when.what())
                .find("[[faults]] when: expected one of \"allreduce\", \"step\", \"time\", got \"later\"") !=
            std::string::npos);
    }

    SECTION("a missing name points at the [scenario] table") {
        UsageError e = parseError("[topology]\nranks = 2\n\n[scenario]\ndescription = \"x\"\n");
        CHECK(e.where().line == 4);
        CHECK(e.where().column == 1);
        CHECK(std::string(e.what()) == "t.toml:4:1: error: missing key 'name' in [scenario]");
    }

    SECTION("a missing [scenario] table points at the top of the file") {
        UsageError e = parseError("[topology]\nranks = 2\n");
        CHECK(e.where().line == 1);
        CHECK(e.where().column == 1);
        CHECK(std::string(e.what()).find("missing table [scenario]") != std::string::npos);
    }

    SECTION("d_model not divisible by heads points at d_model") {
        UsageError e = parseError(kHeader + "[model]\nheads = 3\nd_model = 128\n");
        CHECK(e.where().line == 5);
        CHECK(e.where().column == 11);
        CHECK(std::string(e.what()).find("[model] d_model 128 is not divisible by heads 3") !=
              std::string::npos);
    }

    SECTION("d_model not divisible by heads points at heads when d_model is left out") {
        UsageError e = parseError(kHeader + "[model]\nlayers = 2\nheads = 3\n");
        CHECK(e.where().line == 5);
        CHECK(e.where().column == 9);
    }

    SECTION("an empty hidden array is rejected") {
        UsageError e = parseError(kHeader + "[model]\nhidden = []\n");
        CHECK(e.where().line == 4);
        CHECK(e.where().column == 10);
        CHECK(std::string(e.what()).find("[model] hidden: expected at least one layer width") !=
              std::string::npos);
    }

    SECTION("a fault on a rank that does not exist names the topology") {
        UsageError e = parseError(kHeader + "[topology]\nranks = 4\n[[faults]]\nrank = 7\n");
        CHECK(e.where().line == 6);
        CHECK(e.where().column == 8);
        CHECK(std::string(e.what()) ==
              "t.toml:6:8: error: [[faults]] rank 7 does not exist: the topology has 4 ranks (0..3)");
    }

    SECTION("the second fault is the one located when only it is wrong") {
        UsageError e =
            parseError(kHeader + "[run]\nsteps = 10\n[[faults]]\nstep = 9\n[[faults]]\nstep = 10\n");
        CHECK(e.where().line == 8);
        CHECK(e.where().column == 8);
        CHECK(std::string(e.what()).find(
                  "[[faults]] step 10 is never reached: the run has 10 steps (0..9)") != std::string::npos);
    }

    SECTION("a missing data path points at the path") {
        UsageError e = parseError(kHeader + "[data]\nsource = \"fortunes\"\npath = \"/no/such/dtlab/dir\"\n");
        CHECK(e.where().line == 5);
        CHECK(e.where().column == 8);
        CHECK(std::string(e.what()) == "t.toml:5:8: error: [data] path: '/no/such/dtlab/dir' does not exist");
    }

    SECTION("fashion_mnist needs a directory, not a file") {
        const std::string file = scenarioPath("ddp_basics.toml");
        UsageError e =
            parseError(kHeader + "[model]\nkind = \"mlp\"\n[data]\nsource = \"fashion_mnist\"\npath = \"" +
                       file + "\"\n");
        CHECK(e.where().line == 7);
        CHECK(std::string(e.what()).find("is not a directory") != std::string::npos);
    }

    SECTION("a scenario file that does not exist cannot be opened") {
        try {
            (void)dt::loadScenarioFile("/no/such/dtlab/x.toml");
            FAIL("expected a UsageError");
        } catch (const UsageError& e) {
            CHECK(std::string(e.what()) ==
                  "cannot open scenario file '/no/such/dtlab/x.toml': No such file or directory");
        }
    }
}

TEST_CASE("Data paths are checked and resolved", "[scenario]") {
    SECTION("fortunes accepts an existing file or directory") {
        const std::string fortunes_dir = kSourceDir + "/tests/regression/data/fortunes_dir";
        Scenario dir = dt::parseScenarioText(kHeader + "[data]\npath = \"" + fortunes_dir + "\"\n", "t.toml");
        CHECK(dir.data.path == fortunes_dir);
        Scenario file = dt::parseScenarioText(
            kHeader + "[data]\npath = \"" + scenarioPath("ddp_basics.toml") + "\"\n", "t.toml");
        CHECK(file.data.path == scenarioPath("ddp_basics.toml"));
    }

    SECTION("a relative path is relative to the scenario file's folder") {
        const std::string source = kSourceDir + "/scenarios/inline.toml";
        Scenario s =
            dt::parseScenarioText(kHeader + "[data]\npath = \"../scenarios/ddp_basics.toml\"\n", source);
        CHECK(std::filesystem::path(s.data.path) ==
              std::filesystem::path(scenarioPath("ddp_basics.toml")).lexically_normal());
    }
}

TEST_CASE("Narrated steps are read from [[steps]] tables", "[scenario]") {
    SECTION("text, highlight and until are read in order with each entry's location") {
        Scenario s = dt::parseScenarioText(
            kHeader + "[[steps]]\ntext = \"Ranks start.\"\nhighlight = \"topology\"\n"
                      "[[steps]]\ntext = \"Overlap.\"\nuntil = \"first all-reduce ends\"\n",
            "t.toml");
        REQUIRE(s.steps.size() == 2);
        CHECK(s.steps[0].text == "Ranks start.");
        CHECK(s.steps[0].highlight == "topology");
        CHECK(s.steps[0].until.empty());
        CHECK(s.steps[0].where.line == 3);
        CHECK(s.steps[1].text == "Overlap.");
        CHECK(s.steps[1].highlight.empty());
        CHECK(s.steps[1].until == "first all-reduce ends");
        CHECK(s.steps[1].where.line == 6);
    }

    SECTION("every accepted condition form parses to its kind and number") {
        using Kind = dt::NarrationCondition::Kind;
        auto parsed = [](const std::string& text) {
            dt::NarrationCondition c;
            c.kind = Kind::RunFinished;
            c.value = -7;
            REQUIRE(dt::parseNarrationCondition(text, c));
            return c;
        };
        CHECK(parsed("").kind == Kind::None);
        CHECK(parsed("   ").kind == Kind::None);
        CHECK(parsed("step >= 3").kind == Kind::StepAtLeast);
        CHECK(parsed("step >= 3").value == 3);
        CHECK(parsed("step>=12").value == 12);
        CHECK(parsed("  step  >=  0 ").value == 0);
        CHECK(parsed("first all-reduce ends").kind == Kind::FirstAllReduceEnds);
        CHECK(parsed("first all-gather ends").kind == Kind::FirstAllGatherEnds);
        CHECK(parsed("first  reduce-scatter ends").kind == Kind::FirstReduceScatterEnds);
        CHECK(parsed("rank 2 dies").kind == Kind::RankDies);
        CHECK(parsed("rank 2 dies").value == 2);
        CHECK(parsed("rank 1 heals").kind == Kind::RankHeals);
        CHECK(parsed("rank 1 heals").value == 1);
        CHECK(parsed("new quorum forms").kind == Kind::NewQuorumForms);
        CHECK(parsed("first outer sync ends").kind == Kind::FirstOuterSyncEnds);
        CHECK(parsed("a collective hangs").kind == Kind::CollectiveHangs);
        CHECK(parsed("run finished").kind == Kind::RunFinished);
    }

    SECTION("texts that are none of the forms do not parse") {
        dt::NarrationCondition c;
        for (const char* bad :
             {"step > 3", "step >= -1", "step >= x", "after step 3", "rank dies", "rank 1 died",
              "first allreduce ends", "Run finished", "step >= 99999999999"}) {
            INFO(bad);
            CHECK_FALSE(dt::parseNarrationCondition(bad, c));
        }
    }

    SECTION("an unknown condition points at the value and lists the accepted forms") {
        UsageError e = parseError(kHeader + "[[steps]]\ntext = \"x\"\nuntil = \"after step 3\"\n");
        CHECK(e.where().line == 5);
        CHECK(e.where().column == 9);
        CHECK(std::string(e.what()) ==
              "t.toml:5:9: error: [[steps]] until: expected one of \"\" (no wait), \"step >= N\", "
              "\"first all-reduce ends\", \"first all-gather ends\", \"first reduce-scatter ends\", \"rank R "
              "dies\", \"rank R heals\", \"new quorum forms\", \"first outer sync ends\", "
              "\"a collective hangs\", \"run finished\", got \"after step 3\"");
    }

    SECTION("pause = true is read, and needs an event to pause at") {
        Scenario s = dt::parseScenarioText(
            kHeader + "[[steps]]\ntext = \"Look.\"\nuntil = \"step >= 2\"\npause = true\n", "t.toml");
        REQUIRE(s.steps.size() == 1);
        CHECK(s.steps[0].pause);
        UsageError none = parseError(kHeader + "[[steps]]\ntext = \"x\"\npause = true\n");
        CHECK(std::string(none.what()).find("pause = true needs an `until` event") != std::string::npos);
        UsageError end =
            parseError(kHeader + "[[steps]]\ntext = \"x\"\nuntil = \"run finished\"\npause = true\n");
        CHECK(std::string(end.what()).find("pause = true needs an `until` event") != std::string::npos);
        UsageError type = parseError(kHeader + "[[steps]]\ntext = \"x\"\nuntil = \"step >= 1\"\npause = 1\n");
        CHECK(type.where().line == 6);
    }

    SECTION("a quorum or outer-sync condition needs the run that has one") {
        UsageError quorum = parseError(kHeader + "[[steps]]\ntext = \"x\"\nuntil = \"new quorum forms\"\n");
        CHECK(std::string(quorum.what()).find("needs [fault_tolerance] enabled = true") != std::string::npos);
        UsageError outer =
            parseError(kHeader + "[[steps]]\ntext = \"x\"\nuntil = \"first outer sync ends\"\n");
        CHECK(std::string(outer.what()).find("needs strategy \"diloco\"") != std::string::npos);
        UsageError heal = parseError(kHeader + "[[steps]]\ntext = \"x\"\nuntil = \"rank 9 heals\"\n");
        CHECK(std::string(heal.what()).find("rank 9 does not exist") != std::string::npos);
        UsageError alone = parseError(kHeader + "[topology]\nranks = 1\n[[steps]]\ntext = \"x\"\nuntil = \"a "
                                                "collective hangs\"\n");
        CHECK(std::string(alone.what()).find("needs 2 ranks or more") != std::string::npos);
    }

    SECTION("a step without text points at the entry") {
        UsageError e = parseError(kHeader + "[[steps]]\nhighlight = \"timeline\"\n");
        CHECK(e.where().line == 3);
        CHECK(std::string(e.what()).find("[[steps]]: missing key 'text'") != std::string::npos);
    }

    SECTION("an empty text is rejected") {
        UsageError e = parseError(kHeader + "[[steps]]\ntext = \"\"\n");
        CHECK(e.where().line == 4);
        CHECK(std::string(e.what()).find("[[steps]] text: expected a non-empty string") != std::string::npos);
    }

    SECTION("an unknown view to highlight lists the views") {
        UsageError e = parseError(kHeader + "[[steps]]\ntext = \"x\"\nhighlight = \"flamegraph\"\n");
        CHECK(e.where().line == 5);
        CHECK(std::string(e.what()).find("[[steps]] highlight: expected one of \"topology\", \"timeline\"") !=
              std::string::npos);
    }

    SECTION("an unknown key in [[steps]] lists the keys") {
        UsageError e = parseError(kHeader + "[[steps]]\ntext = \"x\"\nsay = \"y\"\n");
        CHECK(e.where().line == 5);
        CHECK(std::string(e.what()).find(
                  "unknown key 'say' in [[steps]]; expected one of: text, highlight, until") !=
              std::string::npos);
    }

    SECTION("a step count the run never reaches points at until") {
        UsageError e =
            parseError(kHeader + "[run]\nsteps = 5\n[[steps]]\ntext = \"x\"\nuntil = \"step >= 6\"\n");
        CHECK(e.where().line == 7);
        CHECK(std::string(e.what()).find(
                  "[[steps]] until \"step >= 6\" is never reached: the run has 5 steps") !=
              std::string::npos);
    }

    SECTION("a rank that does not exist points at the second step when only it is wrong") {
        UsageError e =
            parseError(kHeader + "[topology]\nranks = 2\n[[steps]]\ntext = \"a\"\nuntil = \"rank 1 dies\"\n"
                                 "[[steps]]\ntext = \"b\"\nuntil = \"rank 2 dies\"\n");
        CHECK(e.where().line == 10);
        CHECK(std::string(e.what()).find("rank 2 does not exist: the topology has 2 ranks (0..1)") !=
              std::string::npos);
    }

    SECTION("validateScenario after an override leaves narration alone (it only paces the GUI)") {
        Scenario s =
            dt::parseScenarioText(kHeader + "[[steps]]\ntext = \"a\"\nuntil = \"rank 3 dies\"\n", "t.toml");
        s.topology.ranks = 2;
        CHECK_NOTHROW(dt::validateScenario(s, "--ranks"));
        s.topology.ranks = 0;
        CHECK_THROWS_AS(dt::validateScenario(s, "--ranks"), UsageError);
    }
}

// tests/regression/scenarios: each file is an input that once passed the checks and then failed
// inside the ranks (issue 23). Its second line says what the error must contain; the error must
// also say file:line:column.
TEST_CASE("Every regression scenario is refused before any rank starts, with where and why", "[scenario]") {
    namespace fs = std::filesystem;
    const fs::path folder = fs::path(kSourceDir) / "tests/regression/scenarios";
    int files = 0;
    for (const auto& entry : fs::directory_iterator(folder)) {
        if (entry.path().extension() != ".toml")
            continue;
        ++files;
        const std::string path = entry.path().string();
        CAPTURE(path);
        std::ifstream in(path);
        std::string first, second;
        std::getline(in, first);
        std::getline(in, second);
        const std::string marker = "# expect: ";
        REQUIRE(second.rfind(marker, 0) == 0);
        const std::string expected = second.substr(marker.size());
        std::string message;
        try {
            (void)dt::loadScenarioFile(path);
        } catch (const UsageError& e) {
            message = e.what();
        }
        CAPTURE(message);
        CHECK(message.find(expected) != std::string::npos);
        CHECK(std::regex_search(message, std::regex("^" + path + ":[0-9]+:[0-9]+: ")));
    }
    CHECK(files >= 11);
}

TEST_CASE("A swarm scenario is checked for its layout and what SWARM does not do yet", "[scenario][swarm]") {
    const std::string swarm = kHeader + "[topology]\nranks = 6\nstages = 2\n[model]\nlayers = 4\n"
                                        "[data]\nbatch_per_rank = 8\n[strategy]\nkind = \"swarm\"\n"
                                        "microbatches = 2\n[swarm]\ntrainers = 2\nservers_per_stage = 2\n";
    SECTION("2 trainers + 2 stages x 2 servers on 6 ranks is valid") {
        const dt::Scenario s = dt::parseScenarioText(swarm, "t.toml");
        CHECK(s.strategy.kind == dt::StrategyKind::Swarm);
        CHECK(s.swarm.trainers == 2);
        CHECK(s.swarm.routing == "throughput");
    }
    SECTION("ranks that do not add up are refused with the sum") {
        std::string text = swarm;
        text.replace(text.find("ranks = 6"), 9, "ranks = 5");
        const std::string what = parseError(text).what();
        CHECK_THAT(what, Catch::Contains("t.toml:4:"));
        CHECK_THAT(what, Catch::Contains("2 trainers + 2 stages x 2 servers = 6 ranks"));
    }
    SECTION("an unknown routing rule is refused with the list") {
        const std::string what = parseError(swarm + "routing = \"random\"\n").what();
        CHECK_THAT(what, Catch::Contains("\"throughput\", \"fastest\""));
    }
    SECTION("a fault at the default all-reduce is refused: a swarm has none") {
        const std::string what =
            parseError(swarm + "[[faults]]\naction = \"kill\"\nrank = 3\nstep = 2\n").what();
        CHECK_THAT(what, Catch::Contains("never fires under swarm"));
    }
    SECTION("quantization-aware training is refused, saying why") {
        std::string text = swarm;
        text.replace(text.find("layers = 4"), 10, "layers = 4\nquantize = \"int8\"");
        CHECK_THAT(parseError(text).what(), Catch::Contains("recomputes the forward"));
    }
    SECTION("a batch the microbatches do not divide is refused") {
        std::string text = swarm;
        text.replace(text.find("microbatches = 2"), 16, "microbatches = 3");
        CHECK_THAT(parseError(text).what(), Catch::Contains("does not divide a trainer's batch"));
    }
}
