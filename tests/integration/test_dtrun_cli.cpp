// test_dtrun_cli.cpp: dtrun's command line as a user meets it: exit codes
// (0 ok, 1 run failed, 2 usage error), messages that point at the mistake,
// nothing started on bad input, and output files written atomically.
#include "process_helpers.hpp"

#include "dtlab/clock.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

using it::runDtrun;

namespace {

// A small, fast scenario: 2 ranks of a narrow TinyGPT, `steps` steps.
it::ScenarioSpec smallSpec(const std::string& name, int steps = 2, double timeout_s = 20) {
    it::ScenarioSpec spec;
    spec.name = name;
    spec.ranks = 2;
    spec.steps = steps;
    spec.batch_per_rank = 2;
    spec.d_model = 32;
    spec.layers = 1;
    spec.heads = 2;
    spec.timeout_s = timeout_s;
    return spec;
}

std::string smallScenario(const std::string& name) {
    return it::scenarioToml(smallSpec(name));
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

} // namespace

TEST_CASE("dtrun refuses bad command lines with exit code 2", "[cli]") {
    it::TempDir dir;
    const std::string good = dir.write("good.toml", smallScenario("cli"));

    SECTION("an unknown flag is a usage error") {
        const auto r = runDtrun({"run", good, "--no-such-flag"});
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
        CHECK(contains(r.err, "--no-such-flag"));
    }
    SECTION("a missing scenario file is a usage error that names the file") {
        const std::string missing = dir.file("nope.toml");
        const auto r = runDtrun({"run", missing});
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
        CHECK(contains(r.err, missing));
    }
    SECTION("a scenario with an unknown key is refused with file:line:col") {
        const std::string path =
            dir.write("unknown_key.toml", "[scenario]\nname = \"x\"\n\n[model]\nlayrs = 2\n");
        const auto r = runDtrun({"run", path});
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
        CHECK(contains(r.err, path + ":5:1"));
        CHECK(contains(r.err, "layrs"));
        CHECK(it::runningWorkerPids().empty());
    }
    SECTION("a scenario with a value of the wrong type is refused with file:line:col") {
        const std::string path =
            dir.write("wrong_type.toml", "[scenario]\nname = \"x\"\n\n[topology]\nranks = \"two\"\n");
        const auto r = runDtrun({"run", path});
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
        CHECK(contains(r.err, path + ":5:"));
        CHECK(contains(r.err, "ranks"));
    }
    SECTION("a vocabulary smaller than the data's tokens is refused by dtrun check and run, with the line") {
        const std::string path = it::sourceDir() + "/tests/regression/scenarios/vocab_101_on_fortunes.toml";
        for (const char* command : {"check", "run"}) {
            CAPTURE(command);
            const auto r = runDtrun({command, path});
            INFO(it::describe(r));
            CHECK(r.exit_code == 2);
            CHECK(contains(r.err, path + ":6:9"));
            CHECK(contains(r.err, "vocab = 101"));
        }
        CHECK(it::runningWorkerPids().empty());
    }
    SECTION("dtrun check reports the same broken file with exit code 2") {
        const std::string path = dir.write("bad.toml", "[scenario]\nname = \"x\"\n\n[run]\nsteps = 2.5\n");
        const auto r = runDtrun({"check", path});
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
        CHECK(contains(r.err, path + ":5:"));
    }
    SECTION("--ranks 0, --steps 0 and --batch-per-rank 0 are usage errors") {
        const auto r = runDtrun({"run", good, "--ranks", "0"});
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
        CHECK(contains(r.err, "--ranks"));
        // 0 is a value, not "flag not given": --steps 0 and --batch-per-rank 0 are refused too.
        const auto steps = runDtrun({"run", good, "--steps", "0"});
        INFO(it::describe(steps));
        CHECK(steps.exit_code == 2);
        CHECK(contains(steps.err, "--steps"));
        const auto batch = runDtrun({"run", good, "--batch-per-rank", "0"});
        INFO(it::describe(batch));
        CHECK(batch.exit_code == 2);
        CHECK(contains(batch.err, "--batch-per-rank"));
    }
    SECTION("numbers a flag cannot mean are refused: a port past 65535, a NaN pace, a seed past 2^63") {
        const std::pair<std::vector<std::string>, std::string> cases[] = {
            {{"--port", "70000"}, "--port"},
            {{"--pace", "nan"}, "--pace"},
            {{"--pace", "inf"}, "--pace"},
            {{"--pace", "0"}, "--pace"},
            {{"--chaos-seed", "18446744073709551615"}, "--chaos-seed"},
            {{"--chaos-seed", "-1"}, "--chaos-seed"},
        };
        for (const auto& [flags, name] : cases) {
            std::vector<std::string> args = {"run", good};
            args.insert(args.end(), flags.begin(), flags.end());
            const auto r = runDtrun(args);
            INFO(it::describe(r));
            CHECK(r.exit_code == 2);
            CHECK(contains(r.err, name));
        }
        const auto lighthouse = runDtrun({"lighthouse", "--port", "65536"});
        CHECK(lighthouse.exit_code == 2);
    }
    SECTION("a FIFO as the scenario is refused instead of read forever") {
        const std::string fifo = dir.file("scenario.fifo");
        REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
        const auto r = runDtrun({"check", fifo}, {{}, {}, 20.0, ""});
        INFO(it::describe(r));
        CHECK_FALSE(r.timed_out);
        CHECK(r.exit_code == 2);
        CHECK(contains(r.err, "not a regular file"));
    }
    SECTION("--listen on an address this machine does not have is refused at once") {
        const std::string token = dir.write("token", "a shared token\n");
        REQUIRE(::chmod(token.c_str(), 0600) == 0);
        const auto r =
            runDtrun({"run", good, "--listen", "192.0.2.77", "--token-file", token}, {{}, {}, 30.0, ""});
        INFO(it::describe(r));
        CHECK_FALSE(r.timed_out);
        CHECK(r.exit_code == 2);
        CHECK(r.seconds < 10.0);
        CHECK(contains(r.err, "cannot listen on 192.0.2.77"));
    }
    SECTION("--trace into a missing directory is refused before any worker starts") {
        const std::string trace = dir.file("no/such/dir/t.json");
        it::Process p({it::dtrunPath(), "run", good, "--trace", trace}, {{}, {}, 30.0, ""});
        // Watch while it runs: no worker may appear at any moment.
        bool saw_worker = false;
        while (p.running()) {
            saw_worker = saw_worker || !it::runningWorkerPids().empty();
            it::sleepSeconds(0.005);
        }
        const auto r = p.wait();
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
        CHECK(contains(r.err, "--trace"));
        CHECK(contains(r.err, dir.file("no/such/dir")));
        CHECK_FALSE(saw_worker);
        CHECK(r.err.find("ranks,") == std::string::npos); // the "N ranks, M steps" start line never printed
        CHECK_FALSE(it::fileExists(trace));
    }
    SECTION("--summary into a missing directory is refused too") {
        const auto r = runDtrun({"run", good, "--summary", dir.file("nope/s.json")});
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
        CHECK(contains(r.err, "--summary"));
    }
    SECTION("an output is never the scenario, another output, a symlink, a device or a read-only file") {
        const std::string before = it::readTextFile(good);
        const auto onto_scenario = runDtrun({"run", good, "--summary", good});
        INFO(it::describe(onto_scenario));
        CHECK(onto_scenario.exit_code == 2);
        CHECK(contains(onto_scenario.err, "is the scenario being run"));
        CHECK(it::readTextFile(good) == before); // nothing lost

        const auto twice =
            runDtrun({"run", good, "--summary", dir.file("x.json"), "--trace", dir.file("x.json")});
        CHECK(twice.exit_code == 2);
        CHECK(contains(twice.err, "name the same file"));

        const std::string target = dir.write("target.json", "keep me");
        const std::string link = dir.file("link.json");
        REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
        const auto through_link = runDtrun({"run", good, "--trace", link});
        CHECK(through_link.exit_code == 2);
        CHECK(contains(through_link.err, "is a symbolic link"));
        CHECK(it::readTextFile(target) == "keep me");

        const auto device = runDtrun({"run", good, "--trace", "/dev/null"});
        CHECK(device.exit_code == 2);
        CHECK(contains(device.err, "is not a regular file"));

        const std::string read_only = dir.write("ro.json", "keep me too");
        REQUIRE(::chmod(read_only.c_str(), 0444) == 0);
        const auto onto_read_only = runDtrun({"run", good, "--summary", read_only});
        CHECK(onto_read_only.exit_code == 2);
        CHECK(contains(onto_read_only.err, "is read-only"));
        CHECK(it::readTextFile(read_only) == "keep me too");
    }
    SECTION("an output is never under a directory the ranks write into, nor a name too long to hold") {
        const std::string params = dir.file("pd");
        REQUIRE(::mkdir(params.c_str(), 0755) == 0);
        const std::string rank0 = dir.write("pd/rank0.params", "rank 0's parameters");
        const auto into_params = runDtrun({"run", good, "--params-out", params, "--summary", rank0});
        INFO(it::describe(into_params));
        CHECK(into_params.exit_code == 2);
        CHECK(contains(into_params.err, "is --params-out"));
        CHECK(it::readTextFile(rank0) == "rank 0's parameters");

        const std::string ckpt = dir.file("ck");
        REQUIRE(::mkdir(ckpt.c_str(), 0755) == 0);
        const auto into_checkpoints = runDtrun(
            {"run", good, "--strategy", "zero1", "--checkpoint-dir", ckpt, "--summary", ckpt + "/s.json"});
        INFO(it::describe(into_checkpoints));
        CHECK(into_checkpoints.exit_code == 2);
        CHECK(contains(into_checkpoints.err, "checkpoint directory"));

        const auto long_name = runDtrun({"run", good, "--summary", dir.file(std::string(5000, 'x'))});
        CHECK(long_name.exit_code == 2);
        CHECK(contains(long_name.err, "characters long"));

        const std::string crashed = dir.write("r.dtrec.partial", "a crashed run's events");
        const auto over_partial = runDtrun({"run", good, "--record", dir.file("r.dtrec")});
        CHECK(over_partial.exit_code == 2);
        CHECK(contains(over_partial.err, "already exists"));
        CHECK(it::readTextFile(crashed) == "a crashed run's events");
    }
    SECTION("an output is never another input of the run: the token file or the training data") {
        // A corpus of its own: a folder whose extension-less files are the text.
        const std::string data = dir.file("corpus");
        REQUIRE(::mkdir(data.c_str(), 0755) == 0);
        std::string text;
        for (int i = 0; i < 400; ++i)
            text += "A fortune " + std::to_string(i) + " for the tests.\n";
        const std::string corpus = dir.write("corpus/fortunes", text);
        it::ScenarioSpec spec;
        std::string toml = it::scenarioToml(spec);
        const std::string source = "source = \"fortunes\"\n";
        toml.replace(toml.find(source), source.size(), source + "path = \"" + data + "\"\n");
        const std::string scenario = dir.write("own_data.toml", toml);
        const std::string token = dir.write("token", "a-token-of-this-test\n");
        REQUIRE(::chmod(token.c_str(), 0600) == 0);

        const auto onto_token = runDtrun({"run", scenario, "--token-file", token, "--summary", token});
        INFO(it::describe(onto_token));
        CHECK(onto_token.exit_code == 2);
        CHECK(contains(onto_token.err, "--summary: '" + token + "' is the --token-file"));
        CHECK(it::readTextFile(token) == "a-token-of-this-test\n");

        const auto onto_data = runDtrun({"run", scenario, "--trace", corpus});
        INFO(it::describe(onto_data));
        CHECK(onto_data.exit_code == 2);
        CHECK(contains(onto_data.err, "is the training data"));
        CHECK(it::readTextFile(corpus) == text);

        // A new file inside the data folder would become part of the corpus next time.
        const auto into_data = runDtrun({"run", scenario, "--record", data + "/run.dtrec"});
        INFO(it::describe(into_data));
        CHECK(into_data.exit_code == 2);
        CHECK(contains(into_data.err, "is the training data ('" + data + "')"));
        CHECK_FALSE(it::fileExists(data + "/run.dtrec"));
        CHECK_FALSE(it::fileExists(data + "/run.dtrec.partial"));
    }
    SECTION("dtrun worker without rank information names RANK and --rank") {
        it::ProcessOptions opts;
        opts.unset_env = {
            "RANK",        "WORLD_SIZE",           "LOCAL_RANK",           "MASTER_ADDR",
            "MASTER_PORT", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"};
        opts.timeout_s = 30;
        const auto r = runDtrun({"worker"}, opts);
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
        CHECK(contains(r.err, "RANK"));
        CHECK(contains(r.err, "--rank"));
    }
    SECTION("no subcommand is a usage error") {
        const auto r = runDtrun({});
        INFO(it::describe(r));
        CHECK(r.exit_code == 2);
    }
    CHECK(it::waitForNoWorkers(2.0).empty());
}

TEST_CASE("dtrun --help prints usage and exits 0", "[cli]") {
    const auto top = runDtrun({"--help"});
    INFO(it::describe(top));
    CHECK(top.exit_code == 0);
    CHECK(contains(top.out, "run"));
    CHECK(contains(top.out, "worker"));

    const auto run = runDtrun({"run", "--help"});
    INFO(it::describe(run));
    CHECK(run.exit_code == 0);
    CHECK(contains(run.out, "--ranks"));
    CHECK(contains(run.out, "--summary"));
}

TEST_CASE("dtrun check accepts a valid scenario and describes it", "[cli]") {
    const auto r = runDtrun({"check", it::scenarioPath("ddp_basics.toml")});
    INFO(it::describe(r));
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "ok"));
    CHECK(contains(r.out, "4 ranks"));
}

