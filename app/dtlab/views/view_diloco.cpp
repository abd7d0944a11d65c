// view_diloco.cpp: the DiLoCo view (see view_diloco.hpp).
//
// [SECTION] Helpers and the empty states (the state it draws: model/diloco_state.hpp)
// [SECTION] Help
// [SECTION] Drawing: header, link control, replicas, schedule strip, two copies, bytes plot
#include "views/view_diloco.hpp"

#include "dtlab/sharding_theory.hpp"
#include "widgets/elide.hpp"
#include "widgets/format.hpp"
#include "widgets/help.hpp"
#include "widgets/palette.hpp"
#include "widgets/plot.hpp"

// The fragment schedule is the engine's own (a pure header, no LibTorch). It
// lives under engine/src, which the app does not see on its include path.
#include "dtlab/diloco_schedule.hpp"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dt::app {

// -----------------------------------------------------------------------------
// [SECTION] Helpers and the empty states
// -----------------------------------------------------------------------------

namespace {

// One colour per fragment (mid-tone: they read on both themes).
ImU32 fragmentColor(int fragment) {
    static constexpr ImU32 colors[] = {
        IM_COL32(38, 166, 204, 255), // cyan
        IM_COL32(240, 130, 60, 255), // orange
        IM_COL32(171, 71, 188, 255), // purple
        IM_COL32(120, 180, 60, 255), // green
        IM_COL32(230, 190, 40, 255), // gold
        IM_COL32(230, 90, 120, 255), // rose
    };
    return colors[size_t(std::max(fragment, 0)) % (sizeof(colors) / sizeof(colors[0]))];
}

// "root + blocks 0, 2": the units of one fragment (diloco_schedule.hpp: block b
// belongs to fragment b mod F; the root unit, embeddings and head, to fragment 0).
std::string fragmentUnits(const Scenario& scenario, int fragment, int fragments) {
    const UnitLayout layout = unitLayout(scenario.model);
    std::string blocks;
    for (size_t u = 0; u < layout.unit_numel.size(); ++u)
        if (diloco::fragmentOfUnit(int(u), fragments) == fragment)
            blocks += (blocks.empty() ? "" : ", ") + std::to_string(u);
    std::string out = diloco::fragmentOfUnit(-1, fragments) == fragment ? "root" : "";
    if (!blocks.empty())
        out += (out.empty() ? "blocks " : " + blocks ") + blocks;
    return out.empty() ? "-" : out;
}

std::string linkLabel(double mbit_s, double latency_ms) {
    char text[64];
    if (mbit_s <= 0.0)
        std::snprintf(text, sizeof(text), "uncapped, %.0f ms", latency_ms);
    else if (mbit_s >= 1000.0)
        std::snprintf(text, sizeof(text), "%.3g Gbit/s, %.0f ms", mbit_s / 1000.0, latency_ms);
    else
        std::snprintf(text, sizeof(text), "%.3g Mbit/s, %.0f ms", mbit_s, latency_ms);
    return text;
}

// A DiLoCo run.
bool isDilocoRun(const Scenario& scenario) {
    return scenario.strategy.kind == StrategyKind::Diloco;
}

// A run on a modelled link ([network]).
bool hasModelledLink(const Scenario& scenario) {
    return scenario.network.bandwidth_mbit_s > 0.0 || scenario.network.latency_ms > 0.0;
}

} // namespace

DilocoEmpty dilocoEmpty(const ViewInputs& inputs) {
    if (!inputs.model)
        return DilocoEmpty::NoRun;
    if (!isDilocoRun(inputs.model->scenario()))
        return DilocoEmpty::NotDiloco;
    return DilocoEmpty::None;
}

// -----------------------------------------------------------------------------
// [SECTION] Help
// -----------------------------------------------------------------------------

DilocoView::DilocoView() : View("diloco", "DiLoCo") {
    open = false;
}

std::optional<bool> DilocoView::relevantTo(const Scenario& scenario) const {
    return isDilocoRun(scenario) || hasModelledLink(scenario);
}

