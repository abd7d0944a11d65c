// test_screen_claim.cpp: a narration step's claims and bound values over the
// screen document (dtlab/screen_claim.hpp), and what dtrun check says of them.
#include "dtlab/errors.hpp"
#include "dtlab/scenario.hpp"
#include "dtlab/screen_claim.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <set>
#include <string>

using dt::UsageError;

namespace {

// A screen at a hold: replica 1 dead at step 14, the others paused; quorum 1 of all three;
// the stopwatch's kill detected by the lighthouse 2 ms after it, nothing else yet.
const std::string kScreen = R"({
  "run": {"live": true, "held": true, "finished": false, "step": 14},
  "narration": {"step": 2},
  "ranks": [{"rank": 0, "step": 14, "running": false, "paused": true, "dead": false, "restarting": false,
             "healing": false, "hung": false, "finished": false, "incarnation": 0},
            {"rank": 1, "step": 14, "running": false, "paused": false, "dead": true, "restarting": false,
             "healing": false, "hung": false, "finished": false, "incarnation": 0}],
  "memory": [],
  "quorum": {"fault_tolerant": true, "id": 1, "members": [0, 1, 2], "decision_quorum": 1,
             "lighthouse_down": false, "quorums": 1},
  "replicas": [],
  "stopwatch": {"fault": true, "kind": "kill", "replica": 1, "detected_ms": 2.4,
                "detected_by": "lighthouse: connection closed", "detected_by_lighthouse": true,
                "new_quorum_ms": -1, "survivors_commit_ms": -1, "restarted_ms": -1, "heal_ms": -1,
                "heal_bytes": 0, "heal_source": -1, "rejoined_ms": -1, "since_ms": 40, "held_ms": 0},
  "content": {"view": "quorum", "shown": 3, "total": 3}
})";

UsageError parseError(const std::string& text) {
    try {
        (void)dt::parseScenarioText(text, "t.toml");
    } catch (const UsageError& e) {
        return e;
    }
    FAIL("expected a UsageError for:\n" << text);
    throw std::logic_error("unreachable");
}

const std::string kHeader = "[scenario]\nname = \"t\"\n[run]\nsteps = 20\n"; // lines 1-4

} // namespace

TEST_CASE("Claims over the screen", "[screen_claim]") {
    SECTION("a claim that the screen shows holds, and says the values it compared") {
        const dt::CheckOutcome o = dt::evaluateScreenClaim(
            "ranks[1].dead == 1 and quorum.id == 1 and stopwatch.new_quorum_ms < 0", kScreen);
        CHECK(o.passed);
        CHECK(o.detail == "ranks[1].dead = 1 == 1; quorum.id = 1 == 1; stopwatch.new_quorum_ms = -1 < 0");
    }
    SECTION("a claim the screen contradicts fails with a true sentence") {
        const dt::CheckOutcome o = dt::evaluateScreenClaim("stopwatch.detected_ms > 39", kScreen);
        CHECK_FALSE(o.passed);
        CHECK(o.detail == "stopwatch.detected_ms = 2.4, not > 39");
    }
    SECTION("an array of the screen combines as in closing checks") {
        CHECK(
            dt::evaluateScreenClaim("count(quorum.members) == 3 and max(ranks.step) == 14", kScreen).passed);
        CHECK_FALSE(dt::evaluateScreenClaim("ranks.paused == 1", kScreen).passed); // rank 1 is not
    }
    SECTION("a field missing from a screen names the screen, not the summary") {
        const dt::CheckOutcome o = dt::evaluateScreenClaim("replicas[0].aborted >= 1", kScreen);
        CHECK_FALSE(o.passed);
        CHECK(o.detail.find("index out of range") != std::string::npos);
    }
}

