// test_script.cpp: dtlab's scripted input and the narration conditions,
// headless: a fake ScriptHost records what a script asked for, and RunFacts
// are filled by hand. No window, no Session.
#include "run_facts.hpp"
#include "script_runner.hpp"

#include "dtlab/errors.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using dt::RankProgress;
using dt::RankState;
using dt::app::RunFacts;
using dt::app::ScriptHost;
using dt::app::ScriptRunner;

namespace {

// Records every call as one line ("kill 1", "screenshot out/a.png", ...).
class FakeHost final : public ScriptHost {
  public:
    RunFacts run;
    std::vector<std::string> calls;
    bool screenshot_pending = false;
    ClickState click = ClickState::Waiting;
    bool quit = false;

    const RunFacts& facts() const override { return run; }
    void killRank(int r) override { calls.push_back("kill " + std::to_string(r)); }
    void hangRank(int r) override { calls.push_back("hang " + std::to_string(r)); }
    void resumeRank(int r) override { calls.push_back("resume " + std::to_string(r)); }
    void slowRank(int r, double ms) override {
        calls.push_back("slow " + std::to_string(r) + " " + std::to_string(int(ms)));
    }
    void pauseRun() override { calls.push_back("pause"); }
    void runFree() override { calls.push_back("run"); }
    void stepOnce() override { calls.push_back("step"); }
    void setPace(double sps) override { calls.push_back("pace " + std::to_string(sps)); }
    void selectRank(int r) override { calls.push_back("select " + std::to_string(r)); }
    void setCursor(double s) override { calls.push_back("cursor " + std::to_string(s)); }
    bool playing = false;
    void play(double speed) override {
        calls.push_back("play " + std::to_string(speed));
        playing = true;
    }
    void pausePlayback() override {
        calls.push_back("pause playback");
        playing = false;
    }
    void replayLast(double seconds, double speed) override {
        calls.push_back("replay_last " + std::to_string(seconds) + " " + std::to_string(speed));
        playing = true;
    }
    void cursorLive() override { calls.push_back("cursor live"); }
    bool playbackPlaying() const override { return playing; }
    void requestScreenshot(const std::string& path) override {
        calls.push_back("screenshot " + path);
        screenshot_pending = true;
    }
    bool screenshotPending() const override { return screenshot_pending; }
    void requestClick(const std::string& label) override { calls.push_back("click " + label); }
    ClickState clickState() const override { return click; }
    void cancelClick() override { calls.push_back("cancel click"); }
    bool saveRecording(const std::string& path, std::string& error) override {
        calls.push_back("save " + path);
        if (path == "/nope/x.dtrec") {
            error = "cannot write";
            return false;
        }
        return true;
    }
    bool openPath(const std::string& path, std::string&) override {
        calls.push_back("open " + path);
        return true;
    }
    void printLayout() override { calls.push_back("layout"); }
    void narrationNext() override { calls.push_back("next"); }
    void narrationBack() override { calls.push_back("back"); }
    bool setThemeByName(const std::string& name) override {
        calls.push_back("theme " + name);
        return name == "dark" || name == "light";
    }
    void setFontPixels(float px) override { calls.push_back("font " + std::to_string(int(px))); }
    bool showView(const std::string& name, bool show) override {
        calls.push_back((show ? "show " : "hide ") + name);
        return name != "flamegraph";
    }
    void toggleHelp() override { calls.push_back("help"); }
    void toggleFullscreen() override { calls.push_back("fullscreen"); }
    void requestQuit() override {
        calls.push_back("quit");
        quit = true;
    }
};

RankProgress rank(int r, RankState state, int step) {
    RankProgress p;
    p.rank = r;
    p.state = state;
    p.step = step;
    return p;
}

// The message of the UsageError parsing `text` throws.
std::string parseError(const std::string& text) {
    try {
        (void)ScriptRunner::parse(text, "s.txt");
    } catch (const dt::UsageError& e) {
        return e.what();
    }
    FAIL("expected a UsageError for: " << text);
    return "";
}

} // namespace

