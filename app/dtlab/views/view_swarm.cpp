// view_swarm.cpp: the SWARM view (see view_swarm.hpp): trainers on the left,
// one column of servers per stage, the routes between them as thick as their
// traffic, each server's state, calls, inner steps and its stage's DiLoCo
// round, a re-route highlighted, the run's totals, and the fault buttons.
//
// [SECTION] Empty states and the grid's geometry (pure)
// [SECTION] The state at a moment (pure)
// [SECTION] Help, place and caches
// [SECTION] Drawing: header, fault buttons, the grid, the re-route, the totals
#include "views/view_swarm.hpp"

#include "theme.hpp"
#include "widgets/elide.hpp"
#include "widgets/format.hpp"
#include "widgets/help.hpp"
#include "widgets/palette.hpp"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <string_view>
#include <utility>

namespace dt::app {

// -----------------------------------------------------------------------------
// [SECTION] Empty states and the grid's geometry (pure)
// -----------------------------------------------------------------------------

namespace {

// A box's padding above and below its text, in text lines.
constexpr float kBoxPadLines = 0.15f;
// The vertical gap between two boxes of a column, in text lines.
constexpr float kBoxGapLines = 0.35f;
// Lines of text a trainer box shows at most: its name, its step.
constexpr int kTrainerLines = 2;

bool isSwarmRun(const Scenario& scenario) {
    return scenario.strategy.kind == StrategyKind::Swarm;
}

// `n` boxes of at most `max_h` each, stacked in [x0, x1] and centred in [y0, y1], `gap` apart.
std::vector<SwarmBox> stackBoxes(int n, float x0, float x1, float y0, float y1, float gap, float max_h) {
    std::vector<SwarmBox> boxes;
    if (n <= 0)
        return boxes;
    const float h = std::max(0.0f, y1 - y0);
    if (float(n - 1) * gap >= h)
        gap = 0.0f; // no room for gaps: the boxes touch
    const float box_h = std::max(0.0f, std::min(max_h, (h - float(n - 1) * gap) / float(n)));
    const float used = box_h * float(n) + gap * float(n - 1);
    float y = y0 + std::max(0.0f, (h - used) * 0.5f);
    for (int i = 0; i < n; ++i) {
        SwarmBox b;
        b.x0 = x0;
        b.x1 = x1;
        b.y0 = std::min(y, y1);
        b.y1 = std::min(y + box_h, y1);
        boxes.push_back(b);
        y += box_h + gap;
    }
    return boxes;
}

// Text lines a box `box_h` high holds (a padding above and below).
int linesIn(float box_h, float line_h, int most) {
    if (line_h <= 0.0f)
        return 0;
    const int lines = int(std::floor((box_h - 2.0f * kBoxPadLines * line_h) / line_h + 1e-3f));
    return std::clamp(lines, 0, most);
}

} // namespace

SwarmEmpty swarmEmpty(const ViewInputs& inputs) {
    if (!inputs.model)
        return SwarmEmpty::NoRun;
    const Scenario& scenario = inputs.model->scenario();
    const SwarmLayout layout = SwarmLayout::of(scenario);
    if (!isSwarmRun(scenario) || layout.stages <= 0 || layout.servers_per_stage <= 0 || layout.trainers <= 0)
        return SwarmEmpty::NotSwarm;
    if (inputs.model->swarmEvents().empty())
        return SwarmEmpty::NoEvents;
    return SwarmEmpty::None;
}

SwarmGrid swarmGrid(int trainers, int stages, int servers_per_stage, SwarmBox area, float line_h,
                    float font_px) {
    SwarmGrid g;
    const int T = std::max(0, trainers), S = std::max(0, stages), K = std::max(0, servers_per_stage);
    const float W = std::max(0.0f, area.width());
    const float H = std::max(0.0f, area.height());
    // Widths: a narrower column for the trainers, gaps between the columns for the routes.
    float gap = std::clamp(W * 0.06f, font_px * 1.0f, font_px * 5.0f);
    float trainer_w = std::clamp(W * 0.12f, font_px * 3.0f, font_px * 7.0f);
    float server_w = S > 0 ? (W - trainer_w - float(S) * gap) / float(S) : 0.0f;
    if (S > 0 && server_w < std::max(trainer_w, font_px * 4.0f)) {
        // Narrow: everything in proportion (trainers 1 part, a gap 0.5, a stage 2), so it still fits.
        const float part = W / (1.0f + float(S) * 2.5f);
        trainer_w = part;
        gap = part * 0.5f;
        server_w = part * 2.0f;
    }
    const float vgap = std::min(line_h * kBoxGapLines, H * 0.05f);
    const float pad = 2.0f * kBoxPadLines * line_h;
    // The trainers' column.
    float x = area.x0;
    SwarmBox column{x, area.y0, std::min(x + trainer_w, area.x1), area.y1};
    g.columns.push_back(column);
    g.trainers =
        stackBoxes(T, column.x0, column.x1, area.y0, area.y1, vgap, line_h * float(kTrainerLines) + pad);
    x += trainer_w;
    // One column per stage, K servers each.
    for (int s = 0; s < S; ++s) {
        x += gap;
        column = SwarmBox{std::min(x, area.x1), area.y0, std::min(x + server_w, area.x1), area.y1};
        g.columns.push_back(column);
        for (const SwarmBox& b : stackBoxes(K, column.x0, column.x1, area.y0, area.y1, vgap,
                                            line_h * float(kSwarmServerLines) + pad))
            g.servers.push_back(b);
        x += server_w;
    }
    if (!g.servers.empty())
        g.server_lines = linesIn(g.servers.front().height(), line_h, kSwarmServerLines);
    if (!g.trainers.empty())
        g.trainer_lines = linesIn(g.trainers.front().height(), line_h, kTrainerLines);
    return g;
}

// -----------------------------------------------------------------------------
// [SECTION] The state at a moment (pure)
// -----------------------------------------------------------------------------

namespace {

// When an event was known: a span once it ended (ranks emit spans at their end).
int64_t knownAt(const Event& e) {
    return e.phase == EventPhase::Span ? e.t_ns + std::max<int64_t>(e.dur_ns, 0) : e.t_ns;
}

Event eventOfSpan(int rank, const SpanRecord& s) {
    Event e;
    e.rank = rank;
    e.kind = s.kind;
    e.phase = EventPhase::Span;
    e.t_ns = s.t0;
    e.dur_ns = s.t1 - s.t0;
    e.step = s.step;
    e.unit = s.unit;
    e.microbatch = s.microbatch;
    e.peer = s.peer;
    e.bytes = s.bytes;
    e.seq = s.seq;
    return e;
}

} // namespace

std::vector<Event> swarmMeasureEvents(const RunModel& model, int64_t t_ns) {
    std::vector<Event> out;
    const SwarmLayout layout = SwarmLayout::of(model.scenario());
    for (const Event& e : model.swarmEvents()) {
        if (e.t_ns > t_ns)
            break; // sorted by t
        if (knownAt(e) <= t_ns)
            out.push_back(e);
    }
    // The trainers' steps (samples/s) and the servers' inner steps (gradients lost with a death).
    for (int r = 0; r < model.world(); ++r) {
        const bool trainer = layout.isTrainer(r);
        if (!trainer && !layout.isServer(r))
            continue;
        const EventKind kind = trainer ? EventKind::Step : EventKind::Optimizer;
        for (const SpanRecord& s : model.lane(r).compute[size_t(spanDepth(kind, -1))]) {
            if (s.t0 > t_ns)
                break; // sorted by start
            if (s.kind == kind && s.t1 <= t_ns)
                out.push_back(eventOfSpan(r, s));
        }
    }
    // Deaths: the Session's ProcessExited of a rank, and the kill that caused it.
    for (const Event& e : model.notable()) {
        if (e.t_ns > t_ns)
            break;
        if (e.rank >= 0 && (e.kind == EventKind::ProcessExited || e.kind == EventKind::FaultInjected))
            out.push_back(e);
    }
    std::stable_sort(out.begin(), out.end(), [](const Event& a, const Event& b) { return a.t_ns < b.t_ns; });
    return out;
}

SwarmViewState swarmViewState(const RunModel& model, int64_t t_ns) {
    SwarmViewState st;
    const Scenario& scenario = model.scenario();
    st.layout = SwarmLayout::of(scenario);
    const SwarmLayout& layout = st.layout;
    st.t_ns = t_ns;
    st.measure = measureSwarm(scenario, swarmMeasureEvents(model, t_ns));
    const int T = std::max(0, layout.trainers), S = std::max(0, layout.stages);
    const int servers = S * std::max(0, layout.servers_per_stage);
    st.stages.assign(size_t(S), SwarmStageRound{});
    st.last_round.assign(size_t(servers), -1);
    st.led_last.assign(size_t(servers), false);
    st.rerouted_from.assign(size_t(servers), false);
    st.expected_microbatches = int64_t(T) * int64_t(std::max(0, scenario.run.steps)) *
                               int64_t(std::max(1, scenario.strategy.microbatches));
    for (const SwarmRoute& r : st.measure.routes)
        st.max_route_calls = std::max(st.max_route_calls, r.calls);

    // One walk over the SWARM events up to the moment: rounds, waiting stages,
    // re-routes, and each trainer's latest microbatch.
    std::vector<bool> waiting(size_t(T * S), false); // trainer x stage
    std::vector<std::vector<SwarmLiveCall>> live(static_cast<size_t>(T));
    std::vector<std::pair<int, int>> live_of(size_t(T), {-1, -1}); // (step, microbatch) of each trainer's
    std::vector<const Event*> rerouting(size_t(T), nullptr);       // each trainer's latest re-route
    for (const Event& e : model.swarmEvents()) {
        if (e.t_ns > t_ns)
            break;
        if (knownAt(e) > t_ns)
            continue;
        const int server = layout.isServer(e.rank) ? e.rank - layout.trainers : -1;
        switch (e.kind) {
        case EventKind::SwarmOuterSync: {
            if (server < 0 || server >= servers)
                break;
            const int stage = layout.stageOf(e.rank);
            const int64_t round = int64_t(e.value);
            st.last_round[size_t(server)] = round;
            st.led_last[size_t(server)] = e.seq == 1;
            SwarmStageRound& sr = st.stages[size_t(stage)];
            if (round > sr.round) { // a newer round of the stage: forget the older one
                sr.round = round;
                sr.averaged = 0;
                sr.leader = -1;
            }
            if (round == sr.round) {
                sr.averaged = std::max(sr.averaged, int(e.group_size));
                if (e.seq == 1)
                    sr.leader = e.rank;
            }
            break;
        }
        case EventKind::SwarmStageEmpty:
            if (layout.isTrainer(e.rank) && e.unit >= 0 && e.unit < S)
                waiting[size_t(e.rank * S + e.unit)] = e.value == 1.0;
            break;
        case EventKind::SwarmReroute:
            if (layout.isTrainer(e.rank))
                rerouting[size_t(e.rank)] = &e;
            if (t_ns - e.t_ns <= kSwarmRerouteWindowNs) {
                ++st.recent_reroutes;
                st.reroute = e; // sorted by t: the latest last
                if (layout.isServer(e.peer))
                    st.rerouted_from[size_t(e.peer - layout.trainers)] = true;
            }
            break;
        case EventKind::SwarmCall: {
            if (!layout.isTrainer(e.rank) || !layout.isServer(e.peer))
                break;
            const std::pair<int, int> microbatch{e.step, e.microbatch};
            std::vector<SwarmLiveCall>& calls = live[size_t(e.rank)];
            if (live_of[size_t(e.rank)] != microbatch) { // a new microbatch: its route starts again
                live_of[size_t(e.rank)] = microbatch;
                calls.clear();
            }
            SwarmLiveCall call;
            call.trainer = e.rank;
            call.server_rank = e.peer;
            call.stage = e.unit;
            call.backward = e.value == 1.0;
            // The call that replaced one a re-route gave up on: same step, microbatch and stage.
            if (const Event* r = rerouting[size_t(e.rank)];
                r && r->step == e.step && r->microbatch == e.microbatch && r->unit == e.unit) {
                call.rerouted = t_ns - r->t_ns <= kSwarmRerouteWindowNs;
                rerouting[size_t(e.rank)] = nullptr;
            }
            calls.push_back(call);
            break;
        }
        default:
            break;
        }
    }
    for (int s = 0; s < S; ++s)
        for (int t = 0; t < T; ++t)
            st.stages[size_t(s)].waiting = st.stages[size_t(s)].waiting || waiting[size_t(t * S + s)];
    for (std::vector<SwarmLiveCall>& calls : live) {
        if (calls.empty())
            continue;
        calls.back().latest = true;
        st.live.insert(st.live.end(), calls.begin(), calls.end());
    }
    return st;
}

// -----------------------------------------------------------------------------
// [SECTION] Help, place and caches
// -----------------------------------------------------------------------------

SwarmView::SwarmView() : View("swarm", "SWARM") {
    open = false;
}

std::optional<bool> SwarmView::relevantTo(const Scenario& scenario) const {
    return isSwarmRun(scenario);
}

LayoutPlace SwarmView::layoutPlace(const LayoutContext& context) const {
    LayoutPlace place;
    place.area = LayoutArea::LowerBand;
    place.height = std::round(
        preferredHeight(context.scenario.swarm.trainers, context.scenario.swarm.servers_per_stage));
    return place;
}

float SwarmView::preferredHeight(int trainers, int servers_per_stage) {
    const float line = ImGui::GetTextLineHeightWithSpacing();
    const float frame = ImGui::GetFrameHeightWithSpacing();
    const float box_gap = line * kBoxGapLines;
    const float pad = 2.0f * kBoxPadLines * line;
    const float trainers_h = float(std::max(1, trainers)) * (line * float(kTrainerLines) + pad + box_gap);
    const float servers_h =
        float(std::max(1, servers_per_stage)) * (line * float(kSwarmServerLines) + pad + box_gap);
    // header, buttons, stage labels, the grid, the re-route line and two lines of totals
    return frame * 2.0f + line + std::max(trainers_h, servers_h) + line * 3.5f +
           ImGui::GetStyle().WindowPadding.y * 2.0f;
}

const char* SwarmView::helpText() const {
    return "SWARM parallelism (as DistQat runs it on Hivemind), drawn from the real events.\n\n"
           "Trainers own the data and the loss and hold no parameters; the model is cut into stages, and "
           "each stage is served by several server processes that hold a copy of its blocks. Each "
           "microbatch goes stage by stage, and for every call the trainer picks a live server of that "
           "stage: at random in proportion to the throughput it measured (SWARM's stochastic wiring, "
           "routing = \"throughput\"), or the one with the lowest expected finish time (Hivemind's "
           "balancer, routing = \"fastest\"). A call to a server that died or does not answer within "
           "request_timeout_ms is retried on another server of the same stage, so a dead server costs "
           "only the calls it held and the gradients it had not stepped yet. A server steps its own AdamW "
           "every server_batch backward calls, and every outer_every inner steps the stage's servers "
           "average with DiLoCo through a param mirror, which a restarted server loads to catch up.\n\n"
           "Left: the trainers (rank colour). Columns: the stages, one box per server with its state, "
           "forward / backward calls served, inner steps, starts (incarnations) and its stage's last "
           "DiLoCo round (\"led\": this server computed it). Lines: trainer -> server routes, as thick "
           "as their calls so far; each trainer's latest microbatch drawn bright, its latest call with a "
           "dot. A red outline: a trainer re-routed a call away from that server in the last 2 s; the red "
           "line: the call it sent again to another server of the stage.\n\n"
           "Click a server to choose it; Kill, Hang, Slow and Restart act on it (live runs).\n\n"
           "Try: Kill a server and watch its calls move to the other servers of its stage, then the "
           "restarted server load the mirror and take traffic again.";
}

bool SwarmView::isEmpty(const ViewInputs& inputs) const {
    return swarmEmpty(inputs) != SwarmEmpty::None;
}

void SwarmView::drawEmptyState(const ViewInputs& inputs) {
    helpMarker(helpText());
    switch (swarmEmpty(inputs)) {
    case SwarmEmpty::NoRun:
        emptyState("No run open: start a scenario or open a recording",
                   "With [strategy] kind = \"swarm\" this view shows the trainers, each stage's servers, "
                   "every microbatch's route between them, the servers' DiLoCo rounds and the re-routes "
                   "when a server dies.");
        break;
    case SwarmEmpty::NotSwarm: {
        char title[128];
        std::snprintf(title, sizeof(title), "The \"%s\" strategy has no trainers and servers",
                      strategyKindName(inputs.model->scenario().strategy.kind));
        emptyState(title, "This view needs [strategy] kind = \"swarm\": trainers that own the data, and "
                          "[swarm] servers_per_stage servers for each of the [topology] stages, any of "
                          "which can die while the others carry its calls.");
        break;
    }
    case SwarmEmpty::NoEvents: {
        const SwarmLayout layout = SwarmLayout::of(inputs.model->scenario());
        char hint[256];
        std::snprintf(
            hint, sizeof(hint),
            "%d trainer%s and %d stage%s of %d server%s each start; the grid appears when the first "
            "server has joined.",
            layout.trainers, layout.trainers == 1 ? "" : "s", layout.stages, layout.stages == 1 ? "" : "s",
            layout.servers_per_stage, layout.servers_per_stage == 1 ? "" : "s");
        emptyState("SWARM run starting: no server has joined yet", hint);
        break;
    }
    case SwarmEmpty::None:
        break;
    }
}

void SwarmView::refresh(const ViewInputs& inputs) {
    const RunModel& model = *inputs.model;
    const std::optional<int64_t> cursor = inputs.cursor();
    const int64_t t = inputs.momentNs();
    const bool new_key = &model != m_model || inputs.run_serial != m_run_serial ||
                         model.tBegin() != m_t_begin || cursor != m_cursor;
    const bool moved = model.generation() != m_generation || t != m_t;
    // While a run streams in, at most every kRefreshSeconds: the measurement walks every call.
    const bool due = ImGui::GetTime() - m_refreshed_at >= kRefreshSeconds;
    if (!new_key && !(moved && due))
        return;
    m_state = swarmViewState(model, t);
    m_model = &model;
    m_run_serial = inputs.run_serial;
    m_t_begin = model.tBegin();
    m_generation = model.generation();
    m_cursor = cursor;
    m_t = t;
    m_refreshed_at = ImGui::GetTime();
    ++m_measure_count;
}

// -----------------------------------------------------------------------------
// [SECTION] Drawing
// -----------------------------------------------------------------------------

namespace {

bool alive(RankState s) {
    return s == RankState::Starting || s == RankState::Running || s == RankState::Paused ||
           s == RankState::Hung;
}

bool dead(RankState s) {
    return s == RankState::Killed || s == RankState::Failed || s == RankState::Restarting;
}

// The state of `rank` as the app has it (at the cursor, the state there);
// without per-rank state (a view drawn alone), running.
RankState stateOf(const std::vector<RankProgress>* ranks, int rank) {
    if (ranks && rank >= 0 && size_t(rank) < ranks->size())
        return (*ranks)[size_t(rank)].state;
    return RankState::Running;
}

std::string upper(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'a' && c <= 'z')
            c = char(c - 'a' + 'A');
    return out;
}

// The first of `texts` that fits in `width`, else the last one elided.
std::string firstThatFits(std::initializer_list<std::string> texts, float width) {
    for (const std::string& t : texts)
        if (ImGui::CalcTextSize(t.c_str()).x <= width)
            return t;
    return elideToWidth(*(texts.end() - 1), width);
}

// An opaque fill of the window's background (boxes hide the routes under them).
ImU32 opaqueBackground() {
    return ImGui::GetColorU32(ImGuiCol_WindowBg) | IM_COL32_A_MASK;
}

// A route from a trainer box to a server box: a curve from the trainer's
// right edge to the server's left edge; `lane` in 0..1 spreads the ends.
void drawRoute(ImDrawList* dl, const SwarmBox& from, const SwarmBox& to, float from_lane, float to_lane,
               ImU32 color, float thickness) {
    const ImVec2 a(from.x1, from.y0 + from.height() * from_lane);
    const ImVec2 b(to.x0, to.y0 + to.height() * to_lane);
    const float dx = std::max(8.0f, (b.x - a.x) * 0.5f);
    dl->AddBezierCubic(a, ImVec2(a.x + dx, a.y), ImVec2(b.x - dx, b.y), b, color, thickness);
}

// Where on a box's edge the route of item i of n ends (spread over the middle 70 %).
float laneOf(int i, int n) {
    return n <= 1 ? 0.5f : 0.15f + 0.7f * float(i) / float(n - 1);
}

} // namespace

