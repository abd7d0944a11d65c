// script_runner.hpp: scripted input for tests and demos (`dtlab --script FILE`).
//
// One command per line, run in order; a command that waits keeps the script at
// that line while the app goes on drawing frames (the GUI never blocks):
//
//   wait_step N          every rank still alive completed N steps
//   wait_seconds S       S seconds of wall-clock time (S may be fractional)
//   wait_frames N        N drawn frames
//   wait_finished        the run ended (every rank exited)
//   wait_dead R          rank R was killed or failed
//   kill R | hang R | resume R      SIGKILL / SIGSTOP / SIGCONT to rank R
//   slow R MS            add MS milliseconds to each of rank R's steps (0 = normal)
//   pause | run | step   step gates: pause at the next step boundary, run freely, one step
//   pace SPS             at most SPS steps per second (0 = off)
//   select R             select rank R (the topology details panel shows it)
//   cursor S | cursor off    put the time cursor S seconds after the run's first
//                        event (the FSDP flow view shows that moment), or clear it
//   play SPEED           play the time cursor at SPEED (0.25, 0.5, 1, 2, ...) from where it
//                        is (or the start); a replay stops at its end, a live run returns to live
//   pause_playback       stop the playback; the cursor stays
//   replay_last S SPEED  instant replay: the last S seconds at SPEED, then back to live
//   cursor_live          clear the cursor: back to now (live) or the end (replay), as Esc
//   wait_playback        until the playback ended (prints how long it took)
//   screenshot PATH      PNG of the whole window (relative: under --screenshot-dir)
//   click_button LABEL   press the button with this ImGui label ("Kill##rank1"),
//                        or the only one whose visible text is LABEL
//   save_recording PATH  write the run so far (open it with dtlab --replay PATH)
//   open PATH            open a scenario (.toml: stops the current run, starts
//                        a new one) or a recording, as File > Open or a drop does
//   print_layout         print every window and button rectangle to stdout
//   print_frame_times    print the frames' cost since the last print (frame_times.hpp):
//                        "dtlab: frames: 40 frames: build median 3.1 ms, ..."
//   answer X             lock in X as the prediction for this step's question (a choice: its index)
//   reveal               show this step's answer without a prediction
//   expect_exercise V    wait until this step's question is judged, then fail unless the
//                        verdict is V: right, wrong, unanswered or undecided
//   whatif KNOB VALUE    set a what-if knob (ranks, strategy, bucket_mb, overlap, ...); fails if refused
//   whatif_rerun         rerun the scenario with the knobs (as the What if view's Rerun)
//   print_compare        print the comparison of the last two runs ("dtlab: compare: ...")
//   gallery              open the scenario gallery (as Ctrl+O; cards: click_button NAME)
//   window W H           resize the window to W x H px (waits until the frame has that size)
//   expect_views_fit PX  fail unless every open view's content area is at least PX tall and
//                        every view lies inside the window (the app's own layout numbers)
//   next | back          narration: next / previous step
//   wait_next            wait until the narration's Next is enabled (its step's event happened,
//                        or the run ended); fails on the last step
//   expect_held          fail unless the narration holds the run paused at its step's moment
//   expect_live          fail if the run has ended
//   print_narration      print the narration's state ("dtlab: narration: step 2 of 5 ...")
//   break KIND [ARG]     pause the run when KIND happens (rank_dies, rank_hangs, quorum_changes,
//                        collective_fails, collective_slower MS, heal, step N, loss_nan)
//   unbreak KIND         remove that breakpoint
//   theme NAME           switch theme (a file of assets/themes);  font PX   font size in pixels
//   fullscreen           full screen on / off (as F11)
//   show VIEW | hide VIEW    open or close a view window (topology, timeline, ...)
//   help                 toggle the shortcut overlay
//   quit                 close the app (the Session stops, every rank is killed)
// Blank lines and lines starting with '#' are ignored.
//
// Errors: a bad line is a UsageError "FILE:LINE: message" raised by load()
// before any window opens (dtlab exits 2). A wait that can never be met (the
// run ended first) or a button that is not on screen fails the script at run
// time: the message names the line and dtlab exits 1.
#pragma once

