// view_pipeline.cpp: a pipeline step, theory above measured (see view_pipeline.hpp).
//
// [SECTION] Empty states (the data it draws: model/pipeline_step.hpp)
// [SECTION] Help
// [SECTION] Caches: what to recompute this frame
// [SECTION] Drawing: header, legend, the two grids, the axis
#include "views/view_pipeline.hpp"

#include "widgets/elide.hpp"
#include "widgets/format.hpp"
#include "widgets/help.hpp"
#include "widgets/palette.hpp"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>

namespace dt::app {

// -----------------------------------------------------------------------------
// [SECTION] Empty states (the data it draws: model/pipeline_step.hpp)
// -----------------------------------------------------------------------------

namespace {

EventKind kindOfOp(PipeOp op) {
    switch (op) {
    case PipeOp::Backward:
        return EventKind::Backward;
    case PipeOp::BackwardInput:
        return EventKind::BackwardInput;
    case PipeOp::BackwardWeight:
        return EventKind::BackwardWeight;
    default:
        return EventKind::Forward;
    }
}

// A pipeline run: the scenarios this view belongs to.
bool isPipelineRun(const Scenario& scenario) {
    return strategyTraits(scenario.strategy.kind).uses_stages;
}

} // namespace

PipeEmpty pipelineEmpty(const ViewInputs& inputs) {
    if (!inputs.model)
        return PipeEmpty::NoRun;
    const Scenario& scenario = inputs.model->scenario();
    if (!isPipelineRun(scenario) || scenario.topology.stages < 2)
        return PipeEmpty::NotPipeline;
    return PipeEmpty::None;
}

// -----------------------------------------------------------------------------
// [SECTION] Help
// -----------------------------------------------------------------------------

PipelineView::PipelineView() : View("pipeline", "Pipeline") {
    open = false;
}

std::optional<bool> PipelineView::relevantTo(const Scenario& scenario) const {
    return isPipelineRun(scenario);
}

LayoutPlace PipelineView::layoutPlace(const LayoutContext& context) const {
    LayoutPlace place;
    place.area = LayoutArea::LowerBand;
    place.height = std::round(preferredHeight(context.scenario.topology.stages));
    return place;
}

const char* PipelineView::helpText() const {
    return "One step of one pipeline: the predicted schedule (theory) above what the ranks really did "
           "(measured), "
           "on the same time scale.\n\n"
           "Pipeline parallelism gives each of p ranks (stages) a slice of the model's blocks and splits the "
           "batch "
           "into m microbatches. Stage s runs F (forward) of a microbatch when stage s-1 has sent its "
           "activation, "
           "and B (backward) when stage s+1 has sent the gradient back. At the start only stage 0 has work "
           "and at "
           "the end only stage 0 still has backwards to do: the idle time in between is the pipeline "
           "BUBBLE.\n"
           "  bubble = (p-1) / (m + p-1)  for GPipe and 1F1B (more microbatches: a smaller bubble)\n\n"
           "GPipe runs all m forwards, then all backwards: every stage holds m microbatches' activations. "
           "1F1B "
           "starts backwards as soon as it can and then alternates one forward, one backward, so stage s "
           "holds at "
           "most p - s: the same bubble, far less memory.\n"
           "Interleaved 1F1B gives each rank v chunks (rank r holds chunks r, r+p, ...): a microbatch visits "
           "every "
           "rank v times with 1/v of the work each time, so the ramp is v times shorter:\n"
           "  bubble = (p-1) / (v m + p-1)  (more messages, same memory per microbatch)\n"
           "Zero bubble (zb-h1) splits B into Bi (the input gradient, what the previous stage waits for) and "
           "W (the "
           "weight gradient, which nobody waits for). W runs later and fills the holes:\n"
           "  bubble = (p-1)(F + Bi - W) / (m (F + Bi + W) + (p-1)(F + Bi - W))\n\n"
           "Theory: the schedule executed with fixed durations, the run's measured mean F, B (or Bi, W) per "
           "chunk "
           "(F = 1, B = 2 units before a step was measured), no communication time. Measured: the real "
           "spans; an "
           "arrow goes from a Send's start to the end of the matching Recv on the other stage (the data "
           "arrived), "
           "matched by sender, receiver and sequence number. Measured bubble: window = first F to last B of "
           "the "
           "step over the pipeline's stages; per stage 1 - busy / window; overall the mean over the "
           "stages.\n\n"
           "The step: the latest completed one, or the step at the time cursor (click the timeline); type a "
           "step "
           "to pin it. The pipeline: the one of the selected rank.";
}

bool PipelineView::isEmpty(const ViewInputs& inputs) const {
    return pipelineEmpty(inputs) != PipeEmpty::None;
}

// -----------------------------------------------------------------------------
// [SECTION] Caches: what to recompute this frame
// -----------------------------------------------------------------------------

void PipelineView::refresh(const ViewInputs& inputs) {
    const RunModel& model = *inputs.model;
    const Scenario& scenario = model.scenario();
    const bool new_model = m_model != &model || m_means_begin != model.tBegin();

    // The pipeline: the selected rank's replica, else the first.
    const int replica = pipelineReplicaOf(model, inputs.selected_rank ? *inputs.selected_rank : -1);
    m_replica = replica;
    m_range = pipelineStepRange(model, replica);

    // Mean durations over the whole run: once per completed step (before the
    // first one completes, whenever events arrive; there are few then).
    if (new_model || !m_means_done || m_means_step != m_range.latest_complete ||
        (m_range.latest_complete < 0 && m_step_generation != model.generation())) {
        m_means = pipelineMeans(model);
        m_means_step = m_range.latest_complete;
        m_means_done = true;
    }

    // Theory: when the durations or the scenario change.
    const PipelineShape shape = pipelineShapeOf(scenario);
    const bool same_theory = m_theory_valid && m_theory_schedule == scenario.strategy.schedule &&
                             m_theory_shape.stages == shape.stages &&
                             m_theory_shape.microbatches == shape.microbatches &&
                             m_theory_shape.chunks_per_rank == shape.chunks_per_rank &&
                             m_theory_means.forward_ns == m_means.forward_ns &&
                             m_theory_means.backward_ns == m_means.backward_ns &&
                             m_theory_means.backward_input_ns == m_means.backward_input_ns &&
                             m_theory_means.backward_weight_ns == m_means.backward_weight_ns;
    if (!same_theory) {
        m_theory = pipelineTheory(scenario, m_means);
        m_theory_schedule = scenario.strategy.schedule;
        m_theory_shape = shape;
        m_theory_means = m_means;
        m_theory_valid = true;
        ++m_theory_count;
    }

    // The step: pinned, else the cursor's, else the latest completed (or the one in progress).
    const std::optional<int> pinned = m_follow ? std::nullopt : std::optional<int>(m_pinned);
    const std::optional<int64_t> cursor = inputs.cursor_ns ? *inputs.cursor_ns : std::nullopt;
    const int step = pipelineShownStep(model, replica, m_range, pinned, cursor);
    m_shown_step = step;
    if (new_model || m_step_generation != model.generation() || m_step_key != step ||
        m_replica_key != replica) {
        measurePipelineStep(model, replica, step, m_step);
        m_step_generation = model.generation();
        m_step_key = step;
        m_replica_key = replica;
        ++m_measure_count;
    }
    m_model = &model;
    m_means_begin = model.tBegin();
}

// -----------------------------------------------------------------------------
// [SECTION] Drawing: header, legend, the two grids, the axis
// -----------------------------------------------------------------------------

void PipelineView::drawEmptyState(const ViewInputs& inputs) {
    m_empty = pipelineEmpty(inputs);
    m_shown.reset();
    m_pane.reset();
    if (m_empty == PipeEmpty::NoRun) {
        helpMarker(helpText());
        emptyState(
            "No run open: start a scenario or open a recording",
            "With [strategy] kind = \"pipeline\" this view shows one step of the pipeline: the predicted "
            "schedule (theory) above the measured forward and backward spans, the messages between the "
            "stages and the bubble.");
        return;
    }
    if (m_empty == PipeEmpty::NotPipeline) {
        helpMarker(helpText());
        const Scenario& scenario = inputs.model->scenario();
        char title[128];
        if (isPipelineRun(scenario))
            std::snprintf(title, sizeof(title),
                          "A pipeline of %d stage has nothing to overlap: no bubble to show",
                          scenario.topology.stages);
        else
            std::snprintf(title, sizeof(title), "The \"%s\" strategy has no pipeline stages",
                          strategyKindName(scenario.strategy.kind));
        emptyState(
            title,
            "This view needs [strategy] kind = \"pipeline\" and [topology] stages >= 2 in the scenario "
            "(try scenarios/pipeline_gpipe_vs_1f1b.toml). Then each rank holds a slice of the blocks, "
            "microbatches flow through the stages, and this view draws the schedule, the messages and the "
            "bubble.");
    }
}

void PipelineView::drawContent(const ViewInputs& inputs) {
    m_empty = PipeEmpty::None;
    m_shown = ShownContent{"measured stage rows", 0, pipelineShapeOf(inputs.model->scenario()).stages};
    m_compact = m_pane.begin();
    refresh(inputs);
    drawHeader(inputs);
    drawGrids(inputs);
    m_pane.end();
}

void PipelineView::drawHeader(const ViewInputs& inputs) {
    const Scenario& scenario = inputs.model->scenario();
    const PipelineShape shape = pipelineShapeOf(scenario);
    const int p = shape.stages;

    helpMarker(helpText());
    ImGui::SameLine();
    ImGui::AlignTextToFramePadding();
    if (shape.chunks_per_rank > 1)
        ImGui::Text("%s: p = %d stages, m = %d microbatches, v = %d chunks per rank",
                    scenario.strategy.schedule.c_str(), p, shape.microbatches, shape.chunks_per_rank);
    else
        ImGui::Text("%s: p = %d stages, m = %d microbatches", scenario.strategy.schedule.c_str(), p,
                    shape.microbatches);
    const int pipelines = std::max(1, inputs.model->world() / p);
    char part[96];
    std::snprintf(part, sizeof(part), "|  pipeline %d of %d: ranks %d-%d", m_replica, pipelines,
                  m_replica * p, m_replica * p + p - 1);
    flowTextDisabled(part);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip(
            "World rank = pipeline x p + stage. Select a rank of another pipeline (Topology or timeline) "
            "to show its pipeline.");

    // "| step [ 3 ][-][+] Latest": together on this line, or together on the next.
    const ImGuiStyle& style = ImGui::GetStyle();
    sameLineOrWrap(ImGui::CalcTextSize("|  step").x + ImGui::GetFontSize() * 6.0f +
                   ImGui::CalcTextSize("Latest").x + style.FramePadding.x * 2.0f +
                   style.ItemSpacing.x * 3.0f);
    ImGui::TextUnformatted("|  step");
    ImGui::SameLine();
    int value = std::max(m_shown_step, 0);
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.0f);
    if (ImGui::InputInt("##pipeline_step", &value)) {
        const int lo = std::max(m_range.first, 0), hi = std::max(m_range.last, lo);
        pinStep(std::clamp(value, lo, hi));
    }
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Type or step through the steps; Latest follows the run again.");
    ImGui::SameLine();
    const bool has_cursor = inputs.cursor_ns && inputs.cursor_ns->has_value();
    ImGui::BeginDisabled(m_follow);
    if (ImGui::Button(has_cursor ? "Cursor" : "Latest"))
        followLatest();
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip(has_cursor ? "Follow the time cursor's step again."
                                     : "Follow the latest completed step again.");
    if (m_shown_step < 0)
        flowTextDisabled("no step yet");
    else if (!m_follow)
        flowTextDisabled(m_step.complete ? "pinned" : "pinned, in progress");
    else if (has_cursor)
        flowTextDisabled(m_step.complete ? "at the time cursor" : "at the time cursor, in progress");
    else
        flowTextDisabled(m_step.complete ? "latest completed" : "in progress");

