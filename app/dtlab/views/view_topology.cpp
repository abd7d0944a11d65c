// view_topology.cpp: rank tiles, fault buttons and the selected rank's details
// (see view_topology.hpp).
#include "views/view_topology.hpp"

#include "dtlab/swarm_layout.hpp"
#include "model/rank_clock.hpp"
#include "theme.hpp"
#include "widgets/elide.hpp"
#include "widgets/format.hpp"
#include "widgets/help.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

namespace dt::app {

namespace {

constexpr const char* kReplayTip =
    "a replay: nothing is running. Open a scenario (File > Open scenario) to inject faults.";

bool alive(RankState s) {
    return s == RankState::Starting || s == RankState::Running || s == RankState::Paused ||
           s == RankState::Hung;
}

std::string upper(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        c = char(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

// Width of a button with this label (the part before "##").
float buttonWidth(const char* label) {
    return ImGui::CalcTextSize(label, nullptr, true).x + ImGui::GetStyle().FramePadding.x * 2.0f;
}

// Place the next button on the current line if it fits, else on a new line.
void flowNext(float& right, float width) {
    const ImGuiStyle& style = ImGui::GetStyle();
    const float limit = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
    if (right > 0.0f && right + style.ItemSpacing.x + width <= limit)
        ImGui::SameLine();
}

const char* const kButtons[] = {"Kill", "Hang", "Resume", "Slow", "Restart"};

// The tile buttons use tighter padding and spacing so all five fit on one row.
ImVec2 compactPadding() {
    const ImGuiStyle& style = ImGui::GetStyle();
    return ImVec2(std::max(2.0f, style.FramePadding.x * 0.5f), style.FramePadding.y);
}
ImVec2 compactSpacing() {
    const ImGuiStyle& style = ImGui::GetStyle();
    return ImVec2(std::max(2.0f, style.ItemSpacing.x * 0.6f), style.ItemSpacing.y);
}
void pushCompactButtons() {
    const ImVec2 padding = compactPadding();
    const ImVec2 spacing = compactSpacing();
    ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, padding);
    ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, spacing);
}
// Width of the five tile buttons on one row.
float compactButtonsWidth() {
    float w = 0.0f;
    for (const char* b : kButtons)
        w += ImGui::CalcTextSize(b).x + compactPadding().x * 2.0f;
    return w + compactSpacing().x * 4.0f;
}

// The selected tile's outline, around the item just drawn (a tile's child window).
void outlineLastItem(const Theme& theme) {
    const ImVec2 a = ImGui::GetItemRectMin();
    const ImVec2 b = ImGui::GetItemRectMax();
    ImGui::GetWindowDrawList()->AddRect(ImVec2(a.x - 1, a.y - 1), ImVec2(b.x + 1, b.y + 1),
                                        accentColor(theme), ImGui::GetStyle().ChildRounding, 0, 3.0f);
}

} // namespace

const char* TopologyView::helpText() const {
    return "Every rank of the run as a tile: its state (colour and word), the steps it completed, the host "
           "and "
           "process id, its last loss and step time.\n\n"
           "Buttons act on the real process:\n"
           "  Kill: SIGKILL, the process dies at once.\n"
           "  Hang: SIGSTOP, the process freezes; its peers wait in the next collective until the timeout.\n"
           "  Resume: SIGCONT, a hung rank continues.\n"
           "  Slow: adds a stated delay to each of its steps; every other rank waits for it at the "
           "all-reduce.\n"
           "  Restart: a dead replica of a fault-tolerant run ([fault_tolerance]) starts again, heals from "
           "a live peer and rejoins; plain DDP cannot take a rank back.\n\n"
           "Click a tile to select the rank: the timeline and event log follow, and the details below show "
           "its "
           "pid, host, process groups with their backend (gloo or mpi), delay, the checksum of its weights "
           "after its last step (replicas that must agree show the same one) and the errors it logged.\n\n"
           "Replica groups of several ranks (fault tolerance over fsdp, zero or pipeline groups): each "
           "group starts a row of its own under a line naming it; a group is one failure domain, so a "
           "kill takes all of its ranks down, they restart together and heal shard by shard from a live "
           "group.\n\n"
           "When not every tile fits, a rank that dies scrolls into view (its group's line, with groups).\n\n"
           "More than 8 ranks whose tiles do not fit: the tiles turn compact (rank, state colour, steps "
           "done; hover for the rest), so that every rank stays in view, and the selected rank's fault "
           "buttons move to its details.\n\n"
           "Clock: every timestamp is on the Session's clock. A rank on the Session's host shares its "
           "clock (offset 0, exact); a rank on another host measures its offset by ping-pong every 1.25 s, "
           "and its tile shows the error bound (\xC2\xB1 half the round trip, plus the drift since).";
}

LayoutPlace TopologyView::layoutPlace(const LayoutContext&) const {
    LayoutPlace place;
    place.area = LayoutArea::LeftTop;
    return place;
}

bool TopologyView::isEmpty(const ViewInputs& inputs) const {
    return !inputs.model || !inputs.ranks || inputs.ranks->empty();
}

void TopologyView::drawEmptyState(const ViewInputs&) {
    emptyState("No run yet",
               "Open a scenario (File > Open scenario, Ctrl+O, or drop a .toml file on the window) "
               "to start its ranks.");
}

namespace {

// Dead, or dead and waiting for the supervisor to start it again.
bool rankIsDown(RankState state) {
    return state == RankState::Killed || state == RankState::Failed || state == RankState::Restarting;
}

// The process groups of `rank` and the library that moves their bytes, e.g.
// "world, shard 0, replicate 1: mpi" or "cross-replica (quorum): gloo".
std::string rankGroupsLabel(const Scenario& s, int rank) {
    const std::string& backend = s.topology.backend;
    if (s.strategy.kind == StrategyKind::Collectives) {
        std::string names;
        for (const std::string& b : s.collectives.backends)
            names += (names.empty() ? "" : " and ") + b;
        return "world on " + names + " (compared)";
    }
    if (s.fault_tolerance.enabled)
        return "cross-replica (quorum): gloo, rebuilt per quorum";
    if (s.strategy.kind == StrategyKind::Hsdp) {
        const int shards = std::max(1, s.topology.ranks / std::max(1, s.topology.replicas));
        return "world, shard " + std::to_string(rank / shards) + ", replicate " +
               std::to_string(rank % shards) + ": " + backend;
    }
    if (s.strategy.kind == StrategyKind::Pipeline && s.topology.ranks > s.topology.stages)
        return "world, stage " + std::to_string(rank % std::max(1, s.topology.stages)) +
               " data-parallel: " + backend;
    return "world: " + backend;
}

} // namespace

std::vector<const LogRecord*> rankErrors(const RunModel& model, int rank, int64_t until_ns) {
    std::vector<const LogRecord*> out;
    const std::string name = "rank " + std::to_string(rank);
    for (const LogRecord& log : model.logs()) {
        if (log.t_ns > until_ns)
            break; // after the time cursor
        if (log.level == LogLevel::Info)
            continue;
        // A rank's own lines, and the Session's lines that name it ("SIGKILL sent to rank 1").
        const size_t at = log.text.find(name);
        const bool names_it = at != std::string::npos &&
                              (at + name.size() == log.text.size() ||
                               !std::isdigit(static_cast<unsigned char>(log.text[at + name.size()])));
        if (log.rank == rank || (log.rank < 0 && names_it))
            out.push_back(&log);
    }
    return out;
}

TileHeader fitTileHeader(const std::vector<std::string>& titles_long_to_short, const std::string& state,
                         float width, float padding,
                         const std::function<float(const std::string&)>& text_width) {
    const auto fits = [&](const std::string& title, const std::string& word) {
        return padding * 3.0f + text_width(title) + text_width(word) <= width;
    };
    for (const std::string& title : titles_long_to_short)
        if (fits(title, state))
            return {title, state};
    const std::string& shortest = titles_long_to_short.back();
    const std::string four = state.substr(0, 4);
    return {shortest, fits(shortest, four) ? four : std::string()};
}

namespace {

// A tile's header line at `origin` (full and compact tiles alike): the title
// at the left, the state word (as fitTileHeader chose it) at the right.
void drawTileHeader(ImDrawList* draw, ImVec2 origin, float width, float text_y, float pad, ImU32 colour,
                    const std::vector<std::string>& titles_long_to_short, const std::string& state) {
    const TileHeader header =
        fitTileHeader(titles_long_to_short, state, width, pad,
                      [](const std::string& t) { return ImGui::CalcTextSize(t.c_str()).x; });
    draw->AddText(ImVec2(origin.x + pad, text_y), colour, header.title.c_str());
    if (!header.word.empty())
        draw->AddText(ImVec2(origin.x + width - pad - ImGui::CalcTextSize(header.word.c_str()).x, text_y),
                      colour, header.word.c_str());
}

} // namespace

TileStatus tileStatus(const RunModel& model, const RankProgress& p, int64_t now_ns) {
    TileStatus t;
    t.state = upper(rankStateLabel(p.state));
    const bool training =
        p.state == RankState::Running || p.state == RankState::Paused || p.state == RankState::Healing;
    if (training && p.partitioned) { // it waits for a quorum it cannot get (the quorum view: unreachable)
        t.blocked = true;
        t.state = "PARTITIONED";
        t.wait = "cut off: waits for a quorum";
    } else if (training) {
        const SpanRecord* open = model.blockingCollective(p.rank);
        const int64_t waited = open ? now_ns - open->t0 : 0;
        if (open && waited > kCollectiveStuckAfterNs) {
            t.blocked = true;
            t.state = "BLOCKED";
            char buf[96];
            std::snprintf(buf, sizeof(buf), "waiting in %s for %.1f s", kindLabel(open->kind),
                          double(waited) / 1e9);
            t.wait = buf;
        }
    }
    if (p.step >= 0 && ((training && !t.blocked) || p.state == RankState::Finished)) {
        char buf[32];
        std::snprintf(buf, sizeof(buf), "%.0f ms/step", p.last_step_ms);
        t.step_time = buf;
    }
    return t;
}

float& TopologyView::slowMs(int rank) {
    if (int(m_slow_ms.size()) <= rank)
        m_slow_ms.resize(size_t(rank) + 1, 200.0f);
    return m_slow_ms[size_t(rank)];
}

void TopologyView::drawContent(const ViewInputs& inputs) {
    const std::vector<RankProgress>& ranks = *inputs.ranks;
    const int selected = inputs.selected_rank ? *inputs.selected_rank : -1;
    const ImGuiStyle& style = ImGui::GetStyle();
    const float line = ImGui::GetTextLineHeightWithSpacing();
    const int world = int(ranks.size());

    // Tile geometry: as many columns as fit at a readable width; a tile is a
    // header, three lines of text and one row of compact buttons.
    const float details_h = selected >= 0 ? line * 10.5f : line * 1.6f;
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float tiles_h = std::max(line * 6.0f, avail.y - details_h);
    auto columnsFor = [&](float width) {
        const float min_w = ImGui::GetFontSize() * 12.5f + style.WindowPadding.x * 2.0f;
        return std::clamp(int((width + style.ItemSpacing.x) / (min_w + style.ItemSpacing.x)), 1,
                          std::max(1, world));
    };
    auto tileWidth = [&](float width, int columns) {
        return std::floor((width - style.ItemSpacing.x * float(columns - 1)) / float(columns));
    };
    // The five buttons take one row when they fit, else two.
    auto tileHeight = [&](float tile_w) {
        const int button_rows = compactButtonsWidth() <= tile_w - style.WindowPadding.x * 2.0f ? 1 : 2;
        return std::floor(style.WindowPadding.y * 2.0f + (line + 4.0f) + line * 3.0f +
                          float(button_rows) * (ImGui::GetFrameHeight() + compactSpacing().y));
    };
    // Replica groups of several ranks (fault tolerance over fsdp, zero or
    // pipeline groups): each group starts a row of its own under a header
    // line naming it one failure domain, so the room sees a kill take the
    // whole group down and the group heal together. Compact tiles (many
    // ranks) keep one grid; their titles say gN.
    const int group_size = ftGroupSize(inputs.model->scenario());
    const bool groups_apart = group_size > 1 && world % group_size == 0;
    const int groups = groups_apart ? world / group_size : 0;
    const auto gridRows = [&](int columns) {
        return groups_apart ? groups * ((group_size + columns - 1) / columns)
                            : (world + columns - 1) / columns;
    };
    const auto gridHeight = [&](int rows, float tile_h) {
        return float(rows) * (tile_h + style.ItemSpacing.y) + float(groups) * line;
    };
    float width = avail.x;
    int columns = columnsFor(width);
    float tile_w = tileWidth(width, columns);
    float tile_h = tileHeight(tile_w);
    int rows = gridRows(columns);
    // Many ranks (32 on a laptop): compact tiles, so that the room sees every
    // rank at once; a tile's buttons are then in the selected rank's details.
    const bool compact = world > kCompactAbove && gridHeight(rows, tile_h) > tiles_h;
    // A compact tile: tight padding, room for "r31 PAUSED" at the least.
    const ImVec2 compact_pad(style.FramePadding.x, 2.0f);
    const auto compactColumns = [&](float w) {
        const float min_w = ImGui::GetFontSize() * 5.5f + compact_pad.x * 2.0f;
        return std::clamp(int((w + style.ItemSpacing.x) / (min_w + style.ItemSpacing.x)), 1, world);
    };
    if (compact) {
        columns = compactColumns(width);
        tile_w = tileWidth(width, columns);
        tile_h = std::floor(compact_pad.y * 2.0f + (line + 2.0f) + line);
        rows = (world + columns - 1) / columns;
    }
    const int header_groups = compact ? 0 : groups; // group header lines drawn
    const auto laidOutHeight = [&] {
        return float(rows) * (tile_h + style.ItemSpacing.y) + float(header_groups) * line;
    };
    if (laidOutHeight() > tiles_h) { // a scrollbar will take its width
        width -= style.ScrollbarSize;
        if (compact) {
            columns = compactColumns(width);
            tile_w = tileWidth(width, columns);
        } else {
            columns = columnsFor(width);
            tile_w = tileWidth(width, columns);
            tile_h = tileHeight(tile_w);
        }
        rows = compact ? (world + columns - 1) / columns : gridRows(columns);
    }
    m_grid.compact = compact;
    m_grid.columns = columns;
    m_grid.rows = rows;
    m_grid.group_headers = header_groups;
    m_grid.fits = laidOutHeight() <= tiles_h + style.ItemSpacing.y;

    // TODO(topology): with pipeline stages, lay a group's tiles out as stages
    // (columns) x shards (rows inside a stage) instead of one row of ranks.
    ImGui::BeginChild("tiles", ImVec2(0, tiles_h), false);
    if (compact)
        ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, compact_pad);
    // A rank that has just died scrolls into view when not every tile fits
    // (its group's header line, in a grouped layout): the room sees the kill.
    // A block is what starts at a line of its own: a group (header and rows)
    // in a grouped layout, else a row of tiles.
    m_was_down.resize(size_t(world), false);
    for (int r = 0; r < world; ++r) {
        const int place = header_groups > 0 ? r % group_size : r; // place in its group's rows
        const bool group_starts = header_groups > 0 && place == 0;
        const bool row_starts = place % columns == 0;
        if (!m_grid.fits && (group_starts || (header_groups == 0 && row_starts))) {
            const int block_end = std::min(world, r + (group_starts ? group_size : columns));
            for (int k = r; k < block_end; ++k)
                if (rankIsDown(ranks[size_t(k)].state) && !m_was_down[size_t(k)]) { // just died
                    ImGui::SetScrollHereY(0.0f);
                    break;
                }
        }
        if (group_starts)
            drawGroupHeader(inputs, r / group_size, group_size);
        if (!row_starts)
            ImGui::SameLine();
        if (compact)
            drawCompactTile(inputs, ranks[size_t(r)], tile_w, tile_h);
        else
            drawTile(inputs, ranks[size_t(r)], tile_w, tile_h);
    }
    for (int r = 0; r < world; ++r)
        m_was_down[size_t(r)] = rankIsDown(ranks[size_t(r)].state);
    m_grid.scroll_y = ImGui::GetScrollY();
    if (compact)
        ImGui::PopStyleVar();
    ImGui::EndChild();

