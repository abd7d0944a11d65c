// playback.cpp: the time cursor played over wall time (see playback.hpp).
#include "playback.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dt::app {

const char* Playback::speedLabel(double speed) {
    if (std::fabs(speed - 0.25) < 1e-9)
        return "1/4x";
    if (std::fabs(speed - 0.5) < 1e-9)
        return "1/2x";
    if (std::fabs(speed - 1.0) < 1e-9)
        return "1x";
    if (std::fabs(speed - 2.0) < 1e-9)
        return "2x";
    static thread_local char label[16];
    std::snprintf(label, sizeof(label), "%.2gx", speed);
    return label;
}

void Playback::start(int64_t from_ns, int64_t end_ns, double speed, double wall_s, bool follow_now,
                     bool to_live, bool instant_replay) {
    m_state.playing = true;
    m_state.speed = speed > 0.0 ? speed : 1.0;
    m_state.from_ns = from_ns;
    m_state.end_ns = std::max(end_ns, from_ns);
    m_state.follow_now = follow_now;
    m_state.to_live = to_live;
    m_state.instant_replay = instant_replay;
    m_base_ns = from_ns;
    m_base_wall_s = wall_s;
    m_started_wall_s = wall_s;
}

int64_t Playback::positionAt(double wall_s) const {
    const double run_s = std::max(0.0, wall_s - m_base_wall_s) * m_state.speed;
    return m_base_ns + int64_t(std::llround(run_s * 1e9));
}

void Playback::setSpeed(double speed, double wall_s) {
    if (speed <= 0.0)
        return;
    if (m_state.playing) {
        m_base_ns = positionAt(wall_s);
        m_base_wall_s = wall_s;
    }
    m_state.speed = speed;
}

void Playback::seek(int64_t cursor_ns, double wall_s) {
    m_base_ns = cursor_ns;
    m_base_wall_s = wall_s;
}

Playback::Tick Playback::advance(double wall_s, int64_t newest_ns) {
    Tick tick;
    if (!m_state.playing)
        return tick;
    if (m_state.follow_now)
        m_state.end_ns = std::max(m_state.end_ns, newest_ns);
    const int64_t at = positionAt(wall_s);
    if (at < m_state.end_ns) {
        tick.cursor = at;
        return tick;
    }
    m_state.playing = false;
    tick.ended = true;
    if (!m_state.to_live)
        tick.cursor = m_state.end_ns; // stays at the end
    return tick;
}

} // namespace dt::app
