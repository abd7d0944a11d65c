// view_quorum.cpp: the quorum view (see view_quorum.hpp).
//
// [SECTION] State (pure): replicas, the latest quorum, the latest recovery
// [SECTION] Help, place and empty states
// [SECTION] Drawing: fault buttons, header, replica rows with their sequence strips, stopwatch
#include "views/view_quorum.hpp"

#include "dtlab/scenario.hpp"

#include "widgets/elide.hpp"
#include "widgets/format.hpp"
#include "widgets/help.hpp"
#include "widgets/palette.hpp"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dt::app {

// -----------------------------------------------------------------------------
// [SECTION] State (pure)
// -----------------------------------------------------------------------------

const char* replicaHealthLabel(ReplicaHealth health) {
    switch (health) {
    case ReplicaHealth::Healthy:
        return "healthy";
    case ReplicaHealth::Healing:
        return "healing";
    case ReplicaHealth::Hung:
        return "hung";
    case ReplicaHealth::Dead:
        return "dead";
    case ReplicaHealth::Restarting:
        return "restarting";
    case ReplicaHealth::Finished:
        return "finished";
    case ReplicaHealth::Starting:
        return "starting";
    case ReplicaHealth::Unreachable:
        return "unreachable";
    }
    return "?";
}

namespace {

ReplicaHealth healthOf(RankState state) {
    switch (state) {
    case RankState::Running:
    case RankState::Paused:
        return ReplicaHealth::Healthy;
    case RankState::Healing:
        return ReplicaHealth::Healing;
    case RankState::Hung:
        return ReplicaHealth::Hung;
    case RankState::Killed:
    case RankState::Failed:
        return ReplicaHealth::Dead;
    case RankState::Restarting:
        return ReplicaHealth::Restarting;
    case RankState::Finished:
        return ReplicaHealth::Finished;
    case RankState::Pending:
    case RankState::Starting:
        return ReplicaHealth::Starting;
    }
    return ReplicaHealth::Starting;
}

ImU32 healthColor(ReplicaHealth health) {
    switch (health) {
    case ReplicaHealth::Healthy:
        return IM_COL32(46, 160, 90, 255);
    case ReplicaHealth::Healing:
        return palette::kindColor(EventKind::Heal);
    case ReplicaHealth::Hung:
        return IM_COL32(230, 120, 30, 255);
    case ReplicaHealth::Dead:
        return palette::kFailed;
    case ReplicaHealth::Restarting:
        return palette::kindColor(EventKind::RankRestarted);
    case ReplicaHealth::Finished:
        return IM_COL32(70, 130, 200, 255);
    case ReplicaHealth::Starting:
        return IM_COL32(120, 130, 140, 255);
    case ReplicaHealth::Unreachable:
        return IM_COL32(200, 150, 20, 255);
    }
    return IM_COL32(128, 128, 128, 255);
}

// Every event the recovery measure reads, rebuilt from the model: the
// fault-tolerance instants, the failed collectives and the heal spans.
std::vector<Event> recoveryEvents(const RunModel& model) {
    std::vector<Event> events = model.ftEvents();
    for (int r = 0; r < model.world(); ++r) {
        const RankLane& lane = model.lane(r);
        for (const SpanRecord& s : lane.compute[1]) {
            if (s.kind != EventKind::Heal)
                continue;
            Event e;
            e.kind = EventKind::Heal;
            e.phase = EventPhase::Span;
            e.rank = r;
            e.t_ns = s.t0;
            e.dur_ns = s.t1 - s.t0;
            e.step = s.step;
            e.bytes = s.bytes;
            e.peer = s.peer;
            e.value = s.unit == 1 ? 1.0 : 0.0; // the engine puts receiving (0) / sending (1) in unit
            e.seq = s.seq;                     // the heal transport
            e.group_size = s.group_size;       // its chunks
            events.push_back(e);
        }
        for (const SpanRecord& s : lane.comm)
            if (s.failed) {
                Event e;
                e.kind = s.kind;
                e.phase = EventPhase::WorkFailed;
                e.rank = r;
                e.t_ns = s.t1 == SpanRecord::kOpen ? s.t0 : s.t1;
                events.push_back(e);
            }
    }
    return events;
}

} // namespace