    ImGui::Separator();
    if (selected >= 0 && selected < world)
        drawDetails(inputs, selected);
    else
        ImGui::TextDisabled("Click a tile to see a rank's details.");
}

// "replica group 1 (ranks 2-3): one failure domain", then what the group is
// going through: down (a rank died: the Session restarts all of its ranks),
// healing (its ranks receive their shards from a live group), or nothing. One
// line: in a narrow pane the longest wording that fits, the state first kept.
void TopologyView::drawGroupHeader(const ViewInputs& inputs, int group, int group_size) {
    const std::vector<RankProgress>& ranks = *inputs.ranks;
    const int first = group * group_size;
    const int last = first + group_size - 1;
    bool down = false;
    bool healing = false;
    for (int r = first; r <= last && r < int(ranks.size()); ++r) {
        down |= rankIsDown(ranks[size_t(r)].state);
        healing |= ranks[size_t(r)].state == RankState::Healing;
    }
    const std::string g = std::to_string(group);
    const std::string span = " (ranks " + std::to_string(first) + "-" + std::to_string(last) + ")";
    // The wording is chosen as if the group were down (its longest), so that
    // every group's line reads the same way whatever its state.
    struct Wording {
        std::string name, down, healing;
    };
    const Wording wordings[] = {
        {"replica group " + g + span + ": one failure domain", "down: its ranks restart together",
         "healing from a live group"},
        {"replica group " + g + span, "down: its ranks restart together", "healing"},
        {"group " + g + span, "down, restarting", "healing"},
        {"group " + g, "down", "healing"},
    };
    const float avail = ImGui::GetContentRegionAvail().x;
    const float gap = ImGui::GetStyle().ItemSpacing.x;
    const Wording* chosen = &wordings[3];
    for (const Wording& w : wordings) {
        const float longest =
            std::max(ImGui::CalcTextSize(w.down.c_str()).x, ImGui::CalcTextSize(w.healing.c_str()).x);
        if (ImGui::CalcTextSize(w.name.c_str()).x + gap + longest <= avail) {
            chosen = &w;
            break;
        }
    }
    ImGui::TextUnformatted(chosen->name.c_str());
    if (down || healing) {
        ImGui::SameLine();
        const RankState shown = down ? RankState::Killed : RankState::Healing;
        ImGui::TextColored(ImColor(rankStateColor(shown, *inputs.theme)), "%s",
                           down ? chosen->down.c_str() : chosen->healing.c_str());
    }
}

