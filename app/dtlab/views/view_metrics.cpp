// view_metrics.cpp: loss, step time, throughput and bytes on the wire per rank (see view_metrics.hpp).
#include "views/view_metrics.hpp"

#include "widgets/elide.hpp"
#include "widgets/help.hpp"
#include "widgets/palette.hpp"

#include <imgui.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>

namespace dt::app {

void breakAtGaps(PlotSeries& s, const std::vector<int>& incarnation) {
    // 1. One point per step, the latest: a step done again (after a restart,
    //    or an aborted step retried) counts once, as it was last done.
    std::vector<size_t> order(s.x.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s.x[a] < s.x[b]; });
    std::vector<size_t> kept;
    for (size_t i : order) {
        if (!kept.empty() && s.x[kept.back()] == s.x[i])
            kept.back() = i; // stable: i came later in time
        else
            kept.push_back(i);
    }
    // 2. A NaN between two points where the rank was not there: a step gap, or another incarnation.
    PlotSeries out = s;
    out.x.clear();
    out.y.clear();
    for (size_t k = 0; k < kept.size(); ++k) {
        const size_t i = kept[k];
        if (k > 0) {
            const size_t before = kept[k - 1];
            const bool gap = s.x[i] - s.x[before] > 1.0;
            const bool restarted = i < incarnation.size() && before < incarnation.size() &&
                                   incarnation[i] != incarnation[before];
            if (gap || restarted) {
                out.x.push_back((s.x[before] + s.x[i]) / 2.0);
                out.y.push_back(std::nan(""));
            }
        }
        out.x.push_back(s.x[i]);
        out.y.push_back(s.y[i]);
    }
    s = std::move(out);
}

MetricsSeries buildMetricsSeries(const RunModel& model, int64_t until_ns) {
    MetricsSeries out;
    const Scenario& scenario = model.scenario();
    const int world = std::max(1, model.world());
    out.tokens = scenario.model.kind != "mlp";
    // Items one step processes across the job: every rank takes batch_per_rank sequences (of `context`
    // tokens).
    const double per_step = double(scenario.data.batch_per_rank) * double(world) *
                            (out.tokens ? double(scenario.model.context) : 1.0);

    for (int r = 0; r < model.world(); ++r) {
        const RankLane& lane = model.lane(r);
        // Each RankStarted begins an incarnation (a restarted replica is a new process).
        std::vector<int64_t> starts;
        for (const Event& e : lane.instants)
            if (e.kind == EventKind::RankStarted)
                starts.push_back(e.t_ns);
        const auto incarnationAt = [&](int64_t t) {
            return int(std::upper_bound(starts.begin(), starts.end(), t) - starts.begin());
        };
        std::array<std::vector<int>, size_t(EventKind::Count)> incarnation; // per counter point
        auto series = [&](EventKind kind) {
            PlotSeries s;
            s.label = "rank " + std::to_string(r);
            s.color = palette::rankColor(r);
            for (const CounterPoint& p : lane.counters[size_t(kind)]) {
                if (p.t > until_ns)
                    break; // after the time cursor (points are in time order)
                s.x.push_back(double(p.step));
                s.y.push_back(p.value);
                incarnation[size_t(kind)].push_back(incarnationAt(p.t));
            }
            return s;
        };
        PlotSeries loss = series(EventKind::LossValue);
        PlotSeries step_ms = series(EventKind::StepTimeMs);
        PlotSeries throughput = step_ms;
        for (double& y : throughput.y)
            y = y > 0.0 ? per_step / (y / 1000.0) : std::nan("");
        // Cumulative bytes -> bytes per step. A drop means the rank restarted
        // and counts from zero again: that step's value is the new count.
        PlotSeries wire = series(EventKind::BytesSent);
        double previous = 0.0;
        for (double& y : wire.y) {
            const double cumulative = y;
            y = cumulative >= previous ? cumulative - previous : cumulative;
            previous = cumulative;
        }
        breakAtGaps(loss, incarnation[size_t(EventKind::LossValue)]);
        breakAtGaps(step_ms, incarnation[size_t(EventKind::StepTimeMs)]);
        breakAtGaps(throughput, incarnation[size_t(EventKind::StepTimeMs)]);
        breakAtGaps(wire, incarnation[size_t(EventKind::BytesSent)]);
        out.loss.push_back(std::move(loss));
        out.step_ms.push_back(std::move(step_ms));
        out.throughput.push_back(std::move(throughput));
        out.wire_bytes.push_back(std::move(wire));
    }
    // [run] eval_every: rank 0's eval loss on its fixed batch, as trained
    // (fake-quantized under QAT) and, under QAT, the same weights in fp32.
    if (model.world() > 0 && scenario.run.eval_every > 0) {
        const auto evalSeries = [&](EventKind kind, const std::string& label, ImU32 color) {
            PlotSeries s;
            s.label = label;
            s.color = color;
            for (const CounterPoint& p : model.lane(0).counters[size_t(kind)]) {
                if (p.t > until_ns)
                    break;
                s.x.push_back(double(p.step));
                s.y.push_back(p.value);
            }
            return s;
        };
        const bool qat = scenario.model.quantize != "none";
        PlotSeries eval = evalSeries(EventKind::EvalLoss, qat ? "eval " + scenario.model.quantize : "eval",
                                     IM_COL32(250, 250, 250, 255));
        if (!eval.x.empty())
            out.eval.push_back(std::move(eval));
        PlotSeries fp32 = evalSeries(EventKind::EvalLossFp32, "eval fp32", palette::kTheory);
        if (qat && !fp32.x.empty())
            out.eval.push_back(std::move(fp32));
    }
    return out;
}