QuorumViewState quorumViewState(const RunModel& model, const std::vector<RankProgress>* ranks,
                                const std::optional<ft::LighthouseStatus>& lighthouse, int64_t t_ns) {
    QuorumViewState st;
    st.fault_tolerant = model.scenario().fault_tolerance.enabled;
    const int world = model.world();
    const int G = ftGroupSize(model.scenario());
    st.group_size = G;
    st.group_is_pipeline = strategyTraits(model.scenario().strategy.kind).uses_stages;
    st.rows.resize(size_t(world));
    std::vector<int64_t> last_heartbeat(size_t(world), 0);
    for (int r = 0; r < world; ++r) {
        st.rows[size_t(r)].replica = r;
        st.rows[size_t(r)].group = r / G;
    }
    // Walk the fault-tolerance instants up to the moment.
    std::vector<bool> dead(size_t(world), false), hung(size_t(world), false), finished(size_t(world), false);
    for (const Event& e : model.ftEvents()) {
        if (e.t_ns > t_ns)
            break;
        const bool on_rank = e.rank >= 0 && e.rank < world;
        ReplicaRow* row = on_rank ? &st.rows[size_t(e.rank)] : nullptr;
        switch (e.kind) {
        case EventKind::QuorumFormed:
            if (e.rank < 0) {
                st.quorum_id = int64_t(e.value);
                st.members = e.seq;
                st.max_step = e.bytes;
                st.quorums += 1;
            }
            break;
        case EventKind::Commit:
            if (row)
                row->committed += 1;
            st.steps_committed = std::max<int64_t>(st.steps_committed, int64_t(e.step) + 1);
            break;
        case EventKind::Abort:
            if (row)
                row->aborted += 1;
            break;
        case EventKind::Heartbeat:
            if (on_rank)
                last_heartbeat[size_t(e.rank)] = e.t_ns;
            break;
        case EventKind::RankRestarted:
            if (row)
                row->incarnation = int(e.value);
            if (on_rank)
                dead[size_t(e.rank)] = false;
            break;
        case EventKind::ProcessExited:
            if (on_rank)
                dead[size_t(e.rank)] = e.value != 0;
            break;
        case EventKind::FaultInjected:
            if (on_rank && int(e.value) == 19)
                hung[size_t(e.rank)] = true; // SIGSTOP
            if (on_rank && int(e.value) == 18)
                hung[size_t(e.rank)] = false; // SIGCONT
            break;
        case EventKind::LighthouseDown:
            st.lighthouse_down = true;
            break;
        case EventKind::LighthouseUp:
            st.lighthouse_down = false;
            break;
        default:
            break;
        }
    }
    for (int r = 0; r < world; ++r) {
        ReplicaRow& row = st.rows[size_t(r)];
        row.in_quorum = row.group < 64 && (st.members >> row.group) & 1;
        // A group's rank 0 heartbeats for the group (it is the lighthouse's member).
        const int64_t heartbeat = last_heartbeat[size_t(row.group * G)];
        if (heartbeat > 0)
            row.heartbeat_age_ms = double(t_ns - heartbeat) / 1e6;
        if (ranks && size_t(r) < ranks->size()) {
            const RankProgress& p = (*ranks)[size_t(r)];
            row.health = healthOf(p.state);
            row.incarnation = std::max(row.incarnation, p.incarnation);
            row.partitioned = p.partitioned;
        } else {
            row.health = dead[size_t(r)]   ? ReplicaHealth::Dead
                         : hung[size_t(r)] ? ReplicaHealth::Hung
                                           : ReplicaHealth::Healthy;
        }
        (void)finished;
    }
    if (lighthouse) { // live: the lighthouse's own view
        st.reason = lighthouse->last_reason;
        st.reason_quorum_id = lighthouse->quorum_id;
        st.lighthouse_down = !lighthouse->running;
        for (const ft::MemberHealth& m : lighthouse->members)
            for (int r = m.member.replica * G; r >= 0 && r < world && r < (m.member.replica + 1) * G; ++r)
                st.rows[size_t(r)].heartbeat_age_ms = double(m.heartbeat_age_ms);
    } else { // replay: the reason from the lighthouse's logged decisions
        for (const LogRecord& log : model.logs()) {
            if (log.t_ns > t_ns)
                break;
            if (log.rank < 0 && log.text.rfind("lighthouse: quorum ", 0) == 0) { // "... quorum 5 = {..}: why"
                const size_t colon = log.text.find("}: ");
                st.reason = colon == std::string::npos ? log.text : log.text.substr(colon + 3);
                st.reason_quorum_id =
                    std::strtoll(log.text.c_str() + std::strlen("lighthouse: quorum "), nullptr, 10);
            }
        }
    }
    // A live replica the lighthouse does not hear is not healthy, whatever its process does.
    const double timeout_ms = model.scenario().fault_tolerance.heartbeat_timeout_ms;
    for (ReplicaRow& row : st.rows) {
        if (row.health == ReplicaHealth::Finished)
            row.heartbeat_age_ms =
                -1; // it left the lighthouse: an age since then would look like a lost replica
        const bool alive = row.health == ReplicaHealth::Healthy || row.health == ReplicaHealth::Healing;
        if (alive && (row.partitioned || row.heartbeat_age_ms > timeout_ms))
            row.health = ReplicaHealth::Unreachable;
    }
    markStaleDecision(st);
    return st;
}

// The lighthouse's last decision is a sentence about the moment it was made
// ("every member of quorum 1 is healthy"). When a replica it counted is not
// healthy now (killed since, restarting, hung), the line says so rather than
// contradict the replica's badge below it.
void markStaleDecision(QuorumViewState& st) {
    if (st.reason.find("healthy") == std::string::npos)
        return;
    std::string since;
    for (const ReplicaRow& row : st.rows) {
        const bool unwell = row.health != ReplicaHealth::Healthy && row.health != ReplicaHealth::Healing &&
                            row.health != ReplicaHealth::Finished && row.health != ReplicaHealth::Starting;
        if (unwell && row.in_quorum)
            since += (since.empty() ? "" : ", ") + std::string("replica ") + std::to_string(row.group) + " " +
                     replicaHealthLabel(row.health);
    }
    if (!since.empty())
        st.reason += " (when it was decided; since then: " + since + ")";
}

// -----------------------------------------------------------------------------
// [SECTION] Help, place and empty states
// -----------------------------------------------------------------------------