    // Legend: the kinds this schedule uses, then how to read shades and arrows.
    const bool zb = splitsBackward(scenario);
    legendItem(palette::kindColor(EventKind::Forward), "F forward", true);
    if (zb) {
        legendItem(palette::kindColor(EventKind::BackwardInput), "Bi input gradient", false);
        legendItem(palette::kindColor(EventKind::BackwardWeight), "W weight gradient", false);
    } else {
        legendItem(palette::kindColor(EventKind::Backward), "B backward", false);
    }
    legendItem(palette::kindColor(EventKind::Send), m_compact ? "activation" : "activation sent -> arrived",
               false);
    legendItem(ImGui::GetColorU32(ImGuiCol_Text, 0.75f), m_compact ? "gradient" : "gradient sent -> arrived",
               false);
    if (!m_compact) // a short pane: the blocks' tooltips say it
        flowTextDisabled(shape.chunks_per_rank > 1 ? "number = microbatch, darker = later chunk"
                                                   : "number = microbatch");
}

namespace {

// Geometry of a grid row from the current font: a row and the gap under it take
// `pitch_lines` text lines, kFullPitch when there is room (preferredHeight), down
// to kLeastPitch when the window is short (a microbatch number still fits).
constexpr float kFullPitch = 1.7f, kLeastPitch = 1.25f, kThinPitch = 0.6f;
struct RowMetrics {
    float line_h, row_h, gap;
};
RowMetrics rowMetrics(float pitch_lines = kFullPitch) {
    RowMetrics m;
    m.line_h = ImGui::GetTextLineHeight();
    m.row_h = std::floor(m.line_h * pitch_lines * 0.82f);
    m.gap = std::floor(m.line_h * pitch_lines * 0.18f);
    return m;
}

// One block: the kind's colour, shaded by chunk tier (interleaved) or by
// microbatch parity, the microbatch number when it fits.
void drawBlock(ImDrawList* draw, ImVec2 a, ImVec2 b, EventKind kind, int microbatch, int chunk,
               const PipelineShape& shape) {
    ImU32 color = palette::kindColor(kind);
    if (shape.chunks_per_rank > 1)
        color = palette::shade(color, chunk / shape.stages > 0 ? 0.7f : 1.0f);
    else if (microbatch % 2 == 1)
        color = palette::shade(color, 0.82f);
    if (b.x - a.x < 1.0f)
        b.x = a.x + 1.0f;
    draw->AddRectFilled(a, b, color, 2.0f);
    if (b.x - a.x >= 4.0f)
        draw->AddRect(a, b, IM_COL32(0, 0, 0, 90), 2.0f);
    char label[16];
    std::snprintf(label, sizeof(label), "%d", microbatch);
    const ImVec2 size = ImGui::CalcTextSize(label);
    if (size.x + 4.0f <= b.x - a.x && size.y <= b.y - a.y + 2.0f) // a thin theory row: on hover only
        draw->AddText(
            ImVec2(std::floor((a.x + b.x - size.x) * 0.5f), std::floor((a.y + b.y - size.y) * 0.5f)),
            palette::textOn(color), label);
}

const char* opName(EventKind kind) {
    switch (kind) {
    case EventKind::Backward:
        return "B";
    case EventKind::BackwardInput:
        return "Bi";
    case EventKind::BackwardWeight:
        return "W";
    default:
        return "F";
    }
}

void percent(char* out, size_t size, double fraction) {
    std::snprintf(out, size, "%.1f %%", fraction * 100.0);
}

} // namespace