MetricsView::MetricsView() : View("metrics", "Metrics") {}

LayoutPlace MetricsView::layoutPlace(const LayoutContext&) const {
    LayoutPlace place;
    place.area = LayoutArea::Bottom;
    place.width_share = 0.37f;
    return place;
}

const char* MetricsView::helpText() const {
    return "Training curves per rank, over steps.\n\n"
           "Loss: the cross-entropy each rank computed on its own batch. With DDP the ranks see different "
           "data but share the weights, so their losses move together. With [run] eval_every, rank 0 also "
           "evaluates one fixed batch no step trains on (\"eval\"); under quantization-aware training "
           "([model] quantize) twice: with fake quantization as it trains (\"eval int8\") and the same "
           "weights in plain fp32 (\"eval fp32\", grey): the gap is what quantizing costs.\n"
           "Step time: wall time of one step on each rank, in milliseconds. A slowed or straggling rank "
           "stretches everyone's step, because the all-reduce waits for the slowest.\n"
           "Throughput: tokens (tiny_gpt) or samples (mlp) per second for the whole job, computed from each "
           "rank's step time: batch per rank x context x ranks / step time.\n"
           "Bytes on the wire: what each rank sent per step according to the collective algorithm's cost "
           "model (a ring all-reduce sends 2(n-1)/n of the buffer).\n\n"
           "Hover a plot to read every rank's value at that step. Try: slow a rank and watch step time "
           "rise on all ranks while throughput falls.";
}

bool MetricsView::hasData(const ViewInputs& inputs) {
    return inputs.model && (inputs.model->hasCounter(EventKind::LossValue) ||
                            inputs.model->hasCounter(EventKind::StepTimeMs));
}

bool MetricsView::isEmpty(const ViewInputs& inputs) const {
    return !hasData(inputs);
}

void MetricsView::drawHeader() {
    helpMarker(helpText());
    ImGui::SameLine();
    textDisabledElided("one line per rank; hover a plot to read every rank's value at a step");
}

void MetricsView::drawEmptyState(const ViewInputs&) {
    drawHeader();
    emptyState("No events yet: start a run or open a recording",
               "Loss, step time, throughput and bytes on the wire appear here after each rank's first step.");
}

