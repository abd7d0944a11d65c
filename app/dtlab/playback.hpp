// playback.hpp: the time cursor played over wall time.
//
//   replay playback   `play` in a recording: the cursor moves from where it is
//                     (or from the run's first event) at `speed` seconds of run
//                     time per wall second, and stops at the end of the run.
//   live playback     `play` in a live run: the cursor moves towards now (which
//                     moves too) and the views return to live when it gets there
//                     (only faster than 1x ever does).
//   instant replay    the last N seconds of a live run, from now - N to the
//                     moment it was asked (a fixed end: at 1/4x the run goes on
//                     four times faster than the replay), then back to live.
// Plain logic, no clock of its own: every call takes the wall time in seconds,
// so tests drive it with a fake clock. AppContext calls advance() each frame
// and puts the cursor where it says.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

namespace dt::app {

// What the time controls show (ViewInputs::playback).
struct PlaybackState {
    bool playing = false;
    double speed = 1.0;          // run seconds per wall second
    bool instant_replay = false; // playing the last seconds of a live run, then back to live
    bool to_live = false;        // the views return to live at the end
    int64_t from_ns = 0;         // where this playback started (Session clock)
    int64_t end_ns = 0;          // where it stops (follows now while `follow_now`)
    bool follow_now = false;
};

class Playback {
  public:
    // The speeds the controls offer.
    static constexpr std::array<double, 4> kSpeeds = {0.25, 0.5, 1.0, 2.0};
    // "1/4x", "1/2x", "1x", "2x" (else "%.2gx").
    [[nodiscard]] static const char* speedLabel(double speed);

    // Start at from_ns. end_ns: where it stops; follow_now: the end is the run's
    // newest time, passed to each advance(); to_live: clear the cursor at the end.
    void start(int64_t from_ns, int64_t end_ns, double speed, double wall_s, bool follow_now, bool to_live,
               bool instant_replay = false);
    void stop() { m_state.playing = false; }
    // A new speed from the current position (the cursor does not jump).
    void setSpeed(double speed, double wall_s);
    // Go on from `cursor_ns` (the user moved the cursor while it played).
    void seek(int64_t cursor_ns, double wall_s);

    struct Tick {
        std::optional<int64_t> cursor; // where the cursor is now; nullopt = back to live
        bool ended = false;            // this tick reached the end (playing() is false now)
    };
    // The cursor at wall_s. newest_ns: the run's newest time (live: now; replay: its end).
    [[nodiscard]] Tick advance(double wall_s, int64_t newest_ns);

    [[nodiscard]] bool playing() const { return m_state.playing; }
    [[nodiscard]] const PlaybackState& state() const { return m_state; }
    [[nodiscard]] double startedWallS() const { return m_started_wall_s; } // of start(), for the report line

  private:
    [[nodiscard]] int64_t positionAt(double wall_s) const;

    PlaybackState m_state;
    int64_t m_base_ns = 0; // the cursor at m_base_wall_s
    double m_base_wall_s = 0.0;
    double m_started_wall_s = 0.0;
};

} // namespace dt::app