namespace {

// A fault-tolerant run: the scenarios this view belongs to.
bool isFaultTolerant(const Scenario& scenario) {
    return scenario.fault_tolerance.enabled;
}

} // namespace

QuorumView::QuorumView() : View("quorum", "Quorum") {
    open = false;
}

std::optional<bool> QuorumView::relevantTo(const Scenario& scenario) const {
    return isFaultTolerant(scenario);
}

LayoutPlace QuorumView::layoutPlace(const LayoutContext& context) const {
    LayoutPlace place;
    place.area = LayoutArea::LowerBand;
    place.height = std::round(preferredHeight(context.scenario.topology.ranks));
    return place;
}

const char* QuorumView::helpText() const {
    return "Quorum fault tolerance (TorchFT style), drawn from the real events.\n\n"
           "Each replica group (here one rank) asks the lighthouse for a quorum every step, while its "
           "forward "
           "and backward run. The lighthouse answers with the replicas that are healthy and asking: its "
           "reason "
           "is in the header. A new quorum id means a new cross-replica process group (reconfigure). A "
           "replica "
           "behind the others heals: a live peer sends it parameters, optimizer state and step. Then the "
           "replicas average their gradients (all-reduce) and commit the step only if everything worked "
           "and at least min_replicas replicas contributed a real gradient (green tick); otherwise they "
           "abort it (red cross) and nothing is applied. In quorum_mode \"async\" (the default, as in "
           "TorchFT) a healing replica contributes zeros, so it does not count that round; in \"sync\" it "
           "heals before it computes and counts.\n\n"
           "Rows: one per replica with its state, incarnation (restarts), steps committed / aborted, "
           "heartbeat "
           "age and quorum membership. The strip shows the last seconds (or those before the time cursor): "
           "orange = quorum request, purple = reconfigure, cyan = heal, green bar = all-reduce, vertical "
           "lines "
           "= the lighthouse's quorums.\n\n"
           "The stopwatch times the latest fault: detected, new quorum, the survivors' next commit, restart, "
           "heal and the first commit of the replica that came back. The heal line says how the state "
           "travelled ([fault_tolerance] heal_transport): over the process group (TorchFT's PGTransport) "
           "or fetched from the source's HTTP server in heal_chunks parallel pieces (TorchFT's "
           "HTTPTransport), and at what rate.\n\n"
           "Replica groups of several ranks (zero1, zero2 or fsdp with [topology] replicas): the rows are "
           "ranks, labelled with their group. A group is one failure domain (a killed rank takes its group "
           "down, and the group restarts whole); its rank 0 talks to the lighthouse and heartbeats for it; "
           "each rank averages and heals its own shard with the same rank of the other groups.\n\n"
           "Try: Kill a replica, NaN its gradients, partition it from the lighthouse, or stop the "
           "lighthouse.";
}

bool QuorumView::isEmpty(const ViewInputs& inputs) const {
    return !inputs.model || !isFaultTolerant(inputs.model->scenario());
}

void QuorumView::drawEmptyState(const ViewInputs& inputs) {
    m_comparison.clear();
    m_shown.reset();
    m_pane.reset();
    helpMarker(helpText());
    if (!inputs.model)
        emptyState(
            "No run open: start a scenario or open a recording",
            "With [fault_tolerance] enabled = true this view shows the lighthouse's quorums, each replica's "
            "heartbeats, heals and commits, and a stopwatch for every recovery. Try "
            "scenarios/ft_kill_replica.toml.");
    else
        emptyState(
            "This run is not fault tolerant: no quorum, no lighthouse",
            "Plain DDP stops when one rank dies. Add [fault_tolerance] enabled = true to a ddp scenario "
            "(or open scenarios/ft_kill_replica.toml) to see replicas form quorums, heal and go on.");
}

float QuorumView::preferredHeight(int replicas) {
    const float line = ImGui::GetFrameHeightWithSpacing();
    return line * float(4 + std::max(1, replicas)) + ImGui::GetTextLineHeightWithSpacing() * 4.0f +
           ImGui::GetStyle().WindowPadding.y * 2.0f;
}

// -----------------------------------------------------------------------------
// [SECTION] Drawing
// -----------------------------------------------------------------------------