std::string metricsAtCursorLine(const ViewInputs& inputs) {
    const std::optional<int64_t> cursor = inputs.cursor();
    if (!cursor || !inputs.model || !inputs.ranks)
        return "";
    char buf[160];
    std::snprintf(buf, sizeof(buf),
                  "at the cursor (%+.2f s):", double(*cursor - inputs.model->tBegin()) / 1e9);
    std::string line = buf;
    for (const RankProgress& p : *inputs.ranks) {
        line += p.rank > 0 ? "  |  " : "  ";
        const bool gone =
            RunFacts::gone(p) || p.state == RankState::Finished || p.state == RankState::Pending;
        if (gone || p.step < 0) {
            std::snprintf(buf, sizeof(buf), "rank %d %s", p.rank,
                          std::string(rankStateLabel(p.state)).c_str());
        } else if (std::isnan(p.last_loss)) {
            std::snprintf(buf, sizeof(buf), "rank %d step %d, %.0f ms/step", p.rank, p.step + 1,
                          p.last_step_ms);
        } else {
            std::snprintf(buf, sizeof(buf), "rank %d step %d, loss %.3f, %.0f ms/step", p.rank, p.step + 1,
                          p.last_loss, p.last_step_ms);
        }
        line += buf;
    }
    return line;
}

void MetricsView::drawContent(const ViewInputs& inputs) {
    drawHeader();
    const std::optional<int64_t> cursor = inputs.cursor();
    const int64_t until = cursor.value_or(INT64_MAX);
    if (inputs.model != m_model || inputs.model->generation() != m_generation || until != m_until) {
        m_series = buildMetricsSeries(*inputs.model, until);
        m_model = inputs.model;
        m_generation = inputs.model->generation();
        m_until = until;
        // The whole run's last step: the x axis keeps its scale while the lines stop at the cursor.
        m_last_step = NAN;
        for (int r = 0; r < inputs.model->world(); ++r)
            for (EventKind kind : {EventKind::LossValue, EventKind::StepTimeMs}) {
                const auto& points = inputs.model->lane(r).counters[size_t(kind)];
                if (!points.empty())
                    m_last_step = std::isnan(m_last_step) ? points.back().step
                                                          : std::max(m_last_step, double(points.back().step));
            }
    }
    double cursor_step = NAN; // the latest step reported by the cursor
    if (cursor)
        for (const PlotSeries& s : m_series.step_ms)
            if (!s.x.empty())
                cursor_step = std::isnan(cursor_step) ? s.x.back() : std::max(cursor_step, s.x.back());
    if (const std::string line = metricsAtCursorLine(inputs); !line.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, palette::kCursor);
        ImGui::TextUnformatted(line.c_str());
        ImGui::PopStyleColor();
    }
    ImGui::BeginChild("##metrics_plots", ImVec2(0.0f, 0.0f), false);
    const ImGuiStyle& style = ImGui::GetStyle();
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const bool two_columns = avail.x >= 700.0f;
    const float w = two_columns ? std::floor((avail.x - style.ItemSpacing.x) * 0.5f) : avail.x;
    const float rows = two_columns ? 2.0f : 4.0f;
    const float h = std::max(180.0f, std::floor((avail.y - style.ItemSpacing.y * (rows - 1.0f)) / rows));

    PlotOptions loss;
    loss.title = m_series.eval.empty() ? "Loss" : "Loss, and eval loss (rank 0)";
    std::vector<PlotSeries> loss_lines = m_series.loss;
    loss_lines.insert(loss_lines.end(), m_series.eval.begin(), m_series.eval.end());
    PlotOptions step;
    step.title = "Step time (ms)";
    step.y_suffix = " ms";
    step.y_from_zero = true;
    PlotOptions rate;
    rate.title = m_series.tokens ? "Throughput (tokens/s)" : "Throughput (samples/s)";
    rate.y_suffix = m_series.tokens ? " tokens/s" : " samples/s";
    rate.y_from_zero = true;
    PlotOptions wire;
    wire.title = "Bytes on the wire per step (sent)";
    wire.y_unit = AxisUnit::Bytes;
    wire.y_from_zero = true;

    for (PlotOptions* o : {&loss, &step, &rate, &wire})
        if (cursor) {
            o->x_range_hi = m_last_step;
            o->marker_x = cursor_step;
            o->marker_color = palette::kCursor;
            o->marker_label = "cursor";
        }
    linePlot("##loss", ImVec2(w, h), loss_lines, loss);
    if (two_columns)
        ImGui::SameLine();
    linePlot("##step_ms", ImVec2(w, h), m_series.step_ms, step);
    linePlot("##throughput", ImVec2(w, h), m_series.throughput, rate);
    if (two_columns)
        ImGui::SameLine();
    linePlot("##wire", ImVec2(w, h), m_series.wire_bytes, wire);
    ImGui::EndChild();
}

} // namespace dt::app
