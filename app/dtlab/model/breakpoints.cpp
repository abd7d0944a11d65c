// breakpoints.cpp: see breakpoints.hpp.
#include "model/breakpoints.hpp"

#include "model/event_meaning.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dt::app {

const std::vector<BreakpointKindInfo>& breakpointKinds() {
    static const std::vector<BreakpointKindInfo> kinds = {
#define DT_BREAKPOINT_KIND(name, id, label, has_arg) {BreakpointKind::name, id, label, has_arg},
#include "model/breakpoint_kinds.def"
#undef DT_BREAKPOINT_KIND
    };
    return kinds;
}

const BreakpointKindInfo& breakpointKindInfo(BreakpointKind kind) {
    return breakpointKinds()[size_t(kind)];
}

bool parseBreakpointKind(const std::string& id, BreakpointKind& out) {
    for (const BreakpointKindInfo& k : breakpointKinds())
        if (id == k.id) {
            out = k.kind;
            return true;
        }
    return false;
}

std::string Breakpoint::describe() const {
    const BreakpointKindInfo& info = breakpointKindInfo(kind);
    if (!info.has_arg)
        return info.label;
    char text[128];
    std::snprintf(text, sizeof(text), info.label, arg);
    return text;
}

void BreakpointList::add(const Breakpoint& b) {
    remove(b.kind);
    m_list.push_back(b);
}

bool BreakpointList::remove(BreakpointKind kind) {
    const auto it =
        std::remove_if(m_list.begin(), m_list.end(), [&](const Breakpoint& b) { return b.kind == kind; });
    const bool found = it != m_list.end();
    m_list.erase(it, m_list.end());
    return found;
}

void BreakpointList::resetRun() {
    m_last_quorum_id = -1.0;
    m_started.clear();
    m_hung_seen.clear();
}

std::optional<BreakpointHit> BreakpointList::checkHung(const std::vector<HungCollective>& hung) {
    std::optional<BreakpointHit> hit;
    for (const HungCollective& h : hung) {
        const bool fresh = m_hung_seen.insert({int(h.group), int(h.kind), h.sender, h.peer, h.seq})
                               .second; // seen even unarmed
        if (!fresh || hit)
            continue;
        for (const Breakpoint& b : m_list)
            if (b.kind == BreakpointKind::CollectiveHangs)
                hit = BreakpointHit{b, h.diagnosis};
    }
    return hit;
}

std::optional<BreakpointHit> BreakpointList::check(const Event& e) {
    // What the event is, whatever is armed (the quorum id and start times are
    // tracked even before a breakpoint is added).
    const std::string rank = "rank " + std::to_string(e.rank);
    std::optional<std::pair<BreakpointKind, std::string>> seen;
    double collective_ms = -1.0;
    const bool comm = eventKindCategory(e.kind) == EventCategory::Comm;
    if (comm && e.phase == EventPhase::WorkStarted)
        m_started[{e.rank, int(e.group), e.seq}] = e.t_ns;
    if (comm && (e.phase == EventPhase::WorkCompleted || e.phase == EventPhase::WorkFailed)) {
        const auto it = m_started.find({e.rank, int(e.group), e.seq});
        if (it != m_started.end()) {
            collective_ms = double(e.t_ns - it->second) / 1e6;
            m_started.erase(it);
        }
    }
    std::vector<BreakpointHit> hits;
    for (const Breakpoint& b : m_list) {
        std::string what;
        switch (b.kind) {
        case BreakpointKind::RankDies:
            if (isRankDeath(e))
                what = rank + (e.value < 0 ? " died of signal " + std::to_string(int(-e.value))
                                           : " exited with code " + std::to_string(int(e.value)));
            break;
        case BreakpointKind::RankHangs:
            if (isRankHang(e))
                what = rank + " was frozen (SIGSTOP)";
            break;
        case BreakpointKind::QuorumChanges:
            if (e.kind == EventKind::QuorumFormed && m_last_quorum_id >= 0 && e.value != m_last_quorum_id)
                what = "quorum " + std::to_string(int64_t(e.value)) + " formed (was " +
                       std::to_string(int64_t(m_last_quorum_id)) + ")";
            break;
        case BreakpointKind::CollectiveFails:
            if (comm && e.phase == EventPhase::WorkFailed)
                what = rank + "'s " + std::string(eventKindLabel(e.kind)) + " #" + std::to_string(e.seq) +
                       " failed";
            break;
        case BreakpointKind::CollectiveHangs:
            break; // time passing, not an event: checkHung
        case BreakpointKind::CollectiveSlower:
            if (e.phase == EventPhase::WorkCompleted && collective_ms > b.arg) {
                char text[160];
                std::snprintf(text, sizeof(text), "%s's %s #%llu took %.0f ms", rank.c_str(),
                              std::string(eventKindLabel(e.kind)).c_str(),
                              static_cast<unsigned long long>(e.seq), collective_ms);
                what = text;
            }
            break;
        case BreakpointKind::Heal:
            if (isHealReceived(e))
                what = rank + " healed from replica " + std::to_string(e.peer);
            break;
        case BreakpointKind::Step:
            if (e.kind == EventKind::Step && e.phase == EventPhase::Span && e.step + 1 == int64_t(b.arg))
                what = rank + " completed step " + std::to_string(e.step + 1);
            break;
        case BreakpointKind::LossNaN:
            if (e.kind == EventKind::LossValue && std::isnan(e.value))
                what = rank + "'s loss is NaN at step " + std::to_string(e.step);
            break;
        }
        if (!what.empty())
            hits.push_back({b, what});
    }
    if (e.kind == EventKind::QuorumFormed)
        m_last_quorum_id = e.value;
    if (hits.empty())
        return std::nullopt;
    return hits.front();
}

} // namespace dt::app