TEST_CASE("Scripts are parsed line by line with file:line errors", "[script]") {
    SECTION("every command parses, comments and blank lines are skipped") {
        const ScriptRunner s =
            ScriptRunner::parse("# demo\n\nwait_step 2\nkill 1\nslow 2 150\npace 0.5\n"
                                "screenshot a b.png\nclick_button Kill##rank1\ntheme light\n"
                                "font 24\nshow timeline\nquit\n",
                                "s.txt");
        REQUIRE(s.commands().size() == 10);
        CHECK(s.commands()[0].line == 3);
        CHECK(s.commands()[0].number == 2.0);
        CHECK(s.commands()[1].rank == 1);
        CHECK(s.commands()[2].rank == 2);
        CHECK(s.commands()[2].number == 150.0);
        CHECK(s.commands()[3].number == 0.5);
        CHECK(s.commands()[4].text == "a b.png");
        CHECK(s.commands()[5].text == "Kill##rank1");
    }
    SECTION("an unknown command lists the commands") {
        const std::string e = parseError("wait_step 1\nkil 1\n");
        CHECK(e.rfind("s.txt:2: unknown command 'kil'; expected one of: wait_step,", 0) == 0);
    }
    SECTION("a missing or malformed argument names the usage") {
        CHECK(parseError("kill\n") == "s.txt:1: kill: expected 'kill RANK' with RANK a rank number, got ''");
        CHECK(parseError("kill -1\n").find("s.txt:1: kill:") == 0);
        CHECK(parseError("slow 1\n").find("s.txt:1: slow: expected 'slow RANK MS'") == 0);
        CHECK(parseError("wait_seconds soon\n").find("s.txt:1: wait_seconds: expected 'wait_seconds S'") ==
              0);
        CHECK(parseError("pause now\n") == "s.txt:1: pause takes no argument; expected 'pause'");
        CHECK(parseError("screenshot\n") == "s.txt:1: screenshot: expected 'screenshot PATH'");
        CHECK(parseError("font 99\n") == "s.txt:1: font: expected a size in pixels in 10..48, got 99");
    }
    SECTION("cursor takes seconds after the run's first event, or off") {
        const ScriptRunner s = ScriptRunner::parse("cursor 1.25\ncursor off\n", "s.txt");
        REQUIRE(s.commands().size() == 2);
        CHECK(s.commands()[0].number == 1.25);
        CHECK(s.commands()[1].number == -1.0);
        CHECK(parseError("cursor soon\n").find("s.txt:1: cursor: expected seconds >= 0") == 0);
        CHECK(parseError("cursor\n") == "s.txt:1: cursor: expected 'cursor SECONDS|off'");
    }
    SECTION("ranks are checked against the run's world size") {
        const ScriptRunner s = ScriptRunner::parse("select 0\nkill 3\n", "s.txt");
        CHECK_NOTHROW(s.checkRanks(4));
        CHECK_THROWS_WITH(s.checkRanks(3), "s.txt:2: rank 3 does not exist: the run has 3 ranks (0..2)");
    }
    SECTION("a script file that does not exist is a usage error") {
        CHECK_THROWS_AS(ScriptRunner::load("/nonexistent/dtlab.script"), dt::UsageError);
    }
}

TEST_CASE("A script waits without blocking and acts in order", "[script]") {
    FakeHost host;
    host.run.live = true;
    host.run.ranks = {rank(0, RankState::Running, 0), rank(1, RankState::Running, 0)};
    ScriptRunner s =
        ScriptRunner::parse("wait_step 2\nkill 1\nwait_dead 1\nscreenshot k.png\nquit\n", "s.txt");
    s.setScreenshotDir("out");

    // Steps 1 of 2 done: the script waits at line 1.
    CHECK(s.tick(host, 0.0) == ScriptRunner::Status::Running);
    CHECK(host.calls.empty());
    host.run.ranks[0].step = 1;
    host.run.ranks[1].step = 1; // two steps done by every rank
    CHECK(s.tick(host, 1.0) == ScriptRunner::Status::Running);
    CHECK(host.calls == std::vector<std::string>{"kill 1"});
    host.run.ranks[1].state = RankState::Killed;
    // wait_dead passes; the screenshot waits a few frames for the layout, then asks once.
    for (int frame = 0; frame < 5; ++frame)
        s.tick(host, 2.0);
    REQUIRE(host.calls.size() == 2);
    CHECK(host.calls[1] == "screenshot out/k.png");
    CHECK(s.tick(host, 2.1) == ScriptRunner::Status::Running); // still pending
    host.screenshot_pending = false;
    CHECK(s.tick(host, 2.2) == ScriptRunner::Status::Done);
    CHECK(host.quit);
}