TEST_CASE("a run writes a Chrome trace and replaces its summary atomically", "[cli][slow]") {
    it::TempDir dir;
    const std::string scenario = dir.write("small.toml", smallScenario("cli trace"));
    const std::string summary = dir.file("s.json");
    const std::string trace = dir.file("t.json");

    const auto first = runDtrun({"run", scenario, "--summary", summary, "--trace", trace, "--quiet"});
    {
        INFO(it::describe(first));
        REQUIRE(first.exit_code == 0);
    }
    const auto t = it::readJsonFile(trace);
    REQUIRE(t.contains("traceEvents"));
    REQUIRE(t["traceEvents"].is_array());
    CHECK(t["traceEvents"].size() > 10);
    const auto& events = t["traceEvents"];
    CHECK(std::any_of(events.begin(), events.end(), [](const nlohmann::json& e) {
        return e.value("name", "") == "step" && e.value("ph", "") == "X";
    }));
    const auto s1 = it::readJsonFile(summary);
    CHECK(s1["ok"] == true);
    CHECK(s1["steps"] == 2);
    const int pid_first = s1["exit"][0]["pid"].get<int>();

    // Same paths again, one step more: the files are replaced, not appended to or left half-written.
    const auto second =
        runDtrun({"run", scenario, "--steps", "3", "--summary", summary, "--trace", trace, "--quiet"});
    {
        INFO(it::describe(second));
        REQUIRE(second.exit_code == 0);
    }
    const auto s2 = it::readJsonFile(summary); // parses: one whole JSON document
    CHECK(s2["steps"] == 3);
    CHECK(s2["exit"][0]["pid"].get<int>() != pid_first);
    CHECK(it::readJsonFile(trace).contains("traceEvents"));

    const auto names = dir.list();
    INFO("files in the output directory: " << nlohmann::json(names).dump());
    CHECK(std::none_of(names.begin(), names.end(),
                       [](const std::string& n) { return n.find(".tmp") != std::string::npos; }));
    CHECK(it::waitForNoWorkers(2.0).empty());
}

