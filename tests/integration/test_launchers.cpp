// test_launchers.cpp: ranks that dtrun did not start. `dtrun run --external`
// hosts the Session and waits; the ranks come from mpirun
// (OMPI_COMM_WORLD_RANK/SIZE) or from torchrun-style variables (RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), and the run is the same.
#include "process_helpers.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

// Launcher variables of the test's own environment would confuse the ranks.
const std::vector<std::string> kLauncherVariables{
    "RANK",        "WORLD_SIZE",           "LOCAL_RANK",           "MASTER_ADDR",
    "MASTER_PORT", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"};

// `dtrun run --external` on a free port: ddp_basics' TinyGPT, 2 ranks, 3 short steps;
// returns once its store listens (it says "waiting for ranks to join at").
struct ExternalSession {
    int port = 0;
    std::string summary;
    std::unique_ptr<it::Process> process;

    ExternalSession(const it::TempDir& dir, int ranks, const std::string& token = "") {
        summary = dir.file("s.json");
        it::ScenarioSpec spec;
        spec.name = "launcher test";
        spec.ranks = ranks;
        spec.steps = 3;
        spec.batch_per_rank = 4;
        const std::string scenario = dir.write("launch.toml", it::scenarioToml(spec));
        for (int attempt = 0; attempt < 3; ++attempt) { // a free port can be taken in between
            port = it::freeTcpPort();
            process = std::make_unique<it::Process>(
                std::vector<std::string>{it::dtrunPath(), "run", scenario, "--external", "--port",
                                         std::to_string(port), "--summary", summary},
                it::ProcessOptions{
                    token.empty() ? std::vector<std::pair<std::string, std::string>>{}
                                  : std::vector<std::pair<std::string, std::string>>{{"DTLAB_TOKEN", token}},
                    kLauncherVariables, 180.0, ""});
            const bool listening = it::waitFor(
                [&] {
                    return contains(process->stderrSoFar(), "waiting for ranks to join at") ||
                           !process->running();
                },
                60.0);
            if (listening && process->running()) {
                INFO("dtrun: " << process->stderrSoFar());
                CHECK(contains(process->stderrSoFar(), "127.0.0.1:" + std::to_string(port)));
                return;
            }
            const auto r = process->wait(5.0);
            WARN("dtrun --external --port " << port << " did not start: " << it::describe(r));
        }
        FAIL("dtrun --external did not start a Session in 3 attempts");
    }

    std::string address() const { return "127.0.0.1:" + std::to_string(port); }
};

void checkTwoRankSummary(const std::string& path) {
    const auto s = it::readJsonFile(path);
    INFO("summary: " << s.dump());
    CHECK(s["ok"] == true);
    CHECK(s["ranks"] == 2);
    CHECK(s["steps"] == 3);
    REQUIRE(s["params_checksum"].size() == 2);
    CHECK(s["params_checksum"][0].is_string());
    CHECK(s["params_checksum"][0] == s["params_checksum"][1]);
}

} // namespace

TEST_CASE("ranks started by mpirun join an external Session", "[launch][slow]") {
    const std::string mpirun = it::findInPath("mpirun");
    if (mpirun.empty()) {
        WARN("SKIPPED: mpirun not found in PATH (install openmpi-bin to run this test)");
        return;
    }
    it::TempDir dir;
    ExternalSession session(dir, 2);
    it::ProcessOptions opts;
    opts.unset_env = kLauncherVariables;
    opts.timeout_s = 120;
    const auto m = it::runProcess({mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2",
                                   it::dtrunPath(), "worker", "--join", session.address()},
                                  opts);
    INFO("mpirun: " << it::describe(m));
    CHECK(m.exit_code == 0);
    const auto r = session.process->wait(60.0);
    INFO("dtrun: " << it::describe(r));
    REQUIRE(r.exit_code == 0);
    checkTwoRankSummary(session.summary);
    CHECK(it::waitForNoWorkers(2.0).empty());
}