TEST_CASE("Scripts play the time cursor, replay the last seconds and return to live", "[script][playback]") {
    SECTION("the playback commands parse; a bad speed names the usage") {
        const ScriptRunner s = ScriptRunner::parse(
            "play 0.25\npause_playback\nreplay_last 10 0.5\ncursor_live\nwait_playback\n", "s.txt");
        REQUIRE(s.commands().size() == 5);
        CHECK(s.commands()[0].number == 0.25);
        CHECK(s.commands()[2].number == 10.0);
        CHECK(s.commands()[2].number2 == 0.5);
        CHECK(parseError("play\n").find("s.txt:1: play: expected 'play SPEED'") == 0);
        CHECK(parseError("play 0\n").find("s.txt:1: play: expected a speed in (0, 16]") == 0);
        CHECK(parseError("replay_last 10\n")
                  .find("s.txt:1: replay_last: expected 'replay_last SECONDS SPEED'") == 0);
        CHECK(parseError("pause_playback now\n") ==
              "s.txt:1: pause_playback takes no argument; expected 'pause_playback'");
    }
    SECTION("wait_playback holds the script until the playback is over") {
        FakeHost host;
        host.run.replay = true;
        host.run.finished = true;
        ScriptRunner s = ScriptRunner::parse("replay_last 10 0.5\nwait_playback\ncursor_live\n", "s.txt");
        CHECK(s.tick(host, 0.0) == ScriptRunner::Status::Running);
        CHECK(host.calls == std::vector<std::string>{"replay_last 10.000000 0.500000"});
        CHECK(s.tick(host, 5.0) == ScriptRunner::Status::Running); // still playing
        host.playing = false;
        CHECK(s.tick(host, 20.0) == ScriptRunner::Status::Done);
        CHECK(host.calls.back() == "cursor live");
    }
}

TEST_CASE("A script fails at run time when a wait can never be met", "[script]") {
    FakeHost host;
    host.run.ranks = {rank(0, RankState::Failed, 3), rank(1, RankState::Killed, 2)};
    host.run.finished = true;

    SECTION("wait_step after the run ended") {
        ScriptRunner s = ScriptRunner::parse("wait_step 10\n", "s.txt");
        CHECK(s.tick(host, 0.0) == ScriptRunner::Status::Failed);
        CHECK(s.failure().rfind("s.txt:1: wait_step 10: the run ended", 0) == 0);
    }
    SECTION("a disabled button") {
        host.click = ScriptHost::ClickState::Disabled;
        ScriptRunner s = ScriptRunner::parse("click_button Kill##rank0\n", "s.txt");
        s.tick(host, 0.0);
        CHECK(s.tick(host, 0.1) == ScriptRunner::Status::Failed);
        CHECK(s.failure() == "s.txt:1: click_button: the button 'Kill##rank0' is disabled");
    }
    SECTION("a button that is never drawn") {
        ScriptRunner s = ScriptRunner::parse("click_button Nope\n", "s.txt");
        ScriptRunner::Status status = ScriptRunner::Status::Running;
        for (int frame = 0; frame < 100 && status == ScriptRunner::Status::Running; ++frame)
            status = s.tick(host, 0.0);
        CHECK(status == ScriptRunner::Status::Failed);
        CHECK(s.failure().find("no button 'Nope' was drawn") != std::string::npos);
    }
    SECTION("a theme with no file of assets/themes") {
        ScriptRunner s = ScriptRunner::parse("theme blue\n", "s.txt");
        CHECK(s.tick(host, 0.0) == ScriptRunner::Status::Failed);
        CHECK(s.failure() == "s.txt:1: theme: no theme named 'blue' (themes: dark, light)");
    }
    SECTION("a recording that cannot be written") {
        ScriptRunner s = ScriptRunner::parse("save_recording /nope/x.dtrec\n", "s.txt");
        CHECK(s.tick(host, 0.0) == ScriptRunner::Status::Failed);
        CHECK(s.failure() == "s.txt:1: save_recording: cannot write");
    }
}