TEST_CASE("Ranks on a clock 250 ms ahead and 40 ppm fast report offset, bound and drift",
          "[cli][clock][slow]") {
    // The summary gives the offset within its bound, the re-syncs and the drift.
    // DTLAB_CLOCK_SKEW makes each rank behave as if on another host (its boot
    // id no longer counts): local = monotonic + 250 ms + 40 ppm x monotonic.
    it::TempDir dir;
    const it::ScenarioSpec spec = smallSpec("clock skew", 28, 30);
    const std::string scenario = dir.write("clock.toml", it::scenarioToml(spec));
    const std::string summary = dir.file("s.json");
    it::ProcessOptions opts;
    opts.env = {{"DTLAB_CLOCK_SKEW", "250,40"}};
    // --pace 2: two steps a second, so the run spans the 10 s a drift needs.
    const auto r = runDtrun({"run", scenario, "--pace", "2", "--summary", summary, "--quiet"}, opts);
    const int64_t t_end = dt::monotonicNowNs();
    INFO(it::describe(r));
    REQUIRE(r.exit_code == 0);
    const auto s = it::readJsonFile(summary);
    INFO(s["clock"].dump());
    REQUIRE(s["clock"].size() == 2);
    const double expected = -(250e6 + 40e-6 * double(t_end)); // session - local, at the end
    for (const auto& c : s["clock"]) {
        REQUIRE(c.is_object());
        CHECK(c["source"] == "measured");
        CHECK(c["syncs"].get<int>() >= 6); // one every 1.25 s
        const double offset = c["offset_ns"].get<double>();
        const double bound = c["error_bound_ns"].get<double>();
        CHECK(bound > 0);
        CHECK(bound < 1e6); // loopback: well under a millisecond
        // The last sync was at most ~1.5 s before t_end: 40 ppm x 1.5 s = 60 us more.
        CHECK(std::fabs(offset - expected) <= bound + 100e3);
        REQUIRE(c["drift_ppm"].is_number());
        // The drift is a least-squares slope through samples whose offsets are each off by at most
        // their bound B (max_error_bound_ns), over a span T of at least 10 s (kMinDriftSpanNs):
        // uniform samples give a slope error of at most 3 B / T. Idle loopback: B ~ 50 us, so
        // about 15 ppm, and 8 ppm is the floor (36-39 seen); a loaded machine widens B, and the
        // margin with it, by what the run itself measured.
        const double resolvable_ppm = 3.0 * c["max_error_bound_ns"].get<double>() / 10e9 * 1e6;
        CHECK(c["drift_ppm"].get<double>() == Approx(40.0).margin(std::max(8.0, resolvable_ppm)));
    }
}