#include "run_facts.hpp"

#include <string>
#include <vector>

namespace dt::app {

// The window's drawable size in px.
struct WindowSize {
    int width = 0, height = 0;
};

// What a script needs from the app; AppContext implements it, tests fake it.
class ScriptHost {
  public:
    virtual ~ScriptHost() = default;
    [[nodiscard]] virtual const RunFacts& facts() const = 0;
    virtual void killRank(int rank) = 0;
    virtual void hangRank(int rank) = 0;
    virtual void resumeRank(int rank) = 0;
    virtual void slowRank(int rank, double delay_ms) = 0;
    virtual void pauseRun() = 0;
    virtual void runFree() = 0;
    virtual void stepOnce() = 0;
    virtual void setPace(double steps_per_s) = 0;
    virtual void selectRank(int rank) = 0;
    // The shared time cursor, seconds after the run's first event; < 0 clears it.
    virtual void setCursor(double seconds) = 0;
    // Its playback (playback.hpp).
    virtual void play(double speed) = 0;
    virtual void pausePlayback() = 0;
    virtual void replayLast(double seconds, double speed) = 0;
    virtual void cursorLive() = 0;
    [[nodiscard]] virtual bool playbackPlaying() const = 0;
    virtual void requestScreenshot(const std::string& path) = 0;
    [[nodiscard]] virtual bool screenshotPending() const = 0;
    // click_button: the host presses the button the next time it is drawn.
    enum class ClickState { Waiting, Pressed, Disabled };
    virtual void requestClick(const std::string& label) = 0;
    [[nodiscard]] virtual ClickState clickState() const = 0;
    virtual void cancelClick() = 0;
    virtual bool saveRecording(const std::string& path, std::string& error) = 0;
    virtual bool openPath(const std::string& path, std::string& error) = 0;
    virtual void printLayout() = 0;
    virtual void narrationNext() = 0;
    virtual void narrationBack() = 0;
    // The narration's state for wait_next / expect_held / print_narration.
    [[nodiscard]] virtual bool narrationNextEnabled() const { return false; }
    [[nodiscard]] virtual bool narrationOnLastStep() const { return true; }
    [[nodiscard]] virtual bool narrationHeld() const { return false; }
    [[nodiscard]] virtual std::string narrationStatus() const { return "no narration"; }
    // One line per view of what it shows at the views' moment (app_print_state.cpp).
    virtual void printState() {}
    // The narration step's `expect` claims over the screen now (false: one fails); prints them.
    // The screen document the claims read (dtlab/screen_fields.def), one JSON line.
    virtual void printScreen() {}
    virtual bool checkNarrationClaims(std::string& report) {
        report = "this host has no narration claims";
        return false;
    }
    // break / unbreak: false with `error` set when the kind or its argument is wrong.
    virtual bool setBreakpoint(const std::string& kind, double arg, bool on, std::string& error) {
        (void)kind, (void)arg, (void)on;
        error = "breakpoints are not supported here";
        return false;
    }
    virtual bool setThemeByName(const std::string& name) = 0; // false: no such theme
    [[nodiscard]] virtual std::string themeNames() const { return "dark, light"; }
    virtual void setFontPixels(float px) = 0;
    virtual bool showView(const std::string& name, bool show) = 0;
    virtual void toggleHelp() = 0;
    virtual void toggleFullscreen() = 0;
    virtual void requestQuit() = 0;
    // Predict, then run: the current narration step's question.
    virtual void lockPrediction(double /*value*/) {}
    virtual void revealAnswer() {}
    // "none" (no question here), "open", "waiting" (locked, the moment not reached),
    // "right", "wrong", "unanswered" (shown without a prediction), "undecided".
    [[nodiscard]] virtual std::string exerciseStatus() const { return "none"; }
    // What if (views/view_whatif.hpp): a knob of the copy ("" = accepted), rerun, the comparison.
    virtual std::string setWhatIfKnob(const std::string& /*name*/, const std::string& /*value*/) {
        return "";
    }
    virtual void rerunWhatIf() {}
    virtual void printComparison() {}
    // The gallery, the window's size and the layout's check (no-ops in fakes).
    virtual void openGallery() {}
    virtual void setWindowSize(int /*width*/, int /*height*/) {}
    [[nodiscard]] virtual WindowSize displaySize() const { return {}; }
    // "" when every open view has a content area >= min_px tall inside the window, else what does not.
    [[nodiscard]] virtual std::string viewsFitProblem(float /*min_px*/) const { return ""; }
    // print_frame_times: the frames' cost since the last call, which starts a new count.
    [[nodiscard]] virtual std::string takeFrameTimes() { return "no frames timed"; }
};

struct ScriptCommand {
    enum class Verb {
        WaitStep,
        WaitSeconds,
        WaitFrames,
        WaitFinished,
        WaitDead,
        Kill,
        Hang,
        Resume,
        Slow,
        Pause,
        Run,
        Step,
        Pace,
        Select,
        Cursor,
        Play,
        PausePlayback,
        ReplayLast,
        CursorLive,
        WaitPlayback,
        Screenshot,
        ClickButton,
        SaveRecording,
        Open,
        PrintLayout,
        PrintState,
        CheckClaims,
        PrintScreen,
        WaitSettled,
        PrintFrameTimes,
        Next,
        Back,
        WaitNext,
        ExpectHeld,
        WaitHeld,
        ExpectLive,
        PrintNarration,
        Break,
        Unbreak,
        Theme,
        Font,
        Show,
        Hide,
        Help,
        Fullscreen,
        Gallery,
        Window,
        Answer,
        Reveal,
        WhatIf,
        WhatIfRerun,
        PrintCompare,
        ExpectExercise,
        ExpectViewsFit,
        Quit,
    };
    Verb verb = Verb::Quit;
    int line = 0;
    int rank = -1;        // kill, hang, resume, slow, select, wait_dead
    double number = 0.0;  // wait_step, wait_seconds, wait_frames, slow (ms), pace, font, cursor (-1 = off),
                          // play (speed), replay_last (seconds)
    double number2 = 0.0; // replay_last (speed)
    std::string text;     // screenshot / save_recording path, button label, theme, view
};

class ScriptRunner {
  public:
    enum class Status { Running, Done, Failed };

