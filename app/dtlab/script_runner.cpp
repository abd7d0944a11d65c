// script_runner.cpp: parses a dtlab script and runs it one frame at a time
// (see script_runner.hpp for the commands).
#include "script_runner.hpp"

#include "dtlab/errors.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace dt::app {

namespace {

using Verb = ScriptCommand::Verb;

// How a command is written and what its argument is.
enum class Arg { None, Rank, Number, RankNumber, NumberNumber, Text };

struct VerbSpec {
    const char* name;
    Verb verb;
    Arg arg;
    const char* usage;
};

const VerbSpec kVerbs[] = {
    {"wait_step", Verb::WaitStep, Arg::Number, "wait_step N"},
    {"wait_seconds", Verb::WaitSeconds, Arg::Number, "wait_seconds S"},
    {"wait_frames", Verb::WaitFrames, Arg::Number, "wait_frames N"},
    {"wait_finished", Verb::WaitFinished, Arg::None, "wait_finished"},
    {"wait_dead", Verb::WaitDead, Arg::Rank, "wait_dead RANK"},
    {"kill", Verb::Kill, Arg::Rank, "kill RANK"},
    {"hang", Verb::Hang, Arg::Rank, "hang RANK"},
    {"resume", Verb::Resume, Arg::Rank, "resume RANK"},
    {"slow", Verb::Slow, Arg::RankNumber, "slow RANK MS"},
    {"pause", Verb::Pause, Arg::None, "pause"},
    {"run", Verb::Run, Arg::None, "run"},
    {"step", Verb::Step, Arg::None, "step"},
    {"pace", Verb::Pace, Arg::Number, "pace SPS"},
    {"select", Verb::Select, Arg::Rank, "select RANK"},
    {"cursor", Verb::Cursor, Arg::Text, "cursor SECONDS|off"},
    {"play", Verb::Play, Arg::Number, "play SPEED"},
    {"pause_playback", Verb::PausePlayback, Arg::None, "pause_playback"},
    {"replay_last", Verb::ReplayLast, Arg::NumberNumber, "replay_last SECONDS SPEED"},
    {"cursor_live", Verb::CursorLive, Arg::None, "cursor_live"},
    {"wait_playback", Verb::WaitPlayback, Arg::None, "wait_playback"},
    {"screenshot", Verb::Screenshot, Arg::Text, "screenshot PATH"},
    {"click_button", Verb::ClickButton, Arg::Text, "click_button LABEL"},
    {"save_recording", Verb::SaveRecording, Arg::Text, "save_recording PATH"},
    {"open", Verb::Open, Arg::Text, "open PATH"},
    {"print_layout", Verb::PrintLayout, Arg::None, "print_layout"},
    {"print_state", Verb::PrintState, Arg::None, "print_state"},
    {"check_claims", Verb::CheckClaims, Arg::None, "check_claims"},
    {"print_screen", Verb::PrintScreen, Arg::None, "print_screen"},
    {"wait_settled", Verb::WaitSettled, Arg::None, "wait_settled"},
    {"print_frame_times", Verb::PrintFrameTimes, Arg::None, "print_frame_times"},
    {"next", Verb::Next, Arg::None, "next"},
    {"back", Verb::Back, Arg::None, "back"},
    {"wait_next", Verb::WaitNext, Arg::None, "wait_next"},
    {"expect_held", Verb::ExpectHeld, Arg::None, "expect_held"},
    {"wait_held", Verb::WaitHeld, Arg::None, "wait_held"},
    {"expect_live", Verb::ExpectLive, Arg::None, "expect_live"},
    {"print_narration", Verb::PrintNarration, Arg::None, "print_narration"},
    {"break", Verb::Break, Arg::Text, "break KIND [ARG]"},
    {"unbreak", Verb::Unbreak, Arg::Text, "unbreak KIND"},
    {"theme", Verb::Theme, Arg::Text, "theme NAME (a file of assets/themes: dark, light)"},
    {"font", Verb::Font, Arg::Number, "font PX"},
    {"show", Verb::Show, Arg::Text, "show VIEW"},
    {"hide", Verb::Hide, Arg::Text, "hide VIEW"},
    {"help", Verb::Help, Arg::None, "help"},
    {"fullscreen", Verb::Fullscreen, Arg::None, "fullscreen"},
    {"answer", Verb::Answer, Arg::Number, "answer NUMBER"},
    {"reveal", Verb::Reveal, Arg::None, "reveal"},
    {"expect_exercise", Verb::ExpectExercise, Arg::Text, "expect_exercise right|wrong|unanswered|undecided"},
    {"whatif", Verb::WhatIf, Arg::Text, "whatif KNOB VALUE"},
    {"whatif_rerun", Verb::WhatIfRerun, Arg::None, "whatif_rerun"},
    {"print_compare", Verb::PrintCompare, Arg::None, "print_compare"},
    {"gallery", Verb::Gallery, Arg::None, "gallery"},
    {"window", Verb::Window, Arg::NumberNumber, "window WIDTH HEIGHT"},
    {"expect_views_fit", Verb::ExpectViewsFit, Arg::Number, "expect_views_fit PX"},
    {"quit", Verb::Quit, Arg::None, "quit"},
};

// Frames drawn after the previous command before a screenshot is read, so
// ImGui has laid out what that command changed (windows size themselves over
// a frame or two).
constexpr int kSettleFrames = 3;
// Frames a click_button waits for its button to be drawn.
constexpr int kClickFrames = 30;
// Frames a window command waits for the new size.
constexpr int kWindowFrames = 120;

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos)
        return "";
    const size_t e = s.find_last_not_of(" \t\r");
    return s.substr(b, e - b + 1);
}