TEST_CASE("A dtrun stopped while its ranks finish still reports them finished", "[cli][slow]") {
    // SIGSTOP on dtrun alone (a debugger, Ctrl-Z): the ranks finish and exit
    // meanwhile; when dtrun resumes it reaps them before reading their last
    // telemetry, and must not call a clean exit a failure.
    it::TempDir dir;
    it::ScenarioSpec spec = smallSpec("stopped session", 10, 30);
    spec.run_toml = "step_delay_ms = 100\n";
    const std::string scenario = dir.write("stop.toml", it::scenarioToml(spec));
    it::Process dtrun({it::dtrunPath(), "run", scenario, "--summary", dir.file("s.json"), "--quiet"});
    it::sleepSeconds(1.0);
    dtrun.signal(SIGSTOP);
    it::sleepSeconds(5.0); // the ranks finish (about 1 s of steps left) and exit
    dtrun.signal(SIGCONT);
    const auto r = dtrun.wait(60.0);
    INFO(it::describe(r));
    CHECK(r.exit_code == 0);
    const auto s = it::readJsonFile(dir.file("s.json"));
    CHECK(s["ok"] == true);
    CHECK(s["steps"] == 10);
    CHECK(it::waitForNoWorkers(2.0).empty());
}

TEST_CASE("A loss that turns NaN fails the run at that step, with the reason", "[cli][slow]") {
    // lr = 9e5 (allowed: < 1e6) makes AdamW's first update blow the weights up.
    it::TempDir dir;
    SECTION("ddp: every rank sees it") {
        it::ScenarioSpec spec;
        spec.name = "diverges";
        spec.steps = 20;
        spec.d_model = 32;
        spec.layers = 1;
        spec.heads = 2;
        spec.extra_toml = "[optimizer]\nlr = 9e5\n";
        const auto r = runDtrun({"run", dir.write("nan.toml", it::scenarioToml(spec)), "--summary",
                                 dir.file("s.json"), "--quiet"});
        INFO(it::describe(r));
        CHECK(r.exit_code == 1);
        const auto s = it::readJsonFile(dir.file("s.json"));
        CHECK(s["ok"] == false);
        CHECK(
            contains(s["failure_reason"].get<std::string>(), "the loss is NaN at step 1: training diverged"));
        CHECK(s["steps"].get<int>() <= 1);
    }
    SECTION("a pipeline: its last stage sees it, and the first stage is not left waiting") {
        const std::string text =
            "[scenario]\nname = \"pipeline diverges\"\n[topology]\nranks = 2\nstages = 2\n"
            "[model]\nd_model = 32\nlayers = 2\nheads = 2\n[strategy]\nkind = \"pipeline\"\n"
            "microbatches = 2\n[optimizer]\nlr = 9e5\n[run]\nsteps = 20\ntimeout_s = 30\n";
        const auto r =
            runDtrun({"run", dir.write("nanpipe.toml", text), "--summary", dir.file("p.json"), "--quiet"});
        INFO(it::describe(r));
        CHECK(r.exit_code == 1);
        CHECK(r.seconds < 20.0); // not the 30 s timeout: rank 0 sees its peer leave
        const auto s = it::readJsonFile(dir.file("p.json"));
        CHECK(contains(s["failure_reason"].get<std::string>(), "training diverged"));
    }
    for (const std::string kind : {"ddp", "diloco"}) {
        SECTION("fault tolerant " + kind + ": the job fails at that step and no replica is restarted") {
            it::ScenarioSpec spec;
            spec.name = "ft diverges";
            spec.ranks = 3;
            spec.steps = 20;
            spec.d_model = 32;
            spec.layers = 1;
            spec.heads = 2;
            spec.strategy = kind;
            if (kind == "diloco")
                spec.extra_toml = "[diloco]\ninner_steps = 2\n";
            spec.extra_toml +=
                "[optimizer]\nlr = 9e5\n[fault_tolerance]\nenabled = true\nrestart = \"auto\"\n";
            const auto r = runDtrun(
                {"run", dir.write("nanft.toml", it::scenarioToml(spec)), "--summary", dir.file("f.json")});
            INFO(it::describe(r));
            CHECK(r.exit_code == 1);
            CHECK(r.seconds < 25.0); // not an endless retry of the same NaN step
            CHECK_FALSE(contains(r.err, "restarting it"));
            const auto s = it::readJsonFile(dir.file("f.json"));
            CHECK(s["ok"] == false);
            const std::string reason = s["failure_reason"];
            CAPTURE(reason);
            CHECK(contains(reason, "the loss is NaN at step 1: training diverged"));
            CHECK(contains(reason, "replica "));
        }
    }
}

TEST_CASE("An external run gives up when its ranks never join, and says which", "[cli]") {
    it::TempDir dir;
    it::ScenarioSpec spec;
    spec.name = "nobody comes";
    spec.timeout_s = 1; // the grace after the first failure is min(timeout_s, 5) + 5 s
    const std::string good = dir.write("good.toml", it::scenarioToml(spec));
    const auto r =
        runDtrun({"run", good, "--external", "--join-timeout", "2", "--quiet"}, {{}, {}, 60.0, ""});
    INFO(it::describe(r));
    REQUIRE_FALSE(r.timed_out);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, "ranks 0, 1 did not join within"));
    CHECK(contains(r.err, "dtrun worker --join 127.0.0.1:"));
    CHECK(r.seconds < 20.0);
}