LayoutPlace DilocoView::layoutPlace(const LayoutContext& context) const {
    LayoutPlace place;
    place.area = LayoutArea::LowerBand;
    const Scenario& s = context.scenario;
    if (isDilocoRun(s)) {
        place.height = std::round(preferredHeight(s.topology.ranks, s.diloco.fragments));
    } else {
        place.height = std::round(ImGui::GetFrameHeightWithSpacing() * 6.0f); // the link control alone
        place.compact = true;
    }
    return place;
}

bool DilocoView::isEmpty(const ViewInputs& inputs) const {
    return dilocoEmpty(inputs) != DilocoEmpty::None;
}

const char* DilocoView::helpText() const {
    return "DiLoCo (Distributed Low-Communication training), drawn from the real events.\n\n"
           "Each replica (here one rank) trains its own copy of the model for H inner steps without talking "
           "to "
           "the others. Then it sends its pseudo-gradient, how far its local copy moved away from the shared "
           "global copy, the replicas average them, and an outer optimizer (SGD with Nesterov momentum) "
           "moves "
           "the global copy, which every replica copies back into its local one. Streaming DiLoCo splits the "
           "model into fragments that sync at staggered steps, so the network carries a small piece at a "
           "time, "
           "and can apply a sync a few steps after sending it (sync delay) so the exchange overlaps "
           "training.\n\n"
           "Replicas: per fragment, the inner steps since its last sync (the bar fills up to the next one) "
           "and "
           "the rank's modelled link.\n"
           "Schedule: per fragment, triangles = pseudo-gradient sent, dots = outer step applied, the bar "
           "between "
           "them = the sync delay; the faint row above is the theory (the scenario's schedule).\n"
           "Two copies: sizes of the global and local parameters and the outer momentum per fragment, outer "
           "steps taken and the bytes one sync sends.\n"
           "Bytes on the wire: what the rank sent so far against the theory and against what DDP would have "
           "sent "
           "(one all-reduce of every gradient each step).\n\n"
           "Try: the link presets (10 Mbit/s) and watch the exchange stretch in the timeline while the inner "
           "steps go on.";
}

float DilocoView::preferredHeight(int ranks, int fragments) {
    const float line = ImGui::GetFrameHeightWithSpacing();
    const float top = float(2 + std::max(1, ranks)) + 1.0f + 1.5f * float(std::max(1, fragments)) + 2.5f;
    const float bottom = std::max(float(fragments) + 4.0f, 9.0f);
    return line * (top + bottom) + ImGui::GetStyle().WindowPadding.y * 2.0f;
}

// -----------------------------------------------------------------------------
// [SECTION] Drawing
// -----------------------------------------------------------------------------

