// test_diloco.cpp: DiLoCo and Streaming DiLoCo with real `dtrun run`
// processes over loopback Gloo.
//
//  - H = 1, outer lr 1, no momentum and an SGD inner optimizer is DDP: the
//    average of the replicas' one-step models is the step on the averaged
//    gradient, so the parameters equal DDP's within float rounding;
//  - bytes: classic DiLoCo sends DDP's bytes / H; a streaming run sends what
//    diloco_theory.hpp says, its peak per sync about 1/F of the model, times
//    the quantized width;
//  - int8 pseudo-gradients still train (the loss falls as far as fp32's);
//  - a 25 Mbit/s link makes each DDP step wait for its all-reduce, while
//    DiLoCo's inner steps do not communicate;
//  - a checkpoint holds both copies and resumes bit for bit; a corrupt one
//    is skipped.
// Checks are blocks with an INFO sentence rather than SECTIONs (a SECTION
// re-runs the test case, which would start every process again).
#include "checkpoint/params_io.hpp"
#include "param_compare.hpp"
#include "process_helpers.hpp"

#include "dtlab/diloco_theory.hpp"
#include "dtlab/scenario.hpp"
#include "dtlab/sharding_theory.hpp"

#include <ATen/ATen.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>

namespace {

struct Run {
    nlohmann::json summary;
    std::vector<dt::NamedParameter> rank0;
};

Run run(const it::TempDir& dir, const std::string& tag, const it::ScenarioSpec& s) {
    const std::string out_dir = dir.file(tag);
    REQUIRE(::mkdir(out_dir.c_str(), 0755) == 0);
    it::ProcessOptions opts;
    opts.timeout_s = 240;
    const auto r = it::runDtrun({"run", dir.write(tag + ".toml", it::scenarioToml(s)), "--summary",
                                 dir.file(tag + ".json"), "--params-out", out_dir, "--quiet"},
                                opts);
    INFO(tag << ": " << it::describe(r));
    REQUIRE(r.exit_code == 0);
    Run out;
    out.summary = it::readJsonFile(dir.file(tag + ".json"));
    REQUIRE(out.summary["ok"] == true);
    const auto& sums = out.summary["params_checksum"];
    for (const auto& c : sums)
        CHECK(c == sums[0]); // every replica ends with the same global model
    out.rank0 = dt::loadParameters(out_dir + "/rank0.params");
    return out;
}

using it::maxAbsDifference;

it::ScenarioSpec spec(const std::string& name, const std::string& strategy, int steps) {
    it::ScenarioSpec s;
    s.name = name;
    s.ranks = 2;
    s.strategy = strategy;
    s.layers = 2;
    s.steps = steps;
    s.batch_per_rank = 8;
    return s;
}

int64_t bytesSent(const Run& r) {
    return r.summary["bytes_sent"][0].get<int64_t>();
}

double median(const nlohmann::json& values) {
    std::vector<double> v;
    for (const auto& x : values)
        v.push_back(x.get<double>());
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

TEST_CASE("DiLoCo with H = 1, outer lr 1 and no momentum trains exactly like DDP", "[diloco][slow]") {
    it::TempDir dir;
    const std::string sgd = "[optimizer]\nkind = \"sgd\"\nlr = 0.05\nweight_decay = 0.0\n";
    it::ScenarioSpec ddp = spec("ddp sgd", "ddp", 4);
    ddp.extra_toml = sgd;
    it::ScenarioSpec diloco = spec("diloco H1", "diloco", 4);
    diloco.extra_toml = sgd + "[diloco]\ninner_steps = 1\nouter_lr = 1.0\nouter_momentum = 0.0\n";
    const Run a = run(dir, "ddp", ddp);
    const Run b = run(dir, "diloco", diloco);
    // One SGD step moves a weight by lr |g| ~ 1e-3; float rounding of
    // (theta - theta_i) averaged and subtracted is ~1e-7.
    const double diff = maxAbsDifference(a.rank0, b.rank0);
    INFO("max |DDP - DiLoCo(H=1)| = " << diff);
    CHECK(diff < 1e-5);
    // ... and the trained model did move (the comparison is not vacuous).
    CHECK(a.summary["final_loss"].get<double>() < a.summary["initial_loss"].get<double>());
}

TEST_CASE("Classic DiLoCo sends DDP's bytes divided by H, and a streaming sync sends one fragment",
          "[diloco][slow]") {
    it::TempDir dir;
    const int steps = 12;
    const Run ddp = run(dir, "ddp", spec("ddp", "ddp", steps));
    it::ScenarioSpec classic = spec("classic", "diloco", steps);
    classic.extra_toml = "[diloco]\ninner_steps = 4\n";
    const Run c = run(dir, "classic", classic);
    {
        INFO("12 steps, H = 4: three syncs of the whole model in fp32, one DDP step's all-reduce each");
        const auto allReduceBytes = [](const Run& r) {
            return r.summary["collectives"]["all-reduce"]["bytes"].get<int64_t>();
        };
        CHECK(allReduceBytes(c) * 4 == allReduceBytes(ddp));
        // DDP's broadcasts (rank 0's gradient order for its bucket rebuild, as PyTorch's DDP does) are
        // the rest of its bytes on the wire: a few hundred bytes beside 21 MB.
        CAPTURE(bytesSent(ddp), bytesSent(c));
        CHECK(bytesSent(ddp) > bytesSent(c) * 4);
        CHECK(bytesSent(ddp) - bytesSent(c) * 4 <=
              ddp.summary["collectives"]["broadcast"]["bytes"].get<int64_t>());
        CHECK(c.summary["collectives"]["all-reduce"]["count"].get<int>() == 2 * 3);
    }

    it::ScenarioSpec streaming = spec("streaming", "diloco", steps);
    streaming.extra_toml =
        "[diloco]\ninner_steps = 4\nfragments = 2\nsync_delay = 1\npseudo_gradient = \"int8\"\n";
    const Run st = run(dir, "streaming", streaming);
    const dt::Scenario parsed = dt::parseScenarioText(it::scenarioToml(streaming), "streaming.toml");
    const dt::DilocoTheory theory = dt::dilocoTheory(parsed);
    {
        INFO("fragment 0 syncs after steps 3, 7, 11; fragment 1 after 5, 9 and the last step 11");
        CHECK(bytesSent(st) == 3 * theory.bytes_per_sync[0] + 3 * theory.bytes_per_sync[1]);
        CHECK(st.summary["collectives"]["all-gather"]["count"].get<int>() == 2 * 6);
    }
    {
        INFO("the peak per sync is about half the model (2 fragments), at about 1 byte per value instead of "
             "4");
        const int64_t model = dt::unitLayout(parsed.model).total();
        const double peak_per_value = double(theory.peak_bytes_per_sync) / double(model);
        CHECK(peak_per_value > 0.5 * 1.0);   // one of the two halves, 1 byte + scales per value
        CHECK(peak_per_value < 0.65 * 1.05); // the larger half holds the embeddings: < 65% of the model
        CHECK(double(theory.peak_bytes_per_sync) < 0.2 * double(theory.ddp_bytes_per_step));
    }
}

TEST_CASE("int8 pseudo-gradients train as far as fp32 ones", "[diloco][slow]") {
    it::TempDir dir;
    const int steps = 40;
    it::ScenarioSpec fp32 = spec("fp32", "diloco", steps);
    fp32.extra_toml = "[diloco]\ninner_steps = 10\n";
    it::ScenarioSpec int8 = spec("int8", "diloco", steps);
    int8.extra_toml = "[diloco]\ninner_steps = 10\npseudo_gradient = \"int8\"\n";
    const Run a = run(dir, "fp32", fp32);
    const Run b = run(dir, "int8", int8);
    const double initial = a.summary["initial_loss"].get<double>();
    const double loss_fp32 = a.summary["final_loss"].get<double>();
    const double loss_int8 = b.summary["final_loss"].get<double>();
    INFO("initial " << initial << ", final fp32 " << loss_fp32 << ", final int8 " << loss_int8);
    CHECK(loss_fp32 < initial - 0.5);
    CHECK(loss_int8 < initial - 0.5);
    CHECK(std::fabs(loss_int8 - loss_fp32) < 0.05 * loss_fp32);
}

TEST_CASE("On a 25 Mbit/s link DDP waits for every all-reduce while DiLoCo keeps computing",
          "[diloco][network][slow][solo]") {
    it::TempDir dir;
    // 25 Mbit/s: a DDP step holds about 1 s on the link, several times a
    // step's compute even on a loaded machine, so the comparison below does
    // not depend on how fast the cores are. DiLoCo syncs after steps 2 and 5
    // only, so the median of its 6 steps is a step without communication.
    const std::string link = "[network]\nbandwidth_mbit_s = 25\n";
    it::ScenarioSpec ddp = spec("ddp slow link", "ddp", 6);
    ddp.extra_toml = link;
    it::ScenarioSpec diloco = spec("diloco slow link", "diloco", 6);
    diloco.extra_toml = link + "[diloco]\ninner_steps = 3\n";
    const Run a = run(dir, "ddp", ddp);
    const Run b = run(dir, "diloco", diloco);
    const dt::Scenario parsed = dt::parseScenarioText(it::scenarioToml(ddp), "ddp.toml");
    const double link_ms = double(dt::dilocoTheory(parsed).ddp_bytes_per_step) * 8.0 / 25e6 * 1e3;
    const double ddp_ms = median(a.summary["step_ms_median"]);
    const double diloco_ms = median(b.summary["step_ms_median"]);
    INFO("link time of one DDP step " << link_ms << " ms; median step DDP " << ddp_ms << " ms, DiLoCo "
                                      << diloco_ms << " ms");
    CHECK(ddp_ms >= 0.95 * link_ms); // every DDP step holds a whole all-reduce on the link
    CHECK(diloco_ms < 0.5 * ddp_ms); // most DiLoCo steps send nothing
}

TEST_CASE("A DiLoCo checkpoint holds both copies and resumes exactly where the run was",
          "[diloco][checkpoint][slow]") {
    namespace fs = std::filesystem;
    it::TempDir dir;
    const std::string diloco = "[diloco]\ninner_steps = 4\n";
    // A straight run of 12 steps ...
    it::ScenarioSpec straight = spec("straight", "diloco", 12);
    straight.extra_toml = diloco;
    const Run a = run(dir, "straight", straight);
    // ... against 8 steps with checkpoints after steps 3 and 7, then a resumed run to step 12.
    it::ScenarioSpec first = spec("first", "diloco", 8);
    first.extra_toml = diloco;
    first.run_toml = "checkpoint_dir = \"" + dir.file("ck") + "\"\ncheckpoint_every = 4\n";
    (void)run(dir, "first", first);
    {
        INFO("the checkpoint holds the outer state once and each replica's inner state");
        for (const char* f :
             {"checkpoint.json", "outer.dtparams", "replica-0.dtparams", "replica-1.dtparams"})
            CHECK(fs::exists(dir.file("ck/step-7/") + f));
        const auto meta = it::readJsonFile(dir.file("ck/step-7/checkpoint.json"));
        CHECK(meta["format"] == "dtlab diloco checkpoint");
        CHECK(meta["replicas"] == 2);
    }
    it::ScenarioSpec resumed = spec("resumed", "diloco", 12);
    resumed.extra_toml = diloco;
    resumed.run_toml = "resume_from = \"" + dir.file("ck") + "\"\n";
    const Run b = run(dir, "resumed", resumed);
    {
        INFO("resuming from step-7 gives the straight run's parameters, bit for bit");
        CHECK(a.summary["params_checksum"][0] == b.summary["params_checksum"][0]);
        CHECK(b.summary["steps"] == 4);
    }
    {
        INFO("a corrupt replica file is detected: the newest checkpoint is skipped and the run resumes from "
             "step-3");
        {
            std::fstream f(dir.file("ck/step-7/replica-1.dtparams"),
                           std::ios::in | std::ios::out | std::ios::binary);
            f.seekp(200);
            f.put('\x5a');
        }
        it::ProcessOptions opts;
        opts.timeout_s = 240;
        const auto r = it::runDtrun({"run", dir.write("again.toml", it::scenarioToml(resumed)), "--summary",
                                     dir.file("again.json"), "--quiet"},
                                    opts);
        INFO(it::describe(r));
        CHECK(r.exit_code == 0);
        CHECK(r.err.find("skipped checkpoint") != std::string::npos);
        CHECK(r.err.find("replica-1.dtparams") != std::string::npos);
        CHECK(it::readJsonFile(dir.file("again.json"))["steps"] == 8);
    }
    {
        INFO("a DiLoCo checkpoint is refused by a DDP run with a message naming both kinds");
        it::ScenarioSpec wrong = spec("wrong", "zero2", 12);
        wrong.run_toml = "resume_from = \"" + dir.file("ck/step-3") + "\"\n";
        const auto r = it::runDtrun({"run", dir.write("wrong.toml", it::scenarioToml(wrong)), "--quiet"});
        CHECK(r.exit_code == 2);
        CHECK(r.err.find("is a DiLoCo checkpoint") != std::string::npos);
    }
}