TEST_CASE("ranks started with torchrun-style variables join an external Session", "[launch][slow]") {
    it::TempDir dir;
    ExternalSession session(dir, 2);
    std::vector<std::unique_ptr<it::Process>> workers;
    for (int rank = 0; rank < 2; ++rank) {
        it::ProcessOptions opts;
        opts.unset_env = kLauncherVariables;
        opts.env = {{"RANK", std::to_string(rank)},
                    {"WORLD_SIZE", "2"},
                    {"LOCAL_RANK", std::to_string(rank)},
                    {"MASTER_ADDR", "127.0.0.1"},
                    {"MASTER_PORT", std::to_string(session.port)}};
        opts.timeout_s = 120;
        workers.push_back(
            std::make_unique<it::Process>(std::vector<std::string>{it::dtrunPath(), "worker"}, opts));
    }
    for (int rank = 0; rank < 2; ++rank) {
        const auto w = workers[size_t(rank)]->wait();
        INFO("worker " << rank << ": " << it::describe(w));
        CHECK(w.exit_code == 0);
    }
    const auto r = session.process->wait(60.0);
    INFO("dtrun: " << it::describe(r));
    REQUIRE(r.exit_code == 0);
    checkTwoRankSummary(session.summary);
    CHECK(it::waitForNoWorkers(2.0).empty());
}

TEST_CASE("a worker whose world size differs from the Session's is refused", "[launch]") {
    it::TempDir dir;
    ExternalSession session(dir, 2);
    it::ProcessOptions opts;
    opts.unset_env = kLauncherVariables;
    opts.env = {{"RANK", "0"},
                {"WORLD_SIZE", "3"},
                {"MASTER_ADDR", "127.0.0.1"},
                {"MASTER_PORT", std::to_string(session.port)}};
    opts.timeout_s = 60;
    const auto w = it::runDtrun({"worker"}, opts);
    INFO("worker: " << it::describe(w));
    CHECK(w.exit_code == 2);
    CHECK(contains(w.err, "world size 3"));
    CHECK(contains(w.err, "2 ranks"));

    // The Session still waits for its 2 ranks; Ctrl-C ends it.
    session.process->signal(SIGINT);
    const auto r = session.process->wait(15.0);
    INFO("dtrun after SIGINT: " << it::describe(r));
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code == 1);
}

TEST_CASE("a Session with a token runs only workers that hold it", "[launch][auth]") {
    it::TempDir dir;
    ExternalSession session(dir, 2, "workshop-token-42");
    auto workerOptions = [&](int rank, const std::string& token) {
        it::ProcessOptions opts;
        opts.unset_env = kLauncherVariables;
        opts.env = {{"RANK", std::to_string(rank)},
                    {"WORLD_SIZE", "2"},
                    {"MASTER_ADDR", "127.0.0.1"},
                    {"MASTER_PORT", std::to_string(session.port)}};
        if (!token.empty())
            opts.env.push_back({"DTLAB_TOKEN", token});
        else
            opts.unset_env.push_back("DTLAB_TOKEN");
        opts.timeout_s = 120;
        return opts;
    };

    SECTION("a worker without the token, or with another, is refused with the reason; the right ones train") {
        for (const std::string token : {"", "guess"}) {
            const auto w = it::runDtrun({"worker"}, workerOptions(0, token));
            INFO("worker with token '" << token << "': " << it::describe(w));
            CHECK(w.exit_code == 2);
            CHECK(contains(w.err, "the rendezvous store at 127.0.0.1:" + std::to_string(session.port) +
                                      " refused this rank's token"));
        }

        it::Process rank1({it::dtrunPath(), "worker"}, workerOptions(1, "workshop-token-42"));
        const auto w0 = it::runDtrun({"worker"}, workerOptions(0, "workshop-token-42"));
        INFO("rank 0: " << it::describe(w0));
        CHECK(w0.exit_code == 0);
        CHECK(rank1.wait(60.0).exit_code == 0);
        const auto r = session.process->wait(60.0);
        INFO("dtrun: " << it::describe(r));
        CHECK(r.exit_code == 0);
        checkTwoRankSummary(session.summary);
        // The Session says so too (an ok run still prints it), naming where the connections came from.
        CHECK(contains(r.err, "dtrun: session: refused a rendezvous-store connection from 127.0.0.1:"));
    }
}