TEST_CASE("Narration conditions are read from the run's facts", "[script][narration]") {
    using Kind = dt::NarrationCondition::Kind;
    RunFacts f;
    f.live = true;
    f.ranks = {rank(0, RankState::Running, 2), rank(1, RankState::Running, 4),
               rank(2, RankState::Starting, -1)};
    auto holds = [&](Kind kind, int value = 0) { return dt::app::narrationConditionHolds({kind, value}, f); };

    SECTION("no condition holds at once") {
        CHECK(holds(Kind::None));
    }
    SECTION("step >= N counts the slowest rank still alive") {
        CHECK(holds(Kind::StepAtLeast, 0));
        CHECK_FALSE(holds(Kind::StepAtLeast, 1)); // rank 2 has not completed a step
        f.ranks[2].step = 2;
        CHECK(holds(Kind::StepAtLeast, 3));
        CHECK_FALSE(holds(Kind::StepAtLeast, 4));
        f.ranks[0].state = RankState::Killed; // a dead rank no longer holds the others back
        CHECK(holds(Kind::StepAtLeast, 3));
    }
    SECTION("the first all-reduce, a rank's death and the end of the run") {
        CHECK_FALSE(holds(Kind::FirstAllReduceEnds));
        f.first_allreduce_ended = true;
        CHECK(holds(Kind::FirstAllReduceEnds));
        CHECK_FALSE(holds(Kind::RankDies, 1));
        f.ranks[1].state = RankState::Failed;
        CHECK(holds(Kind::RankDies, 1));
        CHECK_FALSE(holds(Kind::RankDies, 7));
        CHECK_FALSE(holds(Kind::RunFinished));
        f.finished = true;
        CHECK(holds(Kind::RunFinished));
    }
    SECTION("once the live run has ended every condition holds, so Next never locks for good") {
        f.ranks[0].state = RankState::Killed;
        f.ranks[1].state = RankState::Killed;
        f.ranks[2].state = RankState::Failed;
        CHECK_FALSE(holds(Kind::FirstAllReduceEnds));
        f.finished = true;
        f.live = false;
        CHECK(holds(Kind::StepAtLeast, 1000));
        CHECK(holds(Kind::FirstAllReduceEnds));
    }
    SECTION("in a replay every condition holds") {
        f.replay = true;
        f.live = false;
        CHECK(holds(Kind::RankDies, 0));
        CHECK(holds(Kind::StepAtLeast, 1000));
    }
    SECTION("a condition unlocked by the end of the run is not one that happened") {
        // Rank 1 finished normally and the run failed at step 2: Next is
        // unlocked, but neither "rank 1 dies" nor "step >= 3" happened.
        auto met = [&](Kind kind, int value = 0) { return dt::app::narrationConditionMet({kind, value}, f); };
        f.ranks[0].step = 2;
        f.ranks[1].state = RankState::Finished;
        f.ranks[2].state = RankState::Failed;
        f.ranks[2].step = 1;
        f.finished = true;
        f.live = false;
        CHECK(holds(Kind::RankDies, 1));
        CHECK_FALSE(met(Kind::RankDies, 1));
        CHECK(met(Kind::RankDies, 2));
        CHECK(holds(Kind::StepAtLeast, 4));
        CHECK_FALSE(met(Kind::StepAtLeast, 4));
        CHECK(met(Kind::StepAtLeast, 3)); // ranks 0 and 1 completed steps 0..2; rank 2 is gone
        CHECK(met(Kind::RunFinished));
    }
    SECTION("a replica that died and was restarted did die") {
        auto met = [&](Kind kind, int value = 0) { return dt::app::narrationConditionMet({kind, value}, f); };
        CHECK_FALSE(met(Kind::RankDies, 1));
        dt::Event exit;
        exit.kind = dt::EventKind::ProcessExited;
        exit.rank = 1;
        exit.value = -9; // SIGKILL
        f.noteEvent(exit);
        f.ranks[1].state = RankState::Running; // restarted, healed, training again
        CHECK(met(Kind::RankDies, 1));
        exit.rank = 0;
        exit.value = 0; // a clean exit is not a death
        f.noteEvent(exit);
        CHECK_FALSE(met(Kind::RankDies, 0));
    }

    SECTION("a heal, a new quorum and a DiLoCo outer sync are read from their events") {
        auto met = [&](Kind kind, int value = 0) { return dt::app::narrationConditionMet({kind, value}, f); };
        dt::Event q;
        q.kind = dt::EventKind::QuorumFormed;
        q.phase = dt::EventPhase::Instant;
        q.rank = -1;
        q.value = 1;
        f.noteEvent(q);
        f.noteEvent(q); // the same quorum again is not a new one
        CHECK_FALSE(met(Kind::NewQuorumForms));
        q.value = 2;
        f.noteEvent(q);
        CHECK(met(Kind::NewQuorumForms));

        dt::Event heal;
        heal.kind = dt::EventKind::Heal;
        heal.phase = dt::EventPhase::Span;
        heal.rank = 1;
        heal.value = 1; // sending is not healing
        f.noteEvent(heal);
        CHECK_FALSE(met(Kind::RankHeals, 1));
        heal.value = 0; // receiving a live peer's state
        f.noteEvent(heal);
        CHECK(met(Kind::RankHeals, 1));
        CHECK_FALSE(met(Kind::RankHeals, 0));

        CHECK_FALSE(met(Kind::FirstOuterSyncEnds));
        dt::Event outer;
        outer.kind = dt::EventKind::OuterStep;
        outer.phase = dt::EventPhase::Span;
        outer.rank = 0;
        f.noteEvent(outer);
        CHECK(met(Kind::FirstOuterSyncEnds));
    }
}