// The fault buttons of a live fault-tolerant run, for the selected replica
// (rank 0 when none is selected), and the lighthouse's.
void QuorumView::drawFaultButtons(const ViewInputs& inputs) {
    if (!inputs.live || !inputs.ranks || inputs.ranks->empty())
        return;
    // The buttons act on the replicas now: their state now, also at a time cursor.
    const std::vector<RankProgress>& ranks =
        inputs.cursor() && inputs.facts && inputs.facts->ranks.size() == inputs.ranks->size()
            ? inputs.facts->ranks
            : *inputs.ranks;
    ViewActions& act = inputs.act();
    int r = inputs.selected_rank && *inputs.selected_rank >= 0 ? *inputs.selected_rank : 0;
    if (r >= int(ranks.size()))
        r = 0;
    const RankProgress& p = ranks[size_t(r)];
    const bool running = p.state == RankState::Running || p.state == RankState::Healing;
    const bool dead =
        p.state == RankState::Killed || p.state == RankState::Failed || p.state == RankState::Restarting;
    const char* not_running = "the replica is not running";
    ImGui::AlignTextToFramePadding();
    if (m_state.group_size > 1)
        ImGui::Text("rank %d (group %d):", r, r / m_state.group_size);
    else
        ImGui::Text("replica %d:", r);
    // Each button on this line if it fits, else the next (a narrow view at large text).
    const auto next = [](const char* label) {
        sameLineOrWrap(ImGui::CalcTextSize(label, nullptr, true).x + ImGui::GetStyle().FramePadding.x * 2.0f);
    };
    next("Kill##q");
    if (act.button("Kill##q", running, not_running))
        act.killRank(r);
    if (m_compact) { // a short pane: one line, the rarer faults in a menu
        next("Restart##q");
        if (act.button("Restart##q", dead, "only a dead replica can be restarted"))
            act.restartRank(r);
        next("More faults...");
        if (ImGui::Button("More faults..."))
            ImGui::OpenPopup("##more_faults");
        if (ImGui::BeginPopup("##more_faults")) {
            drawRareFaultButtons(inputs, r, running, p.partitioned);
            ImGui::EndPopup();
        }
        return;
    }
    drawRareFaultButtons(inputs, r, running, p.partitioned);
    next("Restart##q");
    if (act.button("Restart##q", dead, "only a dead replica can be restarted"))
        act.restartRank(r);
    const bool down = inputs.lighthouse && !inputs.lighthouse->running;
    next("Start lighthouse");
    if (act.button(down ? "Start lighthouse" : "Stop lighthouse", true))
        act.setLighthouseRunning(down);
}

// NaN gradients, Fail collective, Partition; in a short pane (a menu) the lighthouse's too.
void QuorumView::drawRareFaultButtons(const ViewInputs& inputs, int r, bool running, bool partitioned) {
    ViewActions& act = inputs.act();
    const char* not_running = "the replica is not running";
    const auto next = [](const char* label) {
        sameLineOrWrap(ImGui::CalcTextSize(label, nullptr, true).x + ImGui::GetStyle().FramePadding.x * 2.0f);
    };
    next("NaN gradients##q");
    if (act.button("NaN gradients##q", running, not_running))
        act.nanGradients(r);
    next("Fail collective##q");
    if (act.button("Fail collective##q", running, not_running))
        act.failNextCollective(r);
    next("End partition##q");
    if (act.button(partitioned ? "End partition##q" : "Partition##q", running || partitioned, not_running))
        act.partitionRank(r, !partitioned);
    if (!m_compact)
        return;
    const bool down = inputs.lighthouse && !inputs.lighthouse->running;
    if (act.button(down ? "Start lighthouse" : "Stop lighthouse", true))
        act.setLighthouseRunning(down);
}

std::optional<Recovery> latestRecovery(const RunModel& model, int64_t until) {
    std::vector<Event> events = recoveryEvents(model);
    events.erase(
        std::remove_if(events.begin(), events.end(),
                       [&](const Event& e) { return e.t_ns + std::max<int64_t>(e.dur_ns, 0) > until; }),
        events.end());
    const RecoveryMeasure measure = measureRecoveries(events, model.world(), ftGroupSize(model.scenario()));
    if (measure.recoveries.empty())
        return std::nullopt;
    return measure.recoveries.back();
}

// The moment the view shows: the cursor, else now (live) or the end.
int64_t quorumViewTime(const ViewInputs& inputs) {
    const bool has_cursor = inputs.cursor_ns && inputs.cursor_ns->has_value();
    return has_cursor ? **inputs.cursor_ns
                      : (inputs.live ? inputs.now_ns : std::max(inputs.model->tEnd(), inputs.now_ns));
}

void QuorumView::drawContent(const ViewInputs& inputs) {
    m_comparison.clear(); // drawComparison sets it again when it draws one
    m_compact = m_pane.begin();
    m_shown = ShownContent{"replica rows", 0, 0};
    drawFaultButtons(inputs);
    const RunModel& model = *inputs.model;
    const bool has_cursor = inputs.cursor_ns && inputs.cursor_ns->has_value();
    const int64_t t_end = quorumViewTime(inputs);
    m_state = quorumViewState(model, inputs.ranks, has_cursor ? std::nullopt : inputs.lighthouse, t_end);
    const int64_t until = has_cursor ? t_end : INT64_MAX; // at a cursor: what had happened by then
    if (model.generation() != m_recovery_generation || until != m_recovery_until) {
        m_recovery_generation = model.generation();
        m_recovery_until = until;
        m_recovery = latestRecovery(model, until);
        m_holds = jobHolds(model.ftEvents()); // the stopwatch's run time, per frame from these
    }
    m_state.recovery = m_recovery;
    drawHeader(inputs);
    // A short pane (a large font on a small screen, the view docked under
    // others): the stopwatch, the moment the room is watching, comes before
    // the replica rows, which then scroll below it.
    // Rows: one frame each, then the legend's line. Stopwatch: a separator,
    // its title, two lines of phases, the heal's line.
    const float line = ImGui::GetTextLineHeightWithSpacing();
    const float rows_h = float(m_state.rows.size()) * ImGui::GetFrameHeightWithSpacing() + line;
    const float stopwatch_h = ImGui::GetStyle().ItemSpacing.y * 2.0f +
                              line * (m_state.recovery && m_state.recovery->heal_bytes > 0 ? 4.0f : 3.0f);
    m_stopwatch_first = m_state.recovery && ImGui::GetContentRegionAvail().y < rows_h + stopwatch_h;
    if (m_stopwatch_first) {
        drawStopwatch(inputs, t_end);
        ImGui::Separator();
    }
    drawRows(inputs, t_end);
    if (!m_stopwatch_first)
        drawStopwatch(inputs, t_end);
    m_pane.end();
}

