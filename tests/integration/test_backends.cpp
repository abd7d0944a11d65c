// test_backends.cpp: the "mpi" backend end to end. The Session starts the
// ranks through mpirun; training on MPI groups gives the model Gloo gives;
// a killed rank ends the whole MPI job (and leaves no process behind); the
// backend comparison measures both backends on one run.
//
// Skipped, with the reason, where dtlab was built without MPI or mpirun is
// missing (tests/integration/test_mpi_communicator.cpp covers the
// communicator itself).
#include "process_helpers.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <string>

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

it::ProcessResult runScenario(const std::string& scenario, const std::vector<std::string>& extra,
                              const std::string& summary) {
    std::vector<std::string> args{"run", it::scenarioPath(scenario), "--summary", summary, "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    it::ProcessOptions options;
    options.timeout_s = 240;
    return it::runDtrun(args, options);
}

// The same scenario on Gloo and on MPI (--backend mpi): both summaries.
std::pair<nlohmann::json, nlohmann::json> runOnBothBackends(const it::TempDir& dir,
                                                            const std::string& scenario, int steps) {
    const std::vector<std::string> common{"--steps", std::to_string(steps), "--batch-per-rank", "4"};
    std::vector<std::string> with_mpi = common;
    with_mpi.insert(with_mpi.end(), {"--backend", "mpi"});
    const auto gloo = runScenario(scenario, common, dir.file(scenario + ".gloo.json"));
    const auto mpi = runScenario(scenario, with_mpi, dir.file(scenario + ".mpi.json"));
    INFO("gloo: " << it::describe(gloo) << "\nmpi: " << it::describe(mpi));
    REQUIRE(gloo.exit_code == 0);
    REQUIRE(mpi.exit_code == 0);
    return {it::readJsonFile(dir.file(scenario + ".gloo.json")),
            it::readJsonFile(dir.file(scenario + ".mpi.json"))};
}

} // namespace

TEST_CASE("The mpi backend trains through mpirun as Gloo does and dies as one job", "[mpi][backends][solo]") {
    if (const std::string why = it::mpiSkipReason(); !why.empty()) {
        WARN("skipped: " << why);
        return;
    }
    it::TempDir dir;

    SECTION("ddp on MPI groups ends with the loss and parameters of ddp on Gloo") {
        const auto [g, m] = runOnBothBackends(dir, "ddp_basics.toml", 4);
        CHECK(m["backend"] == "mpi");
        CHECK(m["steps"] == 4);
        // The sums run in another order, so the float bits may differ; the
        // training must not.
        CHECK(m["final_loss"].get<double>() == Approx(g["final_loss"].get<double>()).epsilon(1e-5));
        for (size_t r = 1; r < m["params_checksum"].size(); ++r)
            CHECK(m["params_checksum"][r] == m["params_checksum"][0]);
        for (const auto& exit : m["exit"])
            CHECK(exit["exit_code"] == 0);
        CHECK(it::waitForNoWorkers(5.0).empty());
    }

    SECTION("hsdp's shard and replicate groups split from MPI_COMM_WORLD train as on Gloo") {
        const auto [g, m] = runOnBothBackends(dir, "hsdp_basics.toml", 3);
        CHECK(m["final_loss"].get<double>() == Approx(g["final_loss"].get<double>()).epsilon(1e-5));
    }

    SECTION("killing one MPI rank ends the whole job with a reason and no process left") {
        const auto r = runScenario("ddp_kill_rank.toml", {"--backend", "mpi", "--batch-per-rank", "4"},
                                   dir.file("kill.json"));
        INFO(it::describe(r));
        REQUIRE_FALSE(r.timed_out);
        CHECK(r.exit_code == 1);
        const auto s = it::readJsonFile(dir.file("kill.json"));
        CHECK(contains(s["failure_reason"].get<std::string>(), "rank 2 was killed"));
        CHECK(contains(r.err, "mpirun exited with code"));
        CHECK(it::waitForNoWorkers(5.0).empty());
    }

    SECTION("the backend comparison measures every size on Gloo and on MPI") {
        const auto r = runScenario("backends_compare.toml", {}, dir.file("compare.json"));
        INFO(it::describe(r));
        REQUIRE(r.exit_code == 0);
        const auto s = it::readJsonFile(dir.file("compare.json"));
        const auto& points = s["bus_bandwidth"]["points"];
        REQUIRE(points.size() == 10); // 5 sizes x 2 backends, all-reduce
        double gloo_1m = 0, mpi_1m = 0;
        for (const auto& p : points) {
            CHECK(p["bus_bandwidth_gbs"].get<double>() > 0);
            if (p["size_bytes"] == 1024 * 1024)
                (p["backend"] == "mpi" ? mpi_1m : gloo_1m) = p["bus_bandwidth_gbs"].get<double>();
        }
        // Both backends measured the 1 MiB point. Which one is faster is a
        // timing claim (shared memory beats loopback TCP, about 1.5x here), so
        // it is not asserted in the suite: bench_collectives.sh measures it
        // against raw c10d Gloo and raw MPI in one run (docs/PERFORMANCE.md,
        // "Communicator backends").
        CHECK(mpi_1m > 0);
        CHECK(gloo_1m > 0);
        REQUIRE(s["bus_bandwidth"]["cost_model"].size() == 2);
        for (const auto& m : s["bus_bandwidth"]["cost_model"]) {
            CHECK(m["alpha_us"].get<double>() >= 0);
            CHECK(m["bandwidth_gbs"].get<double>() > 0);
        }
    }
}
