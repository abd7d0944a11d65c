// test_mpi_communicator.cpp: dtlab's Open MPI communicator, in real processes
// started by mpirun (tests/mpi/mpi_comm_check.cpp does the collectives and
// compares each result with a reference computed locally).
//
// Skipped, with the reason, where dtlab was built without MPI or mpirun is
// missing.
#include "process_helpers.hpp"

#include "comm/mpi_communicator.hpp"
#include "dtlab/errors.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

namespace {

// Why these tests cannot run here ("" when they can).
std::string skipReason() {
    if (std::string why = it::mpiSkipReason(); !why.empty())
        return why;
    if (std::string(MPI_COMM_CHECK_PATH).empty())
        return "mpi_comm_check was not built";
    return "";
}

it::ProcessResult mpirun(int ranks, const std::vector<std::string>& program_args) {
    // --allow-run-as-root: CI runs as root; --oversubscribe: more ranks than cores.
    std::vector<std::string> argv{it::findInPath("mpirun"), "--allow-run-as-root", "--oversubscribe", "-np",
                                  std::to_string(ranks),    MPI_COMM_CHECK_PATH};
    argv.insert(argv.end(), program_args.begin(), program_args.end());
    it::ProcessOptions options;
    options.timeout_s = 120;
    options.env = {{"OPENBLAS_NUM_THREADS", "1"}, {"OMP_NUM_THREADS", "1"}};
    return it::runProcess(argv, options);
}

} // namespace

TEST_CASE("The MPI communicator's collectives match a local reference on 2 and 4 ranks", "[mpi][solo]") {
    if (const std::string why = skipReason(); !why.empty()) {
        WARN("skipped: " << why);
        return;
    }
    SECTION(
        "2 ranks: all-reduce, all-gather, reduce-scatter, broadcast, send/recv, posted messages, barrier") {
        const it::ProcessResult r = mpirun(2, {});
        INFO(it::describe(r) << "\nstdout:\n" << r.out);
        CHECK(r.exit_code == 0);
        CHECK(r.out.find("rank 0: ok") != std::string::npos);
        CHECK(r.out.find("rank 1: ok") != std::string::npos);
    }
    SECTION("4 ranks in one group") {
        const it::ProcessResult r = mpirun(4, {"1"});
        INFO(it::describe(r) << "\nstdout:\n" << r.out);
        CHECK(r.exit_code == 0);
        for (int rank = 0; rank < 4; ++rank)
            CHECK(r.out.find("rank " + std::to_string(rank) + ": ok") != std::string::npos);
    }
    SECTION("4 ranks split into two groups of 2 by parity: each group sums only its own ranks") {
        const it::ProcessResult r = mpirun(4, {"2"});
        INFO(it::describe(r) << "\nstdout:\n" << r.out);
        CHECK(r.exit_code == 0);
        for (int rank = 0; rank < 4; ++rank)
            CHECK(r.out.find("rank " + std::to_string(rank) + ": ok") != std::string::npos);
    }
}

TEST_CASE("The MPI communicator refuses to start outside mpirun, saying why", "[mpi][solo]") {
    SECTION("in a process that mpirun did not start, creating one is a usage error naming mpirun") {
        if (std::getenv("OMPI_COMM_WORLD_RANK"))
            return; // this test process itself runs under mpirun
        try {
            (void)dt::makeMpiCommunicator(0, 0, 1, nullptr);
            FAIL("expected a UsageError");
        } catch (const dt::UsageError& e) {
            const std::string what = e.what();
            CHECK(what.find("backend \"mpi\"") != std::string::npos);
            CHECK(
                (what.find("mpirun") != std::string::npos || what.find("without MPI") != std::string::npos));
        }
    }
    SECTION("the check program run without mpirun exits 2 with the reason") {
        if (!skipReason().empty())
            return;
        const it::ProcessResult r = it::runProcess({MPI_COMM_CHECK_PATH});
        CHECK(r.exit_code == 2);
        CHECK(r.err.find("start it with mpirun") != std::string::npos);
    }
}
