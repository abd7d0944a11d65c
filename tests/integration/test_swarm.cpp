// test_swarm.cpp: SWARM parallelism with real processes through `dtrun run`
// (engine/src/swarm/): trainers, stage servers, real TCP calls, real SIGKILL.
//
//  - one server per stage, one trainer and an identity outer step (outer lr 1,
//    momentum 0, a round after every inner step) trains exactly what one
//    process training the unsplit model on the same batch does;
//  - a slowed server gets fewer calls, under either routing rule;
//  - a server killed mid-run: the trainers go on without waiting for its
//    restart, every microbatch is counted once in the loss and answered once
//    per stage, the replacement loads its stage's state and ends with the
//    same parameters as the other server of its stage, and no worker is left.
// Checks are blocks with an INFO sentence (a SECTION would start every process again).
#include "checkpoint/params_io.hpp"
#include "process_helpers.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <sys/stat.h>

namespace {

struct Swarm {
    int trainers = 2, stages = 2, servers = 2, microbatches = 2, batch = 8, steps = 16, outer_every = 2;
    std::string routing = "throughput", extra;
    double outer_lr = 0.7, outer_momentum = 0.9;
    int restart_delay_ms = 500; // [swarm] restart_delay_ms: the scenario default
};

std::string toml(const Swarm& w) {
    return "[scenario]\nname = \"swarm test\"\n[topology]\nranks = " +
           std::to_string(w.trainers + w.stages * w.servers) + "\nstages = " + std::to_string(w.stages) +
           "\n[model]\nlayers = 4\n[data]\nbatch_per_rank = " + std::to_string(w.batch) +
           "\n[strategy]\nkind = \"swarm\"\nmicrobatches = " + std::to_string(w.microbatches) +
           "\n[swarm]\ntrainers = " + std::to_string(w.trainers) +
           "\nservers_per_stage = " + std::to_string(w.servers) + "\nrouting = \"" + w.routing +
           "\"\nouter_every = " + std::to_string(w.outer_every) +
           "\nouter_lr = " + std::to_string(w.outer_lr) +
           "\nouter_momentum = " + std::to_string(w.outer_momentum) +
           "\nrestart_delay_ms = " + std::to_string(w.restart_delay_ms) +
           "\n[run]\nsteps = " + std::to_string(w.steps) + "\n" + w.extra;
}

struct Run {
    nlohmann::json summary;
    std::string params_dir;
};

Run run(const it::TempDir& dir, const std::string& tag, const std::string& text) {
    const std::string out = dir.file(tag);
    REQUIRE(::mkdir(out.c_str(), 0755) == 0);
    it::ProcessOptions opts;
    opts.timeout_s = 180;
    const auto r = it::runDtrun({"run", dir.write(tag + ".toml", text), "--summary", dir.file(tag + ".json"),
                                 "--params-out", out, "--quiet"},
                                opts);
    INFO(tag << ": " << it::describe(r));
    REQUIRE(r.exit_code == 0);
    return {it::readJsonFile(dir.file(tag + ".json")), out};
}

std::map<std::string, at::Tensor> paramsOf(const std::string& dir, const std::vector<int>& ranks) {
    std::map<std::string, at::Tensor> params;
    for (int rank : ranks)
        for (auto& p : dt::loadParameters(dir + "/rank" + std::to_string(rank) + ".params"))
            params[p.name] = p.tensor;
    return params;
}

double maxAbsDifference(const std::map<std::string, at::Tensor>& a,
                        const std::map<std::string, at::Tensor>& b) {
    REQUIRE(a.size() == b.size());
    double worst = 0.0;
    for (const auto& [name, ta] : a) {
        REQUIRE(b.count(name));
        const at::Tensor x = ta.contiguous(), y = b.at(name).contiguous();
        REQUIRE(x.sizes() == y.sizes());
        for (int64_t k = 0; k < x.numel(); ++k)
            worst = std::max(worst, double(std::fabs(x.data_ptr<float>()[k] - y.data_ptr<float>()[k])));
    }
    return worst;
}

} // namespace