void DilocoView::drawLinkControl(const ViewInputs& inputs) {
    if (!inputs.live || !inputs.ranks)
        return;
    const std::vector<RankProgress>& ranks = *inputs.ranks;
    ViewActions& act = inputs.act();
    std::optional<LinkRequest> request;
    const double now_mbit = ranks.empty() ? 0.0 : ranks.front().link_mbit_s;
    const double now_latency = ranks.empty() ? 0.0 : ranks.front().link_latency_ms;
    if (!m_link_editing) {
        m_mbit = float(now_mbit);
        m_latency = float(now_latency);
    }
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("Link of every rank:");
    struct Preset {
        const char* label;
        double mbit_s;
    };
    static constexpr Preset presets[] = {{"uncapped##link", 0.0},
                                         {"1 Gbit/s##link", 1000.0},
                                         {"100 Mbit/s##link", 100.0},
                                         {"10 Mbit/s##link", 10.0}};
    for (const Preset& p : presets) {
        sameLineOrWrap(ImGui::CalcTextSize(p.label, nullptr, true).x +
                       ImGui::GetStyle().FramePadding.x * 2.0f);
        const bool active = std::fabs(now_mbit - p.mbit_s) < 1e-6;
        if (active)
            ImGui::PushStyleColor(ImGuiCol_Button, ImGui::GetColorU32(ImGuiCol_ButtonActive));
        if (act.button(p.label))
            request = LinkRequest{p.mbit_s, double(m_latency)};
        if (active)
            ImGui::PopStyleColor();
    }
    // The slider and the latency field go on the next line when the rest of this one is too short.
    const ImGuiStyle& style = ImGui::GetStyle();
    const float controls_w = ImGui::CalcTextSize("bandwidth").x + ImGui::CalcTextSize("latency").x +
                             ImGui::GetFontSize() * 14.0f + style.ItemSpacing.x * 4.0f;
    sameLineOrWrap(controls_w);
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("bandwidth");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9.0f);
    ImGui::SliderFloat("##mbit", &m_mbit, 0.0f, 10000.0f, m_mbit < 0.5f ? "uncapped" : "%.0f Mbit/s",
                       ImGuiSliderFlags_Logarithmic);
    const bool slider_active = ImGui::IsItemActive();
    if (ImGui::IsItemDeactivatedAfterEdit())
        request = LinkRequest{m_mbit < 0.5f ? 0.0 : double(m_mbit), double(m_latency)};
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Modelled bandwidth of every rank's link (0 = uncapped)");
    ImGui::SameLine();
    ImGui::TextUnformatted("latency");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5.0f);
    ImGui::InputFloat("##latency", &m_latency, 0.0f, 0.0f, "%.0f ms");
    const bool latency_active = ImGui::IsItemActive();
    if (ImGui::IsItemDeactivatedAfterEdit())
        request = LinkRequest{m_mbit < 0.5f ? 0.0 : double(m_mbit), double(std::max(0.0f, m_latency))};
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Added to every collective (ms)");
    m_link_editing = slider_active || latency_active;
    if (request)
        act.setLink(-1, request->bandwidth_mbit_s, request->latency_ms);
}

void DilocoView::drawEmptyState(const ViewInputs& inputs) {
    m_shown_content.reset();
    switch (dilocoEmpty(inputs)) {
    case DilocoEmpty::NoRun:
        helpMarker(helpText());
        emptyState(
            "No run open: start a scenario or open a recording",
            "With [strategy] kind = \"diloco\" this view shows each replica's inner steps, the fragments' "
            "syncs against the schedule, the two copies of the model and the bytes on the wire. Try "
            "scenarios/diloco_streaming.toml.");
        m_state = DilocoViewState{};
        return;
    case DilocoEmpty::NotDiloco:
        helpMarker(helpText());
        drawLinkControl(inputs); // slow the link and watch every step wait for its all-reduce
        emptyState(
            "No DiLoCo run: set [strategy] kind = \"diloco\"",
            "This run communicates every step, so a slower link (the control above, on a live run) stretches "
            "every step. DiLoCo replicas train alone for H steps, then average pseudo-gradients. Open "
            "scenarios/diloco_slow_link.toml, diloco_streaming.toml or diloco_quantized.toml.");
        m_state = DilocoViewState{};
        return;
    case DilocoEmpty::None:
        return;
    }
}

