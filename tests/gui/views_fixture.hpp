// views_fixture.hpp: headless Dear ImGui and synthetic runs for the view tests
// (test_views.cpp) and the frame benchmark (tests/bench/bench_frame.cpp).
//
//   HeadlessImGui   an ImGui context with a 1600x900 display and a built font
//                   atlas, no GL backend: NewFrame -> views -> Render works,
//                   and ImDrawData tells how much was drawn.
//   SyntheticRun    events shaped like a DDP tiny_gpt step (4 blocks, 2 bucket
//                   all-reduces) for N ranks, 21 events per rank and step.
#pragma once

#include "model/run_model.hpp"

#include <imgui.h>
#include <imgui_internal.h>

#include <cstdint>
#include <vector>

namespace dt::test {

struct FrameStats {
    int vertices = 0;
    int indices = 0;
    int commands = 0;
    bool balanced = true;   // every Begin/Push had its End/Pop inside the view
};

class HeadlessImGui {
public:
    HeadlessImGui() {
        m_context = ImGui::CreateContext();
        ImGuiIO& io = ImGui::GetIO();
        io.IniFilename = nullptr;
        io.LogFilename = nullptr;
        io.DisplaySize = ImVec2(1600.0f, 900.0f);
        io.DeltaTime = 1.0f / 60.0f;
        unsigned char* pixels = nullptr;
        int w = 0, h = 0;
        io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h); // builds the atlas; nothing is uploaded
        ImGui::StyleColorsDark();
    }
    ~HeadlessImGui() { ImGui::DestroyContext(m_context); }
    HeadlessImGui(const HeadlessImGui&) = delete;
    HeadlessImGui& operator=(const HeadlessImGui&) = delete;

    // Mouse state for the next frame (screen px); wheel > 0 zooms in.
    void mouse(ImVec2 pos, bool left_down = false, float wheel = 0.0f) {
        ImGuiIO& io = ImGui::GetIO();
        io.MousePos = pos;
        io.MouseDown[0] = left_down;
        io.MouseWheel = wheel;
    }

    // One frame: a full-display window named "view" around body().
    template <typename Body>
    FrameStats frame(Body&& body) {
        ImGui::NewFrame();
        ImGui::SetNextWindowPos(ImVec2(0.0f, 0.0f));
        ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
        ImGui::Begin("view", nullptr, ImGuiWindowFlags_NoSavedSettings);
        ImGuiContext& g = *GImGui;
        ImGuiWindow* window = g.CurrentWindow;
        const int windows = g.CurrentWindowStack.Size; // NewFrame's implicit "Debug" window + ours
        const int ids = window->IDStack.Size;
        const int clips = window->DrawList->_ClipRectStack.Size;
        body();
        FrameStats stats;
        stats.balanced = g.CurrentWindowStack.Size == windows && g.CurrentWindow == window && g.ColorStack.Size == 0 &&
                         g.StyleVarStack.Size == 0 && window->IDStack.Size == ids &&
                         window->DrawList->_ClipRectStack.Size == clips && g.CurrentTable == nullptr;
        ImGui::End();
        ImGui::Render();
        const ImDrawData* data = ImGui::GetDrawData();
        stats.vertices = data->TotalVtxCount;
        stats.indices = data->TotalIdxCount;
        for (int i = 0; i < data->CmdListsCount; ++i) stats.commands += data->CmdLists[i]->CmdBuffer.Size;
        ImGui::GetIO().MouseWheel = 0.0f;
        return stats;
    }

private:
    ImGuiContext* m_context = nullptr;
};

// A run shaped like DDP on tiny_gpt: per rank and step, 15 compute spans and 2
// bucket all-reduces (scheduled, started, completed), i.e. 21 events.
struct SyntheticRun {
    static constexpr int kEventsPerStep = 21;
    static constexpr int64_t kStepNs = 10'000'000;    // a step every 10 ms
    static constexpr int64_t kT0 = 1'000'000'000;     // first step starts at 1 s on the Session clock

    static Event span(int rank, int step, EventKind kind, int unit, int64_t begin, int64_t end) {
        Event e;
        e.rank = rank;
        e.step = step;
        e.kind = kind;
        e.phase = EventPhase::Span;
        e.unit = int16_t(unit);
        e.t_ns = begin;
        e.dur_ns = end - begin;
        return e;
    }
    static Event work(int rank, int step, EventKind kind, EventPhase phase, uint64_t seq, int unit, int64_t t,
                      int world, int64_t bytes = 1 << 20, int peer = -1) {
        Event e;
        e.rank = rank;
        e.step = step;
        e.kind = kind;
        e.phase = phase;
        e.seq = seq;
        e.unit = int16_t(unit);
        e.t_ns = t;
        e.bytes = bytes;
        e.peer = int16_t(peer);
        e.group_size = uint16_t(world);
        return e;
    }
    static Event counter(int rank, int step, EventKind kind, double value, int64_t t) {
        Event e;
        e.rank = rank;
        e.step = step;
        e.kind = kind;
        e.phase = EventPhase::Counter;
        e.value = value;
        e.t_ns = t;
        return e;
    }