TEST_CASE("One server per stage with an identity outer step trains like one process", "[swarm][slow][solo]") {
    it::TempDir dir;
    const std::string single = "[scenario]\nname = \"single\"\n[topology]\nranks = 1\n[model]\nlayers = 4\n"
                               "[data]\nbatch_per_rank = 8\n[strategy]\nkind = \"ddp\"\n[run]\nsteps = 3\n";
    const auto reference = paramsOf(run(dir, "single", single).params_dir, {0});
    Swarm w;
    w.trainers = 1;
    w.servers = 1;
    w.microbatches = 4; // a server steps after 4 backward calls: the whole batch of 8
    w.steps = 3;
    w.outer_every = 1;
    w.outer_lr = 1.0;
    w.outer_momentum = 0.0;
    const Run swarm = run(dir, "swarm", toml(w));
    INFO("the stages' parameters (ranks 1 and 2) equal the single process's after 3 steps");
    const double diff = maxAbsDifference(paramsOf(swarm.params_dir, {1, 2}), reference);
    CAPTURE(diff);
    CHECK(diff < 1e-5);
    CHECK(swarm.summary["ok"] == true);
    CHECK(swarm.summary["steps"] == 3);
    CHECK(swarm.summary["swarm"]["microbatches"] == 12);
}

TEST_CASE("A slowed server gets fewer calls under either routing rule", "[swarm][slow][solo]") {
    it::TempDir dir;
    for (const char* routing : {"throughput", "fastest"}) {
        Swarm w;
        w.routing = routing;
        w.steps = 12;
        w.outer_every = 0; // no rounds: only the routing decides who serves
        // Server 1 of stage 0 (rank 3) spends 60 ms in every call from step 0 on.
        w.extra =
            "[[faults]]\naction = \"slow\"\nrank = 3\nstep = 0\nwhen = \"time\"\nat_s = 0\ndelay_ms = 60\n";
        const Run r = run(dir, std::string("slow-") + routing, toml(w));
        const auto& servers = r.summary["swarm"]["servers"];
        const int64_t fast = servers[0]["forward_calls"], slow = servers[1]["forward_calls"];
        INFO(routing << ": the slowed server (rank 3) answered " << slow << " forward calls, its peer "
                     << fast);
        CHECK(slow * 2 < fast);
        CHECK(fast + slow == 12 * 2 * 2); // every microbatch of both trainers went through stage 0 once
    }
}

TEST_CASE("A killed server costs only its calls: training goes on and the replacement rejoins its stage",
          "[swarm][slow][solo]") {
    it::TempDir dir;
    Swarm w;
    w.steps = 36;
    // The replacement starts 1 s after the death, so "steps went on meanwhile" has a window of
    // several steps even on a loaded machine (with 0.5 s, one suite run saw none end in it).
    w.restart_delay_ms = 1000;
    w.extra = "[[faults]]\naction = \"kill\"\nrank = 3\nstep = 4\nwhen = \"step\"\n";
    const Run r = run(dir, "kill", toml(w));
    const auto& s = r.summary["swarm"];
    INFO(s.dump());
    CHECK(r.summary["ok"] == true);
    INFO("every step of both trainers has a loss, each microbatch counted once");
    CHECK(r.summary["steps"] == w.steps);
    CHECK(s["microbatches"] == s["microbatches_expected"]);
    const int per_stage = w.steps * w.trainers * w.microbatches; // each microbatch's backward, once
    CHECK(s["backward_by_stage"] == nlohmann::json::array({per_stage, per_stage}));
    INFO("the trainers noticed the death and sent its calls elsewhere");
    REQUIRE(s["deaths"].size() == 1);
    const auto& death = s["deaths"][0];
    CHECK(death["rank"] == 3);
    CHECK(death["reroute_ms"].is_number());
    CHECK(s["reroutes_connection"].get<int>() >= 1);
    INFO("steps ended between the death and the replacement's first call: nobody waited for it");
    REQUIRE(death["back_at_s"].is_number());
    const double died = death["at_s"], back = death["back_at_s"];
    int steps_meanwhile = 0;
    for (const auto& end : r.summary["step_end_s_by_step"])
        steps_meanwhile += end.is_number() && end.get<double>() > died && end.get<double>() < back ? 1 : 0;
    CHECK(steps_meanwhile >= 2);
    INFO("the replacement started twice in all and ends with its stage's weights, bit for bit");
    CHECK(s["servers"][1]["starts"] == 2);
    CHECK(s["servers"][1]["backward_calls"].get<int>() > 0); // it served again after its restart
    CHECK(maxAbsDifference(paramsOf(r.params_dir, {2}), paramsOf(r.params_dir, {3})) == 0.0);
    CHECK(maxAbsDifference(paramsOf(r.params_dir, {4}), paramsOf(r.params_dir, {5})) == 0.0);
    INFO("no worker process is left");
    CHECK(it::waitForNoWorkers(10).empty());
}