void DilocoView::drawContent(const ViewInputs& inputs) {
    m_shown_content = ShownContent{"fragment lanes", 0, 0}; // drawSchedule counts them
    const RunModel& model = *inputs.model;
    const int64_t t = dilocoMoment(inputs.cursor_ns ? *inputs.cursor_ns : std::nullopt);
    const int shown = dilocoShownRank(inputs.selected_rank ? *inputs.selected_rank : -1);
    // Rebuilt only when the model, the moment or the shown rank changed.
    if (&model != m_model || model.generation() != m_generation || t != m_t || shown != m_shown) {
        m_state = dilocoViewState(model, inputs.ranks, shown, t);
        m_model = &model;
        m_generation = model.generation();
        m_t = t;
        m_shown = shown;
    }
    // Links change without events: read them every frame.
    if (inputs.ranks)
        applyLiveLinks(m_state, *inputs.ranks);

    // Header: the scenario's DiLoCo settings in one line.
    const DilocoConfig& d = model.scenario().diloco;
    helpMarker(helpText());
    ImGui::SameLine();
    char header[448];
    std::snprintf(
        header, sizeof(header),
        "H = %d inner steps | %d fragment%s%s | sync delay %d | %s pseudo-gradients | outer SGD lr %.2g, "
        "momentum %.2g%s | alpha %.2g%s",
        m_state.inner_steps, m_state.fragments, m_state.fragments == 1 ? "" : "s",
        m_state.fragments > 1 ? " (streaming)" : " (classic)", m_state.sync_delay, d.pseudo_gradient.c_str(),
        d.outer_lr, d.outer_momentum, d.nesterov && d.outer_momentum > 0 ? " Nesterov" : "", d.alpha,
        m_state.quorum_delay >= 0 ? " | under the quorum: one fragment's round every H / F steps, sent sync "
                                    "delay steps before it ends (TorchFT)"
                                  : "");
    textElided(header, ImGui::GetContentRegionAvail().x);
    drawLinkControl(inputs);

    if (model.empty() || m_state.current_step < 0) {
        emptyState("DiLoCo run starting: no step finished yet",
                   "Each replica's inner steps, the fragments' syncs and the bytes on the wire appear after "
                   "the first "
                   "step. The link can be set already.");
        return;
    }
    drawReplicas(inputs);
    drawSchedule(inputs);
    ImGui::Separator();
    // Bottom: the two copies (left) beside the bytes plot (right).
    // Side by side where both keep room (the copies' table wants about 34 em), else one above the other.
    const float avail_w = ImGui::GetContentRegionAvail().x;
    const float table_w = ImGui::GetFontSize() * 34.0f;
    if (avail_w >= table_w + ImGui::GetFontSize() * 12.0f) {
        ImGui::BeginChild("##diloco_copies", ImVec2(std::floor(std::max(avail_w * 0.5f, table_w)), 0.0f),
                          false);
        drawCopies();
        ImGui::EndChild();
        ImGui::SameLine();
        ImGui::BeginChild("##diloco_bytes", ImVec2(0.0f, 0.0f), false);
        drawBytes();
        ImGui::EndChild();
    } else {
        const float rows = float(std::max(1, m_state.fragments)) + 3.0f;
        ImGui::BeginChild("##diloco_copies", ImVec2(0.0f, ImGui::GetFrameHeightWithSpacing() * rows), false);
        drawCopies();
        ImGui::EndChild();
        ImGui::BeginChild("##diloco_bytes", ImVec2(0.0f, ImGui::GetFrameHeightWithSpacing() * 8.0f), false);
        drawBytes();
        ImGui::EndChild();
    }
}