void SwarmView::drawContent(const ViewInputs& inputs) {
    refresh(inputs);
    const SwarmLayout& layout = m_state.layout;
    drawHeader(inputs);
    // The server the buttons act on: the selected rank when it is a server, else the first one.
    const int selected = inputs.selected_rank ? *inputs.selected_rank : -1;
    const int target = layout.isServer(selected) ? selected : layout.serverRank(0, 0);
    drawFaultButtons(inputs, target);
    // The grid takes what the re-route line and the totals leave, but never less than one line of
    // text per box (the window scrolls then): the stage labels, and per box its padding and gap.
    const float line = ImGui::GetTextLineHeightWithSpacing();
    const size_t deaths = std::min<size_t>(m_state.measure.deaths.size(), 3);
    const float footer = line * (3.2f + float(deaths));
    const float per_box = 1.0f + 2.0f * kBoxPadLines + kBoxGapLines;
    const float least = line * (1.0f + per_box * float(std::max(layout.trainers, layout.servers_per_stage)));
    drawGrid(inputs, target, std::max(least, ImGui::GetContentRegionAvail().y - footer));
    drawReroute();
    drawTotals(inputs);
}

void SwarmView::drawHeader(const ViewInputs& inputs) {
    const Scenario& scenario = inputs.model->scenario();
    const SwarmLayout& layout = m_state.layout;
    const SwarmConfig& sw = scenario.swarm;
    helpMarker(helpText());
    ImGui::SameLine();
    if (const std::optional<int64_t> cursor = inputs.cursor()) {
        ImGui::TextColored(ImColor(palette::kCursor),
                           "at the cursor %+.2f s:", double(*cursor - inputs.model->tBegin()) / 1e9);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "Calls, rounds and re-routes up to the time cursor; the servers' states as they "
                "were there. The buttons act on the servers now.");
        ImGui::SameLine();
    }
    char header[320];
    std::snprintf(header, sizeof(header),
                  "%d trainer%s | %d stage%s x %d server%s | routing %s | inner step every %d backward "
                  "calls | DiLoCo every %d inner steps | restart %s",
                  layout.trainers, layout.trainers == 1 ? "" : "s", layout.stages,
                  layout.stages == 1 ? "" : "s", layout.servers_per_stage,
                  layout.servers_per_stage == 1 ? "" : "s", sw.routing.c_str(),
                  sw.server_batch > 0 ? sw.server_batch : std::max(1, scenario.strategy.microbatches),
                  sw.outer_every, sw.restart.c_str());
    textElided(header, ImGui::GetContentRegionAvail().x);
}