void TopologyView::drawTile(const ViewInputs& inputs, const RankProgress& p, float width, float height) {
    const Theme& theme = *inputs.theme;
    const bool selected = inputs.selected_rank && *inputs.selected_rank == p.rank;
    const Scenario& scenario = inputs.model->scenario();
    ImGui::PushID(p.rank);
    ImGui::BeginChild("tile", ImVec2(width, height), true,
                      ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImGuiStyle& style = ImGui::GetStyle();
    const float line = ImGui::GetTextLineHeightWithSpacing();

    // Header: state colour, "rank N" left, state word right. Click = select.
    const ImVec2 h0 = ImGui::GetCursorScreenPos();
    const float inner_w = ImGui::GetContentRegionAvail().x;
    const ImVec2 h1(h0.x + inner_w, h0.y + line + 2.0f);
    const TileStatus status = tileStatus(*inputs.model, p, inputs.now_ns);
    draw->AddRectFilled(h0, h1, status.blocked ? warningColor(theme) : rankStateColor(p.state, theme),
                        style.FrameRounding);
    const ImU32 text = rankStateTextColor(status.blocked ? RankState::Hung : p.state, theme);
    // The title, long to short ("rank 2  stage 0 server 0", "rank 2  s0 / k0",
    // "r2 s0/k0"), fitted with the state word so that nothing overlaps.
    const int group_size = ftGroupSize(inputs.model->scenario()); // replica groups of several ranks
    const SwarmLayout swarm = SwarmLayout::of(scenario);
    const bool is_swarm = scenario.strategy.kind == StrategyKind::Swarm;
    const std::string r = std::to_string(p.rank);
    std::vector<std::string> titles;
    if (is_swarm && swarm.isServer(p.rank)) {
        const std::string st = std::to_string(swarm.stageOf(p.rank));
        const std::string k = std::to_string(swarm.serverIndexOf(p.rank));
        titles = {"rank " + r + "  stage " + st + " server " + k, "rank " + r + "  s" + st + " / k" + k,
                  "r" + r + " s" + st + "/k" + k};
    } else if (is_swarm) {
        titles = {"rank " + r + "  trainer", "r" + r + " trainer"};
    } else if (group_size > 1) {
        const std::string g = std::to_string(p.rank / group_size);
        titles = {"rank " + r + "  group " + g, "r" + r + " g" + g};
    } else {
        titles = {"rank " + r, "r" + r};
    }
    const float pad = style.FramePadding.x;
    const float ty = h0.y + 1.0f + (line - ImGui::GetTextLineHeight()) * 0.5f;
    drawTileHeader(draw, h0, inner_w, ty, pad, text, titles, status.state);
    if (ImGui::InvisibleButton("select", ImVec2(inner_w, line + 2.0f)))
        inputs.act().selectRank(p.rank);
    ImGui::Dummy(ImVec2(0, 2.0f));

    // Body: three lines, the same height for every tile.
    const int total = scenario.run.steps;
    if (is_swarm && swarm.isServer(p.rank))
        ImGui::TextDisabled("serves stage %d: no steps", swarm.stageOf(p.rank)); // calls, not steps
    else
        ImGui::Text("step %d / %d", std::max(0, p.step + 1), total);
    if (p.step >= 0) {
        ImGui::SameLine(0.0f, ImGui::GetFontSize());
        if (std::isnan(p.last_loss))
            ImGui::TextDisabled("no loss here"); // a pipeline stage before the last
        else
            ImGui::Text("loss %.3f", p.last_loss);
    }
    // The step time first (not while blocked, hung or dead: it would read as
    // current), then where the process runs; elided at the tile's edge, whole on hover.
    std::string where = status.step_time.empty() ? "" : status.step_time + "   ";
    if (p.pid > 0)
        where += (p.host.empty() ? std::string("localhost") : p.host) + "  pid " + std::to_string(p.pid) +
                 "  " +
                 (scenario.fault_tolerance.enabled                      ? "gloo"
                  : scenario.strategy.kind == StrategyKind::Collectives ? "gloo+mpi"
                                                                        : scenario.topology.backend);
    else
        where += "not started";
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    textElided(where, ImGui::GetContentRegionAvail().x);
    ImGui::PopStyleColor();
    // A rank on another host: how far its timestamps may be off (same host:
    // exact, nothing to say). On the third line, when it has nothing more urgent.
    const RankClockText clock =
        p.rank < inputs.model->world() ? rankClockText(inputs.model->lane(p.rank)) : RankClockText{};
    if (ImGui::IsItemHovered() && !clock.detail.empty() && clock.detail != "-")
        ImGui::SetTooltip("clock: %s", clock.detail.c_str());
    if (status.blocked)
        ImGui::TextColored(ImColor(warningColor(theme)), "%s", status.wait.c_str());
    else if (p.delay_ms > 0)
        ImGui::TextColored(ImColor(warningColor(theme)),
                           is_swarm && swarm.isServer(p.rank) ? "slowed: +%.0f ms per call"
                                                              : "slowed: +%.0f ms per step",
                           p.delay_ms);
    else if (p.state == RankState::Hung)
        ImGui::TextColored(ImColor(warningColor(theme)), "stopped by SIGSTOP");
    else if (!clock.tile.empty()) {
        ImGui::TextDisabled("%s", clock.tile.c_str());
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("clock: %s", clock.detail.c_str());
    } else
        ImGui::TextUnformatted("");

    // The buttons act on the process now: enabled from its state now, also at a time cursor.
    const bool has_now = inputs.cursor() && inputs.facts && size_t(p.rank) < inputs.facts->ranks.size();
    drawFaultButtons(inputs, has_now ? inputs.facts->ranks[size_t(p.rank)] : p);

    // Clicking the tile's background selects it too.
    if (ImGui::IsWindowHovered() && ImGui::IsMouseClicked(0) && !ImGui::IsAnyItemHovered())
        inputs.act().selectRank(p.rank);
    ImGui::EndChild();
    if (selected)
        outlineLastItem(theme);
    ImGui::PopID();
}

// A compact tile: the state's colour with "r<N>" and a short state word, then
// the steps done; everything else in its tooltip and the details below.
void TopologyView::drawCompactTile(const ViewInputs& inputs, const RankProgress& p, float width,
                                   float height) {
    const Theme& theme = *inputs.theme;
    const bool selected = inputs.selected_rank && *inputs.selected_rank == p.rank;
    ImGui::PushID(p.rank);
    ImGui::BeginChild("ctile", ImVec2(width, height), true,
                      ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
    ImDrawList* draw = ImGui::GetWindowDrawList();
    const ImGuiStyle& style = ImGui::GetStyle();
    const float line = ImGui::GetTextLineHeightWithSpacing();
    const TileStatus status = tileStatus(*inputs.model, p, inputs.now_ns);
    const ImVec2 h0 = ImGui::GetCursorScreenPos();
    const float inner_w = ImGui::GetContentRegionAvail().x;
    draw->AddRectFilled(h0, ImVec2(h0.x + inner_w, h0.y + line + 2.0f),
                        status.blocked ? warningColor(theme) : rankStateColor(p.state, theme),
                        style.FrameRounding);
    const ImU32 text = rankStateTextColor(status.blocked ? RankState::Hung : p.state, theme);
    const int group_size = ftGroupSize(inputs.model->scenario());
    const std::string title = "r" + std::to_string(p.rank) +
                              (group_size > 1 ? " g" + std::to_string(p.rank / group_size) : std::string());
    const float ty = h0.y + 1.0f + (line - ImGui::GetTextLineHeight()) * 0.5f;
    drawTileHeader(draw, h0, inner_w, ty, style.FramePadding.x, text, {title}, status.state);
    if (ImGui::InvisibleButton("select", ImVec2(inner_w, line + 2.0f)))
        inputs.act().selectRank(p.rank);
    const bool header_hovered = ImGui::IsItemHovered();
    ImGui::Text("%d/%d", std::max(0, p.step + 1), inputs.model->scenario().run.steps);
    if (header_hovered || (ImGui::IsWindowHovered() && !ImGui::IsAnyItemActive())) {
        std::string tip = "rank " + std::to_string(p.rank) + ": " + status.state + ", step " +
                          std::to_string(std::max(0, p.step + 1)) + " / " +
                          std::to_string(inputs.model->scenario().run.steps);
        if (!std::isnan(p.last_loss) && p.step >= 0) {
            char loss[32];
            std::snprintf(loss, sizeof(loss), ", loss %.3f", p.last_loss);
            tip += loss;
        }
        if (!status.step_time.empty())
            tip += ", " + status.step_time;
        if (status.blocked)
            tip += "\n" + status.wait;
        ImGui::SetTooltip("%s\nclick: its details and fault buttons below", tip.c_str());
    }
    if (ImGui::IsWindowHovered() && ImGui::IsMouseClicked(0) && !ImGui::IsAnyItemHovered())
        inputs.act().selectRank(p.rank);
    ImGui::EndChild();
    if (selected)
        outlineLastItem(theme);
    ImGui::PopID();
}

void TopologyView::drawFaultButtons(const ViewInputs& inputs, const RankProgress& p) {
    ViewActions& act = inputs.act();
    const bool live = inputs.live;
    const char* why = live ? nullptr : kReplayTip;
    if (!live && !inputs.replay)
        why = "the run is over";
    const std::string tag = "##rank" + std::to_string(p.rank);
    const bool is_alive = alive(p.state);
    pushCompactButtons();
    float right = 0.0f;
    auto place = [&](const char* label) { flowNext(right, buttonWidth(label)); };
    auto after = [&] { right = ImGui::GetItemRectMax().x; };

    place("Kill");
    if (act.button(("Kill" + tag).c_str(), live && is_alive, why ? why : "the process has exited"))
        act.killRank(p.rank);
    after();
    place("Hang");
    if (act.button(
            ("Hang" + tag).c_str(), live && is_alive && p.state != RankState::Hung,
            why ? why
                : (p.state == RankState::Hung ? "already hung: press Resume" : "the process has exited")))
        act.hangRank(p.rank);
    after();
    place("Resume");
    if (act.button(("Resume" + tag).c_str(), live && p.state == RankState::Hung,
                   why ? why : "only a hung rank (SIGSTOP) can be resumed"))
        act.resumeRank(p.rank);
    after();
    place("Slow");
    if (act.button(("Slow" + tag).c_str(), live && is_alive, why ? why : "the process has exited"))
        ImGui::OpenPopup("slow_popup");
    after();
    drawSlowPopup(inputs, p.rank);
    place("Restart");
    // A fault-tolerant run takes a dead replica back (a new incarnation that heals
    // from a live peer); plain training cannot: its process group has lost a member.
    const bool restartable = inputs.model->scenario().fault_tolerance.enabled;
    const bool dead =
        p.state == RankState::Killed || p.state == RankState::Failed || p.state == RankState::Restarting;
    const std::string restart_why =
        restartable ? "only a dead replica can be restarted"
                    : std::string("needs [fault_tolerance]: a ") +
                          strategyKindName(inputs.model->scenario().strategy.kind) +
                          " run without it cannot take a rank back into its process group";
    if (act.button(("Restart" + tag).c_str(), live && restartable && dead, why ? why : restart_why.c_str()))
        act.restartRank(p.rank);
    after();
    ImGui::PopStyleVar(2);
}

void TopologyView::drawSlowPopup(const ViewInputs& inputs, int rank) {
    ViewActions& act = inputs.act();
    if (!ImGui::BeginPopup("slow_popup"))
        return;
    ImGui::Text("Delay added to each step of rank %d", rank);
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 14.0f);
    ImGui::SliderFloat("##slow_ms", &slowMs(rank), 0.0f, 1000.0f, "%.0f ms per step");
    if (act.button(("Apply##slowpopup" + std::to_string(rank)).c_str())) {
        act.slowRank(rank, slowMs(rank));
        ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (act.button(("Normal speed##slowpopup" + std::to_string(rank)).c_str())) {
        act.slowRank(rank, 0.0);
        ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
}

void TopologyView::drawDetails(const ViewInputs& inputs, int rank) {
    const RankProgress& p = (*inputs.ranks)[size_t(rank)];
    const Scenario& scenario = inputs.model->scenario();
    ImGui::Text("Rank %d", rank);
    ImGui::SameLine();
    ImGui::TextColored(ImColor(rankStateColor(p.state, *inputs.theme)), "%s",
                       std::string(rankStateLabel(p.state)).c_str());
    if (const TileStatus status = tileStatus(*inputs.model, p, inputs.now_ns); status.blocked) {
        ImGui::SameLine();
        ImGui::TextColored(ImColor(warningColor(*inputs.theme)), "but blocked: %s", status.wait.c_str());
    }
    if (m_grid.compact) { // compact tiles have no buttons: the selected rank's are here
        const bool has_now = inputs.cursor() && inputs.facts && size_t(rank) < inputs.facts->ranks.size();
        ImGui::PushID("details_buttons");
        ImGui::PushID(rank);
        drawFaultButtons(inputs, has_now ? inputs.facts->ranks[size_t(rank)] : p);
        ImGui::PopID();
        ImGui::PopID();
    }
    if (ImGui::BeginTable("details", 4, ImGuiTableFlags_SizingStretchProp)) {
        auto cell = [](const char* key, const std::string& value) {
            ImGui::TableNextColumn();
            ImGui::TextDisabled("%s", key);
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(value.c_str());
        };
        char buf[64];
        cell("pid", p.pid > 0 ? std::to_string(p.pid) : "-");
        cell("host", p.host.empty() ? "-" : p.host);
        cell("groups", rankGroupsLabel(scenario, rank));
        cell("steps done",
             std::to_string(std::max(0, p.step + 1)) + " / " + std::to_string(scenario.run.steps));
        std::snprintf(buf, sizeof(buf), "%.0f ms", p.last_step_ms);
        cell("last step", p.step >= 0 ? buf : "-");
        std::snprintf(buf, sizeof(buf), "%.4f", p.last_loss);
        cell("last loss", p.step >= 0 && !std::isnan(p.last_loss) ? buf : "-");
        std::snprintf(buf, sizeof(buf), "+%.0f ms per step", p.delay_ms);
        cell("delay", p.delay_ms > 0 ? buf : "none");
        ImGui::EndTable();
    }
    // The parameters' checksum after the rank's last step (fault tolerant: its
    // last commit) at the cursor, on a line of its own (16 hex digits): replicas
    // that must agree show the same one.
    if (const Event* checksum = rank < inputs.model->world() ? checksumAt(inputs.model->lane(rank),
                                                                          inputs.cursor().value_or(INT64_MAX))
                                                             : nullptr) {
        ImGui::TextDisabled("weights");
        ImGui::SameLine();
        ImGui::Text("checksum %016llx after step %d", (unsigned long long)checksum->seq, checksum->step);
    }
    // The clock on a line of its own: the measured case is a sentence.
    ImGui::TextDisabled("clock");
    ImGui::SameLine();
    ImGui::TextWrapped(
        "%s", rank < inputs.model->world() ? rankClockText(inputs.model->lane(rank)).detail.c_str() : "-");
    // Slow: slider + Apply (the same as the tile's Slow popup).
    const bool can_slow = inputs.live && alive(p.state);
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12.0f);
    if (!can_slow)
        ImGui::BeginDisabled();
    ImGui::SliderFloat("##details_slow", &slowMs(rank), 0.0f, 1000.0f, "%.0f ms per step");
    if (!can_slow)
        ImGui::EndDisabled();
    ImGui::SameLine();
    if (inputs.act().button(("Apply##slow" + std::to_string(rank)).c_str(), can_slow,
                            inputs.live ? "the process has exited" : kReplayTip))
        inputs.act().slowRank(rank, slowMs(rank));

    const std::vector<const LogRecord*> errors =
        rankErrors(*inputs.model, rank, inputs.cursor().value_or(INT64_MAX));
    if (errors.empty()) {
        ImGui::TextDisabled("No errors or warnings logged for this rank.");
        return;
    }
    ImGui::TextDisabled("Errors and warnings (latest last):");
    ImGui::BeginChild("errors", ImVec2(0, 0), false);
    const size_t first = errors.size() > 6 ? errors.size() - 6 : 0;
    for (size_t i = first; i < errors.size(); ++i) {
        const LogRecord& log = *errors[i];
        const ImU32 color = log.level == LogLevel::Error ? rankStateColor(RankState::Failed, *inputs.theme)
                                                         : warningColor(*inputs.theme);
        ImGui::PushStyleColor(ImGuiCol_Text, color);
        ImGui::TextWrapped("%s%s", log.rank < 0 ? "session: " : "", log.text.c_str());
        ImGui::PopStyleColor();
    }
    ImGui::EndChild();
}

} // namespace dt::app