    // Appends one step of one rank, each span emitted when it ends (as ranks do).
    static void addStep(std::vector<Event>& out, int rank, int step, int world) {
        const int64_t us = 1000;
        const int64_t t = kT0 + int64_t(step) * kStepNs + int64_t(rank) * 7 * us;
        out.push_back(span(rank, step, EventKind::Data, -1, t, t + 300 * us));
        out.push_back(span(rank, step, EventKind::Forward, -1, t + 300 * us, t + 400 * us));
        for (int b = 0; b < 4; ++b)
            out.push_back(span(rank, step, EventKind::Forward, b, t + (400 + 500 * b) * us, t + (900 + 500 * b) * us));
        out.push_back(span(rank, step, EventKind::Forward, -1, t + 2400 * us, t + 2600 * us));
        const uint64_t seq = uint64_t(step) * 2;
        for (int b = 3; b >= 0; --b) {
            const int64_t begin = t + (2600 + 1000 * (3 - b)) * us;
            out.push_back(span(rank, step, EventKind::Backward, b, begin, begin + 1000 * us));
            if (b == 2) { // bucket 0 is ready after blocks 3 and 2
                out.push_back(work(rank, step, EventKind::AllReduce, EventPhase::WorkScheduled, seq, 0, t + 4600 * us, world));
                out.push_back(work(rank, step, EventKind::AllReduce, EventPhase::WorkStarted, seq, 0, t + 4610 * us, world));
            }
        }
        out.push_back(span(rank, step, EventKind::Backward, -2, t + 2600 * us, t + 6700 * us));
        out.push_back(work(rank, step, EventKind::AllReduce, EventPhase::WorkCompleted, seq, 0, t + 6000 * us, world));
        out.push_back(work(rank, step, EventKind::AllReduce, EventPhase::WorkScheduled, seq + 1, 1, t + 6700 * us, world));
        out.push_back(work(rank, step, EventKind::AllReduce, EventPhase::WorkStarted, seq + 1, 1, t + 6710 * us, world));
        out.push_back(work(rank, step, EventKind::AllReduce, EventPhase::WorkCompleted, seq + 1, 1, t + 7200 * us, world));
        out.push_back(span(rank, step, EventKind::Wait, -1, t + 6700 * us, t + 7200 * us));
        out.push_back(span(rank, step, EventKind::Optimizer, -1, t + 7200 * us, t + 8000 * us));
        out.push_back(span(rank, step, EventKind::Step, -1, t, t + 8000 * us));
    }

    // `steps` steps for every rank, interleaved rank by rank per step (as the
    // collector receives them), plus per-step counters when `counters`.
    static std::vector<Event> make(int world, int steps, bool counters = false) {
        std::vector<Event> out;
        out.reserve(size_t(world) * size_t(steps) * (kEventsPerStep + (counters ? 9 : 0)));
        for (int s = 0; s < steps; ++s)
            for (int r = 0; r < world; ++r) {
                addStep(out, r, s, world);
                if (!counters) continue;
                const int64_t t = kT0 + int64_t(s) * kStepNs + 8'000'000;
                out.push_back(counter(r, s, EventKind::LossValue, 4.0 - 0.01 * s + 0.001 * r, t));
                out.push_back(counter(r, s, EventKind::StepTimeMs, 8.0 + 0.1 * r, t));
                out.push_back(counter(r, s, EventKind::BytesSent, 1.5e6 * double(s + 1), t));
                out.push_back(counter(r, s, EventKind::MemParameters, 1'000'000, t));
                out.push_back(counter(r, s, EventKind::MemGradients, 1'000'000, t));
                out.push_back(counter(r, s, EventKind::MemOptimizer, 2'000'000, t));
                out.push_back(counter(r, s, EventKind::MemActivations, 500'000.0 + 1000.0 * (s % 3), t));
                out.push_back(counter(r, s, EventKind::MemCommBuffers, 250'000, t));
                out.push_back(counter(r, s, EventKind::MemLive, 4'750'000, t));
            }
        return out;
    }

    // A model holding `world` ranks x `steps` steps.
    static void fill(app::RunModel& model, int world, int steps, bool counters = false) {
        Scenario scenario;
        scenario.topology.ranks = world;
        model.reset(scenario, world);
        const std::vector<Event> events = make(world, steps, counters);
        model.ingest(events.data(), events.size());
    }
};

} // namespace dt::test