void QuorumView::drawHeader(const ViewInputs& inputs) {
    helpMarker(helpText());
    ImGui::SameLine();
    if (const std::optional<int64_t> cursor = inputs.cursor()) {
        // The lighthouse's live status is for now only: at a cursor, its logged decisions and events.
        ImGui::TextColored(ImColor(palette::kCursor),
                           "at the cursor %+.2f s:", double(*cursor - inputs.model->tBegin()) / 1e9);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("The rows show each replica as it was at the time cursor. The lighthouse's "
                              "header comes from its logged decisions and events up to the cursor, the "
                              "heartbeat ages from the logged heartbeats; its live status is only for now.");
        ImGui::SameLine();
    }
    if (m_state.lighthouse_down) {
        ImGui::TextColored(ImColor(palette::kFailed),
                           "LIGHTHOUSE DOWN: no replica can get a quorum; training waits");
        return;
    }
    if (m_state.quorum_id < 0) {
        ImGui::TextDisabled("Lighthouse: no quorum yet (replicas are starting)");
        return;
    }
    std::string members;
    for (int r = 0; r < 64; ++r)
        if ((m_state.members >> r) & 1)
            members += (members.empty() ? "" : ", ") + std::to_string(r);
    char line[256];
    std::snprintf(line, sizeof(line),
                  "Lighthouse: quorum %lld of replica%s {%s}, formed at step %lld, now at step %lld; %lld "
                  "quorums so far",
                  (long long)m_state.quorum_id, m_state.group_size > 1 ? " groups" : "s", members.c_str(),
                  (long long)m_state.max_step, (long long)std::max(m_state.max_step, m_state.steps_committed),
                  (long long)m_state.quorums);
    // A short pane: one line, in full on hover (textElided's tooltip); else wrapped.
    const bool shortened = m_compact ? textElided(line, ImGui::GetContentRegionAvail().x) : false;
    if (!m_compact)
        ImGui::TextWrapped("%s", line);
    if (!shortened && ImGui::IsItemHovered())
        ImGui::SetTooltip("formed at step: the highest step among its members when the lighthouse formed it. "
                          "The same quorum is handed out again every step (the fast path) until its members "
                          "change; now: the most steps a replica has committed.");
    if (!m_state.reason.empty()) {
        if (m_state.reason_quorum_id >= 0)
            ImGui::TextDisabled("decision (quorum %lld):", (long long)m_state.reason_quorum_id);
        else
            ImGui::TextDisabled("decision:");
        ImGui::SameLine();
        if (m_compact)
            textElided(m_state.reason, ImGui::GetContentRegionAvail().x);
        else
            ImGui::TextWrapped("%s", m_state.reason.c_str());
    }
}