float PipelineView::preferredHeight(int stages) {
    const ImGuiStyle& style = ImGui::GetStyle();
    const RowMetrics m = rowMetrics();
    const float rows = float(std::max(stages, 1)) * (m.row_h + m.gap);
    // title bar, header, legend, two section titles, two grids, axis, paddings
    return ImGui::GetFrameHeight() * 2.0f + m.line_h * 4.0f + rows * 2.0f + m.gap * 4.0f +
           style.ItemSpacing.y * 7.0f + style.WindowPadding.y * 2.0f + 8.0f;
}

void PipelineView::drawGrids(const ViewInputs& inputs) {
    const RunModel& model = *inputs.model;
    const Scenario& scenario = model.scenario();
    const PipelineShape shape = pipelineShapeOf(scenario);
    const int p = shape.stages;
    const PipeTheory& theory = m_theory;
    const PipeStep& measured = m_step;
    // Full: both grids at kFullPitch. A short pane: the grids in the height left
    // under their two titles and the axis, the measured rows at least kLeastPitch,
    // the theory's thinner (down to kThinPitch: its numbers then show on hover).
    RowMetrics m = rowMetrics(), tm = m;
    if (m_compact) {
        const float line = ImGui::GetTextLineHeight();
        const float rows_px = ImGui::GetContentRegionAvail().y -
                              ImGui::GetTextLineHeightWithSpacing() * 3.0f -
                              ImGui::GetStyle().ItemSpacing.y * 3.0f;
        const float both = rows_px / float(2 * std::max(p, 1)) / line;
        const float measured_pitch = std::clamp(both, kLeastPitch, kFullPitch);
        m = rowMetrics(measured_pitch);
        tm = rowMetrics(
            std::clamp(rows_px / float(std::max(p, 1)) / line - measured_pitch, kThinPitch, measured_pitch));
    }
    const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
    const ImU32 frame = ImGui::GetColorU32(ImGuiCol_FrameBg);
    const ImVec4 theory_color = ImGui::ColorConvertU32ToFloat4(palette::kTheory);
    char buf[160], a_buf[32], b_buf[32], c_buf[32];

    if (!theory.problem.empty()) {
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette::kWarning),
                           "The schedule cannot run this shape: %s", theory.problem.c_str());
        return;
    }

    // Columns: stage labels | the plot | idle share per stage.
    const float label_w = ImGui::CalcTextSize("stage 00 (rank 00)").x + m.gap * 2.0f;
    const float right_w = ImGui::CalcTextSize("100.0 % idle").x + m.gap * 2.0f;
    const float avail_w = ImGui::GetContentRegionAvail().x;
    const float plot_w = std::max(40.0f, avail_w - label_w - right_w);
    const bool has_measured = !measured.blocks.empty();
    const double window_ns = has_measured ? double(measured.t1 - measured.t0) : 0.0;

    // One horizontal scale for both grids (ns from the start of each) when the
    // theory ran with measured durations; else the theory has its own, in units.
    const bool shared = theory.measured_durations;
    const double theory_span = std::max(theory.makespan, 1e-9);
    const double ns_span = std::max({shared ? theory.makespan : 0.0, window_ns, 1.0});
    const double theory_scale = shared ? double(plot_w) / ns_span : double(plot_w) / theory_span;
    const double measured_scale = double(plot_w) / ns_span;

    const ImVec2 mouse = ImGui::GetIO().MousePos;
    const bool hovered_window = ImGui::IsWindowHovered();
    ImDrawList* draw = ImGui::GetWindowDrawList();
    auto inside = [&](ImVec2 a, ImVec2 b) {
        return hovered_window && mouse.x >= a.x && mouse.x < b.x && mouse.y >= a.y && mouse.y < b.y;
    };
    // A row's labels, in a smaller size when its row is thinner than a line of text.
    auto labelAt = [&](float x, float y, const RowMetrics& rm, ImU32 color) {
        const float size = std::min(rm.line_h, rm.row_h + rm.gap);
        draw->AddText(ImGui::GetFont(), ImGui::GetFontSize() * size / rm.line_h,
                      ImVec2(x, y + std::floor((rm.row_h - size) * 0.5f)), color, buf);
    };
    auto rowLabel = [&](float y, int s, bool with_rank, const RowMetrics& rm) {
        if (with_rank)
            std::snprintf(buf, sizeof(buf), "stage %d (rank %d)", s, m_replica * p + s);
        else
            std::snprintf(buf, sizeof(buf), "stage %d", s);
        labelAt(ImGui::GetCursorScreenPos().x, y, rm, text);
    };
    auto idleLabel = [&](float y, double fraction, bool measured_value, const RowMetrics& rm) {
        if (fraction < 0)
            std::snprintf(buf, sizeof(buf), "-");
        else
            std::snprintf(buf, sizeof(buf), "%.1f %% idle", fraction * 100.0);
        labelAt(ImGui::GetCursorScreenPos().x + label_w + plot_w + m.gap * 2.0f, y, rm,
                measured_value ? text : dim);
    };

    // ---- theory: its label, then its parts flowing on the same line ------------------
    // (a short pane: the description on the label's hover, the bubble beside it)
    ImGui::TextColored(theory_color, "theory");
    char line[192];
    std::vector<std::string> description;
    if (theory.measured_durations) {
        description.push_back("the schedule with the measured means");
        formatDuration(a_buf, sizeof(a_buf), theory.durations.forward);
        if (splitsBackward(scenario)) {
            formatDuration(b_buf, sizeof(b_buf), theory.durations.backward_input);
            formatDuration(c_buf, sizeof(c_buf), theory.durations.backward_weight);
            std::snprintf(line, sizeof(line), "F %s, Bi %s, W %s;", a_buf, b_buf, c_buf);
        } else {
            formatDuration(b_buf, sizeof(b_buf), theory.durations.backward);
            std::snprintf(line, sizeof(line), "F %s, B %s;", a_buf, b_buf);
        }
        description.push_back(line);
        description.push_back("no communication");
    } else {
        description.push_back("the schedule in unit time (F = 1, B = 2, Bi = W = 1):");
        description.push_back("no step measured yet");
    }
    if (m_compact && ImGui::IsItemHovered())
        ImGui::SetTooltip("theory: %s %s %s", description[0].c_str(), description[1].c_str(),
                          description.size() > 2 ? description[2].c_str() : "");
    if (!m_compact)
        for (const std::string& part : description)
            flowTextDisabled(part);
    percent(a_buf, sizeof(a_buf), theory.formula_bubble);
    percent(b_buf, sizeof(b_buf), theory.simulated_bubble);
    const PipelineScheduleSpec* spec = findPipelineSchedule(scenario.strategy.schedule);
    const char* formula = spec ? spec->bubble_formula : "?";
    if (std::strlen(formula) > 24) // a long formula (zb-h1's): on hover
        std::snprintf(line, sizeof(line), "|  bubble %s by the formula, %s simulated", a_buf, b_buf);
    else
        std::snprintf(line, sizeof(line), "|  bubble %s = %s, simulated %s", formula, a_buf, b_buf);
    flowText(line);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("theory: bubble = %s\nwith p = %d, m = %d, v = %d and the durations above = %s.\n"
                          "Simulated: 1 - busy / (p x makespan) of the grid below = %s.",
                          formula, shape.stages, shape.microbatches, shape.chunks_per_rank, a_buf, b_buf);

    const ImVec2 theory_origin = ImGui::GetCursorScreenPos();
    const float plot_x0 = theory_origin.x + label_w;
    int hovered_slot = -1;
    for (int s = 0; s < p; ++s) {
        const float y = theory_origin.y + float(s) * (tm.row_h + tm.gap);
        draw->AddRectFilled(ImVec2(plot_x0, y),
                            ImVec2(plot_x0 + float(theory.makespan * theory_scale), y + m.row_h), frame);
        rowLabel(y, s, false, tm);
        idleLabel(y, s < int(theory.stage_bubble.size()) ? theory.stage_bubble[size_t(s)] : -1.0, false, tm);
    }
    for (size_t i = 0; i < theory.slots.size(); ++i) {
        const PredictedSlot& slot = theory.slots[i];
        const float y = theory_origin.y + float(slot.rank) * (tm.row_h + tm.gap);
        const ImVec2 a(plot_x0 + float(slot.start * theory_scale), y),
            b(plot_x0 + float(slot.end * theory_scale), y + tm.row_h);
        drawBlock(draw, a, b, kindOfOp(slot.action.op), slot.action.microbatch, slot.action.chunk, shape);
        if (inside(a, b))
            hovered_slot = int(i);
    }
    ImGui::Dummy(ImVec2(avail_w, float(p) * (tm.row_h + tm.gap)));
    if (hovered_slot >= 0) {
        const PredictedSlot& slot = theory.slots[size_t(hovered_slot)];
        ImGui::BeginTooltip();
        ImGui::Text("theory: %s of microbatch %d, chunk %d, on stage %d", opName(kindOfOp(slot.action.op)),
                    slot.action.microbatch, slot.action.chunk, slot.rank);
        if (theory.measured_durations) {
            formatDuration(a_buf, sizeof(a_buf), slot.start);
            formatDuration(b_buf, sizeof(b_buf), slot.end - slot.start);
            ImGui::TextDisabled("starts at +%s, lasts %s (the measured mean)", a_buf, b_buf);
        } else {
            ImGui::TextDisabled("t = %g .. %g units", slot.start, slot.end);
        }
        ImGui::EndTooltip();
    }

    // ---- measured ----------------------------------------------------------------
    ImGui::TextUnformatted("measured");
    if (!has_measured) {
        if (m_shown_step >= 0) {
            std::snprintf(line, sizeof(line), "step %d: no forward or backward span from this pipeline",
                          m_shown_step);
            flowTextDisabled(line);
        } else {
            flowTextDisabled("waiting for the first step's forward and backward spans");
        }
        return;
    }
    formatDuration(a_buf, sizeof(a_buf), window_ns);
    percent(b_buf, sizeof(b_buf), measured.bubble);
    if (m_compact) // a short pane: the same numbers in fewer words (the help says what they are)
        std::snprintf(line, sizeof(line), "step %d: %s", measured.step, a_buf);
    else
        std::snprintf(line, sizeof(line), "step %d: %s from the first F to the last %s", measured.step, a_buf,
                      splitsBackward(scenario) ? "W" : "B");
    flowTextDisabled(line);
    std::snprintf(line, sizeof(line),
                  m_compact ? "|  bubble %s" : "|  bubble %s (mean of the stages' idle share)", b_buf);
    flowText(line);
    std::snprintf(line, sizeof(line), "|  %d messages", int(measured.arrows.size()));
    flowTextDisabled(line);
    if (measured.open_sends > 0 || measured.mismatched > 0) {
        std::snprintf(line, sizeof(line), "%d not arrived%s", measured.open_sends,
                      measured.mismatched > 0 ? ", some link different microbatches" : "");
        flowText(line, palette::kWarning);
    }

    const ImVec2 origin = ImGui::GetCursorScreenPos();
    auto rowY = [&](int s) { return origin.y + float(s) * (m.row_h + m.gap); };
    auto xOf = [&](int64_t t) { return plot_x0 + float(double(t - measured.t0) * measured_scale); };
    std::vector<bool> row_has_block(size_t(p), false);
    for (const PipeBlock& block : measured.blocks)
        if (block.stage >= 0 && block.stage < p)
            row_has_block[size_t(block.stage)] = true;
    for (int s = 0; s < p; ++s) {
        const float y = rowY(s);
        draw->AddRectFilled(ImVec2(plot_x0, y),
                            ImVec2(plot_x0 + float(window_ns * measured_scale), y + m.row_h), frame);
        rowLabel(y, s, true, m);
        idleLabel(y, measured.stage_bubble[size_t(s)], true, m);
        m_shown->shown += row_has_block[size_t(s)] && rowInsideWindow(y, y + m.row_h) ? 1 : 0;
    }
    int hovered_block = -1;
    for (size_t i = 0; i < measured.blocks.size(); ++i) {
        const PipeBlock& block = measured.blocks[i];
        const float y = rowY(block.stage);
        const ImVec2 a(xOf(block.t0), y), b(xOf(block.t1), y + m.row_h);
        drawBlock(draw, a, b, block.kind, block.microbatch, block.chunk, shape);
        if (inside(a, b))
            hovered_block = int(i);
    }
    // Arrows on top: from the Send's start on one row to the data's arrival on the other.
    const ImU32 arrow = palette::withAlpha(palette::kindColor(EventKind::Send), 0.9f);
    const ImU32 gradient_arrow = ImGui::GetColorU32(ImGuiCol_Text, 0.75f);
    for (const PipeArrow& a : measured.arrows) {
        const bool down = a.to_stage > a.from_stage;
        const ImVec2 from(xOf(a.t_send), down ? rowY(a.from_stage) + m.row_h : rowY(a.from_stage));
        const ImVec2 to(xOf(a.t_arrived), down ? rowY(a.to_stage) : rowY(a.to_stage) + m.row_h);
        const ImU32 color = !a.same_microbatch ? palette::kWarning : a.gradient ? gradient_arrow : arrow;
        draw->AddLine(from, to, color, 1.5f);
        const float head = std::floor(m.line_h * 0.3f), dir = down ? -1.0f : 1.0f;
        draw->AddTriangleFilled(to, ImVec2(to.x - head * 0.6f, to.y + dir * head),
                                ImVec2(to.x + head * 0.6f, to.y + dir * head), color);
    }
    ImGui::Dummy(ImVec2(avail_w, float(p) * (m.row_h + m.gap)));
    if (hovered_block >= 0) {
        const PipeBlock& block = measured.blocks[size_t(hovered_block)];
        ImGui::BeginTooltip();
        ImGui::Text("%s of microbatch %d, chunk %d, on stage %d (rank %d), step %d", opName(block.kind),
                    block.microbatch, block.chunk, block.stage, m_replica * p + block.stage, measured.step);
        formatDuration(a_buf, sizeof(a_buf), double(block.t0 - measured.t0));
        formatDuration(b_buf, sizeof(b_buf), double(block.t1 - block.t0));
        ImGui::TextDisabled("starts at +%s, lasts %s (measured)", a_buf, b_buf);
        ImGui::EndTooltip();
    }

    // ---- axis: time from the start of each grid -----------------------------------
    const ImVec2 axis = ImGui::GetCursorScreenPos();
    const double step_ns = niceStep(ns_span / std::max(1.0, double(plot_w) / (ImGui::GetFontSize() * 6.0)));
    draw->AddLine(ImVec2(plot_x0, axis.y), ImVec2(plot_x0 + plot_w, axis.y), dim);
    for (double t = 0.0; t <= ns_span; t += step_ns) {
        const float x = plot_x0 + float(t * measured_scale);
        draw->AddLine(ImVec2(x, axis.y), ImVec2(x, axis.y + 4.0f), dim);
        formatTimeTick(buf, sizeof(buf), t, step_ns);
        if (x + 2.0f + ImGui::CalcTextSize(buf).x <= plot_x0 + plot_w + right_w) // the last label may not fit
            draw->AddText(ImVec2(x + 2.0f, axis.y + 2.0f), dim, buf);
    }
    draw->AddText(ImVec2(axis.x, axis.y + 2.0f), dim, shared ? "time from start" : "measured time");
    ImGui::Dummy(ImVec2(avail_w, m.line_h + 4.0f));
}

} // namespace dt::app
