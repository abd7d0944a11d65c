// test_sharding.cpp: ZeRO-1/2/3 (fsdp) and HSDP are other ways to compute the
// same training as DDP, with less memory per rank. Real `dtrun run` processes,
// real Gloo over loopback.
//
//  - after 3 steps every strategy's parameters equal DDP's on the same global
//    batch (16 sequences), at 1, 2 and 4 ranks, and hsdp at 2 replicas x 2 shards;
//  - bytes sent per step match the cost model (sharding_theory.hpp);
//  - parameters, gradients and optimizer state per rank match the ZeRO formulas;
//  - microbatches (with and without communication per microbatch) and
//    activation checkpointing change memory, not the result;
//  - offloading the optimizer (ZeRO-Offload) leaves every bit of the training
//    as it was, takes the optimizer state off the device and holds 16 Psi / N
//    on the host; a checkpoint written with it resumes without it, and back;
//  - a sharded checkpoint resumes on another shard count; a corrupt or
//    incomplete one, or one that would be overwritten, is refused with exit 2;
//  - hsdp issues each unit's all-reduce across replicas during backward, right
//    after the unit's reduce-scatter (before the next unit's reduce-scatter is
//    issued, and before the end of backward waits).
// The checks are blocks with an INFO sentence rather than SECTIONs: Catch2
// re-runs a test case from the top for every SECTION, which would start every
// process again.
#include "checkpoint/params_io.hpp"
#include "param_compare.hpp"
#include "process_helpers.hpp"

#include "dtlab/recording.hpp"
#include "dtlab/scenario.hpp"
#include "dtlab/sharding_theory.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sys/stat.h>

