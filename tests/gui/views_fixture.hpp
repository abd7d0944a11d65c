// views_fixture.hpp: headless Dear ImGui and synthetic runs for the view tests
// (test_views.cpp) and the frame benchmark (tests/bench/bench_frame.cpp).
//
//   HeadlessImGui   an ImGui context with a 1600x900 display and a built font
//                   atlas, no GL backend: NewFrame -> views -> Render works,
//                   and ImDrawData tells how much was drawn.
//   SyntheticRun    events shaped like a DDP tiny_gpt step (4 blocks, 2 bucket
//                   all-reduces) for N ranks, 21 events per rank and step.
//   SyntheticFsdp   events shaped like an FSDP tiny_gpt step: per unit the
//                   all-gather, materialize, compute, free; backward prefetch
//                   and reduce-scatter; the mem params materialized counter.
//   SyntheticPipeline  a pipeline step generated from the schedule itself
//                   (pipeline_schedule.hpp): F/B/Bi/W spans where the unit-time
//                   simulator puts them, Send/Recv Works numbered as the
//                   communicator numbers them, Step spans.
#pragma once

#include "dtlab/pipeline_schedule.hpp"
#include "dtlab/sharding_theory.hpp"
#include "model/run_model.hpp"

#include <imgui.h>
#include <imgui_internal.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace dt::test {