void DilocoView::drawReplicas(const ViewInputs& inputs) {
    const DilocoViewState& st = m_state;
    const float label_w = ImGui::CalcTextSize("rank 00  step 0000/0000  ").x;
    const float link_w = ImGui::CalcTextSize("link 1000 Mbit/s, 000 ms").x;
    const ImGuiStyle& style = ImGui::GetStyle();
    for (const DilocoReplica& row : st.replicas) {
        ImGui::PushID(row.rank);
        const float x0 = ImGui::GetCursorPosX();
        ImGui::AlignTextToFramePadding();
        const bool selected = inputs.selected_rank && *inputs.selected_rank == row.rank;
        ImGui::TextColored(ImColor(palette::rankColor(row.rank)), "rank %d", row.rank);
        ImGui::SameLine();
        ImGui::Text("step %d/%d%s", row.last_step + 1, st.steps, selected ? " *" : "");
        ImGui::SameLine(x0 + label_w);
        // The link's words only where the bars keep room (its tooltip and the link control say it too).
        const bool show_link = ImGui::GetContentRegionAvail().x > link_w + ImGui::GetFontSize() * 6.0f;
        const float bars_w =
            std::max(std::min(60.0f, ImGui::GetContentRegionAvail().x),
                     ImGui::GetContentRegionAvail().x - (show_link ? link_w + style.ItemSpacing.x : 0.0f));
        const int F = int(row.since_sync.size());
        const float bar_w = std::floor((bars_w - style.ItemSpacing.x * float(F - 1)) / float(std::max(1, F)));
        for (int f = 0; f < F; ++f) {
            if (f > 0)
                ImGui::SameLine();
            const int since = row.since_sync[size_t(f)], period = std::max(1, row.period[size_t(f)]);
            // The bar's words, the longest that fits (ImGui centres an overlay and cuts both ends).
            char overlay[64];
            const float text_room = bar_w - style.FramePadding.x * 2.0f;
            std::snprintf(overlay, sizeof(overlay), "fragment %d: %d/%d steps since its sync", f, since,
                          period);
            if (ImGui::CalcTextSize(overlay).x > text_room)
                std::snprintf(overlay, sizeof(overlay), "fragment %d: %d/%d", f, since, period);
            if (ImGui::CalcTextSize(overlay).x > text_room)
                std::snprintf(overlay, sizeof(overlay), "%d/%d", since, period);
            if (ImGui::CalcTextSize(overlay).x > text_room)
                overlay[0] = '\0';
            ImGui::PushStyleColor(ImGuiCol_PlotHistogram, fragmentColor(f));
            ImGui::ProgressBar(std::clamp(float(since) / float(period), 0.0f, 1.0f), ImVec2(bar_w, 0.0f),
                               overlay);
            ImGui::PopStyleColor();
            if (ImGui::IsItemHovered())
                ImGui::SetTooltip(
                    "Rank %d trained %d inner steps on fragment %d since it last sent its pseudo-gradient;\n"
                    "the fragment syncs again after %d more (every H = %d steps).",
                    row.rank, since, f, std::max(0, period - since), st.inner_steps);
        }
        if (!show_link) {
            ImGui::PopID();
            continue;
        }
        ImGui::SameLine();
        ImGui::AlignTextToFramePadding();
        ImGui::TextDisabled("link %s", linkLabel(row.link_mbit_s, row.link_latency_ms).c_str());
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "The modelled link of rank %d: every collective takes at least latency + bytes / bandwidth",
                row.rank);
        ImGui::PopID();
    }
}

