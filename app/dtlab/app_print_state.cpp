// app_print_state.cpp: the script's print_state: what each view shows of the
// run at the views' moment (the cursor, else now), one line per view, read
// from the same inputs and the same last-drawn state the views drew from, so
// tests and people can compare the views in text:
//   dtlab: state: toolbar: paused (held at narration step 2)
//   dtlab: state: topology: rank 0 paused step 14, rank 1 restarting step 14, ...
//   dtlab: state: quorum: id 1 members [0 2] badges healthy restarting healthy decision quorum 1 "..."
//   dtlab: state: stopwatch: kill replica 1: detected +1 ms, new quorum pending (0.0 s), ...
//   dtlab: state: memory: rank 0 1.2 MB, rank 1 1.2 MB (measured)
//   dtlab: state: content: pipeline shows 2 of 2 measured stage rows at 1600x900, 28 px text
// The quorum and stopwatch lines come from the Quorum view's own pure
// functions at the view's moment (quorumViewState, latestRecovery).
#include "app.hpp"

#include "views/view_memory.hpp"
#include "views/view_quorum.hpp"
#include "widgets/format.hpp"

#include <cstdio>

namespace dt::app {

namespace {

void printLine(const std::string& view, const std::string& text) {
    std::printf("dtlab: state: %s: %s\n", view.c_str(), text.c_str());
}

std::string toolbarLine(const RunFacts& facts, bool held_by_narration, int narration_index) {
    if (facts.replay)
        return "replay";
    if (facts.finished)
        return "finished";
    if (!facts.live)
        return "no run";
    const RunControl& c = facts.control;
    std::string line = c.mode == RunMode::Paused  ? "paused"
                       : c.mode == RunMode::Paced ? "paced " + std::to_string(c.pace_steps_per_s) + " step/s"
                                                  : "running";
    if (held_by_narration)
        line += " (held at narration step " + std::to_string(narration_index + 1) + ")";
    return line;
}

std::string phaseText(const char* name, double ms, double since_ms) {
    char text[96];
    if (ms >= 0)
        std::snprintf(text, sizeof(text), "%s +%.0f ms", name, ms);
    else
        std::snprintf(text, sizeof(text), "%s pending (%.1f s)", name, since_ms / 1000.0);
    return text;
}

std::string stopwatchLine(const RunModel& model, const std::optional<Recovery>& r, int64_t t_ns) {
    if (!r)
        return "no fault yet";
    const int64_t held_ns = heldNsBetween(model.ftEvents(), r->fault_ns, t_ns); // run time, as the view
    const double since_ms = double(std::max<int64_t>(0, t_ns - r->fault_ns - held_ns)) / 1e6;
    std::string line = r->fault + (r->replica >= 0 ? " replica " + std::to_string(r->replica) : "") + ": ";
    if (r->replica >= 0)
        line += phaseText("detected", r->detected_ms, since_ms) + ", ";
    line += phaseText("new quorum", r->new_quorum_ms, since_ms) + ", ";
    line += phaseText("survivors commit", r->survivors_commit_ms, since_ms) + ", ";
    line += phaseText("restarted", r->restarted_ms, since_ms) + ", ";
    line += phaseText("healed", r->heal_ms, since_ms) + ", ";
    line += phaseText("rejoined", r->rejoined_ms, since_ms);
    if (held_ns > 0) {
        char held[64];
        if (held_ns < 1'000'000'000)
            std::snprintf(held, sizeof(held), " (held %.0f ms, not counted)", double(held_ns) / 1e6);
        else
            std::snprintf(held, sizeof(held), " (held %.1f s, not counted)", double(held_ns) / 1e9);
        line += held;
    }
    return line;
}

} // namespace

void AppContext::printState() {
    const ViewInputs in = viewInputs();
    printLine("toolbar", toolbarLine(m_facts, narrationHeld(), m_narration_index));
    if (!in.model) {
        std::fflush(stdout);
        return;
    }
    std::string topology;
    if (in.ranks)
        for (const RankProgress& p : *in.ranks)
            topology += (topology.empty() ? "" : ", ") + std::string("rank ") + std::to_string(p.rank) + " " +
                        std::string(rankStateLabel(p.state)) + " step " + std::to_string(p.step);
    printLine("topology", topology.empty() ? "no ranks" : topology);
    if (m_scenario.fault_tolerance.enabled) {
        // As the Quorum view computes it (the same pure functions), at the same moment.
        const bool has_cursor = m_cursor_ns.has_value();
        const int64_t t = quorumViewTime(in);
        const QuorumViewState q =
            quorumViewState(m_model, in.ranks, has_cursor ? std::nullopt : in.lighthouse, t);
        std::string members, badges;
        for (const ReplicaRow& row : q.rows) {
            if (row.in_quorum)
                members += (members.empty() ? "" : " ") + std::to_string(row.group);
            badges += (badges.empty() ? "" : " ") + std::string(replicaHealthLabel(row.health));
        }
        if (q.fault_tolerant) {
            printLine("quorum", "id " + std::to_string(q.quorum_id) + " members [" + members + "] badges " +
                                    badges + " decision quorum " + std::to_string(q.reason_quorum_id) +
                                    " \"" + q.reason + "\"");
            printLine("stopwatch",
                      stopwatchLine(m_model, latestRecovery(m_model, has_cursor ? t : INT64_MAX), t));
        }
    }
    std::string memory;
    bool measured = false;
    for (int r = 0; r < m_model.world(); ++r) {
        const MemoryBars bars = memoryBars(in, r);
        measured = measured || bars.measured;
        memory += (memory.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + " " +
                  (bars.any ? formatBytes(double(MemoryBars::total(bars.now))) : std::string("no report"));
    }
    printLine("memory", memory + (measured ? " (measured)" : " (bookkeeping)"));
    printMainContent();
    std::fflush(stdout);
}

// The family's main view: how much of its core content its last draw showed
// without scrolling (View::shownContent), at the window and text size of now.
void AppContext::printMainContent() {
    const std::string main = mainViewOf(m_scenario, m_layouts);
    for (const auto& view : m_views) {
        if (view->id() != main)
            continue;
        const std::optional<ShownContent> shown = view->open ? view->shownContent() : std::nullopt;
        char size[64];
        std::snprintf(size, sizeof(size), " at %.0fx%.0f, %.0f px text", ImGui::GetIO().DisplaySize.x,
                      ImGui::GetIO().DisplaySize.y, m_fonts.pixels());
        printLine("content", !shown ? main + " says nothing of its content" + size
                                    : main + " shows " + std::to_string(shown->shown) + " of " +
                                          std::to_string(shown->total) + " " + shown->what + size);
    }
}

} // namespace dt::app