    // Parse a whole script; throws UsageError "SOURCE:LINE: what is wrong".
    [[nodiscard]] static ScriptRunner load(const std::string& path);
    [[nodiscard]] static ScriptRunner parse(const std::string& text, const std::string& source);

    // Every rank a command names must exist; throws UsageError "SOURCE:LINE: ...".
    void checkRanks(int world) const;
    // Relative screenshot paths are resolved against this folder ("" = the working directory).
    void setScreenshotDir(const std::string& dir) { m_screenshot_dir = dir; }

    // Called once per frame: runs commands until one has to wait.
    Status tick(ScriptHost& host, double now_s);

    [[nodiscard]] const std::string& failure() const { return m_failure; }
    [[nodiscard]] const std::vector<ScriptCommand>& commands() const { return m_commands; }
    [[nodiscard]] size_t position() const { return m_next; }

  private:
    // One command; false while it still waits.
    bool runCommand(const ScriptCommand& c, ScriptHost& host, double now_s);
    void fail(const ScriptCommand& c, const std::string& message);
    [[nodiscard]] std::string resolveScreenshot(const std::string& path) const;

    std::string m_source;
    std::string m_screenshot_dir;
    std::vector<ScriptCommand> m_commands;
    size_t m_next = 0;
    Status m_status = Status::Running;
    std::string m_failure;
    // State of the command in progress.
    bool m_started = false;
    double m_started_s = 0.0;
    int m_frames = 0;
    bool m_requested = false;
};

} // namespace dt::app
