// view_actions.hpp: what a view's buttons can do (ViewInputs::actions).
//
// AppContext implements it: each action acts on the live Session and prints
// one line ("dtlab: killed rank 1"). Headless tests pass nothing (the buttons
// are drawn and do nothing: NoViewActions) or a fake that records the calls.
// button() is the app's scriptable button: a script can press it by its label
// (click_button LABEL) and print_layout lists it, so every view button goes
// through it.
#pragma once

#include <imgui.h>

#include <string>

namespace dt::app {

class ViewActions {
  public:
    virtual ~ViewActions() = default;

    // A button; a disabled one shows `why_disabled` as its tooltip. True when pressed.
    bool button(const char* label, bool enabled = true, const char* why_disabled = nullptr,
                const ImVec2& size = ImVec2(0, 0)) {
        return drawButton(label, enabled, why_disabled, size);
    }
    // A clickable area with no drawn label (the caller draws over it, as the
    // gallery's cards): scriptable by `label` like a button. True when clicked.
    bool clickArea(const char* label, const ImVec2& size) {
        const bool pressed = ImGui::InvisibleButton(label, size);
        return noteScriptableItem(label, pressed, true);
    }

    // Step gates (the control bar).
    virtual void runFree() = 0;
    virtual void pauseRun() = 0;
    virtual void stepOnce() = 0;
    virtual void setPace(double steps_per_s) = 0; // 0 = off

    // Faults on one rank (the topology tiles).
    virtual void killRank(int rank) = 0;                  // SIGKILL
    virtual void hangRank(int rank) = 0;                  // SIGSTOP
    virtual void resumeRank(int rank) = 0;                // SIGCONT
    virtual void slowRank(int rank, double delay_ms) = 0; // 0 = normal speed

    // Fault tolerance (the quorum view; no-ops without a live fault-tolerant run).
    virtual void restartRank(int rank) = 0;
    virtual void nanGradients(int rank) = 0;
    virtual void failNextCollective(int rank) = 0;
    virtual void partitionRank(int rank, bool on) = 0;
    virtual void setLighthouseRunning(bool running) = 0;

    // The modelled link ([network]) of one rank, or of every rank (rank -1); live runs only.
    virtual void setLink(int rank, double bandwidth_mbit_s, double latency_ms) = 0;

    // Selection, dialogs and narration.
    virtual void selectRank(int rank) = 0;
    virtual void openScenarioDialog() = 0;
    virtual void openSaveDialog() = 0;
    virtual void narrationNext() = 0;
    virtual void narrationBack() = 0;
    // The current step's question: lock in a prediction (a number, or a
    // choice's index), or reveal the run's answer without one.
    virtual void lockPrediction(double /*value*/) {}
    virtual void revealAnswer() {}
    // What if: change one knob of the copy to rerun ("" = accepted, else why
    // not), and rerun the copy (the current run stops).
    virtual std::string setWhatIfKnob(const std::string& /*name*/, const std::string& /*value*/) {
        return "";
    }
    virtual void rerunWhatIf() {}
    virtual void requestWhatIfRerun() { rerunWhatIf(); } // from a button: the app defers it past the frame

    // The time cursor's playback (the time controls; playback.hpp). No-ops by default.
    virtual void play(double /*speed*/) {} // from the cursor (or the start), at speed x
    virtual void pausePlayback() {}        // stop; the cursor stays where it is
    virtual void setPlaybackSpeed(double /*speed*/) {}
    virtual void replayLast(double /*seconds*/, double /*speed*/) {} // instant replay, then live
    virtual void cursorLive() {} // clear the cursor: show now (or the end)

  protected:
    virtual bool drawButton(const char* label, bool enabled, const char* why_disabled,
                            const ImVec2& size) = 0;
    // The last drawn item, under `label`: the app lists it and lets a script
    // press it; returns `pressed`, or true when the script pressed it.
    virtual bool noteScriptableItem(const char* /*label*/, bool pressed, bool /*enabled*/) { return pressed; }
};

// Draws a plain ImGui button, greyed out with a tooltip when disabled; true when pressed and enabled.
bool plainButton(const char* label, bool enabled, const char* why_disabled, const ImVec2& size);

// Buttons are drawn and nothing happens (a view drawn without an app).
class NoViewActions : public ViewActions {
  public:
    void runFree() override {}
    void pauseRun() override {}
    void stepOnce() override {}
    void setPace(double) override {}
    void killRank(int) override {}
    void hangRank(int) override {}
    void resumeRank(int) override {}
    void slowRank(int, double) override {}
    void restartRank(int) override {}
    void nanGradients(int) override {}
    void failNextCollective(int) override {}
    void partitionRank(int, bool) override {}
    void setLighthouseRunning(bool) override {}
    void setLink(int, double, double) override {}
    void selectRank(int) override {}
    void openScenarioDialog() override {}
    void openSaveDialog() override {}
    void narrationNext() override {}
    void narrationBack() override {}

  protected:
    bool drawButton(const char* label, bool enabled, const char* why_disabled, const ImVec2& size) override {
        return plainButton(label, enabled, why_disabled, size);
    }
};

} // namespace dt::app
