// test_launch_env.cpp: resolveLaunchEnv: how a worker learns its rank, world
// and the Session's address from dtrun flags, Open MPI or torchrun variables,
// and the errors when something is missing or out of range.
#include "dtlab/launch_env.hpp"

#include "dtlab/errors.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <string>

using dt::LaunchEnv;
using dt::WorkerFlags;
using Env = std::map<std::string, std::string>;

namespace {

WorkerFlags flags(int rank, int world, const std::string& join) {
    WorkerFlags f;
    f.rank = rank;
    f.world = world;
    f.join = join;
    return f;
}

std::string usageError(const WorkerFlags& f, const Env& env) {
    try {
        (void)dt::resolveLaunchEnv(f, env);
    } catch (const dt::UsageError& e) {
        return e.what();
    }
    FAIL("expected a UsageError");
    return "";
}

const Env kTorchrun{{"RANK", "2"},
                    {"WORLD_SIZE", "4"},
                    {"LOCAL_RANK", "0"},
                    {"MASTER_ADDR", "10.0.0.5"},
                    {"MASTER_PORT", "29500"}};
const Env kMpi{{"OMPI_COMM_WORLD_RANK", "1"},
               {"OMPI_COMM_WORLD_SIZE", "3"},
               {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
               {"MASTER_ADDR", "mpi-head"},
               {"MASTER_PORT", "4000"}};

} // namespace

TEST_CASE("resolveLaunchEnv reads flags, Open MPI and torchrun", "[launch]") {
    SECTION("dtrun flags give rank, world and the join address") {
        const LaunchEnv e = dt::resolveLaunchEnv(flags(1, 2, "127.0.0.1:5555"), {});
        CHECK(e.launcher == "dtlab");
        CHECK(e.rank == 1);
        CHECK(e.world == 2);
        CHECK(e.master_host == "127.0.0.1");
        CHECK(e.master_port == 5555);
    }

    SECTION("flags beat both launchers' variables") {
        Env env = kTorchrun;
        env.insert(kMpi.begin(), kMpi.end());
        const LaunchEnv e = dt::resolveLaunchEnv(flags(0, 5, "session-host:7000"), env);
        CHECK(e.launcher == "dtlab");
        CHECK(e.rank == 0);
        CHECK(e.world == 5);
        CHECK(e.master_host == "session-host");
        CHECK(e.master_port == 7000);
    }

    SECTION("--join beats MASTER_ADDR and MASTER_PORT under a launcher") {
        const LaunchEnv e = dt::resolveLaunchEnv(flags(-1, -1, "joined:1234"), kTorchrun);
        CHECK(e.launcher == "torchrun");
        CHECK(e.rank == 2);
        CHECK(e.master_host == "joined");
        CHECK(e.master_port == 1234);
    }

    SECTION("OMPI_COMM_WORLD_* are read, and beat torchrun's variables") {
        Env env = kMpi;
        env["RANK"] = "0";
        env["WORLD_SIZE"] = "8";
        const LaunchEnv e = dt::resolveLaunchEnv({}, env);
        CHECK(e.launcher == "mpirun");
        CHECK(e.rank == 1);
        CHECK(e.world == 3);
        CHECK(e.local_rank == 1);
        CHECK(e.master_host == "mpi-head");
        CHECK(e.master_port == 4000);
    }

    SECTION("torchrun's RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT are read") {
        Env env = kTorchrun;
        env["LOCAL_RANK"] = "1";
        const LaunchEnv e = dt::resolveLaunchEnv({}, env);
        CHECK(e.launcher == "torchrun");
        CHECK(e.rank == 2);
        CHECK(e.world == 4);
        CHECK(e.local_rank == 1);
        CHECK(e.master_host == "10.0.0.5");
        CHECK(e.master_port == 29500);
    }
}

TEST_CASE("resolveLaunchEnv explains what is missing or wrong", "[launch]") {
    SECTION("no rank anywhere names every way to give one") {
        const std::string why = usageError({}, {{"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}});
        CHECK_THAT(why, Catch::Matchers::Contains("--rank"));
        CHECK_THAT(why, Catch::Matchers::Contains("OMPI_COMM_WORLD_RANK"));
        CHECK_THAT(why, Catch::Matchers::Contains("RANK, WORLD_SIZE"));
    }

    SECTION("a rank without a world size names the missing variable") {
        CHECK_THAT(usageError({}, {{"RANK", "0"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}),
                   Catch::Matchers::Contains("WORLD_SIZE"));
        CHECK_THAT(usageError({}, {{"OMPI_COMM_WORLD_RANK", "0"}}),
                   Catch::Matchers::Contains("OMPI_COMM_WORLD_SIZE"));
    }

    SECTION("no address names --join and MASTER_ADDR/MASTER_PORT") {
        Env env = kTorchrun;
        env.erase("MASTER_ADDR");
        const std::string why = usageError({}, env);
        CHECK_THAT(why, Catch::Matchers::Contains("--join"));
        CHECK_THAT(why, Catch::Matchers::Contains("MASTER_ADDR"));
        env = kTorchrun;
        env.erase("MASTER_PORT");
        CHECK_THAT(usageError({}, env), Catch::Matchers::Contains("MASTER_PORT"));
        CHECK_THAT(usageError(flags(0, 1, ""), {}), Catch::Matchers::Contains("--join"));
    }

    SECTION("a rank at or beyond the world size is refused") {
        CHECK_THAT(usageError(flags(2, 2, "h:1"), {}), Catch::Matchers::Contains("outside the world of 2"));
        CHECK_THAT(
            usageError(flags(-1, -1, ""),
                       {{"RANK", "4"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}),
            Catch::Matchers::Contains("rank 4"));
        CHECK_THROWS_AS(dt::resolveLaunchEnv(flags(0, 0, "h:1"), {}), dt::UsageError); // empty world
        CHECK_THROWS_AS(dt::resolveLaunchEnv(flags(-1, 3, "h:1"), {}),
                        dt::UsageError); // --world without --rank
    }

    SECTION("malformed numbers name the variable and the value") {
        Env env = kTorchrun;
        env["RANK"] = "two";
        const std::string why = usageError({}, env);
        CHECK_THAT(why, Catch::Matchers::Contains("RANK"));
        CHECK_THAT(why, Catch::Matchers::Contains("'two'"));
        env = kTorchrun;
        env["MASTER_PORT"] = "29500x";
        CHECK_THAT(usageError({}, env), Catch::Matchers::Contains("MASTER_PORT"));
        env["MASTER_PORT"] = "70000";
        CHECK_THAT(usageError({}, env), Catch::Matchers::Contains("MASTER_PORT"));
        CHECK_THAT(usageError(flags(0, 1, "no-port"), {}), Catch::Matchers::Contains("'no-port'"));
    }
}