namespace {

namespace fs = std::filesystem;

// Same reasoning as test_ddp_equivalence.cpp: one AdamW step moves a weight by
// ~lr = 3e-4; reduction order (ring reduce-scatter vs Gloo all-reduce, partial
// sums per rank) changes float32 rounding by ~1e-6. 1e-5 is far below a step.
constexpr double kTolerance = 1e-5;
constexpr int kGlobalBatch = 16;

using it::maxAbsDifference;

struct Run {
    nlohmann::json summary;
    std::vector<dt::NamedParameter> rank0;
};

it::ScenarioSpec spec(const std::string& strategy, int ranks, int replicas = 1) {
    it::ScenarioSpec s;
    s.name = "sharding " + strategy;
    s.ranks = ranks;
    s.replicas = replicas;
    s.strategy = strategy;
    s.batch_per_rank = kGlobalBatch / ranks;
    s.layers = 2;
    s.steps = 3;
    return s;
}

dt::Scenario parsed(const it::ScenarioSpec& s) {
    return dt::parseScenarioText(it::scenarioToml(s), "spec.toml");
}

Run run(const it::TempDir& dir, const std::string& tag, const it::ScenarioSpec& s,
        const std::vector<std::string>& extra = {}) {
    const std::string out_dir = dir.file(tag);
    REQUIRE(::mkdir(out_dir.c_str(), 0755) == 0);
    std::vector<std::string> args{"run",          dir.write(tag + ".toml", it::scenarioToml(s)),
                                  "--summary",    dir.file(tag + ".json"),
                                  "--params-out", out_dir,
                                  "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    it::ProcessOptions opts;
    opts.timeout_s = 180;
    const auto r = it::runDtrun(args, opts);
    INFO(tag << ": " << it::describe(r));
    REQUIRE(r.exit_code == 0);
    Run out;
    out.summary = it::readJsonFile(dir.file(tag + ".json"));
    REQUIRE(out.summary["ok"] == true);
    const auto& sums = out.summary["params_checksum"];
    for (const auto& c : sums)
        CHECK(c == sums[0]); // every rank ends with the same parameters
    out.rank0 = dt::loadParameters(out_dir + "/rank0.params");
    return out;
}

// |measured / theory - 1|
double relativeError(double measured, double theory) {
    return std::fabs(measured / theory - 1.0);
}

} // namespace

TEST_CASE("Sharded strategies train like DDP and hold what the ZeRO formulas say", "[sharding][slow]") {
    it::TempDir dir;
    const int ranks = GENERATE(1, 2, 4);
    CAPTURE(ranks);
    const Run ddp = run(dir, "ddp" + std::to_string(ranks), spec("ddp", ranks));

    std::vector<std::pair<std::string, int>> strategies = {{"zero1", 1}, {"zero2", 1}, {"fsdp", 1}};
    if (ranks == 4)
        strategies.push_back({"hsdp", 2});
    for (const auto& [kind, replicas] : strategies) {
        const it::ScenarioSpec s = spec(kind, ranks, replicas);
        const std::string tag = kind + std::to_string(ranks);
        CAPTURE(kind);
        const Run sharded = run(dir, tag, s);

        {
            INFO("the parameters equal DDP's after 3 steps: " + tag);
            const double diff = maxAbsDifference(sharded.rank0, ddp.rank0);
            CAPTURE(diff);
            CHECK(diff < kTolerance);
        }

        const dt::Scenario scenario = parsed(s);
        const dt::ModelStateTheory theory = dt::modelStateTheory(scenario);
        const auto& j = sharded.summary;
        const auto& peak = j["peak_memory"][0];
        {
            INFO("parameters, gradients and optimizer state per rank match the formulas: " + tag);
            CAPTURE(peak.dump(), theory.parameters, theory.gradients, theory.optimizer_state);
            // fsdp: parameters = shards + the unsharded copies alive when sampled, so
            // the peak is the shards plus the materialized peak.
            const double sharded =
                peak["parameters"].get<double>() - peak["params_materialized"].get<double>();
            CHECK(relativeError(sharded, double(theory.parameters)) < 0.01);
            CHECK(relativeError(peak["gradients"].get<double>(), double(theory.gradients)) < 0.01);
            CHECK(relativeError(peak["optimizer_state"].get<double>(), double(theory.optimizer_state)) <
                  0.01);
            if (kind == "fsdp" || kind == "hsdp") {
                // root + the unit computing + the prefetched one, at most
                // root + the unit computing + the prefetched one (backward prefetch is on)
                const double materialized = peak["params_materialized"].get<double>();
                CAPTURE(materialized, theory.materialized_peak);
                CHECK(relativeError(materialized, double(theory.materialized_peak)) < 0.01);
            } else {
                CHECK(peak["params_materialized"] == 0);
            }
        }

        {
            INFO("bytes sent per step match the cost model: " + tag);
            const double per_step = j["bytes_sent"][0].get<double>() / 3.0;
            const double expected = double(dt::bytesPerStepTheory(scenario));
            CAPTURE(per_step, expected);
            if (ranks == 1)
                CHECK(per_step == 0.0);
            else
                CHECK(relativeError(per_step, expected) < 0.001);
        }
    }

    if (ranks >= 2) {
        INFO("sharding saves model-state memory in the order of the ZeRO stages");
        // The sharded model states. FSDP's materialized units come on top (with
        // only 2 blocks here, root + 2 blocks is the whole model: FSDP pays off
        // with many units, which fsdp_memory.toml and the benchmark show).
        const auto states = [&](const std::string& kind) {
            const auto p =
                it::readJsonFile(dir.file(kind + std::to_string(ranks) + ".json"))["peak_memory"][0];
            return p["parameters"].get<double>() - p["params_materialized"].get<double>() +
                   p["gradients"].get<double>() + p["optimizer_state"].get<double>();
        };
        const auto ddp_peak = ddp.summary["peak_memory"][0];
        const double ddp_states = ddp_peak["parameters"].get<double>() + ddp_peak["gradients"].get<double>() +
                                  ddp_peak["optimizer_state"].get<double>();
        CHECK(states("zero1") < ddp_states);
        CHECK(states("zero2") < states("zero1"));
        CHECK(states("fsdp") < states("zero2"));
    }
}

TEST_CASE("Microbatches and activation checkpointing change memory, not the result", "[sharding][slow]") {
    it::TempDir dir;
    it::ScenarioSpec base = spec("fsdp", 2);
    base.batch_per_rank = 8;
    const Run plain = run(dir, "plain", base);

    it::ScenarioSpec sync = base;
    sync.strategy_toml = "microbatches = 4\nsync_every_microbatch = true\n";
    const Run with_sync = run(dir, "sync", sync);
    it::ScenarioSpec nosync = base;
    nosync.strategy_toml = "microbatches = 4\nsync_every_microbatch = false\n";
    const Run without_sync = run(dir, "nosync", nosync);
    it::ScenarioSpec ckpt = base;
    ckpt.strategy_toml = "activation_checkpointing = true\n";
    const Run checkpointed = run(dir, "ckpt", ckpt);

    {
        INFO("4 microbatches give the parameters of one batch, with or without communication per microbatch");
        CHECK(maxAbsDifference(with_sync.rank0, plain.rank0) < kTolerance);
        CHECK(maxAbsDifference(without_sync.rank0, plain.rank0) < kTolerance);
    }
    {
        INFO("communicating per microbatch moves 4x the reduce-scatter bytes; skipping it keeps unsharded "
             "gradients");
        const auto& c_sync = with_sync.summary["collectives"]["reduce-scatter"];
        const auto& c_nosync = without_sync.summary["collectives"]["reduce-scatter"];
        CHECK(c_sync["count"].get<int64_t>() == 4 * c_nosync["count"].get<int64_t>());
        CHECK(without_sync.summary["peak_memory"][0]["gradients"].get<double>() >
              2.0 * with_sync.summary["peak_memory"][0]["gradients"].get<double>());
    }
    {
        INFO("activation checkpointing recomputes each block and keeps fewer activations");
        CHECK(maxAbsDifference(checkpointed.rank0, plain.rank0) < kTolerance);
        const double act_plain = plain.summary["peak_memory"][0]["activations"].get<double>();
        const double act_ckpt = checkpointed.summary["peak_memory"][0]["activations"].get<double>();
        CAPTURE(act_plain, act_ckpt);
        CHECK(act_ckpt < 0.8 * act_plain);
    }
}

TEST_CASE("Offloading the optimizer moves its state to the host and changes nothing else",
          "[sharding][offload][slow]") {
    it::TempDir dir;
    for (const std::string kind : {"zero1", "zero2", "fsdp"}) {
        CAPTURE(kind);
        const it::ScenarioSpec plain_spec = spec(kind, 2);
        it::ScenarioSpec offload_spec = plain_spec;
        offload_spec.strategy_toml = "offload_optimizer = true\n";
        const Run plain = run(dir, kind + "_plain", plain_spec);
        const Run offloaded = run(dir, kind + "_offload", offload_spec);
        const dt::ModelStateTheory theory = dt::modelStateTheory(parsed(offload_spec));
        const auto& peak = offloaded.summary["peak_memory"][0];
        const auto& plain_peak = plain.summary["peak_memory"][0];
        CAPTURE(peak.dump(), plain_peak.dump());
        {
            INFO("AdamW on the host copy computes exactly what it computes on the device: the same bits");
            CHECK(maxAbsDifference(offloaded.rank0, plain.rank0) == 0.0);
            CHECK(offloaded.summary["params_checksum"][0] == plain.summary["params_checksum"][0]);
        }
        {
            INFO("the device holds no optimizer state; the host holds AdamW + fp32 shard + its gradient = 16 "
                 "Psi / N");
            CHECK(peak["optimizer_state"] == 0);
            CHECK(plain_peak["host"] == 0);
            CHECK(theory.host ==
                  2 * plain_peak["optimizer_state"].get<int64_t>()); // 16 Psi / N = 2 x 8 Psi / N
            CHECK(peak["host"].get<int64_t>() == theory.host);
            CHECK(peak["gradients"] == plain_peak["gradients"]);
            CHECK(peak["parameters"].get<double>() - peak["params_materialized"].get<double>() ==
                  plain_peak["parameters"].get<double>() - plain_peak["params_materialized"].get<double>());
            // The live peak (counted device bytes) falls by about the state it no longer holds.
            const double saved = plain_peak["live_peak"].get<double>() - peak["live_peak"].get<double>();
            CAPTURE(saved, plain_peak["optimizer_state"].get<double>());
            CHECK(saved > 0.5 * plain_peak["optimizer_state"].get<double>());
        }
        {
            INFO("each step copies 4 Psi / N down and 4 Psi / N up, and the copies are timed");
            const auto& o = offloaded.summary["offload"];
            CAPTURE(o.dump());
            CHECK(o["bytes_each_way_per_step"][0].get<int64_t>() == theory.offload_bytes_each_way);
            CHECK(theory.offload_bytes_each_way * 2 == plain_peak["optimizer_state"].get<int64_t>());
            CHECK(o["grads_to_host_ms_median"][0].get<double>() > 0.0);
            CHECK(o["params_to_device_ms_median"][0].get<double>() > 0.0);
            CHECK(o["host_optimizer_ms_median"][0].get<double>() > 0.0);
            CHECK_FALSE(plain.summary.contains("offload"));
        }
    }

    {
        INFO("a checkpoint written with offload resumes without it, and one written without it resumes with "
             "it");
        const std::string with_dir = dir.file("ckpt_with"), without_dir = dir.file("ckpt_without");
        it::ScenarioSpec s = spec("zero2", 2);
        s.steps = 4;
        const Run straight = run(dir, "straight", s);
        it::ScenarioSpec save_with = s;
        save_with.strategy_toml = "offload_optimizer = true\n";
        save_with.steps = 2;
        save_with.run_toml = "checkpoint_dir = \"" + with_dir + "\"\ncheckpoint_every = 2\n";
        run(dir, "save_with", save_with);
        it::ScenarioSpec save_without = s;
        save_without.steps = 2;
        save_without.run_toml = "checkpoint_dir = \"" + without_dir + "\"\ncheckpoint_every = 2\n";
        run(dir, "save_without", save_without);
        REQUIRE(fs::exists(with_dir + "/step-1/checkpoint.json"));
        REQUIRE(fs::exists(without_dir + "/step-1/checkpoint.json"));

        const Run resumed_without = run(dir, "resume_without", s, {"--resume", with_dir + "/step-1"});
        it::ScenarioSpec resume_with = s;
        resume_with.strategy_toml = "offload_optimizer = true\n";
        const Run resumed_with = run(dir, "resume_with", resume_with, {"--resume", without_dir + "/step-1"});
        CHECK(maxAbsDifference(resumed_without.rank0, straight.rank0) == 0.0);
        CHECK(maxAbsDifference(resumed_with.rank0, straight.rank0) == 0.0);
    }

    {
        INFO("offload on a strategy that is not sharded is refused before anything starts, saying why");
        it::ScenarioSpec ddp = spec("ddp", 2);
        ddp.strategy_toml = "offload_optimizer = true\n";
        const auto r = it::runDtrun({"run", dir.write("ddp_offload.toml", it::scenarioToml(ddp)), "--quiet"});
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
        CHECK(r.err.find("offload_optimizer needs a sharded kind") != std::string::npos);
        CHECK(r.err.find("ddp_offload.toml:") != std::string::npos);
    }
}

TEST_CASE("A sharded checkpoint resumes on another shard count and a bad one is refused",
          "[sharding][checkpoint][slow]") {
    it::TempDir dir;
    const std::string ckpt_dir = dir.file("ckpt");
    it::ScenarioSpec s = spec("fsdp", 2);
    s.steps = 4;
    s.run_toml = "checkpoint_dir = \"" + ckpt_dir + "\"\ncheckpoint_every = 2\n";
    const Run straight = run(dir, "straight", s);
    REQUIRE(fs::exists(ckpt_dir + "/step-1/checkpoint.json"));
    REQUIRE(fs::exists(ckpt_dir + "/step-1/shard-1-of-2.dtparams"));
    REQUIRE(fs::exists(ckpt_dir + "/step-3/checkpoint.json"));

    {
        INFO("resuming step-1 on 4 shards (zero2) and on 1 (fsdp) ends where the straight run ended");
        it::ScenarioSpec four = spec("zero2", 4);
        four.steps = 4;
        const Run resumed4 = run(dir, "resumed4", four, {"--resume", ckpt_dir + "/step-1"});
        CHECK(maxAbsDifference(resumed4.rank0, straight.rank0) < kTolerance);
        CHECK(resumed4.summary["steps"] == 2); // steps 2 and 3
        it::ScenarioSpec one = spec("fsdp", 1);
        one.steps = 4;
        const Run resumed1 = run(dir, "resumed1", one, {"--resume", ckpt_dir + "/step-1"});
        CHECK(maxAbsDifference(resumed1.rank0, straight.rank0) < kTolerance);
    }

    // Replaces `key` (which must be there) with `value` in STEP_DIR/checkpoint.json.
    const auto editCheckpointJson = [](const std::string& step_dir, const std::string& key,
                                       const std::string& value) {
        std::ifstream in(step_dir + "/checkpoint.json");
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const auto at = text.find(key);
        REQUIRE(at != std::string::npos);
        text.replace(at, key.size(), value);
        std::ofstream(step_dir + "/checkpoint.json", std::ios::trunc) << text;
    };
    const auto refused = [&](const std::string& tag, const it::ScenarioSpec& spec_,
                             const std::vector<std::string>& extra) {
        std::vector<std::string> args{"run", dir.write(tag + ".toml", it::scenarioToml(spec_)), "--summary",
                                      dir.file(tag + ".json"), "--quiet"};
        args.insert(args.end(), extra.begin(), extra.end());
        const auto r = it::runDtrun(args);
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
        CHECK_FALSE(fs::exists(dir.file(tag + ".json"))); // nothing started, nothing written
        return r.err;
    };

    {
        INFO("a flipped byte in a shard file is refused before anything starts, naming the file");
        const std::string copy = dir.file("corrupt");
        fs::copy(ckpt_dir + "/step-1", copy);
        const std::string victim = copy + "/shard-1-of-2.dtparams";
        {
            std::fstream f(victim, std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(200);
            char c = 0;
            f.read(&c, 1);
            f.seekp(200);
            c = char(c ^ 0x5a);
            f.write(&c, 1);
        }
        const std::string err = refused("corrupt", spec("fsdp", 2), {"--resume", copy});
        CHECK(err.find("shard-1-of-2.dtparams") != std::string::npos);
        CHECK(err.find("checksum") != std::string::npos);
    }

    {
        INFO("a missing shard file is refused: the checkpoint says how many shards it was saved with");
        const std::string copy = dir.file("incomplete");
        fs::copy(ckpt_dir + "/step-1", copy);
        fs::remove(copy + "/shard-0-of-2.dtparams");
        const std::string err = refused("incomplete", spec("fsdp", 2), {"--resume", copy});
        CHECK(err.find("incomplete") != std::string::npos);
        CHECK(err.find("shard-0-of-2.dtparams") != std::string::npos);
    }

    {
        INFO("two shard files swapped are refused: each file says which shard of which step it holds");
        const std::string copy = dir.file("swapped");
        fs::copy(ckpt_dir + "/step-1", copy);
        fs::rename(copy + "/shard-0-of-2.dtparams", copy + "/tmp");
        fs::rename(copy + "/shard-1-of-2.dtparams", copy + "/shard-0-of-2.dtparams");
        fs::rename(copy + "/tmp", copy + "/shard-1-of-2.dtparams");
        const std::string err = refused("swapped", spec("fsdp", 2), {"--resume", copy});
        CHECK(err.find("shard-0-of-2.dtparams holds shard 1 of 2 of step 1, not shard 0 of 2 of step 1") !=
              std::string::npos);
    }

    {
        INFO("a shard copied in from another step's checkpoint is refused");
        const std::string copy = dir.file("foreign");
        fs::copy(ckpt_dir + "/step-1", copy);
        fs::copy_file(ckpt_dir + "/step-3/shard-1-of-2.dtparams", copy + "/shard-1-of-2.dtparams",
                      fs::copy_options::overwrite_existing);
        const std::string err = refused("foreign", spec("fsdp", 2), {"--resume", copy});
        CHECK(err.find("holds shard 1 of 2 of step 3") != std::string::npos);
    }

    {
        INFO("a shard of the same step copied in from another run's checkpoint is refused");
        it::ScenarioSpec again = s;
        again.run_toml = "checkpoint_dir = \"" + dir.file("ckpt_again") + "\"\ncheckpoint_every = 2\n";
        (void)run(dir, "again", again);
        const std::string copy = dir.file("other_run");
        fs::copy(ckpt_dir + "/step-1", copy);
        fs::copy_file(dir.file("ckpt_again") + "/step-1/shard-1-of-2.dtparams",
                      copy + "/shard-1-of-2.dtparams", fs::copy_options::overwrite_existing);
        const std::string err = refused("other_run", spec("fsdp", 2), {"--resume", copy});
        CHECK(err.find("shard-1-of-2.dtparams' was written by run ") != std::string::npos);
        CHECK(err.find("its checkpoint.json by run ") != std::string::npos);
    }

    {
        INFO("a checkpoint written for another model kind is refused, naming both");
        const std::string copy = dir.file("other_kind");
        fs::copy(ckpt_dir + "/step-1", copy);
        editCheckpointJson(copy, "\"model\": \"tiny_gpt\"", "\"model\": \"mlp\"");
        const std::string err = refused("other_kind", spec("fsdp", 2), {"--resume", copy});
        CHECK(err.find("was written for [model] kind = \"mlp\"; this run trains \"tiny_gpt\"") !=
              std::string::npos);
    }

    {
        INFO("a negative step or AdamW step in checkpoint.json is refused");
        for (const auto& [key, value] : {std::pair<std::string, std::string>{"\"step\": 1", "\"step\": -5"},
                                         {"\"adam_step\": 2", "\"adam_step\": -7"}}) {
            const std::string copy = dir.file("negative" + std::to_string(value.size()) + key.substr(1, 4));
            fs::copy(ckpt_dir + "/step-1", copy);
            editCheckpointJson(copy, key, value);
            const std::string err = refused("neg" + key.substr(1, 4), spec("fsdp", 2), {"--resume", copy});
            CHECK(err.find("must be >= 0") != std::string::npos);
        }
    }

    {
        INFO("a checkpoint of another model is refused");
        it::ScenarioSpec other = spec("fsdp", 2);
        other.layers = 3;
        const std::string err = refused("othermodel", other, {"--resume", ckpt_dir + "/step-1"});
        CHECK(err.find("does not fit this model") != std::string::npos);
    }

    {
        INFO("a run that would overwrite a checkpoint is refused and the checkpoint is untouched");
        const auto before = fs::last_write_time(ckpt_dir + "/step-3/checkpoint.json");
        const std::string err = refused("overwrite", s, {});
        CHECK(err.find("exists already") != std::string::npos);
        CHECK(fs::last_write_time(ckpt_dir + "/step-3/checkpoint.json") == before);
    }
}

TEST_CASE("HSDP all-reduces each unit across replicas right after its reduce-scatter, during backward",
          "[sharding][slow]") {
    // As FSDP's HYBRID_SHARD: the all-reduce is issued in the unit's
    // post-backward, behind its reduce-scatter, while the units before it still
    // compute their backward; it used to be issued only after every
    // reduce-scatter of the step had been waited on.
    it::TempDir dir;
    it::ScenarioSpec s = spec("hsdp", 4, 2);
    s.layers = 3;
    const auto r = it::runDtrun({"run", dir.write("hsdp.toml", it::scenarioToml(s)), "--summary",
                                 dir.file("s.json"), "--record", dir.file("r.dtrec"), "--quiet"},
                                {{}, {}, 180.0, ""});
    INFO(it::describe(r));
    REQUIRE(r.exit_code == 0);
    const dt::RecordingLoad load = dt::readRecording(dir.file("r.dtrec"));
    REQUIRE(load.complete);
    const int units = s.layers + 1; // the blocks and the root
    for (int rank = 0; rank < s.ranks; ++rank) {
        for (int step = 0; step < s.steps; ++step) {
            CAPTURE(rank, step);
            std::vector<std::pair<int, int64_t>> reduce_scatters; // (unit, scheduled), in issue order
            std::map<int, int64_t> all_reduces;                   // unit -> scheduled
            int64_t final_wait_begin = 0; // the end of backward's wait: the step's last Wait of unit -1
            for (const dt::Event& e : load.record.events) {
                if (e.rank != rank || e.step != step)
                    continue;
                if (e.phase == dt::EventPhase::WorkScheduled && e.kind == dt::EventKind::ReduceScatter)
                    reduce_scatters.emplace_back(e.unit, e.t_ns);
                if (e.phase == dt::EventPhase::WorkScheduled && e.kind == dt::EventKind::AllReduce) {
                    CHECK(e.group >= 128); // the replicate group
                    all_reduces[e.unit] = e.t_ns;
                }
                if (e.phase == dt::EventPhase::Span && e.kind == dt::EventKind::Wait && e.unit == -1)
                    final_wait_begin = std::max(final_wait_begin, e.t_ns);
            }
            REQUIRE(reduce_scatters.size() == size_t(units));
            REQUIRE(all_reduces.size() == size_t(units));
            REQUIRE(final_wait_begin > 0);
            {
                INFO("a unit's all-reduce is scheduled before the next unit in backward issues its "
                     "reduce-scatter");
                for (size_t k = 0; k + 1 < reduce_scatters.size(); ++k) {
                    const auto [unit, rs_scheduled] = reduce_scatters[k];
                    CAPTURE(unit);
                    CHECK(rs_scheduled <= all_reduces.at(unit));
                    CHECK(all_reduces.at(unit) <= reduce_scatters[k + 1].second);
                }
            }
            {
                INFO("every all-reduce is scheduled before the end of backward starts waiting");
                for (const auto& [unit, scheduled] : all_reduces) {
                    CAPTURE(unit);
                    CHECK(scheduled < final_wait_begin);
                }
            }
        }
    }
}