void SwarmView::drawFaultButtons(const ViewInputs& inputs, int server_rank) {
    if (!inputs.live || !inputs.ranks || inputs.ranks->empty())
        return;
    // The buttons act on the server now: its state now, also at a time cursor.
    const std::vector<RankProgress>& ranks =
        inputs.cursor() && inputs.facts && inputs.facts->ranks.size() == inputs.ranks->size()
            ? inputs.facts->ranks
            : *inputs.ranks;
    const SwarmLayout& layout = m_state.layout;
    const RankState state = stateOf(&ranks, server_rank);
    ViewActions& act = inputs.act();
    const bool is_alive = alive(state);
    const char* gone = "the process has exited";
    ImGui::AlignTextToFramePadding();
    ImGui::Text("server %d of stage %d (rank %d):", layout.serverIndexOf(server_rank),
                layout.stageOf(server_rank), server_rank);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Click a server in the grid to act on another one.");
    // Each button on this line if it fits, else the next (a narrow view at large text).
    const auto next = [](const char* label) {
        sameLineOrWrap(ImGui::CalcTextSize(label, nullptr, true).x + ImGui::GetStyle().FramePadding.x * 2.0f);
    };
    next("Kill##swarm");
    if (act.button("Kill##swarm", is_alive, gone))
        act.killRank(server_rank);
    if (state == RankState::Hung) {
        next("Resume##swarm");
        if (act.button("Resume##swarm", true))
            act.resumeRank(server_rank);
    } else {
        next("Hang##swarm");
        if (act.button("Hang##swarm", is_alive, gone))
            act.hangRank(server_rank);
    }
    next("Slow##swarm");
    if (act.button("Slow##swarm", is_alive, gone))
        ImGui::OpenPopup("swarm_slow");
    drawSlowPopup(inputs, server_rank);
    next("Restart##swarm");
    if (act.button("Restart##swarm", dead(state), "only a dead server can be restarted"))
        act.restartRank(server_rank);
    if (ImGui::IsItemHovered() && dead(state))
        ImGui::SetTooltip("Start it again: it loads its stage's param mirror and registers; the trainers "
                          "route calls to it again ([swarm] restart = \"auto\" does this by itself).");
}