void DilocoView::drawSchedule(const ViewInputs&) {
    const DilocoViewState& st = m_state;
    const int n = st.steps;
    if (n <= 0)
        return;
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float line_h = ImGui::GetTextLineHeightWithSpacing();
    const ImU32 text_dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);

    // Visible steps: the whole run when short, else a window around the current step.
    const int visible = std::min(n, std::max(8 * st.inner_steps, 60));
    const int done = st.current_step + 1; // steps completed by the shown rank
    const int s0 = std::clamp(done - int(float(visible) * 0.7f), 0, n - visible);
    const int s1 = s0 + visible;

    const float label_w = ImGui::CalcTextSize("fragment 00  ").x;
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    const float width =
        std::max(80.0f, ImGui::GetContentRegionAvail().x - label_w - line_h * 0.5f); // room for the last mark
    const float x_left = origin.x + label_w;
    const auto x = [&](double boundary) { return x_left + float((boundary - s0) / double(visible)) * width; };
    const float lane_h = line_h * 1.5f; // theory marks above, the shown rank's below
    const float strip_h = lane_h * float(st.fragments);

    // Completed steps shaded; vertical grid every H steps.
    dl->AddRectFilled(ImVec2(x_left, origin.y), ImVec2(x_left + width, origin.y + strip_h),
                      IM_COL32(128, 128, 128, 22));
    dl->AddRectFilled(ImVec2(x_left, origin.y), ImVec2(x(std::clamp(done, s0, s1)), origin.y + strip_h),
                      IM_COL32(128, 128, 128, 38));
    for (int b = ((s0 + st.inner_steps - 1) / st.inner_steps) * st.inner_steps; b <= s1; b += st.inner_steps)
        dl->AddLine(ImVec2(x(b), origin.y), ImVec2(x(b), origin.y + strip_h), IM_COL32(128, 128, 128, 60));

    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const DilocoSync* hovered = nullptr;
    const float r = line_h * 0.28f;
    const auto triangle = [&](float cx, float cy, ImU32 color, bool filled) {
        const ImVec2 a(cx - r, cy - r), b(cx + r, cy - r), c(cx, cy + r);
        if (filled)
            dl->AddTriangleFilled(a, b, c, color);
        else
            dl->AddTriangle(a, b, c, color, 1.5f);
    };
    for (int f = 0; f < st.fragments; ++f) {
        const ImU32 color = fragmentColor(f);
        const ImU32 faint = palette::withAlpha(color, 0.45f);
        ++m_shown_content->total;
        m_shown_content->shown +=
            rowInsideWindow(origin.y + lane_h * float(f), origin.y + lane_h * float(f + 1)) ? 1 : 0;
        const float y_theory = origin.y + lane_h * float(f) + line_h * 0.4f;
        const float y_real = y_theory + line_h * 0.7f;
        // The label, in the fragment's colour, mid-lane.
        char label[48];
        std::snprintf(label, sizeof(label), "fragment %d", f);
        dl->AddText(
            ImVec2(origin.x, origin.y + lane_h * (float(f) + 0.5f) - ImGui::GetTextLineHeight() * 0.5f),
            color, label);
        if (f > 0)
            dl->AddLine(ImVec2(x_left, origin.y + lane_h * float(f)),
                        ImVec2(x_left + width, origin.y + lane_h * float(f)), IM_COL32(128, 128, 128, 70));
        dl->PushClipRect(ImVec2(x_left - r - 1.0f, origin.y),
                         ImVec2(x_left + width + r + 1.0f, origin.y + strip_h), true);
        // Theory: every send of the schedule, applied tau steps later (the last step applies at once).
        for (int s : dilocoTheorySends(f, st.inner_steps, st.fragments, n, st.quorum_delay)) {
            if (s + 1 < s0 || s + 1 > s1 + st.sync_delay)
                continue;
            const int apply = std::min(s + st.sync_delay, n - 1);
            if (apply > s)
                dl->AddLine(ImVec2(x(s + 1), y_theory), ImVec2(x(apply + 1), y_theory), faint, 2.0f);
            triangle(x(s + 1), y_theory, faint, false);
            dl->AddCircle(ImVec2(x(apply + 1), y_theory), r * 0.8f, faint, 12, 1.5f);
        }
        // Measured: the shown rank's sends and applies.
        for (const DilocoSync& sync : st.syncs) {
            if (sync.fragment != f)
                continue;
            const float xs = x(sync.send_step + 1);
            const float xa = sync.apply_step >= 0 ? x(sync.apply_step + 1) : x(done);
            if (std::max(xs, xa) < x_left - r || xs > x_left + width + r)
                continue;
            if (sync.apply_step < 0) { // in flight: a thinner bar up to now
                dl->AddLine(ImVec2(xs, y_real), ImVec2(std::max(xs, xa), y_real),
                            palette::withAlpha(color, 0.6f), 2.0f);
            } else if (xa > xs) {
                dl->AddLine(ImVec2(xs, y_real), ImVec2(xa, y_real), color, 4.0f);
            }
            triangle(xs, y_real, color, true);
            if (sync.apply_step >= 0)
                dl->AddCircleFilled(ImVec2(xa, y_real), r * 0.8f, color, 12);
            if (std::fabs(mouse.y - y_real) < line_h * 0.5f && mouse.x > std::min(xs, xa) - r &&
                mouse.x < std::max(xs, xa) + r)
                hovered = &sync;
        }
        dl->PopClipRect();
    }
    // "now": where the shown rank is.
    if (done >= s0 && done <= s1) {
        dl->AddLine(ImVec2(x(done), origin.y - 2.0f), ImVec2(x(done), origin.y + strip_h + 2.0f), text, 1.5f);
    }
    // Axis: steps completed.
    const float axis_y = origin.y + strip_h;
    const double tick = std::max(1.0, niceStep(double(visible) / std::max(1.0, double(width) / 60.0)));
    char buf[32];
    for (double b = std::ceil(s0 / tick) * tick; b <= s1 + 1e-9; b += tick) {
        dl->AddLine(ImVec2(x(b), axis_y), ImVec2(x(b), axis_y + 4.0f), text_dim);
        std::snprintf(buf, sizeof(buf), "%.0f", b);
        const float w = ImGui::CalcTextSize(buf).x;
        dl->AddText(ImVec2(x(b) - w * 0.5f, axis_y + 4.0f), text_dim, buf);
    }
    dl->AddText(ImVec2(origin.x, axis_y + 4.0f), text_dim, "steps done");
    ImGui::Dummy(ImVec2(label_w + width, strip_h + ImGui::GetTextLineHeight() + 6.0f));
    if (hovered) {
        const DilocoSync& s = *hovered;
        ImGui::BeginTooltip();
        ImGui::Text("fragment %d on rank %d", s.fragment, st.shown_rank);
        ImGui::Text("pseudo-gradient sent after step %d: %s encoded", s.send_step + 1,
                    formatBytes(double(s.bytes)).c_str());
        if (s.apply_step >= 0)
            ImGui::Text("outer step applied after step %d (%d step%s later; %s)", s.apply_step + 1,
                        s.apply_step - s.send_step, s.apply_step - s.send_step == 1 ? "" : "s",
                        formatDuration(double(s.apply_t - s.send_t)).c_str());
        else
            ImGui::TextUnformatted("in flight: the outer step is not applied yet");
        ImGui::EndTooltip();
    }
    // Legend.
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("rank %d: triangle = sent, dot = applied, bar = sync delay (%d step%s); "
                       "faint outlines above = theory; line = now",
                       st.shown_rank, st.sync_delay, st.sync_delay == 1 ? "" : "s");
    ImGui::PopStyleColor();
}

