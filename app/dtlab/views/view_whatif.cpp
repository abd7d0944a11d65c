// view_whatif.cpp: the what-if knobs and the comparison (see view_whatif.hpp).
#include "views/view_whatif.hpp"

#include "model/what_if.hpp"
#include "theme.hpp"
#include "widgets/elide.hpp"
#include "widgets/help.hpp"

#include <cmath>
#include <cstdio>

namespace dt::app {

WhatIfView::WhatIfView() : View("whatif", "What if") {
    open = false; // View > What if
}

const char* WhatIfView::helpText() const {
    return "Change the scenario's main parameters and run it again: ranks, strategy, DDP's bucket size and "
           "overlap, microbatches, pipeline stages and schedule, FSDP's prefetch, the modelled link, "
           "DiLoCo's "
           "inner steps and fragments (only the ones that mean something for this strategy).\n\n"
           "Each change is checked at once, as dtrun check would; a refused one says why under the knob. "
           "Rerun stops the current run and starts the changed one.\n\n"
           "The table compares the last two runs from their summaries (docs/summary.md): the median step "
           "time, "
           "bytes each rank sent per step (cost model), the allocator's peak, the pipeline bubble, the final "
           "loss and the steps done. The current run's column refreshes while it runs.";
}

LayoutPlace WhatIfView::layoutPlace(const LayoutContext&) const {
    LayoutPlace place;
    place.area = LayoutArea::Band;
    place.height = std::round(ImGui::GetFrameHeightWithSpacing() * 12.0f);
    return place;
}

bool WhatIfView::isEmpty(const ViewInputs& inputs) const {
    return !inputs.model || !inputs.whatif;
}

void WhatIfView::drawEmptyState(const ViewInputs&) {
    emptyState("No run open", "Start a scenario: its knobs appear here, and a rerun is compared with it.");
}

void WhatIfView::drawContent(const ViewInputs& inputs) {
    helpMarker(helpText());
    ImGui::SameLine();
    textDisabledElided("change a knob, rerun, compare");
    if (m_serial != inputs.whatif->serial) {
        m_serial = inputs.whatif->serial;
        m_text.clear();
        m_errors.clear();
    }
    const float avail = ImGui::GetContentRegionAvail().x;
    const bool side_by_side = avail > ImGui::GetFontSize() * 40.0f;
    ImGui::BeginChild("##whatif_knobs",
                      ImVec2(side_by_side ? avail * 0.4f : 0.0f,
                             side_by_side ? 0.0f : ImGui::GetContentRegionAvail().y * 0.55f));
    drawKnobs(inputs);
    ImGui::EndChild();
    if (side_by_side)
        ImGui::SameLine();
    ImGui::BeginChild("##whatif_compare", ImVec2(0.0f, 0.0f));
    drawComparison(inputs);
    ImGui::EndChild();
}

void WhatIfView::drawKnobs(const ViewInputs& inputs) {
    const WhatIfInputs& w = *inputs.whatif;
    const Scenario& edit = *w.edited;
    const Theme& theme = *inputs.theme;
    const float label_w = ImGui::CalcTextSize("backward_prefetch  ").x;
    for (Knob knob : knobsFor(*w.base)) {
        const int key = int(knob);
        ImGui::AlignTextToFramePadding();
        const std::string value = knobValue(edit, knob);
        const bool changed = value != knobValue(*w.base, knob);
        if (changed)
            ImGui::TextColored(ImColor(accentColor(theme)), "%s", knobName(knob));
        else
            ImGui::TextUnformatted(knobName(knob));
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("%s", knobHelp(knob));
        ImGui::SameLine(label_w);
        ImGui::SetNextItemWidth(std::max(ImGui::GetFontSize() * 6.0f, ImGui::GetContentRegionAvail().x));
        const std::string id = std::string("##knob_") + knobName(knob);
        const std::vector<std::string> choices = knobChoices(knob);
        std::string problem;
        bool edited = false;
        std::string text;
        if (!choices.empty()) {
            if (ImGui::BeginCombo(id.c_str(), value.c_str())) {
                for (const std::string& c : choices)
                    if (ImGui::Selectable(c.c_str(), c == value)) {
                        text = c;
                        edited = true;
                    }
                ImGui::EndCombo();
            }
        } else {
            std::string& buffer = m_text[key];
            if (buffer.empty())
                buffer = value;
            char field[64];
            std::snprintf(field, sizeof(field), "%s", buffer.c_str());
            if (ImGui::InputText(id.c_str(), field, sizeof(field))) {
                buffer = field;
                text = buffer;
                edited = true;
            }
        }
        if (edited) {
            problem = inputs.act().setWhatIfKnob(knobName(knob), text);
            m_errors[key] = problem;
        }
        if (!m_errors[key].empty()) {
            ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(warningColor(theme)));
            ImGui::TextWrapped("%s", m_errors[key].c_str());
            ImGui::PopStyleColor();
        }
    }
    const bool any_change = w.changes != "the same settings";
    ImGui::TextWrapped("Changes: %s", w.changes.c_str());
    if (inputs.act().button("Rerun with these##whatif", true, nullptr))
        inputs.act().requestWhatIfRerun();
    ImGui::SameLine();
    ImGui::TextDisabled(any_change ? "stops this run, starts the changed one" : "runs the same again");
}

void WhatIfView::drawComparison(const ViewInputs& inputs) {
    const WhatIfInputs& w = *inputs.whatif;
    if (!w.rows || w.rows->empty()) {
        ImGui::TextDisabled("Rerun to compare: the table sets this run beside the last one.");
        if (w.now_label)
            ImGui::TextDisabled("this run: %s", w.now_label->c_str());
        return;
    }
    // Which runs the columns are, in full above the table (a column is too narrow for them).
    ImGui::TextWrapped("before: %s", w.before_label ? w.before_label->c_str() : "the last run");
    ImGui::TextWrapped("now: %s", w.now_label ? w.now_label->c_str() : "this run");
    if (ImGui::BeginTable("##compare", 4, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp)) {
        ImGui::TableSetupColumn("measure", ImGuiTableColumnFlags_WidthStretch, 2.2f);
        ImGui::TableSetupColumn("before", ImGuiTableColumnFlags_WidthStretch, 1.0f);
        ImGui::TableSetupColumn("now", ImGuiTableColumnFlags_WidthStretch, 1.0f);
        ImGui::TableSetupColumn("change", ImGuiTableColumnFlags_WidthStretch, 0.8f);
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextDisabled("from the summaries");
        ImGui::TableNextColumn();
        ImGui::TextDisabled("before");
        ImGui::TableNextColumn();
        ImGui::TextDisabled("now");
        ImGui::TableNextColumn();
        ImGui::TextDisabled("change");
        char text[64];
        for (const ComparisonRow& row : *w.rows) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            textElided(row.label, ImGui::GetContentRegionAvail().x);
            for (const std::optional<double>& v : {row.before, row.now}) {
                ImGui::TableNextColumn();
                if (v) {
                    std::snprintf(text, sizeof(text), "%.3g %s", *v, row.unit.c_str());
                    ImGui::TextUnformatted(text);
                } else {
                    ImGui::TextDisabled("-");
                }
            }
            ImGui::TableNextColumn();
            if (const std::optional<double> c = row.change()) {
                std::snprintf(text, sizeof(text), "%+.0f %%", *c * 100.0);
                ImGui::TextUnformatted(text);
            }
        }
        ImGui::EndTable();
    }
    if (!w.now_finished)
        ImGui::TextDisabled("this run is still going: its column refreshes every 2 s");
}

} // namespace dt::app
