// test_supervisor.cpp: the rank processes' spawner (engine/src/session/supervisor.hpp):
// a child's priority, its signals and its reaping, with /bin/sleep as the child.
#include "dtlab/session.hpp"
#include "session/supervisor.hpp"

#include <catch2/catch.hpp>

#include <cerrno>
#include <csignal>
#include <sys/resource.h>
#include <thread>

using dt::Supervisor;

namespace {
// A child's nice value: getpriority answers -1 both as a value and an error.
int niceOf(pid_t pid) {
    errno = 0;
    const int value = getpriority(PRIO_PROCESS, id_t(pid));
    REQUIRE(errno == 0);
    return value;
}
} // namespace

TEST_CASE("The supervisor starts a child at the niceness asked and reaps its kill", "[session]") {
    Supervisor supervisor;
    const int own = niceOf(0);
    SECTION("niceness 0 keeps the parent's priority") {
        const pid_t pid = supervisor.spawn(0, {"/bin/sleep", "30"}, {});
        CHECK(niceOf(pid) == own);
    }
    SECTION("niceness 5 lowers the child's priority by 5") {
        const pid_t pid = supervisor.spawn(0, {"/bin/sleep", "30"}, {}, 5);
        const int want = std::min(19, own + 5);
        for (int i = 0; i < 500 && niceOf(pid) != want; ++i) // the child sets it after fork
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        CHECK(niceOf(pid) == want);
    }
    REQUIRE(supervisor.signal(0, SIGKILL));
    std::vector<dt::ChildExit> exits;
    for (int i = 0; i < 200 && exits.empty(); ++i) {
        exits = supervisor.reap();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(exits.size() == 1);
    CHECK(exits[0].signal == SIGKILL);
    CHECK_FALSE(supervisor.anyRunning());
}

TEST_CASE("Ranks crowd the cores past 4 per core", "[session]") {
    CHECK_FALSE(dt::ranksCrowdTheCores(4, 2));
    CHECK_FALSE(dt::ranksCrowdTheCores(8, 2));
    CHECK(dt::ranksCrowdTheCores(9, 2));
    CHECK(dt::ranksCrowdTheCores(32, 2));
    CHECK_FALSE(dt::ranksCrowdTheCores(32, 16));
    CHECK_FALSE(dt::ranksCrowdTheCores(32, 0)); // unknown: leave them be
}
