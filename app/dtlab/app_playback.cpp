// app_playback.cpp: the time cursor over time. Play / pause / speed, instant
// replay and back to live (the time controls, Esc and the script), the
// per-frame advance of the playback, the run's state at the views' moment
// (runStateAt, handed to every view as ViewInputs::state), and what says on
// screen that the views show the cursor: the controls and badge in the menu
// bar, and a frame around the window in the cursor's colour.
#include "app.hpp"

#include "wall_clock.hpp"
#include "widgets/palette.hpp"

#include <algorithm>
#include <cstdio>

namespace dt::app {

void AppContext::play(double speed) {
    if (!hasRun() || m_model.empty())
        return say("cannot play: no run");
    const int64_t end = nowNs();
    int64_t from = m_cursor_ns.value_or(m_model.tBegin());
    if (from >= end || from < m_model.tBegin()) // at the end: from the start again
        from = m_model.tBegin();
    m_playback.start(from, end, speed, wallSeconds(), /*follow_now=*/live(), /*to_live=*/live());
    m_cursor_ns = from;
    m_played_cursor = from;
    m_time_controls.speed = speed;
    char line[128];
    std::snprintf(line, sizeof(line), "playing from +%.3f s at %s%s", double(from - m_model.tBegin()) / 1e9,
                  Playback::speedLabel(speed), live() ? " (back to live when it reaches now)" : "");
    say(line);
}

void AppContext::pausePlayback() {
    if (!m_playback.playing())
        return;
    m_playback.stop();
    char line[96];
    std::snprintf(line, sizeof(line), "playback paused at +%.3f s",
                  m_cursor_ns ? double(*m_cursor_ns - m_model.tBegin()) / 1e9 : 0.0);
    say(line);
}

void AppContext::setPlaybackSpeed(double speed) {
    m_playback.setSpeed(speed, wallSeconds());
    m_time_controls.speed = speed;
    say(std::string("playback speed ") + Playback::speedLabel(speed));
}

void AppContext::replayLast(double seconds, double speed) {
    if (!hasRun() || m_model.empty())
        return say("cannot replay: no run");
    const int64_t end = nowNs();
    const int64_t from = std::max(m_model.tBegin(), end - int64_t(seconds * 1e9));
    // The window is fixed when asked; the views return to live (or the end) after it.
    m_playback.start(from, end, speed, wallSeconds(), /*follow_now=*/false, /*to_live=*/true,
                     /*instant_replay=*/true);
    m_cursor_ns = from;
    m_played_cursor = from;
    m_time_controls.replay_seconds = seconds;
    m_time_controls.replay_speed = speed;
    char line[128];
    std::snprintf(line, sizeof(line), "instant replay: the last %.1f s at %s, then back to %s",
                  double(end - from) / 1e9, Playback::speedLabel(speed), live() ? "live" : "the end");
    say(line);
}

void AppContext::cursorLive() {
    const bool had = m_cursor_ns.has_value() || m_playback.playing();
    m_playback.stop();
    m_cursor_ns.reset();
    m_played_cursor.reset();
    if (had)
        say(live() ? "cursor off: back to live" : "cursor off: the end of the run");
}

void AppContext::updatePlayback() {
    if (!m_playback.playing())
        return;
    const double wall = wallSeconds();
    if (!m_cursor_ns) { // cleared from a view (the FSDP flow's Now / End)
        m_playback.stop();
        m_played_cursor.reset();
        return say("playback stopped: the cursor was cleared");
    }
    if (*m_cursor_ns != m_played_cursor) // moved by hand (a click in the timeline): go on from there
        m_playback.seek(*m_cursor_ns, wall);
    const Playback::Tick tick = m_playback.advance(wall, nowNs());
    m_cursor_ns = tick.cursor;
    m_played_cursor = tick.cursor;
    if (!tick.ended)
        return;
    const PlaybackState& pb = m_playback.state();
    char line[200];
    std::snprintf(line, sizeof(line), "%s: %.2f s of run time in %.2f s of wall time at %s%s",
                  pb.instant_replay ? "instant replay done" : "playback ended",
                  double(pb.end_ns - pb.from_ns) / 1e9, wall - m_playback.startedWallS(),
                  Playback::speedLabel(pb.speed),
                  pb.to_live ? (live() ? "; back to live" : "; back to the end") : "");
    say(line);
}

// The run at the views' moment: the cursor, else now (live) or the end (replay).
void AppContext::updateStateAt() {
    if (!hasRun()) {
        m_state_at = RunStateAt{};
        return;
    }
    m_state_at = runStateAt(m_model, m_cursor_ns.value_or(std::max(m_model.tEnd(), nowNs())));
    m_state_at.withHostsFrom(m_facts.ranks);
}

// In the menu bar, after the menus: Play, speed, instant replay, the cursor badge and Live.
void AppContext::drawTimeBar() {
    if (!hasRun())
        return;
    ImGui::SameLine(0.0f, ImGui::GetFontSize() * 1.5f);
    ImGui::PushStyleVar(ImGuiStyleVar_FramePadding,
                        ImVec2(ImGui::GetStyle().FramePadding.x, 0.0f)); // as tall as the menu bar
    drawTimeControls(viewInputs(), m_time_controls);
    ImGui::PopStyleVar();
}

// A frame around the whole window in the cursor's colour while the views show the cursor.
void AppContext::drawCursorFrame() {
    if (!m_cursor_ns || !hasRun())
        return;
    const ImVec2 d = ImGui::GetIO().DisplaySize;
    ImDrawList* draw = ImGui::GetForegroundDrawList();
    draw->AddRect(ImVec2(1.5f, 1.5f), ImVec2(d.x - 1.5f, d.y - 1.5f), palette::kCursor, 0.0f, 0, 3.0f);
}

} // namespace dt::app
