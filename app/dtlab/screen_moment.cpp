// screen_moment.cpp: a ScreenMoment as print_state's lines and as the screen
// document the narration's claims read (screen_moment.hpp).
#include "screen_moment.hpp"

#include "widgets/format.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace dt::app {

namespace {

using Json = nlohmann::json;

std::string phaseText(const char* name, double ms, double since_ms) {
    char text[96];
    if (ms >= 0)
        std::snprintf(text, sizeof(text), "%s +%.0f ms", name, ms);
    else
        std::snprintf(text, sizeof(text), "%s pending (%.1f s)", name, since_ms / 1000.0);
    return text;
}

std::string topologyLine(const ScreenMoment& m) {
    std::string line;
    for (const RankProgress& p : m.ranks)
        line += (line.empty() ? "" : ", ") + std::string("rank ") + std::to_string(p.rank) + " " +
                std::string(rankStateLabel(p.state)) + " step " + std::to_string(p.step);
    return line.empty() ? "no ranks" : line;
}

std::string quorumLine(const QuorumViewState& q) {
    std::string members, badges;
    for (const ReplicaRow& row : q.rows) {
        if (row.in_quorum)
            members += (members.empty() ? "" : " ") + std::to_string(row.group);
        badges += (badges.empty() ? "" : " ") + std::string(replicaHealthLabel(row.health));
    }
    return "id " + std::to_string(q.quorum_id) + " members [" + members + "] badges " + badges +
           " decision quorum " + std::to_string(q.reason_quorum_id) + " \"" + q.reason + "\"";
}

std::string stopwatchLine(const ScreenMoment& m) {
    if (!m.recovery)
        return "no fault yet";
    const Recovery& r = *m.recovery;
    std::string line = r.fault + (r.replica >= 0 ? " replica " + std::to_string(r.replica) : "") + ": ";
    if (r.replica >= 0)
        line += phaseText("detected", r.detected_ms, m.since_ms) + ", ";
    line += phaseText("new quorum", r.new_quorum_ms, m.since_ms) + ", ";
    line += phaseText("survivors commit", r.survivors_commit_ms, m.since_ms) + ", ";
    line += phaseText("restarted", r.restarted_ms, m.since_ms) + ", ";
    line += phaseText("healed", r.heal_ms, m.since_ms) + ", ";
    line += phaseText("rejoined", r.rejoined_ms, m.since_ms);
    if (m.held_ns > 0) {
        char held[64];
        if (m.held_ns < 1'000'000'000)
            std::snprintf(held, sizeof(held), " (held %.0f ms, not counted)", double(m.held_ns) / 1e6);
        else
            std::snprintf(held, sizeof(held), " (held %.1f s, not counted)", double(m.held_ns) / 1e9);
        line += held;
    }
    return line;
}

std::string memoryLine(const ScreenMoment& m) {
    std::string line;
    bool measured = false;
    for (size_t r = 0; r < m.memory.size(); ++r) {
        const MemoryBars& bars = m.memory[r];
        measured = measured || bars.measured;
        line += (line.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + " " +
                (bars.any ? formatBytes(double(MemoryBars::total(bars.now))) : std::string("no report"));
    }
    return line + (measured ? " (measured)" : " (bookkeeping)");
}

std::string contentLine(const ScreenMoment& m) {
    char size[64];
    std::snprintf(size, sizeof(size), " at %.0fx%.0f, %.0f px text", m.width, m.height, m.font_px);
    if (!m.content)
        return m.main_view + " says nothing of its content" + size;
    return m.main_view + " shows " + std::to_string(m.content->shown) + " of " +
           std::to_string(m.content->total) + " " + m.content->what + size;
}

Json ranksJson(const ScreenMoment& m) {
    Json ranks = Json::array();
    for (const RankProgress& p : m.ranks)
        ranks.push_back({{"rank", p.rank},
                         {"step", p.step},
                         {"running", p.state == RankState::Running},
                         {"paused", p.state == RankState::Paused},
                         {"dead", p.state == RankState::Killed || p.state == RankState::Failed},
                         {"killed", p.state == RankState::Killed},
                         {"failed", p.state == RankState::Failed},
                         {"restarting", p.state == RankState::Restarting},
                         {"healing", p.state == RankState::Healing},
                         {"hung", p.state == RankState::Hung},
                         {"finished", p.state == RankState::Finished},
                         {"incarnation", p.incarnation}});
    return ranks;
}

Json memoryJson(const ScreenMoment& m) {
    Json memory = Json::array();
    for (size_t r = 0; r < m.memory.size(); ++r) {
        const MemoryBars& b = m.memory[r]; // kMemoryCategories' order
        memory.push_back({{"rank", int(r)},
                          {"reported", b.any},
                          {"measured", b.measured},
                          {"total", MemoryBars::total(b.now)},
                          {"parameters", b.now[0]},
                          {"gradients", b.now[1]},
                          {"optimizer_state", b.now[2]},
                          {"activations", b.now[3]},
                          {"comm_buffers", b.now[4]}});
    }
    return memory;
}

Json quorumJson(const ScreenMoment& m, Json& replicas) {
    const QuorumViewState& q = m.quorum;
    Json members = Json::array();
    replicas = Json::array();
    for (const ReplicaRow& row : q.rows) {
        if (row.in_quorum && std::find(members.begin(), members.end(), row.group) == members.end())
            members.push_back(row.group);
        replicas.push_back({{"group", row.group},
                            {"healthy", row.health == ReplicaHealth::Healthy},
                            {"restarting", row.health == ReplicaHealth::Restarting},
                            {"dead", row.health == ReplicaHealth::Dead},
                            {"healing", row.health == ReplicaHealth::Healing},
                            {"in_quorum", row.in_quorum},
                            {"committed", row.committed},
                            {"aborted", row.aborted},
                            {"incarnation", row.incarnation}});
    }
    std::sort(members.begin(), members.end());
    return {{"fault_tolerant", m.fault_tolerant && q.fault_tolerant},
            {"id", q.quorum_id},
            {"members", members},
            {"decision_quorum", q.reason_quorum_id},
            {"lighthouse_down", q.lighthouse_down},
            {"quorums", q.quorums}};
}

Json stopwatchJson(const ScreenMoment& m) {
    const Recovery none;
    const Recovery& r = m.recovery ? *m.recovery : none;
    return {{"fault", m.recovery.has_value()},
            {"kind", r.fault},
            {"replica", m.recovery ? r.replica : -1},
            {"detected_ms", r.detected_ms},
            {"detected_by", r.detected_by},
            {"detected_by_lighthouse", r.detected_by.rfind("lighthouse", 0) == 0},
            {"new_quorum_ms", r.new_quorum_ms},
            {"survivors_commit_ms", r.survivors_commit_ms},
            {"restarted_ms", r.restarted_ms},
            {"heal_ms", r.heal_ms},
            {"heal_bytes", r.heal_bytes},
            {"heal_source", r.heal_source},
            {"rejoined_ms", r.rejoined_ms},
            {"since_ms", m.recovery ? m.since_ms : -1.0},
            {"held_ms", double(m.held_ns) / 1e6}};
}

} // namespace

std::vector<std::pair<std::string, std::string>> screenMomentLines(const ScreenMoment& m) {
    std::vector<std::pair<std::string, std::string>> lines;
    lines.emplace_back("toolbar", m.toolbar);
    if (!m.has_run)
        return lines;
    lines.emplace_back("topology", topologyLine(m));
    if (m.fault_tolerant && m.quorum.fault_tolerant) {
        lines.emplace_back("quorum", quorumLine(m.quorum));
        lines.emplace_back("stopwatch", stopwatchLine(m));
    }
    lines.emplace_back("memory", memoryLine(m));
    if (!m.main_view.empty())
        lines.emplace_back("content", contentLine(m));
    return lines;
}

std::string screenMomentJson(const ScreenMoment& m) {
    int step = -1;
    for (const RankProgress& p : m.ranks)
        step = std::max(step, p.step);
    Json replicas;
    Json doc = {{"run", {{"live", m.live}, {"held", m.held}, {"finished", m.finished}, {"step", step}}},
                {"narration", {{"step", m.narration_step}}},
                {"ranks", ranksJson(m)},
                {"memory", memoryJson(m)}};
    doc["quorum"] = quorumJson(m, replicas);
    doc["replicas"] = replicas;
    doc["stopwatch"] = stopwatchJson(m);
    doc["content"] = {{"view", m.main_view},
                      {"shown", m.content ? m.content->shown : 0},
                      {"total", m.content ? m.content->total : 0}};
    return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

} // namespace dt::app
