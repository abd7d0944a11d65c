// app_actions.cpp: the actions of the views' buttons, the shortcuts and the
// script: faults on a rank, fault tolerance, the modelled link, step gates,
// selection and the time cursor. Each one prints what it did ("dtlab: killed
// rank 1"); without a live run it says why it did nothing.
#include "app.hpp"

#include <cmath>
#include <cstdio>

namespace dt::app {

void AppContext::killRank(int rank) {
    if (!m_session || !rankValid(rank))
        return say("cannot kill rank " + std::to_string(rank) + ": no such live rank");
    m_session->killRank(rank);
    say("killed rank " + std::to_string(rank) + " (SIGKILL)");
}

void AppContext::hangRank(int rank) {
    if (!m_session || !rankValid(rank))
        return say("cannot hang rank " + std::to_string(rank) + ": no such live rank");
    m_session->hangRank(rank);
    say("hung rank " + std::to_string(rank) + " (SIGSTOP)");
}

void AppContext::resumeRank(int rank) {
    if (!m_session || !rankValid(rank))
        return say("cannot resume rank " + std::to_string(rank) + ": no such live rank");
    m_session->resumeRank(rank);
    say("resumed rank " + std::to_string(rank) + " (SIGCONT)");
}

void AppContext::slowRank(int rank, double delay_ms) {
    if (!m_session || !rankValid(rank))
        return say("cannot slow rank " + std::to_string(rank) + ": no such live rank");
    m_session->slowRank(rank, delay_ms);
    char line[96];
    if (delay_ms > 0)
        std::snprintf(line, sizeof(line), "slowed rank %d by %.0f ms per step", rank, delay_ms);
    else
        std::snprintf(line, sizeof(line), "rank %d back to normal speed", rank);
    say(line);
}

void AppContext::restartRank(int rank) {
    if (m_session)
        m_session->restartRank(rank);
}

void AppContext::nanGradients(int rank) {
    if (m_session)
        m_session->nanGradients(rank);
}

void AppContext::failNextCollective(int rank) {
    if (m_session)
        m_session->failNextCollective(rank);
}

void AppContext::partitionRank(int rank, bool on) {
    if (m_session)
        m_session->partitionRank(rank, on);
}

void AppContext::setLighthouseRunning(bool running) {
    if (!m_session)
        return;
    if (running)
        m_session->startLighthouse();
    else
        m_session->killLighthouse();
}

bool AppContext::lighthouseDown() const {
    ft::LighthouseStatus status;
    return m_session && m_session->lighthouseStatus(status) && !status.running;
}

void AppContext::setLink(int rank, double bandwidth_mbit_s, double latency_ms) {
    if (!m_session || !live())
        return say("cannot set the link: no live run");
    if (rank >= 0 && !rankValid(rank))
        return say("cannot set the link of rank " + std::to_string(rank) + ": no such rank");
    m_session->setLink(rank, bandwidth_mbit_s, latency_ms);
    char line[128];
    const std::string who = rank < 0 ? "every rank" : "rank " + std::to_string(rank);
    if (bandwidth_mbit_s > 0)
        std::snprintf(line, sizeof(line), "link of %s: %.0f Mbit/s, %.0f ms latency", who.c_str(),
                      bandwidth_mbit_s, latency_ms);
    else
        std::snprintf(line, sizeof(line), "link of %s: uncapped, %.0f ms latency", who.c_str(), latency_ms);
    say(line);
}

void AppContext::pauseRun() {
    if (!m_session)
        return say("cannot pause: no live run");
    m_session->pause();
    say("paused: every rank stops at its next step boundary");
}

void AppContext::runFree() {
    if (!m_session)
        return say("cannot run: no live run");
    m_session->resume();
    m_kept_pace = 0.0;
    m_frozen_since_ns = 0; // released: the held picture's "now" ends here
    m_hold.active = false; // the presenter let the held moment go, and those still to come
    m_hold.end_released = true;
    m_hold.cancelled = true;
    m_session->disarmEventHold(kNarrationHoldSlot);
    m_hold.armed_index = -1;
    m_session->holdBefore(INT64_MAX);
    say("running freely");
}

void AppContext::stepOnce() {
    if (!m_session)
        return say("cannot step: no live run");
    m_session->stepOnce();
    m_frozen_since_ns = 0; // released: the held picture's "now" ends here
    m_hold.active = false;
    say("one more step");
}

void AppContext::setPace(double steps_per_s) {
    if (!m_session)
        return say("cannot pace: no live run");
    m_session->setPace(steps_per_s);
    m_frozen_since_ns = 0; // released: the held picture's "now" ends here
    m_hold.active = false;
    m_kept_pace = steps_per_s; // the next run opened starts at this pace too
    char line[64];
    if (steps_per_s > 0)
        std::snprintf(line, sizeof(line), "paced at %.1f step/s", steps_per_s);
    else
        std::snprintf(line, sizeof(line), "pace off: running freely");
    say(line);
}

void AppContext::selectRank(int rank) {
    m_selected_rank = rank;
    if (rank >= 0)
        say("selected rank " + std::to_string(rank));
}

void AppContext::setCursor(double seconds) {
    if (seconds < 0.0) {
        m_cursor_ns.reset();
        return say("cursor off");
    }
    m_cursor_ns = m_model.tBegin() + int64_t(std::llround(seconds * 1e9));
    char line[64];
    std::snprintf(line, sizeof(line), "cursor at +%.3f s", seconds);
    say(line);
}

} // namespace dt::app