bool parseNumber(const std::string& word, double& out) {
    if (word.empty())
        return false;
    char* end = nullptr;
    errno = 0;
    out = std::strtod(word.c_str(), &end);
    return errno == 0 && end && *end == 0 && std::isfinite(out);
}

bool parseRank(const std::string& word, int& out) {
    if (word.empty() || word.size() > 6)
        return false;
    for (char c : word)
        if (c < '0' || c > '9')
            return false;
    out = std::stoi(word);
    return true;
}

std::string format(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
}

} // namespace

ScriptRunner ScriptRunner::load(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw UsageError("--script: cannot open '" + path + "': " + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    return parse(text.str(), path);
}

ScriptRunner ScriptRunner::parse(const std::string& text, const std::string& source) {
    ScriptRunner runner;
    runner.m_source = source;
    std::istringstream in(text);
    std::string raw;
    int line = 0;
    auto fail = [&](const std::string& message) {
        throw UsageError(source + ":" + std::to_string(line) + ": " + message);
    };
    while (std::getline(in, raw)) {
        ++line;
        const std::string content = trim(raw);
        if (content.empty() || content[0] == '#')
            continue;
        const size_t space = content.find_first_of(" \t");
        const std::string word = content.substr(0, space);
        const std::string rest = space == std::string::npos ? "" : trim(content.substr(space));
        const VerbSpec* spec = nullptr;
        for (const VerbSpec& v : kVerbs)
            if (word == v.name)
                spec = &v;
        if (!spec) {
            std::string names;
            for (const VerbSpec& v : kVerbs)
                names += (names.empty() ? "" : ", ") + std::string(v.name);
            fail("unknown command '" + word + "'; expected one of: " + names);
        }
        ScriptCommand c;
        c.verb = spec->verb;
        c.line = line;
        std::istringstream words(rest);
        std::vector<std::string> args;
        for (std::string a; words >> a;)
            args.push_back(a);
        const std::string usage = std::string("expected '") + spec->usage + "'";
        switch (spec->arg) {
        case Arg::None:
            if (!args.empty())
                fail(std::string(spec->name) + " takes no argument; " + usage);
            break;
        case Arg::Rank:
            if (args.size() != 1 || !parseRank(args[0], c.rank))
                fail(std::string(spec->name) + ": " + usage + " with RANK a rank number, got '" + rest + "'");
            break;
        case Arg::Number:
            if (args.size() != 1 || !parseNumber(args[0], c.number) || c.number < 0)
                fail(std::string(spec->name) + ": " + usage + " with a number >= 0, got '" + rest + "'");
            break;
        case Arg::RankNumber:
            if (args.size() != 2 || !parseRank(args[0], c.rank) || !parseNumber(args[1], c.number) ||
                c.number < 0)
                fail(std::string(spec->name) + ": " + usage +
                     " (a rank number and milliseconds >= 0), got '" + rest + "'");
            break;
        case Arg::NumberNumber:
            if (args.size() != 2 || !parseNumber(args[0], c.number) || !parseNumber(args[1], c.number2) ||
                c.number <= 0 || c.number2 <= 0)
                fail(std::string(spec->name) + ": " + usage + " with two numbers > 0, got '" + rest + "'");
            break;
        case Arg::Text:
            if (rest.empty())
                fail(std::string(spec->name) + ": " + usage);
            c.text = rest;
            break;
        }
        if (c.verb == Verb::Cursor) {
            if (c.text == "off")
                c.number = -1.0;
            else if (!parseNumber(c.text, c.number) || c.number < 0)
                fail("cursor: expected seconds >= 0 after the run's first event, or 'off', got '" + c.text +
                     "'");
        }
        if ((c.verb == Verb::Play && (c.number <= 0 || c.number > 16)) ||
            (c.verb == Verb::ReplayLast && c.number2 > 16))
            fail(std::string(spec->name) + ": expected a speed in (0, 16] (1/4x = 0.25), got '" + rest + "'");
        if (c.verb == Verb::WhatIf && args.size() != 2)
            fail("whatif: expected 'whatif KNOB VALUE', got '" + rest + "'");
        if (c.verb == Verb::ExpectExercise && c.text != "right" && c.text != "wrong" &&
            c.text != "unanswered" && c.text != "undecided")
            fail("expect_exercise: expected right, wrong, unanswered or undecided, got '" + c.text + "'");
        if (c.verb == Verb::Window &&
            (c.number < 320 || c.number2 < 240 || c.number > 7680 || c.number2 > 4320))
            fail("window: expected a size from 320 x 240 to 7680 x 4320 px, got '" + rest + "'");
        if (c.verb == Verb::Font && (c.number < 10 || c.number > 48))
            fail("font: expected a size in pixels in 10..48, got " + format(c.number));
        runner.m_commands.push_back(c);
    }
    return runner;
}

void ScriptRunner::checkRanks(int world) const {
    for (const ScriptCommand& c : m_commands)
        if (c.rank >= world)
            throw UsageError(m_source + ":" + std::to_string(c.line) + ": rank " + std::to_string(c.rank) +
                             " does not exist: the run has " + std::to_string(world) +
                             (world == 1 ? " rank" : " ranks") + " (0.." + std::to_string(world - 1) + ")");
}

std::string ScriptRunner::resolveScreenshot(const std::string& path) const {
    if (path.empty() || path[0] == '/' || m_screenshot_dir.empty())
        return path;
    return m_screenshot_dir + "/" + path;
}

void ScriptRunner::fail(const ScriptCommand& c, const std::string& message) {
    m_status = Status::Failed;
    m_failure = m_source + ":" + std::to_string(c.line) + ": " + message;
}

ScriptRunner::Status ScriptRunner::tick(ScriptHost& host, double now_s) {
    while (m_status == Status::Running) {
        if (m_next >= m_commands.size()) {
            m_status = Status::Done;
            break;
        }
        const ScriptCommand& c = m_commands[m_next];
        if (!m_started) {
            m_started = true;
            m_started_s = now_s;
            m_frames = 0;
            m_requested = false;
        }
        const bool complete = runCommand(c, host, now_s);
        if (m_status != Status::Running)
            break;
        if (!complete) {
            ++m_frames;
            break; // wait for the next frame
        }
        m_started = false;
        ++m_next;
    }
    return m_status;
}

bool ScriptRunner::runCommand(const ScriptCommand& c, ScriptHost& host, double now_s) {
    const RunFacts& f = host.facts();
    switch (c.verb) {
    case Verb::WaitStep: {
        const int need = int(c.number);
        if (f.stepsCompletedByAlive() >= need) {
            std::printf("dtlab: script: step %d reached after %.1f s\n", need, now_s - m_started_s);
            std::fflush(stdout);
            return true;
        }
        if (f.finished || (!f.live && !f.replay))
            fail(c, "wait_step " + std::to_string(need) + ": the run ended (or none is loaded) with " +
                        std::to_string(f.stepsCompletedByAlive() < 0 ? 0 : f.stepsCompletedByAlive()) +
                        " step(s) completed by every rank still alive");
        return false;
    }
    case Verb::WaitSeconds:
        return now_s - m_started_s >= c.number;
    case Verb::WaitFrames:
        return m_frames >= int(c.number);
    case Verb::WaitFinished:
        if (f.finished)
            return true; // a live run that has ended, or a replay
        if (!f.live)
            fail(c, "wait_finished: no run is loaded");
        return false;
    case Verb::WaitSettled: // a held run's picture stops changing: no rank that steps is still running
        if (f.finished)
            return true;
        if (!f.live)
            fail(c, "wait_settled: no live run");
        for (size_t r = 0; r < f.steppingCount(); ++r)
            if (f.ranks[r].state == RankState::Running)
                return false;
        return true;
    case Verb::WaitDead:
        if (f.rankGone(c.rank))
            return true;
        if (f.finished)
            fail(c, "wait_dead " + std::to_string(c.rank) + ": the run ended and the rank did not die");
        return false;
    case Verb::Kill:
        host.killRank(c.rank);
        return true;
    case Verb::Hang:
        host.hangRank(c.rank);
        return true;
    case Verb::Resume:
        host.resumeRank(c.rank);
        return true;
    case Verb::Slow:
        host.slowRank(c.rank, c.number);
        return true;
    case Verb::Pause:
        host.pauseRun();
        return true;
    case Verb::Run:
        host.runFree();
        return true;
    case Verb::Step:
        host.stepOnce();
        return true;
    case Verb::Pace:
        host.setPace(c.number);
        return true;
    case Verb::Select:
        host.selectRank(c.rank);
        return true;
    case Verb::Cursor:
        host.setCursor(c.number);
        return true;
    case Verb::Play:
        host.play(c.number);
        return true;
    case Verb::PausePlayback:
        host.pausePlayback();
        return true;
    case Verb::ReplayLast:
        host.replayLast(c.number, c.number2);
        return true;
    case Verb::CursorLive:
        host.cursorLive();
        return true;
    case Verb::WaitPlayback:
        if (host.playbackPlaying())
            return false;
        std::printf("dtlab: script: playback over after %.2f s\n", now_s - m_started_s);
        std::fflush(stdout);
        return true;
    case Verb::Screenshot:
        if (m_frames < kSettleFrames)
            return false;
        if (!m_requested) {
            host.requestScreenshot(resolveScreenshot(c.text));
            m_requested = true;
            return false;
        }
        return !host.screenshotPending();
    case Verb::ClickButton:
        if (!m_requested) {
            host.requestClick(c.text);
            m_requested = true;
            return false;
        }
        switch (host.clickState()) {
        case ScriptHost::ClickState::Pressed:
            return true;
        case ScriptHost::ClickState::Disabled:
            host.cancelClick();
            fail(c, "click_button: the button '" + c.text + "' is disabled");
            return false;
        case ScriptHost::ClickState::Waiting:
            if (m_frames >= kClickFrames) {
                host.cancelClick();
                fail(c,
                     "click_button: no button '" + c.text + "' was drawn (print_layout lists the buttons)");
            }
            return false;
        }
        return false;
    case Verb::SaveRecording: {
        std::string error;
        if (!host.saveRecording(c.text, error))
            fail(c, "save_recording: " + error);
        return true;
    }
    case Verb::Open: {
        std::string error;
        if (!host.openPath(c.text, error))
            fail(c, "open: " + error);
        return true;
    }
    case Verb::PrintLayout:
        host.printLayout();
        return true;
    case Verb::PrintState:
        host.printState();
        return true;
    case Verb::PrintScreen:
        host.printScreen();
        return true;
    case Verb::CheckClaims: {
        std::string report;
        if (!host.checkNarrationClaims(report))
            fail(c, "check_claims: the narration says what the screen does not show (its FAIL line above)");
        return true;
    }
    case Verb::WaitNext:
        if (host.narrationOnLastStep())
            fail(c, "wait_next: the narration is on its last step (" + host.narrationStatus() + ")");
        if (!f.live && !f.replay && !f.finished)
            fail(c, "wait_next: no run is loaded");
        return host.narrationNextEnabled();
    case Verb::WaitHeld: // the narration's step holds the run (its moment came)
        if (host.narrationHeld())
            return true;
        if (f.finished || (!f.live && !f.replay))
            fail(c, "wait_held: the run ended without holding at this step (" + host.narrationStatus() + ")");
        return false;
    case Verb::ExpectHeld:
        if (!host.narrationHeld())
            fail(c,
                 "expect_held: the run is not held at this step's moment (" + host.narrationStatus() + ")");
        return true;
    case Verb::ExpectLive:
        if (!f.live)
            fail(c, "expect_live: the run has ended (" + host.narrationStatus() + ")");
        return true;
    case Verb::Break:
    case Verb::Unbreak: {
        std::istringstream in(c.text);
        std::string kind;
        double arg = 0.0;
        in >> kind >> arg;
        std::string error;
        if (!host.setBreakpoint(kind, arg, c.verb == Verb::Break, error))
            fail(c, std::string(c.verb == Verb::Break ? "break " : "unbreak ") + c.text + ": " + error);
        return true;
    }
    case Verb::PrintNarration:
        std::printf("dtlab: narration: %s\n", host.narrationStatus().c_str());
        std::fflush(stdout);
        return true;
    case Verb::PrintFrameTimes:
        std::printf("dtlab: frames: %s\n", host.takeFrameTimes().c_str());
        std::fflush(stdout);
        return true;
    case Verb::Next:
        host.narrationNext();
        return true;
    case Verb::Back:
        host.narrationBack();
        return true;
    case Verb::Theme:
        if (!host.setThemeByName(c.text))
            fail(c, "theme: no theme named '" + c.text + "' (themes: " + host.themeNames() + ")");
        return true;
    case Verb::Font:
        host.setFontPixels(float(c.number));
        return true;
    case Verb::Show:
    case Verb::Hide:
        if (!host.showView(c.text, c.verb == Verb::Show))
            fail(c, std::string(c.verb == Verb::Show ? "show" : "hide") + ": no view named '" + c.text + "'");
        return true;
    case Verb::Help:
        host.toggleHelp();
        return true;
    case Verb::Fullscreen:
        host.toggleFullscreen();
        return true;
    case Verb::Answer:
    case Verb::Reveal: {
        const std::string status = host.exerciseStatus();
        if (status != "open")
            fail(c, std::string(c.verb == Verb::Answer ? "answer" : "reveal") +
                        ": this narration step has no open question (" + status + "; " +
                        host.narrationStatus() + ")");
        else if (c.verb == Verb::Answer)
            host.lockPrediction(c.number);
        else
            host.revealAnswer();
        return true;
    }
    case Verb::ExpectExercise: {
        const std::string status = host.exerciseStatus();
        if (status == "none" || status == "open") {
            fail(c, "expect_exercise: " +
                        std::string(status == "none" ? "this step has no question"
                                                     : "nothing locked in yet (answer or reveal first)"));
            return false;
        }
        if (status == "waiting")
            return false;
        if (status != c.text)
            fail(c, "expect_exercise: the verdict is " + status + ", not " + c.text);
        return true;
    }
    case Verb::WhatIf: {
        std::istringstream in(c.text);
        std::string name, value;
        in >> name >> value;
        const std::string problem = host.setWhatIfKnob(name, value);
        if (!problem.empty())
            fail(c, "whatif: " + problem);
        return true;
    }
    case Verb::WhatIfRerun:
        host.rerunWhatIf();
        return true;
    case Verb::PrintCompare:
        host.printComparison();
        return true;
    case Verb::Gallery:
        host.openGallery();
        return true;
    case Verb::Window: {
        if (!m_requested) {
            host.setWindowSize(int(c.number), int(c.number2));
            m_requested = true;
            return false;
        }
        const WindowSize d = host.displaySize();
        if (d.width == int(c.number) && d.height == int(c.number2))
            return m_frames >= kSettleFrames;
        if (m_frames >= kWindowFrames)
            fail(c, "window: the window is " + std::to_string(d.width) + " x " + std::to_string(d.height) +
                        " px, not " + format(c.number) + " x " + format(c.number2) +
                        " (is the screen smaller? xvfb-run -s \"-screen 0 WxHx24\")");
        return false;
    }
    case Verb::ExpectViewsFit: {
        if (m_frames < kSettleFrames)
            return false;
        const std::string problem = host.viewsFitProblem(float(c.number));
        if (!problem.empty())
            fail(c, "expect_views_fit " + format(c.number) + ": " + problem);
        return true;
    }
    case Verb::Quit:
        host.requestQuit();
        return true;
    }
    return true;
}

} // namespace dt::app