namespace {

// One replica's fault-tolerance phases in [t0, t1], drawn in a strip.
void drawStrip(const RunModel& model, int replica, int64_t t0, int64_t t1, int64_t now, ImVec2 pos,
               ImVec2 size) {
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(pos, ImVec2(pos.x + size.x, pos.y + size.y), IM_COL32(128, 128, 128, 30));
    const double scale = double(size.x) / double(std::max<int64_t>(1, t1 - t0));
    const auto x = [&](int64_t t) { return pos.x + float(double(std::clamp(t, t0, t1) - t0) * scale); };
    const RankLane& lane = model.lane(replica);
    const float h = size.y;
    // A killed incarnation's collective never completes: it ends where the next one started.
    int64_t incarnation_start = 0;
    for (const Event& e : lane.instants)
        if (e.kind == EventKind::RankStarted && e.t_ns <= t1)
            incarnation_start = e.t_ns;
    // spans: quorum request (top third), reconfigure / heal (middle), all-reduce (bottom)
    const auto spans = [&](const std::vector<SpanRecord>& row, float y0, float y1, bool (*want)(EventKind)) {
        auto it = std::upper_bound(row.begin(), row.end(), t1,
                                   [](int64_t t, const SpanRecord& s) { return t < s.t0; });
        while (it != row.begin()) {
            --it;
            if (it->endOr(now) < t0 && it->t0 < t0 - 5'000'000'000LL)
                break;
            if (!want(it->kind) || it->endOr(now) < t0)
                continue;
            const bool orphan = it->open() && it->t0 < incarnation_start;
            const ImU32 color = it->failed || orphan ? palette::kFailed : palette::kindColor(it->kind);
            const int64_t end = orphan ? it->t0 : it->endOr(now);
            dl->AddRectFilled(ImVec2(x(it->t0), pos.y + y0 * h),
                              ImVec2(std::max(x(it->t0) + 2.0f, x(end)), pos.y + y1 * h), color);
        }
    };
    spans(lane.compute[2], 0.05f, 0.35f, [](EventKind k) { return k == EventKind::QuorumWait; });
    spans(lane.compute[1], 0.35f, 0.65f,
          [](EventKind k) { return k == EventKind::Reconfigure || k == EventKind::Heal; });
    spans(lane.comm, 0.65f, 0.95f, [](EventKind k) { return k == EventKind::AllReduce; });
    // instants
    for (const Event& e : model.ftEvents()) {
        if (e.t_ns < t0)
            continue;
        if (e.t_ns > t1)
            break;
        const float ex = x(e.t_ns);
        if (e.rank < 0 && e.kind == EventKind::QuorumFormed) {
            dl->AddLine(ImVec2(ex, pos.y), ImVec2(ex, pos.y + h), palette::kindColor(EventKind::QuorumFormed),
                        1.0f);
            continue;
        }
        if (e.rank != replica)
            continue;
        switch (e.kind) {
        case EventKind::Heartbeat:
            dl->AddLine(ImVec2(ex, pos.y), ImVec2(ex, pos.y + h * 0.12f), IM_COL32(160, 160, 160, 200));
            break;
        case EventKind::Commit:
            dl->AddRectFilled(ImVec2(ex - 1.5f, pos.y + h * 0.15f), ImVec2(ex + 1.5f, pos.y + h * 0.85f),
                              palette::kindColor(EventKind::Commit));
            break;
        case EventKind::Abort: {
            const float r = h * 0.3f, cy = pos.y + h * 0.5f;
            dl->AddLine(ImVec2(ex - r, cy - r), ImVec2(ex + r, cy + r), palette::kFailed, 2.0f);
            dl->AddLine(ImVec2(ex - r, cy + r), ImVec2(ex + r, cy - r), palette::kFailed, 2.0f);
            break;
        }
        case EventKind::FaultInjected:
        case EventKind::ReplicaLost:
        case EventKind::ProcessExited:
            dl->AddLine(ImVec2(ex, pos.y), ImVec2(ex, pos.y + h), palette::kFailed, 2.0f);
            break;
        case EventKind::RankRestarted:
            dl->AddLine(ImVec2(ex, pos.y), ImVec2(ex, pos.y + h),
                        palette::kindColor(EventKind::RankRestarted), 2.0f);
            break;
        default:
            break;
        }
    }
}

} // namespace

void QuorumView::drawRows(const ViewInputs& inputs, int64_t t_end) {
    const RunModel& model = *inputs.model;
    const int64_t window_ns = 3'000'000'000LL;
    const int64_t t0 = t_end - window_ns;
    const float label_w =
        ImGui::CalcTextSize(m_state.group_size > 1
                                ? "restarting*  group 0 rank 00 [Q]  x00  0000 ok / 000 abort  hb 00000 ms  "
                                : "restarting*  replica 00 [Q]  x00  0000 ok / 000 abort  hb 00000 ms  ")
            .x;
    for (const ReplicaRow& row : m_state.rows) {
        ImGui::PushID(row.replica);
        const ImU32 color = healthColor(row.health);
        const ImVec2 p = ImGui::GetCursorScreenPos();
        const float line_h = ImGui::GetFrameHeight();
        ImDrawList* dl = ImGui::GetWindowDrawList();
        char badge[32];
        std::snprintf(badge, sizeof(badge), "%s%s", replicaHealthLabel(row.health),
                      row.partitioned ? "*" : "");
        const ImVec2 badge_size(ImGui::GetFontSize() * 6.2f, line_h - 2.0f);
        dl->AddRectFilled(p, ImVec2(p.x + badge_size.x, p.y + badge_size.y), color, 3.0f);
        dl->AddText(ImVec2(p.x + 4.0f, p.y + (badge_size.y - ImGui::GetTextLineHeight()) * 0.5f),
                    IM_COL32(255, 255, 255, 255), badge);
        ImGui::Dummy(badge_size);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("%s%s", replicaHealthLabel(row.health),
                              row.partitioned ? ": partitioned, its heartbeats do not reach the lighthouse"
                              : row.health == ReplicaHealth::Unreachable
                                  ? ": alive, but its last heartbeat is older than heartbeat_timeout_ms"
                                  : "");
        ImGui::SameLine();
        ImGui::AlignTextToFramePadding();
        char hb[32] = "-";
        if (row.heartbeat_age_ms >= 0)
            std::snprintf(hb, sizeof(hb), "%.0f ms", row.heartbeat_age_ms);
        char name[32];
        if (m_state.group_size > 1)
            std::snprintf(name, sizeof(name), "group %d rank %d", row.group, row.replica);
        else
            std::snprintf(name, sizeof(name), "replica %d", row.replica);
        ImGui::Text("%s%s  x%d  %lld ok / %lld abort  hb %s", name, row.in_quorum ? " [Q]" : "",
                    row.incarnation, (long long)row.committed, (long long)row.aborted, hb);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "[Q] = in the latest quorum; x = incarnation (restarts); steps committed / aborted; "
                "age of its last heartbeat at the lighthouse");
        // The strip beside the words where both fit (a short pane: a shorter strip), else on a
        // line of its own under them.
        if (ImGui::GetWindowContentRegionMax().x - ImGui::GetStyle().WindowPadding.x >=
            label_w + ImGui::GetFontSize() * (m_compact ? 3.0f : 6.0f))
            ImGui::SameLine(label_w);
        const ImVec2 sp = ImGui::GetCursorScreenPos();
        const ImVec2 size(std::max(40.0f, ImGui::GetContentRegionAvail().x), line_h - 2.0f);
        drawStrip(model, row.replica, t0, t_end, inputs.now_ns, sp, size);
        ImGui::Dummy(size);
        ++m_shown->total;
        m_shown->shown += rowInsideWindow(p.y, ImGui::GetItemRectMax().y) ? 1 : 0;
        ImGui::PopID();
    }
    // axis and legend (a short pane: the colours on hover)
    const EventKind legend[] = {EventKind::QuorumWait,  EventKind::Reconfigure, EventKind::Heal,
                                EventKind::AllReduce,   EventKind::Commit,      EventKind::Abort,
                                EventKind::QuorumFormed};
    const char* names[] = {"quorum", "reconfigure", "heal", "all-reduce", "commit", "abort", "quorum formed"};
    if (m_compact) {
        ImGui::TextDisabled("strip: the last %.0f s (hover here for its colours)", double(window_ns) / 1e9);
        if (ImGui::IsItemHovered()) {
            ImGui::BeginTooltip();
            for (size_t i = 0; i < std::size(legend); ++i)
                legendItem(palette::kindColor(legend[i]), names[i], true);
            ImGui::EndTooltip();
        }
        return;
    }
    ImGui::TextDisabled("strip: the last %.0f s", double(window_ns) / 1e9);
    for (size_t i = 0; i < std::size(legend); ++i) {
        legendItem(palette::kindColor(legend[i]), names[i], false);
    }
}