struct FrameStats {
    int vertices = 0;
    int indices = 0;
    int commands = 0;
    bool balanced = true; // every Begin/Push had its End/Pop inside the view
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
    template <typename Body> FrameStats frame(Body&& body) {
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
        stats.balanced = g.CurrentWindowStack.Size == windows && g.CurrentWindow == window &&
                         g.ColorStack.Size == 0 && g.StyleVarStack.Size == 0 && window->IDStack.Size == ids &&
                         window->DrawList->_ClipRectStack.Size == clips && g.CurrentTable == nullptr;
        ImGui::End();
        ImGui::Render();
        const ImDrawData* data = ImGui::GetDrawData();
        stats.vertices = data->TotalVtxCount;
        stats.indices = data->TotalIdxCount;
        for (int i = 0; i < data->CmdListsCount; ++i)
            stats.commands += data->CmdLists[i]->CmdBuffer.Size;
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
    static constexpr int64_t kStepNs = 10'000'000; // a step every 10 ms
    static constexpr int64_t kT0 = 1'000'000'000;  // first step starts at 1 s on the Session clock

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
            out.push_back(
                span(rank, step, EventKind::Forward, b, t + (400 + 500 * b) * us, t + (900 + 500 * b) * us));
        out.push_back(span(rank, step, EventKind::Forward, -1, t + 2400 * us, t + 2600 * us));
        const uint64_t seq = uint64_t(step) * 2;
        for (int b = 3; b >= 0; --b) {
            const int64_t begin = t + (2600 + 1000 * (3 - b)) * us;
            out.push_back(span(rank, step, EventKind::Backward, b, begin, begin + 1000 * us));
            if (b == 2) { // bucket 0 is ready after blocks 3 and 2
                out.push_back(work(rank, step, EventKind::AllReduce, EventPhase::WorkScheduled, seq, 0,
                                   t + 4600 * us, world));
                out.push_back(work(rank, step, EventKind::AllReduce, EventPhase::WorkStarted, seq, 0,
                                   t + 4610 * us, world));
            }
        }
        out.push_back(span(rank, step, EventKind::Backward, -2, t + 2600 * us, t + 6700 * us));
        out.push_back(
            work(rank, step, EventKind::AllReduce, EventPhase::WorkCompleted, seq, 0, t + 6000 * us, world));
        out.push_back(work(rank, step, EventKind::AllReduce, EventPhase::WorkScheduled, seq + 1, 1,
                           t + 6700 * us, world));
        out.push_back(work(rank, step, EventKind::AllReduce, EventPhase::WorkStarted, seq + 1, 1,
                           t + 6710 * us, world));
        out.push_back(work(rank, step, EventKind::AllReduce, EventPhase::WorkCompleted, seq + 1, 1,
                           t + 7200 * us, world));
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
                if (!counters)
                    continue;
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

// FSDP on tiny_gpt (root unit -1, blocks 0..L-1), one step per rank, in
// ticks of 100 us from kT0 + step * kStepNs. Times in ticks, t = start of the
// step; the root is gathered first and freed last:
//   forward   root: all-gather [t, t+1], materialized at t+1, embed forward [t+1, t+2]
//             block b (from t = 2 + 3b): all-gather [t, t+1], materialized t+1,
//             forward [t+1, t+3], freed t+3
//             head forward [2+3L, 3+3L]
//   backward  root backward [3+3L, 4+3L]; block b from x = 4+3L + 2(L-1-b):
//             all-gather [x, x+1] (block L-1) or prefetched during the block
//             above (b+1's [x'+2, x'+3] = [x, x+1]), materialized x+1,
//             backward [x+1, x+3], reduce-scatter [x+3, x+4], freed x+4
//             root reduce-scatter after the last block, root freed after it
struct SyntheticFsdp {
    static constexpr int64_t kTick = 100'000; // 100 us
    static constexpr int64_t kStepNs = 100 * kTick;
    static constexpr int64_t kT0 = SyntheticRun::kT0;

    static Scenario scenario(int world, int layers, const std::string& kind = "fsdp") {
        Scenario s;
        s.topology.ranks = world;
        s.model.layers = layers;
        if (!parseStrategyKind(kind, s.strategy.kind))
            throw std::invalid_argument("no strategy kind " + kind);
        return s;
    }
    static int64_t at(int step, double ticks) {
        return kT0 + int64_t(step) * kStepNs + int64_t(ticks * double(kTick));
    }

    static Event unitEvent(int rank, int step, EventKind kind, int unit, int64_t t, int64_t bytes,
                           double value = 0.0) {
        Event e;
        e.rank = rank;
        e.step = step;
        e.microbatch = 0;
        e.kind = kind;
        e.phase = EventPhase::Instant;
        e.unit = int16_t(unit);
        e.t_ns = t;
        e.bytes = bytes;
        e.value = value;
        return e;
    }
    // One collective Work (scheduled and started at t0, completed at t1) on a group.
    static void collective(std::vector<Event>& out, int rank, int step, EventKind kind, uint64_t seq,
                           int unit, int64_t t0, int64_t t1, int world, int64_t bytes, uint8_t group) {
        for (auto [phase, t] :
             {std::pair{EventPhase::WorkScheduled, t0}, std::pair{EventPhase::WorkStarted, t0},
              std::pair{EventPhase::WorkCompleted, t1}}) {
            Event e = SyntheticRun::work(rank, step, kind, phase, seq, unit, t, world, bytes);
            e.group = group;
            e.microbatch = 0;
            out.push_back(e);
        }
    }

    static void addStep(std::vector<Event>& out, const Scenario& sc, int rank, int step) {
        const int L = sc.model.layers, W = sc.topology.ranks, N = shardCount(sc);
        const UnitLayout layout = unitLayout(sc.model);
        const int64_t root_bytes = 4 * paddedNumel(layout.root_numel, N);
        const int64_t block_bytes = 4 * paddedNumel(layout.unit_numel[0], N);
        const uint8_t group =
            sc.strategy.kind == dt::StrategyKind::Hsdp ? groupIdShard(rank / N) : kGroupWorld;
        uint64_t ag = uint64_t(step) * uint64_t(2 * L + 1), rs = uint64_t(step) * uint64_t(L + 1);
        double alive = 0.0;
        auto materialize = [&](int unit, double t, int for_backward) {
            const int64_t bytes = unit < 0 ? root_bytes : block_bytes;
            out.push_back(
                unitEvent(rank, step, EventKind::UnitMaterialized, unit, at(step, t), bytes, for_backward));
            alive += double(bytes);
            out.push_back(
                SyntheticRun::counter(rank, step, EventKind::MemParamsMaterialized, alive, at(step, t)));
        };
        auto freed = [&](int unit, double t) {
            const int64_t bytes = unit < 0 ? root_bytes : block_bytes;
            out.push_back(unitEvent(rank, step, EventKind::UnitFreed, unit, at(step, t), bytes));
            alive -= double(bytes);
            out.push_back(
                SyntheticRun::counter(rank, step, EventKind::MemParamsMaterialized, alive, at(step, t)));
        };
        auto compute = [&](EventKind kind, int unit, double t0, double t1) {
            Event e = SyntheticRun::span(rank, step, kind, unit, at(step, t0), at(step, t1));
            e.microbatch = 0;
            out.push_back(e);
        };
        // forward
        collective(out, rank, step, EventKind::AllGather, ag++, -1, at(step, 0), at(step, 1), W,
                   root_bytes / N, group);
        materialize(-1, 1, 0);
        compute(EventKind::Forward, -1, 1, 2);
        for (int b = 0; b < L; ++b) {
            const double t = 2 + 3 * b;
            collective(out, rank, step, EventKind::AllGather, ag++, b, at(step, t), at(step, t + 1), W,
                       block_bytes / N, group);
            materialize(b, t + 1, 0);
            compute(EventKind::Forward, b, t + 1, t + 3);
            freed(b, t + 3);
        }
        const double head = 2 + 3 * L;
        compute(EventKind::Forward, -1, head, head + 1);
        // backward (the first block's all-gather at once, the others prefetched one block ahead)
        compute(EventKind::Backward, -1, head + 1, head + 2);
        double x = head + 2;
        collective(out, rank, step, EventKind::AllGather, ag++, L - 1, at(step, x), at(step, x + 1), W,
                   block_bytes / N, group);
        for (int b = L - 1; b >= 0; --b) {
            materialize(b, x + 1, 1);
            compute(EventKind::Backward, b, x + 1, x + 3);
            if (b > 0)
                collective(out, rank, step, EventKind::AllGather, ag++, b - 1, at(step, x + 2),
                           at(step, x + 3), W, block_bytes / N, group);
            collective(out, rank, step, EventKind::ReduceScatter, rs++, b, at(step, x + 3), at(step, x + 4),
                       W, block_bytes, group);
            freed(b, x + 4);
            x += 2;
        }
        collective(out, rank, step, EventKind::ReduceScatter, rs++, -1, at(step, x + 2), at(step, x + 3), W,
                   root_bytes, group);
        freed(-1, x + 3);
        compute(EventKind::Optimizer, -1, x + 3, x + 4);
        compute(EventKind::Step, -1, 0, x + 4);
    }

    static void fill(app::RunModel& model, const Scenario& sc, int steps) {
        model.reset(sc, sc.topology.ranks);
        std::vector<Event> events;
        for (int s = 0; s < steps; ++s)
            for (int r = 0; r < sc.topology.ranks; ++r)
                addStep(events, sc, r, s);
        model.ingest(events.data(), events.size());
    }
};

// A pipeline run (world rank = replica * p + stage) drawn from its own
// schedule: simulatePipelineSchedule with F = 1, B = 2, Bi = W = 1 units of
// kUnit ns places every compute span; a send happens when its rank's clock
// says (the end of the compute before it); every receive is posted when the
// step starts and completes `latency` ns after its send. Sends and receives
// are numbered per (direction, peer) in schedule order, as the communicator
// numbers them, so the k-th send i -> j is j's k-th receive from i.
struct SyntheticPipeline {
    static constexpr int64_t kUnit = 1'000'000;     // 1 ms per unit of time
    static constexpr int64_t kStepNs = 100 * kUnit; // a step every 100 ms
    static constexpr int64_t kT0 = SyntheticRun::kT0;
    static constexpr int64_t kBytes = 196'608; // one microbatch's activation (4 x 64 x 192 floats)

    static Scenario scenario(int ranks, int stages, int microbatches, const std::string& schedule = "1f1b",
                             int chunks_per_rank = 1) {
        Scenario s;
        s.topology.ranks = ranks;
        s.topology.stages = stages;
        s.strategy.kind = dt::StrategyKind::Pipeline;
        s.strategy.schedule = schedule;
        s.strategy.microbatches = microbatches;
        s.strategy.chunks_per_rank = chunks_per_rank;
        s.model.layers = stages * chunks_per_rank;
        return s;
    }
    static PipelineShape shape(const Scenario& sc) {
        PipelineShape shape;
        shape.stages = sc.topology.stages;
        shape.microbatches = sc.strategy.microbatches;
        shape.chunks_per_rank = sc.strategy.chunks_per_rank;
        return shape;
    }
    static int64_t stepStart(int step) { return kT0 + int64_t(step) * kStepNs; }

    static EventKind kindOf(PipeOp op) {
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

    // One step of one pipeline; messages take `latency` ns.
    static void addStep(std::vector<Event>& out, const Scenario& sc, int replica, int step,
                        int64_t latency = 0) {
        const PipelineShape sh = shape(sc);
        const int p = sh.stages;
        const PipelineSchedule schedule = makePipelineSchedule(sc.strategy.schedule, sh);
        const std::vector<PredictedSlot> slots = simulatePipelineSchedule(schedule, sh);
        std::map<std::tuple<int, PipeOp, int, int>, PredictedSlot> slot_of; // (stage, op, mb, chunk)
        double makespan = 0;
        for (const PredictedSlot& s : slots) {
            slot_of[{s.rank, s.action.op, s.action.microbatch, s.action.chunk}] = s;
            makespan = std::max(makespan, s.end);
        }
        const int64_t t0 = stepStart(step);
        auto at = [&](double units) { return t0 + int64_t(units * double(kUnit)); };
        auto work = [&](int rank, EventKind kind, EventPhase phase, uint64_t seq, const PipeAction& a,
                        int peer, int64_t t) {
            Event e = SyntheticRun::work(rank, step, kind, phase, seq, a.chunk, t, 2, kBytes, peer);
            e.microbatch = int16_t(a.microbatch);
            out.push_back(e);
        };
        // Pass 1: compute spans and sends; remember when each message left.
        std::map<std::tuple<int, int, uint64_t>, int64_t> sent_at; // (from, to, seq) -> time
        for (int s = 0; s < p; ++s) {
            const int rank = replica * p + s;
            std::map<int, uint64_t> sends;
            double clock = 0;
            for (const PipeAction& a : schedule[size_t(s)]) {
                if (a.op == PipeOp::Forward || a.op == PipeOp::Backward || a.op == PipeOp::BackwardInput ||
                    a.op == PipeOp::BackwardWeight) {
                    const PredictedSlot& slot = slot_of.at({s, a.op, a.microbatch, a.chunk});
                    Event e =
                        SyntheticRun::span(rank, step, kindOf(a.op), a.chunk, at(slot.start), at(slot.end));
                    e.microbatch = int16_t(a.microbatch);
                    out.push_back(e);
                    clock = slot.end;
                } else if (a.op == PipeOp::SendAct || a.op == PipeOp::SendGrad) {
                    const int peer = replica * p + a.peer;
                    const uint64_t seq = uint64_t(step) * 1000 + sends[peer]++;
                    const int64_t t = at(clock);
                    sent_at[{rank, peer, seq}] = t;
                    work(rank, EventKind::Send, EventPhase::WorkScheduled, seq, a, peer, t);
                    work(rank, EventKind::Send, EventPhase::WorkStarted, seq, a, peer, t);
                    work(rank, EventKind::Send, EventPhase::WorkCompleted, seq, a, peer, t + latency);
                }
            }
            Event optimizer =
                SyntheticRun::span(rank, step, EventKind::Optimizer, -1, at(makespan), at(makespan + 1));
            out.push_back(optimizer);
            out.push_back(SyntheticRun::span(rank, step, EventKind::Step, -1, t0, at(makespan + 1)));
        }
        // Pass 2: receives, posted at the step's start, complete when their data arrived.
        for (int s = 0; s < p; ++s) {
            const int rank = replica * p + s;
            std::map<int, uint64_t> receives;
            for (const PipeAction& a : schedule[size_t(s)]) {
                if (a.op != PipeOp::RecvAct && a.op != PipeOp::RecvGrad)
                    continue;
                const int peer = replica * p + a.peer;
                const uint64_t seq = uint64_t(step) * 1000 + receives[peer]++;
                work(rank, EventKind::Recv, EventPhase::WorkScheduled, seq, a, peer, t0);
                work(rank, EventKind::Recv, EventPhase::WorkStarted, seq, a, peer, t0);
                work(rank, EventKind::Recv, EventPhase::WorkCompleted, seq, a, peer,
                     sent_at.at({peer, rank, seq}) + latency);
            }
        }
    }

    static std::vector<Event> make(const Scenario& sc, int steps, int64_t latency = 0) {
        std::vector<Event> out;
        const int replicas = sc.topology.ranks / sc.topology.stages;
        for (int s = 0; s < steps; ++s)
            for (int r = 0; r < replicas; ++r)
                addStep(out, sc, r, s, latency);
        return out;
    }
    static void fill(app::RunModel& model, const Scenario& sc, int steps, int64_t latency = 0) {
        model.reset(sc, sc.topology.ranks);
        const std::vector<Event> events = make(sc, steps, latency);
        model.ingest(events.data(), events.size());
    }
};

} // namespace dt::test