void SwarmView::drawSlowPopup(const ViewInputs& inputs, int server_rank) {
    ViewActions& act = inputs.act();
    if (!ImGui::BeginPopup("swarm_slow"))
        return;
    ImGui::Text("Delay added to each call rank %d serves", server_rank);
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 14.0f);
    ImGui::SliderFloat("##swarm_slow_ms", &m_slow_ms, 0.0f, 1000.0f, "%.0f ms per call");
    if (act.button("Apply##swarmslow")) {
        act.slowRank(server_rank, m_slow_ms);
        ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (act.button("Normal speed##swarmslow")) {
        act.slowRank(server_rank, 0.0);
        ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
}

void SwarmView::drawGrid(const ViewInputs& inputs, int selected_server, float height) {
    const SwarmViewState& st = m_state;
    const SwarmLayout& layout = st.layout;
    const Theme& theme = *inputs.theme;
    const float font = ImGui::GetFontSize();
    const float line_h = ImGui::GetTextLineHeightWithSpacing();
    const float text_h = ImGui::GetTextLineHeight();
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const float width = std::max(ImGui::GetContentRegionAvail().x, font * 10.0f);
    const SwarmBox area{origin.x, origin.y + line_h, origin.x + width, origin.y + height};
    m_grid = swarmGrid(layout.trainers, layout.stages, layout.servers_per_stage, area, line_h, font);
    const SwarmGrid& g = m_grid;
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
    const ImU32 text_dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    const float pad_x = ImGui::GetStyle().FramePadding.x;
    const float pad_y = kBoxPadLines * line_h;

    // Column labels: "trainers", then each stage with its last DiLoCo round.
    for (size_t c = 0; c < g.columns.size(); ++c) {
        const SwarmBox& col = g.columns[c];
        std::string label = "trainers";
        ImU32 color = text_dim;
        if (c > 0) {
            const SwarmStageRound& sr = st.stages[c - 1];
            char buf[128];
            if (sr.waiting) {
                std::snprintf(buf, sizeof(buf), "stage %d: NO LIVE SERVER", int(c - 1));
                color = palette::kFailed;
            } else if (sr.round >= 0 && sr.leader >= 0) {
                std::snprintf(buf, sizeof(buf), "stage %d  round %lld (%d averaged, led by rank %d)",
                              int(c - 1), (long long)sr.round, sr.averaged, sr.leader);
            } else if (sr.round >= 0) {
                std::snprintf(buf, sizeof(buf), "stage %d  round %lld (%d averaged)", int(c - 1),
                              (long long)sr.round, sr.averaged);
            } else {
                std::snprintf(buf, sizeof(buf), "stage %d  no DiLoCo round yet", int(c - 1));
            }
            label = buf;
            if (!sr.waiting)
                color = text;
        }
        const std::string shown = elideToWidth(label, col.width());
        dl->AddText(ImVec2(col.x0, origin.y + (line_h - text_h) * 0.5f), color, shown.c_str());
        if (shown != label && ImGui::IsWindowHovered() &&
            ImGui::IsMouseHoveringRect(ImVec2(col.x0, origin.y), ImVec2(col.x1, origin.y + line_h)))
            ImGui::SetTooltip("%s", label.c_str());
    }

    // Routes under the boxes: as thick as their calls so far, in the trainer's colour.
    const float max_thick = std::max(2.0f, font * 0.45f);
    const int K = layout.servers_per_stage, T = layout.trainers;
    const auto serverBox = [&](int rank) -> const SwarmBox* {
        const int i = rank - layout.trainers;
        return layout.isServer(rank) && i < int(g.servers.size()) ? &g.servers[size_t(i)] : nullptr;
    };
    for (const SwarmRoute& r : st.measure.routes) {
        const SwarmBox* to = serverBox(r.server_rank);
        if (r.calls <= 0 || !to || r.trainer < 0 || r.trainer >= int(g.trainers.size()))
            continue;
        const float share = float(r.calls) / float(std::max<int64_t>(1, st.max_route_calls));
        const int stage = layout.stageOf(r.server_rank), k = layout.serverIndexOf(r.server_rank);
        drawRoute(dl, g.trainers[size_t(r.trainer)], *to, laneOf(stage * K + k, layout.stages * K),
                  laneOf(r.trainer, T), palette::withAlpha(palette::rankColor(r.trainer), 0.35f),
                  1.0f + (max_thick - 1.0f) * share);
    }
    // Each trainer's latest microbatch, bright; its latest call with a dot at the server; a call
    // sent again after a re-route in red.
    for (const SwarmLiveCall& c : st.live) {
        const SwarmBox* to = serverBox(c.server_rank);
        if (!to || c.trainer < 0 || c.trainer >= int(g.trainers.size()))
            continue;
        const int stage = layout.stageOf(c.server_rank), k = layout.serverIndexOf(c.server_rank);
        const ImU32 color = c.rerouted
                                ? palette::kFailed
                                : palette::withAlpha(palette::rankColor(c.trainer), c.latest ? 1.0f : 0.75f);
        drawRoute(dl, g.trainers[size_t(c.trainer)], *to, laneOf(stage * K + k, layout.stages * K),
                  laneOf(c.trainer, T), color, c.latest || c.rerouted ? 3.0f : 2.0f);
        if (c.latest)
            dl->AddCircleFilled(ImVec2(to->x0, to->y0 + to->height() * laneOf(c.trainer, T)), line_h * 0.2f,
                                color, 12);
    }

    // A box: an opaque fill (the routes pass under it), a band in the state's
    // colour with the title, then lines of text from `inset` px on; clicking selects the rank.
    const auto box = [&](const SwarmBox& b, int rank, RankState state, ImU32 outline, float outline_w,
                         const std::vector<std::string>& lines, int max_lines, float inset,
                         const std::string& tip) {
        const ImVec2 a(b.x0, b.y0), z(b.x1, b.y1);
        dl->AddRectFilled(a, z, opaqueBackground(), 3.0f);
        dl->AddRectFilled(a, z, ImGui::GetColorU32(ImGuiCol_FrameBg), 3.0f);
        const float band_h = max_lines > 0 ? std::min(b.height(), line_h + pad_y) : b.height();
        dl->AddRectFilled(a, ImVec2(z.x, b.y0 + band_h), rankStateColor(state, theme), 3.0f);
        dl->PushClipRect(a, z, true);
        const float inner_w = std::max(0.0f, b.width() - inset - pad_x * 2.0f);
        for (int i = 0; i < max_lines && i < int(lines.size()); ++i) {
            const std::string shown = elideToWidth(lines[size_t(i)], inner_w);
            const ImU32 color = i == 0 ? rankStateTextColor(state, theme) : text;
            dl->AddText(
                ImVec2(b.x0 + inset + pad_x, b.y0 + pad_y + float(i) * line_h + (line_h - text_h) * 0.5f),
                color, shown.c_str());
        }
        dl->PopClipRect();
        dl->AddRect(a, z, outline, 3.0f, 0, outline_w);
        ImGui::SetCursorScreenPos(a);
        ImGui::PushID(rank);
        if (ImGui::InvisibleButton("box", ImVec2(std::max(1.0f, b.width()), std::max(1.0f, b.height()))))
            inputs.act().selectRank(rank);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("%s", tip.c_str());
        ImGui::PopID();
    };
    const ImU32 border = ImGui::GetColorU32(ImGuiCol_Border);

    // Trainers, with their colour as a strip on the left edge: their routes have it.
    const float strip_w = std::max(3.0f, font * 0.3f);
    for (int t = 0; t < int(g.trainers.size()); ++t) {
        const SwarmBox& b = g.trainers[size_t(t)];
        const RankState state = stateOf(inputs.ranks, t);
        const int steps_done =
            inputs.ranks && size_t(t) < inputs.ranks->size() ? (*inputs.ranks)[size_t(t)].step + 1 : 0;
        const std::string title = firstThatFits({"trainer " + std::to_string(t), "t" + std::to_string(t)},
                                                std::max(0.0f, b.width() - strip_w - pad_x * 2.0f));
        const std::vector<std::string> lines = {title,
                                                "step " + std::to_string(std::max(0, steps_done)) + " / " +
                                                    std::to_string(inputs.model->scenario().run.steps)};
        const std::string tip = "trainer " + std::to_string(t) + " (rank " + std::to_string(t) +
                                "): " + std::string(rankStateLabel(state)) + ", " +
                                std::to_string(std::max(0, steps_done)) +
                                " steps done\nIts routes are drawn in its colour; click: select the rank.";
        box(b, t, state, border, 1.0f, lines, g.trainer_lines, strip_w, tip);
        dl->AddRectFilled(ImVec2(b.x0, b.y0), ImVec2(b.x0 + strip_w, b.y1), palette::rankColor(t), 3.0f,
                          ImDrawFlags_RoundCornersLeft);
    }

    // Servers.
    for (int i = 0; i < int(g.servers.size()); ++i) {
        const SwarmBox& b = g.servers[size_t(i)];
        const int rank = layout.trainers + i;
        const int stage = layout.stageOf(rank), k = layout.serverIndexOf(rank);
        const RankState state = stateOf(inputs.ranks, rank);
        const SwarmServerTally tally =
            size_t(i) < st.measure.servers.size() ? st.measure.servers[size_t(i)] : SwarmServerTally{};
        const int starts = tally.starts; // SwarmJoined: each incarnation that served
        const float inner_w = std::max(0.0f, b.width() - pad_x * 2.0f);
        const std::string title = firstThatFits(
            {"stage " + std::to_string(stage) + " / server " + std::to_string(k) + " / rank " +
                 std::to_string(rank),
             "s" + std::to_string(stage) + " / k" + std::to_string(k) + " / r" + std::to_string(rank),
             "r" + std::to_string(rank)},
            inner_w);
        char calls[96], inner[64], round_text[64], starts_text[96];
        std::snprintf(calls, sizeof(calls), "fwd %lld  bwd %lld", (long long)tally.forward_calls,
                      (long long)tally.backward_calls);
        std::snprintf(inner, sizeof(inner), "inner steps %lld", (long long)tally.inner_steps);
        const int64_t last_round = size_t(i) < st.last_round.size() ? st.last_round[size_t(i)] : -1;
        const bool led = size_t(i) < st.led_last.size() && st.led_last[size_t(i)];
        if (last_round >= 0)
            std::snprintf(round_text, sizeof(round_text), "round %lld%s", (long long)last_round,
                          led ? " (led)" : "");
        else
            std::snprintf(round_text, sizeof(round_text), "no round yet");
        std::snprintf(starts_text, sizeof(starts_text), "%s  %d start%s",
                      upper(rankStateLabel(state)).c_str(), starts, starts == 1 ? "" : "s");
        // A box one line high (large text): the calls beside the title rather than nowhere.
        const std::string one_line =
            firstThatFits({"stage " + std::to_string(stage) + " / server " + std::to_string(k) + " / rank " +
                               std::to_string(rank) + "   " + calls,
                           "s" + std::to_string(stage) + " / k" + std::to_string(k) + " / r" +
                               std::to_string(rank) + "   " + calls,
                           title},
                          inner_w);
        const std::vector<std::string> lines =
            g.server_lines <= 1 ? std::vector<std::string>{one_line}
                                : std::vector<std::string>{title, starts_text, calls, inner, round_text};
        // Outline: red when a call left it in the last 2 s, the accent when the buttons act on it.
        const bool rerouted = size_t(i) < st.rerouted_from.size() && st.rerouted_from[size_t(i)];
        const ImU32 outline = rerouted                  ? palette::kFailed
                              : rank == selected_server ? accentColor(theme)
                                                        : border;
        const float outline_w = rerouted || rank == selected_server ? 3.0f : 1.0f;
        const SwarmStageRound& sr = st.stages[size_t(stage)];
        const std::string leader = sr.leader >= 0 ? ", led by rank " + std::to_string(sr.leader) : "";
        char tip[640];
        std::snprintf(tip, sizeof(tip),
                      "server %d of stage %d (rank %d): %s\n"
                      "calls served: %lld forward, %lld backward, %lld dropped as stale\n"
                      "inner steps: %lld; bytes in and out: %s\n"
                      "starts: %d (a restarted server loads its stage's param mirror)\n"
                      "its last DiLoCo round: %s; rounds it led: %lld\n"
                      "stage %d's last round: %lld, %d servers averaged%s\n"
                      "%sclick: choose it for the buttons above",
                      k, stage, rank, std::string(rankStateLabel(state)).c_str(),
                      (long long)tally.forward_calls, (long long)tally.backward_calls,
                      (long long)tally.dropped_calls, (long long)tally.inner_steps,
                      formatBytes(double(tally.bytes)).c_str(), starts, round_text,
                      (long long)tally.rounds_led, stage, (long long)sr.round, sr.averaged, leader.c_str(),
                      rerouted ? "A trainer re-routed a call away from it in the last 2 s.\n" : "");
        box(b, rank, state, outline, outline_w, lines, g.server_lines, 0.0f, tip);
    }

    // Past the grid.
    ImGui::SetCursorScreenPos(origin);
    ImGui::Dummy(ImVec2(width, height));
}

void SwarmView::drawReroute() {
    const SwarmViewState& st = m_state;
    if (!st.reroute) {
        ImGui::TextDisabled("No re-route in the last 2 s.");
        return;
    }
    const Event& e = *st.reroute;
    const char* why = e.value == 2.0 ? "no answer in time" : "connection lost";
    const std::string more =
        st.recent_reroutes > 1 ? ", " + std::to_string(st.recent_reroutes - 1) + " more in the last 2 s" : "";
    char text[256];
    std::snprintf(text, sizeof(text),
                  "trainer %d re-routed microbatch %d of step %d away from rank %d (%s)%s", e.rank,
                  int(e.microbatch), e.step, int(e.peer), why, more.c_str());
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(palette::kFailed));
    textElided(text, ImGui::GetContentRegionAvail().x);
    ImGui::PopStyleColor();
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("The call went to another server of stage %d (swarm_routing: the next pick among "
                          "its live servers).\nconnection lost: the server's process is gone; no answer in "
                          "time: it did not reply within [swarm] request_timeout_ms (hung or too slow).",
                          int(e.unit));
}