void QuorumView::drawStopwatch(const ViewInputs& inputs, int64_t t_end) {
    ImGui::Separator();
    if (!m_state.recovery) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ImGui::TextWrapped("Recovery stopwatch: no fault yet. Kill or hang a replica (Topology view, or the "
                           "buttons above).");
        ImGui::PopStyleColor();
        return;
    }
    const Recovery& r = *m_state.recovery;
    // The run's time since the fault for a phase still pending. A held run's
    // "now" stands at the moment it froze, which can be before a fault the
    // Session sent while it was held: then no run time has passed (never negative).
    // Run time, as every phase: the time the job was held since the fault stood still.
    const int64_t held_ns = heldWithin(m_holds, r.fault_ns, t_end);
    const double since_ms = double(std::max<int64_t>(0, t_end - r.fault_ns - held_ns)) / 1e6;
    // Every phase is measured from this fault (recovery_measure.hpp), in order.
    char title[160];
    if (r.replica >= 0 && m_state.group_size > 1)
        std::snprintf(title, sizeof(title),
                      "Recovery stopwatch: %s rank %d (its group %d goes down with it), from the fault:",
                      r.fault.c_str(), r.replica, r.replica / m_state.group_size);
    else if (r.replica >= 0)
        std::snprintf(title, sizeof(title),
                      "Recovery stopwatch: %s replica %d, from the fault:", r.fault.c_str(), r.replica);
    else
        std::snprintf(title, sizeof(title), "Recovery stopwatch: the lighthouse stopped, from then:");
    if (m_compact) { // a short pane: the phases follow on the title's line
        ImGui::TextUnformatted(title);
    } else {
        ImGui::TextWrapped("%s", title);
    }
    if (held_ns > 0) { // the room held the run: its seconds are not the recovery's
        char held[96]; // a short pane: the short words, on the title's line (the tooltip says the rest)
        const bool ms = held_ns < 1'000'000'000;
        const double amount = ms ? double(held_ns) / 1e6 : double(held_ns) / 1e9;
        if (m_compact)
            std::snprintf(held, sizeof(held), ms ? "(held %.0f ms)" : "(held %.1f s)", amount);
        else
            std::snprintf(held, sizeof(held),
                          ms ? "(run time: the %.0f ms it was held do not count)"
                             : "(run time: the %.1f s it was held do not count)",
                          amount);
        flowTextDisabled(held);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "While the run is held (Pause, a narration or a breakpoint hold) the job's clock "
                "stands still: restarts wait, quorum and join timeouts stop. The stopwatch "
                "counts the same run time.");
    }
    // A short pane says the phases still to come in one item: "| restarted, healed ... (0.2 s)".
    std::string pending;
    const auto phase = [&](const char* name, double ms, const char* tip) { // on this line if it fits
        char text[96];
        if (m_compact && ms < 0 && (inputs.live || inputs.cursor())) {
            pending += (pending.empty() ? "" : ", ") + std::string(name);
            return;
        }
        if (ms >= 0) {
            std::snprintf(text, sizeof(text), "| %s +%.0f ms", name, ms);
            flowText(text);
        } else if (inputs.live || inputs.cursor()) {
            std::snprintf(text, sizeof(text), "| %s ... (%.1f s)", name, since_ms / 1000.0);
            flowTextDisabled(text);
        } else {
            std::snprintf(text, sizeof(text), "| %s -", name);
            flowTextDisabled(text);
        }
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("%s", tip);
    };
    if (r.replica >= 0) { // nothing "detects" the lighthouse: the replicas wait for it
        // A short pane names who noticed in the tooltip: the phases keep to fewer lines.
        const std::string who = r.detected_by.empty() ? "" : "detected by " + r.detected_by + ". ";
        const std::string detected =
            r.detected_by.empty() || m_compact ? "detected" : "detected by " + r.detected_by;
        const std::string tip =
            (m_compact ? who : std::string()) +
            "who noticed first: the lighthouse (the replica's connection closed, or its heartbeats stopped "
            "for heartbeat_timeout_ms; [fault_tolerance] detection), or another replica whose collective "
            "with it failed or that aborted its step";
        phase(detected.c_str(), r.detected_ms, tip.c_str());
    }
    phase("new quorum", r.new_quorum_ms,
          "the lighthouse issued a quorum with a new id once the fault was detected");
    phase("survivors commit", r.survivors_commit_ms, "another replica committed a step after the new quorum");
    if (!m_compact) // the replica's own recovery, on a second line (a short pane flows on)
        ImGui::Dummy(ImVec2(ImGui::GetFontSize() * 2.0f, 0.0f));
    // r.fault is recovery_measure's label: the fault action's name (fault_actions.def).
    const auto was = [&](FaultAction action) { return r.fault == faultActionName(action); };
    if (was(FaultAction::Kill) || r.restarted_ms >= 0)
        phase("restarted", r.restarted_ms, "the supervisor started the replica again");
    if (r.heal_ms >= 0 || was(FaultAction::Kill) || was(FaultAction::Hang) || was(FaultAction::Partition)) {
        phase("healed", r.heal_ms,
              "the replica received parameters, optimizer state and step from a live peer");
        phase("rejoined", r.rejoined_ms, "the replica's first commit after it healed");
    }
    if (!pending.empty()) {
        char text[160];
        std::snprintf(text, sizeof(text), "| %s ... (%.1f s)", pending.c_str(), since_ms / 1000.0);
        flowTextDisabled(text);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("still to come, %.1f s of run time after the fault", since_ms / 1000.0);
    }
    if (r.heal_bytes > 0) {
        // How it travelled ([fault_tolerance] heal_transport), and its rate.
        char how[96];
        if (r.heal_transport == healTransportName(HealTransport::Http) && r.heal_chunks > 0)
            std::snprintf(how, sizeof(how), "over HTTP, %d chunks at once", r.heal_chunks);
        else if (r.heal_transport == healTransportName(HealTransport::Http))
            std::snprintf(how, sizeof(how), "over HTTP, one stream");
        else
            std::snprintf(how, sizeof(how), "over the process group");
        const double gbps = r.heal_duration_ms > 0 ? double(r.heal_bytes) / (r.heal_duration_ms * 1e6) : 0.0;
        char heal[256];
        std::snprintf(heal, sizeof(heal), "heal: %s from %s %d in %.1f ms (%.2f GB/s, %s)%s",
                      formatBytes(double(r.heal_bytes)).c_str(), m_state.group_size > 1 ? "rank" : "replica",
                      r.heal_source, r.heal_duration_ms, gbps, how,
                      m_state.group_size <= 1 ? ""
                      : m_state.group_is_pipeline
                          ? " (its stage; the pipeline's other stages heal theirs at once)"
                          : " (its shard; the group's other ranks heal theirs at once)");
        // A short pane: the bytes and the source after the phases, the whole line in the tooltip.
        const bool cut = m_compact;
        if (m_compact) {
            char brief[96];
            std::snprintf(brief, sizeof(brief), "| %s from %d", formatBytes(double(r.heal_bytes)).c_str(),
                          r.heal_source);
            flowTextDisabled(brief);
        } else {
            ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
            ImGui::TextWrapped("%s", heal);
            ImGui::PopStyleColor();
        }
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "%s%s[fault_tolerance] heal_transport: \"pg\" sends the state over the reconfigured "
                "process group (TorchFT's PGTransport); \"http\" lets the healer fetch it from the "
                "source's HTTP server, heal_chunks byte ranges at once (TorchFT's HTTPTransport, "
                "its Manager's default). The time runs from the healer's request to its last "
                "byte.",
                cut ? heal : "", cut ? "\n\n" : "");
    }
    drawComparison(inputs);
}

