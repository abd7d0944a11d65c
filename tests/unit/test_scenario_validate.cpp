// test_scenario_validate.cpp: validateScenario after command-line overrides,
// with the flag that broke the scenario in the message.
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

UsageError validateError(const Scenario& s, const std::string& origin) {
    try {
        dt::validateScenario(s, origin);
    } catch (const UsageError& e) {
        return e;
    }
    FAIL("expected validateScenario to throw");
    throw std::logic_error("unreachable");
}

} // namespace

TEST_CASE("validateScenario re-checks a scenario after overrides", "[scenario]") {
    const std::string path = scenarioPath("ddp_kill_rank.toml");
    Scenario s = dt::loadScenarioFile(path);

    SECTION("the scenario as loaded is valid") {
        CHECK_NOTHROW(dt::validateScenario(s, ""));
    }

    SECTION("--ranks 0 is out of range and the message starts with the flag") {
        s.topology.ranks = 0;
        UsageError e = validateError(s, "--ranks");
        CHECK(std::string(e.what()) == "--ranks: [topology] ranks: expected an integer in 1..64, got 0");
    }

    SECTION("--ranks 2 leaves the fault on rank 2 without a rank") {
        s.topology.ranks = 2;
        UsageError e = validateError(s, "--ranks");
        const std::string message = e.what();
        CHECK(message.rfind("--ranks: [[faults]] rank 2 does not exist: the topology has 2 ranks (0..1)",
                            0) == 0);
        CHECK(message.find(path + ":" + std::to_string(s.faults[0].where.line) + ":1") != std::string::npos);
    }

    SECTION("--ranks 3 still holds rank 2 and passes") {
        s.topology.ranks = 3;
        CHECK_NOTHROW(dt::validateScenario(s, "--ranks"));
    }

    SECTION("--steps 3 makes the fault at step 3 unreachable") {
        s.run.steps = 3;
        UsageError e = validateError(s, "--steps");
        CHECK(std::string(e.what()).rfind("--steps: [[faults]] step 3 is never reached: the run has 3 steps",
                                          0) == 0);
    }

    SECTION("without an origin a fault problem points at the fault's location") {
        s.topology.ranks = 1;
        UsageError e = validateError(s, "");
        CHECK(e.where().file == path);
        CHECK(e.where().line == s.faults[0].where.line);
        CHECK(std::string(e.what()).find("the topology has 1 rank (0..0)") != std::string::npos);
    }

    SECTION("a strategy kind that is not in the list is refused with the list") {
        // The kind is an enum now (strategy_kinds.def): an unknown name can only
        // come from text, such as dtrun --strategy.
        std::string what;
        try {
            (void)dt::strategyKindFromOverride("zero4", "--strategy");
        } catch (const UsageError& e) {
            what = e.what();
        }
        CHECK(what == "--strategy: [strategy] kind: expected one of \"ddp\", \"zero1\", \"zero2\", \"fsdp\", "
                      "\"hsdp\", \"pipeline\", \"diloco\", \"tensor_parallel\", \"collectives\", \"swarm\", "
                      "got \"zero4\"");
    }

    SECTION("replicas without hsdp, an uneven replica split and an uneven microbatch split are refused") {
        s.faults.clear();
        s.topology.ranks = 4;
        s.topology.replicas = 2;
        s.strategy.kind = dt::StrategyKind::Fsdp;
        CHECK(std::string(validateError(s, "--replicas").what()).find("needs [strategy] kind = \"hsdp\"") !=
              std::string::npos);
        s.strategy.kind = dt::StrategyKind::Hsdp;
        s.topology.replicas = 3;
        CHECK(std::string(validateError(s, "--replicas").what())
                  .find("ranks 4 is not divisible by replicas 3") != std::string::npos);
        s.topology.replicas = 2;
        s.strategy.microbatches = 3;
        s.data.batch_per_rank = 16;
        CHECK(std::string(validateError(s, "--microbatches").what()).find("microbatches 3 does not divide") !=
              std::string::npos);
        s.strategy.microbatches = 4;
        CHECK_NOTHROW(validateScenario(s, "--microbatches"));
        s.strategy.kind = dt::StrategyKind::Fsdp;
        s.topology.replicas = 1;
        s.faults.push_back(
            {dt::FaultAction::Kill, 1, 2, dt::FaultWhen::AllReduce, 0.0, 0.0, 100.0, {"/tmp/x.toml", 9, 1}});
        CHECK(std::string(validateError(s, "--strategy").what()).find("never fires under fsdp") !=
              std::string::npos);
        s.faults[0].when = dt::FaultWhen::Step;
        CHECK_NOTHROW(validateScenario(s, "--strategy"));
        s.faults.clear();
        s.strategy.kind = dt::StrategyKind::Pipeline;
        s.topology.stages = 3;
        CHECK(std::string(validateError(s, "--stages").what()).find("ranks 4 is not divisible by stages 3") !=
              std::string::npos);
        s.topology.stages = 2;
        s.strategy.schedule = "interleaved";
        s.strategy.chunks_per_rank = 2;
        s.strategy.microbatches = 3;
        s.data.batch_per_rank = 6;
        CHECK(std::string(validateError(s, "--microbatches").what()).find("multiple of the stages") !=
              std::string::npos);
        s.strategy.microbatches = 2;
        s.model.layers = 6;
        CHECK(std::string(validateError(s, "--layers").what()).find("cannot be cut into 4 equal chunks") !=
              std::string::npos);
        s.model.layers = 8;
        CHECK_NOTHROW(validateScenario(s, "--layers"));
    }
}