void SwarmView::drawTotals(const ViewInputs& inputs) {
    const SwarmViewState& st = m_state;
    const SwarmMeasure& m = st.measure;
    char part[160];
    std::snprintf(part, sizeof(part), "microbatches %lld / %lld", (long long)m.microbatches,
                  (long long)st.expected_microbatches);
    ImGui::TextUnformatted(part);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "Microbatches whose last backward call (stage 0) was answered, of trainers x steps x "
            "[strategy] microbatches.");
    std::snprintf(part, sizeof(part), "| re-routes %lld (%lld connection lost, %lld no answer)",
                  (long long)(m.reroutes_connection + m.reroutes_timeout), (long long)m.reroutes_connection,
                  (long long)m.reroutes_timeout);
    flowText(part);
    std::snprintf(part, sizeof(part), "| outer rounds %lld", (long long)m.outer_rounds);
    flowText(part);
    std::snprintf(part, sizeof(part), "| %.1f samples/s", m.samples_per_s);
    flowText(part);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("The trainers' samples (steps x batch_per_rank each) over the time from the first "
                          "step's start to the last step's end.");
    if (m.stage_empty_waits > 0) {
        std::snprintf(part, sizeof(part), "| %lld waits for an empty stage", (long long)m.stage_empty_waits);
        flowText(part, palette::kWarning);
    }
    // The latest deaths (at most 3): what each cost.
    const size_t first = m.deaths.size() > 3 ? m.deaths.size() - 3 : 0;
    if (first > 0) {
        std::snprintf(part, sizeof(part), "| %zu server deaths, the latest 3:", m.deaths.size());
        flowTextDisabled(part);
    }
    for (size_t i = first; i < m.deaths.size(); ++i) {
        const SwarmDeath& d = m.deaths[i];
        const SwarmLayout& layout = st.layout;
        char reroute[64], back[64] = "";
        if (d.reroute_ms >= 0)
            std::snprintf(reroute, sizeof(reroute), "re-routed after %.0f ms", d.reroute_ms);
        else
            std::snprintf(reroute, sizeof(reroute), "no call re-routed from it yet");
        if (d.back_ns >= 0)
            std::snprintf(back, sizeof(back), ", serving again after %.2f s",
                          double(d.back_ns - d.t_ns) / 1e9);
        char text[256];
        std::snprintf(text, sizeof(text),
                      "rank %d (stage %d / server %d) died at %+.2f s: %lld gradient%s lost, %s%s", d.rank,
                      layout.stageOf(d.rank), layout.serverIndexOf(d.rank),
                      double(d.t_ns - inputs.model->tBegin()) / 1e9, (long long)d.gradients_lost,
                      d.gradients_lost == 1 ? "" : "s", reroute, back);
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(palette::kFailed));
        textElided(text, ImGui::GetContentRegionAvail().x);
        ImGui::PopStyleColor();
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "gradients lost: backward calls the server had answered since its last inner step; "
                "they were accumulated in its memory and died with it.\nre-routed after: from "
                "the kill to the end of the first call a trainer sent elsewhere instead.\n"
                "serving again: from the kill to its next start (SwarmJoined).");
    }
}

} // namespace dt::app