// After a what-if rerun (What if view: heal_transport, heal_chunks,
// detection), this run's recoveries beside the run before's, measured from
// both summaries (what_if.hpp's recovery rows).
void QuorumView::drawComparison(const ViewInputs& inputs) {
    const WhatIfInputs* w = inputs.whatif;
    if (!w || !w->rows || !w->before_label || !w->now_label)
        return;
    std::string line;
    for (const ComparisonRow& row : *w->rows) {
        if (!row.recovery || !row.before || !row.now)
            continue;
        char text[160];
        std::snprintf(text, sizeof(text), "%s%s %.4g -> %.4g%s%s", line.empty() ? "" : "; ",
                      row.label.c_str(), *row.before, *row.now, row.unit.empty() ? "" : " ",
                      row.unit.c_str());
        line += text;
    }
    if (line.empty())
        return;
    m_comparison = "Against the run before (" + *w->before_label + " -> " + *w->now_label + "): " + line;
    ImGui::Separator();
    ImGui::TextWrapped("%s", m_comparison.c_str());
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "Both runs' summaries (fault_tolerance.recoveries): the mean over each run's faults "
            "and heals. Change heal_transport, heal_chunks or detection in the What if view and "
            "rerun to compare TorchFT's two heal transports or its two detection rules.");
}

} // namespace dt::app