void DilocoView::drawCopies() {
    const DilocoViewState& st = m_state;
    const Scenario& sc = m_model->scenario();
    ImGui::TextUnformatted("Two copies of the model on every replica (fp32)");
    ImGui::SameLine();
    helpMarker("global: the outer parameters, equal on every replica; only outer steps change them.\n"
               "local: the parameters the inner optimizer trains; each replica's drift apart between syncs.\n"
               "pseudo-gradient = global - local, per fragment; the outer step moves global, then local is "
               "replaced by it (alpha = 0) or mixed with it.\n"
               "outer momentum: one buffer the size of the fragment (SGD momentum).");
    const ImGuiTableFlags flags =
        ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp;
    if (ImGui::BeginTable("##copies", 6, flags)) {
        ImGui::TableSetupColumn("fragment", ImGuiTableColumnFlags_WidthFixed);
        ImGui::TableSetupColumn("global");
        ImGui::TableSetupColumn("local");
        ImGui::TableSetupColumn("momentum");
        ImGui::TableSetupColumn("outer steps");
        ImGui::TableSetupColumn("sent / sync");
        ImGui::TableHeadersRow();
        int64_t numel = 0, per_period = 0;
        int outer_steps = 0;
        for (const DilocoFragment& f : st.frags) {
            numel += f.numel;
            per_period += f.bytes_per_sync;
            outer_steps += f.outer_steps;
            const std::string size = formatBytes(4.0 * double(f.numel));
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextColored(ImColor(fragmentColor(f.fragment)), "%d", f.fragment);
            if (ImGui::IsItemHovered())
                ImGui::SetTooltip("fragment %d: %s, %s parameters", f.fragment,
                                  fragmentUnits(sc, f.fragment, st.fragments).c_str(),
                                  formatCount(uint64_t(f.numel)).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(size.c_str());
            if (ImGui::IsItemHovered())
                ImGui::SetTooltip("%s parameters x 4 bytes", formatCount(uint64_t(f.numel)).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(size.c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(size.c_str());
            ImGui::TableNextColumn();
            if (f.in_flight)
                ImGui::Text("%d  (+1 in flight, applies after step %d)", f.outer_steps,
                            f.next_apply_step + 1);
            else
                ImGui::Text("%d", f.outer_steps);
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(formatBytes(double(f.bytes_per_sync)).c_str());
            if (ImGui::IsItemHovered())
                ImGui::SetTooltip(
                    "Theory: what one rank sends in one sync of this fragment (%s pseudo-gradient)",
                    sc.diloco.pseudo_gradient.c_str());
        }
        if (st.frags.size() > 1) {
            const std::string size = formatBytes(4.0 * double(numel));
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextDisabled("all");
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(size.c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(size.c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(size.c_str());
            ImGui::TableNextColumn();
            ImGui::Text("%d", outer_steps);
            ImGui::TableNextColumn();
            ImGui::Text("%s / %d steps", formatBytes(double(per_period)).c_str(), st.inner_steps);
        }
        ImGui::EndTable();
    }
    std::string units;
    for (const DilocoFragment& f : st.frags)
        units += (units.empty() ? "" : "; ") + std::string("fragment ") + std::to_string(f.fragment) + " = " +
                 fragmentUnits(sc, f.fragment, st.fragments);
    ImGui::TextWrapped("%s (root = embeddings, final norm, head).", units.c_str());
    const bool adamw = sc.optimizer.kind == "adamw";
    ImGui::TextWrapped("Outer: SGD lr %.2g, momentum %.2g%s. Inner: %s%s, never sent.", sc.diloco.outer_lr,
                       sc.diloco.outer_momentum,
                       sc.diloco.nesterov && sc.diloco.outer_momentum > 0 ? " (Nesterov)" : "",
                       sc.optimizer.kind.c_str(), adamw ? " (its state is 2 more local-sized buffers)" : "");
}

void DilocoView::drawBytes() {
    const DilocoViewState& st = m_state;
    // The theory of the whole run (its last step syncs every fragment), up to the steps done.
    const size_t upto = size_t(std::clamp(st.current_step + 1, 0, std::max(0, st.steps)));
    DilocoBytesTheory theory = dilocoBytesTheory(m_model->scenario(), st.steps);
    theory.diloco.resize(std::min(upto, theory.diloco.size()));
    theory.ddp.resize(std::min(upto, theory.ddp.size()));
    std::vector<PlotSeries> series;
    PlotSeries measured;
    measured.label = "rank " + std::to_string(st.shown_rank);
    measured.color = palette::rankColor(st.shown_rank);
    measured.x = st.bytes_x;
    measured.y = st.bytes_y;
    PlotSeries diloco;
    diloco.label = "DiLoCo theory";
    diloco.color = palette::kTheory;
    diloco.dashed = true;
    PlotSeries ddp;
    ddp.label = "DDP theory";
    ddp.color = palette::withAlpha(palette::kWarning, 0.8f);
    ddp.dashed = true;
    ddp.in_y_range =
        false; // tens of times steeper: it would flatten the others, so it leaves the plot at the top
    for (size_t s = 0; s < theory.diloco.size(); ++s) {
        diloco.x.push_back(double(s + 1));
        diloco.y.push_back(theory.diloco[s]);
        ddp.x.push_back(double(s + 1));
        ddp.y.push_back(theory.ddp[s]);
    }
    // Sent so far, against both theories.
    const double sent = st.bytes_y.empty() ? 0.0 : st.bytes_y.back();
    const double ddp_sent = theory.ddp.empty() ? 0.0 : theory.ddp.back();
    const double diloco_sent = theory.diloco.empty() ? 0.0 : theory.diloco.back();
    char ratio[48] = "";
    if (sent > 0.0)
        std::snprintf(ratio, sizeof(ratio), ", %.0fx", ddp_sent / sent);
    ImGui::TextWrapped(
        "Rank %d sent %s (theory %s%s). DDP would have sent %s%s: its dashed line leaves the plot.",
        st.shown_rank, formatBytes(sent).c_str(), formatBytes(diloco_sent).c_str(),
        st.fault_tolerant ? "; heals it sent to recovering replicas come on top" : "",
        formatBytes(ddp_sent).c_str(), ratio);
    series.push_back(std::move(measured));
    series.push_back(std::move(diloco));
    series.push_back(std::move(ddp));
    PlotOptions options;
    options.title = "Bytes on the wire (cumulative, sent)";
    options.y_unit = AxisUnit::Bytes;
    options.y_from_zero = true;
    options.x_label = "steps done";
    linePlot("##diloco_bytes_plot", ImGui::GetContentRegionAvail(), series, options);
}

} // namespace dt::app