TEST_CASE("Claims name only fields the screen has", "[screen_claim]") {
    SECTION("every documented field is accepted") {
        for (const dt::ScreenField& f : dt::screenFields()) {
            INFO(f.name);
            CHECK_FALSE(dt::findScreenClaimProblem(std::string(f.name) + " >= 0"));
        }
    }
    SECTION("an unknown field says what its parent holds, at its column") {
        const auto p = dt::findScreenClaimProblem("ranks[1].dead == 1 and quorum.member == 1");
        REQUIRE(p);
        CHECK(p->offset == 23);
        CHECK(p->message ==
              "unknown screen field 'quorum.member'; 'quorum' has: fault_tolerant, id, members, "
              "decision_quorum, lighthouse_down, quorums");
    }
    SECTION("an unknown root lists the screen's roots; summary fields are not screen fields") {
        const auto p = dt::findScreenClaimProblem("fault_tolerance.heals[1] >= 1");
        REQUIRE(p);
        CHECK(p->message == "unknown screen field 'fault_tolerance.heals'; the screen has: run, narration, "
                            "ranks, memory, quorum, replicas, stopwatch, content");
    }
    SECTION("an object is not a field") {
        REQUIRE(dt::findScreenClaimProblem("stopwatch > 0"));
    }
    SECTION("the document's fields are unique") {
        std::set<std::string> names;
        for (const dt::ScreenField& f : dt::screenFields())
            CHECK(names.insert(f.name).second);
    }
}

TEST_CASE("Values bound into a narration text", "[screen_claim]") {
    SECTION("numbers and strings read off the screen") {
        CHECK(dt::bindScreenValues(
                  "noticed {stopwatch.detected_ms} ms after the kill ({stopwatch.detected_by}); "
                  "quorum {quorum.id} of {count(quorum.members)}",
                  kScreen) == "noticed 2.4 ms after the kill (lighthouse: connection closed); quorum 1 of 3");
    }
    SECTION("{{ is a literal brace, and a value that cannot be read is a question mark") {
        CHECK(dt::bindScreenValues("a set {{0, 1} of {replicas[0].group}", kScreen) == "a set {0, 1} of ?");
        CHECK(dt::bindScreenValues("step {run.step}", "") == "step ..."); // before the moment
    }
    SECTION("a bound text is checked like a claim") {
        CHECK_FALSE(dt::findBoundTextProblem("at {stopwatch.detected_ms} ms"));
        const auto p = dt::findBoundTextProblem("at {stopwatch.detect_ms} ms");
        REQUIRE(p);
        CHECK(p->offset == 4);
        REQUIRE(dt::findBoundTextProblem("a { without its end"));
        CHECK(dt::boundExpressions("{run.step} and {quorum.id}") ==
              std::vector<std::string>{"run.step", "quorum.id"});
    }
}

TEST_CASE("dtrun check refuses a narration claim it cannot check", "[screen_claim][scenario]") {
    SECTION("an unknown field in expect points at its column") {
        const UsageError e =
            parseError(kHeader + "[[steps]]\ntext = \"a\"\nuntil = \"step >= 2\"\npause = true\n"
                                 "expect = \"run.stepp >= 2\"\n");
        CHECK(std::string(e.what()).rfind("t.toml:9:11: error: [[steps]] expect: unknown screen field "
                                          "'run.stepp'; 'run' has: live, held, finished, step",
                                          0) == 0);
    }
    SECTION("an unknown bound field in the text points into the text") {
        const UsageError e = parseError(kHeader + "[[steps]]\ntext = \"at step {run.stp}\"\n");
        CHECK(std::string(e.what()).rfind(
                  "t.toml:6:18: error: [[steps]] text: {run.stp}: unknown screen field", 0) == 0);
    }
    SECTION("a claim on a step that does not hold is refused: the screen would move under it") {
        const UsageError e = parseError(kHeader + "[[steps]]\ntext = \"a\"\nuntil = \"step >= 2\"\n"
                                                  "expect = \"run.step >= 2\"\n");
        CHECK(std::string(e.what()).find(
                  "[[steps]] expect is checked at the step's hold: add pause = true") != std::string::npos);
    }
    SECTION("a claim at a hold, or at the run's end, is accepted") {
        CHECK_NOTHROW(dt::parseScenarioText(kHeader +
                                                "[[steps]]\ntext = \"a {run.step}\"\nuntil = \"step >= 2\"\n"
                                                "pause = true\nexpect = \"run.step >= 1\"\n[[steps]]\n"
                                                "text = \"b\"\nuntil = \"run finished\"\n"
                                                "expect = \"run.finished == 1\"\n",
                                            "t.toml"));
    }
}
