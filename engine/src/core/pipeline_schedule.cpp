// pipeline_schedule.cpp: generators, validator and simulator of
// pipeline_schedule.hpp.
//
// Messages are named by the chunk boundary they cross: the activation of
// (mb, boundary b) goes from chunk b to chunk b+1, the gradient of
// (mb, boundary b) from chunk b+1 back to chunk b. SendAct(mb, g) and
// RecvAct(mb, g+1) carry boundary g; SendGrad(mb, g+1) and RecvGrad(mb, g) too.
#include "dtlab/pipeline_schedule.hpp"

#include "dtlab/errors.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace dt {
namespace {

bool isCompute(PipeOp op) {
    return op == PipeOp::Forward || op == PipeOp::Backward || op == PipeOp::BackwardInput ||
           op == PipeOp::BackwardWeight;
}

// ---- generators -------------------------------------------------------------------

struct Emitter {
    const PipelineShape& s;
    int rank;
    std::vector<PipeAction>& out;

    void forward(int mb, int g) {
        if (g > 0 && s.rankOfChunk(g - 1) != rank)
            out.push_back({PipeOp::RecvAct, mb, g, s.rankOfChunk(g - 1)});
        out.push_back({PipeOp::Forward, mb, g, -1});
        if (g + 1 < s.chunks() && s.rankOfChunk(g + 1) != rank)
            out.push_back({PipeOp::SendAct, mb, g, s.rankOfChunk(g + 1)});
    }
    void backward(int mb, int g, PipeOp op) {
        if (g + 1 < s.chunks() && s.rankOfChunk(g + 1) != rank)
            out.push_back({PipeOp::RecvGrad, mb, g, s.rankOfChunk(g + 1)});
        out.push_back({op, mb, g, -1});
        if (g > 0 && s.rankOfChunk(g - 1) != rank)
            out.push_back({PipeOp::SendGrad, mb, g, s.rankOfChunk(g - 1)});
    }
    void weight(int mb, int g) { out.push_back({PipeOp::BackwardWeight, mb, g, -1}); }
};

PipelineSchedule gpipe(const PipelineShape& s) {
    PipelineSchedule sched(static_cast<size_t>(s.stages), std::vector<PipeAction>{});
    for (int r = 0; r < s.stages; ++r) {
        Emitter e{s, r, sched[size_t(r)]};
        for (int mb = 0; mb < s.microbatches; ++mb)
            e.forward(mb, r);
        for (int mb = 0; mb < s.microbatches; ++mb)
            e.backward(mb, r, PipeOp::Backward);
        sched[size_t(r)].push_back({PipeOp::Optimizer, -1, -1, -1});
    }
    return sched;
}

// 1F1B (PipeDream-Flush): p-1-r warm-up forwards on rank r, then one forward /
// one backward, then the cool-down backwards.
std::vector<PipeAction> oneForwardOneBackwardOrder(const PipelineShape& s, int r, PipeOp backward) {
    std::vector<PipeAction> order; // compute actions only
    const int m = s.microbatches;
    const int warmup = std::min(s.stages - 1 - r, m);
    for (int mb = 0; mb < warmup; ++mb)
        order.push_back({PipeOp::Forward, mb, r, -1});
    for (int i = 0; i < m - warmup; ++i) {
        order.push_back({PipeOp::Forward, warmup + i, r, -1});
        order.push_back({backward, i, r, -1});
    }
    for (int mb = m - warmup; mb < m; ++mb)
        order.push_back({backward, mb, r, -1});
    return order;
}

PipelineSchedule oneForwardOneBackward(const PipelineShape& s) {
    PipelineSchedule sched(static_cast<size_t>(s.stages), std::vector<PipeAction>{});
    for (int r = 0; r < s.stages; ++r) {
        Emitter e{s, r, sched[size_t(r)]};
        for (const PipeAction& a : oneForwardOneBackwardOrder(s, r, PipeOp::Backward)) {
            if (a.op == PipeOp::Forward)
                e.forward(a.microbatch, r);
            else
                e.backward(a.microbatch, r, PipeOp::Backward);
        }
        sched[size_t(r)].push_back({PipeOp::Optimizer, -1, -1, -1});
    }
    return sched;
}

// ZB-H1 (Zero Bubble, Qi et al.): 1f1b's order of F and Bi (the input
// gradient, which the previous stage waits for), with each W (weight gradient)
// placed greedily where the rank would otherwise wait, assuming F = Bi = W in
// time, and never more than p microbatches holding activations on a rank
// (1f1b's peak, reached on its first stage). Built by executing the ranks in time order: the rank with the
// smallest clock decides next, so "its input has not arrived yet" is final.
PipelineSchedule zeroBubbleH1(const PipelineShape& s) {
    const int p = s.stages, m = s.microbatches;
    PipelineSchedule sched(static_cast<size_t>(p), std::vector<PipeAction>{});
    std::vector<std::vector<PipeAction>> order(static_cast<size_t>(p), std::vector<PipeAction>{});
    for (int r = 0; r < p; ++r)
        order[size_t(r)] = oneForwardOneBackwardOrder(s, r, PipeOp::BackwardInput);
    std::vector<size_t> next(size_t(p), 0);
    std::vector<double> clock(size_t(p), 0.0);
    std::vector<int> next_w(size_t(p), 0), bi_done(size_t(p), 0), f_done(size_t(p), 0);
    std::map<std::pair<int, int>, double> fwd_end, bwd_end;     // (mb, chunk) -> time
    const auto inputTime = [&](const PipeAction& a) -> double { // -1: not produced yet
        const auto& table = a.op == PipeOp::Forward ? fwd_end : bwd_end;
        const int from = a.op == PipeOp::Forward ? a.chunk - 1 : a.chunk + 1;
        if (from < 0 || from >= p)
            return 0.0;
        auto it = table.find({a.microbatch, from});
        return it == table.end() ? -1.0 : it->second;
    };
    for (;;) {
        int r = -1; // the unfinished rank with the smallest clock
        for (int k = 0; k < p; ++k) {
            const bool unfinished = next[size_t(k)] < order[size_t(k)].size() || next_w[size_t(k)] < m;
            if (unfinished && (r < 0 || clock[size_t(k)] < clock[size_t(r)]))
                r = k;
        }
        if (r < 0)
            break;
        Emitter e{s, r, sched[size_t(r)]};
        double& now = clock[size_t(r)];
        const bool main_left = next[size_t(r)] < order[size_t(r)].size();
        const PipeAction a = main_left ? order[size_t(r)][next[size_t(r)]] : PipeAction{};
        const double ready = main_left ? inputTime(a) : -1.0;
        const bool w_possible = next_w[size_t(r)] < bi_done[size_t(r)];
        const bool memory_full =
            main_left && a.op == PipeOp::Forward && f_done[size_t(r)] - next_w[size_t(r)] >= p;
        if (main_left && !memory_full && ready >= 0.0 && ready <= now) {
            if (a.op == PipeOp::Forward) {
                e.forward(a.microbatch, r);
                fwd_end[{a.microbatch, r}] = now += 1.0;
                ++f_done[size_t(r)];
            } else {
                e.backward(a.microbatch, r, PipeOp::BackwardInput);
                bwd_end[{a.microbatch, r}] = now += 1.0;
                ++bi_done[size_t(r)];
            }
            ++next[size_t(r)];
        } else if (w_possible) {
            e.weight(next_w[size_t(r)]++, r); // fill the wait with a weight gradient
            now += 1.0;
        } else {
            // Nothing to fill with: wait for the input. If its producer has not
            // run yet, every other rank's clock is later than ours; jump to the
            // earliest of them so that one can run.
            double later = -1.0;
            for (int k = 0; k < p; ++k)
                if (k != r && (later < 0 || clock[size_t(k)] < later) && clock[size_t(k)] > now)
                    later = clock[size_t(k)];
            now = ready > now ? ready : (later > now ? later : now + 1.0);
        }
    }
    for (auto& list : sched)
        list.push_back({PipeOp::Optimizer, -1, -1, -1});
    return sched;
}

// Megatron-LM's interleaved 1F1B: the k-th forward item of a rank is microbatch
// (k / (p v)) p + k % p on local chunk (k / p) % v; backward items take the
// local chunks in reverse.
PipelineSchedule interleaved(const PipelineShape& s) {
    const int p = s.stages, v = s.chunks_per_rank, m = s.microbatches, n = m * v;
    PipelineSchedule sched(static_cast<size_t>(p), std::vector<PipeAction>{});
    for (int r = 0; r < p; ++r) {
        Emitter e{s, r, sched[size_t(r)]};
        const auto item = [&](int k, bool forward) {
            const int in_group = k % (p * v);
            int local = in_group / p;
            if (!forward)
                local = v - 1 - local;
            const int mb = (k / (p * v)) * p + k % p;
            return std::make_pair(mb, local * p + r);
        };
        const int warmup = m == p ? n : std::min(n, (p - r - 1) * 2 + (v - 1) * p);
        for (int k = 0; k < warmup; ++k) {
            auto [mb, g] = item(k, true);
            e.forward(mb, g);
        }
        for (int k = 0; k < n - warmup; ++k) {
            auto [fmb, fg] = item(k + warmup, true);
            e.forward(fmb, fg);
            auto [bmb, bg] = item(k, false);
            e.backward(bmb, bg, PipeOp::Backward);
        }
        for (int k = n - warmup; k < n; ++k) {
            auto [mb, g] = item(k, false);
            e.backward(mb, g, PipeOp::Backward);
        }
        sched[size_t(r)].push_back({PipeOp::Optimizer, -1, -1, -1});
    }
    return sched;
}

// ---- execution model shared by the validator and the simulator ------------------------

// Which message a send or receive carries: (is gradient, microbatch, boundary).
using MessageKey = std::tuple<bool, int, int>;
MessageKey messageOf(const PipeAction& a) {
    switch (a.op) {
    case PipeOp::SendAct:
        return {false, a.microbatch, a.chunk};
    case PipeOp::RecvAct:
        return {false, a.microbatch, a.chunk - 1};
    case PipeOp::SendGrad:
        return {true, a.microbatch, a.chunk - 1};
    case PipeOp::RecvGrad:
        return {true, a.microbatch, a.chunk};
    default:
        return {false, -1, -1};
    }
}

// What a compute action needs before it can start: (kind, microbatch, chunk) of
// a compute that must have finished (on whichever rank owns that chunk).
struct Need {
    PipeOp op;
    int microbatch;
    int chunk;
};
std::vector<Need> needsOf(const PipeAction& a, const PipelineShape& s, bool split) {
    std::vector<Need> n;
    const PipeOp back = split ? PipeOp::BackwardInput : PipeOp::Backward;
    switch (a.op) {
    case PipeOp::Forward:
        if (a.chunk > 0)
            n.push_back({PipeOp::Forward, a.microbatch, a.chunk - 1});
        break;
    case PipeOp::Backward:
    case PipeOp::BackwardInput:
        n.push_back({PipeOp::Forward, a.microbatch, a.chunk});
        if (a.chunk + 1 < s.chunks())
            n.push_back({back, a.microbatch, a.chunk + 1});
        break;
    case PipeOp::BackwardWeight:
        n.push_back({PipeOp::BackwardInput, a.microbatch, a.chunk});
        break;
    default:
        break;
    }
    return n;
}

struct Executor {
    const PipelineSchedule& sched;
    const PipelineShape& s;
    bool split;
    PipeDurations dur;
    std::map<std::tuple<PipeOp, int, int>, double> done; // compute -> finish time
    std::map<std::pair<int, MessageKey>, double> sent;   // (destination rank, message) -> time sent
    std::vector<size_t> pc;
    std::vector<double> clock;
    std::vector<PredictedSlot> slots;

    double duration(PipeOp op) const {
        switch (op) {
        case PipeOp::Forward:
            return dur.forward;
        case PipeOp::Backward:
            return dur.backward;
        case PipeOp::BackwardInput:
            return dur.backward_input;
        case PipeOp::BackwardWeight:
            return dur.backward_weight;
        default:
            return 0.0;
        }
    }

    // Is the data a compute on `rank` needs here? Local producers must have
    // run; remote ones must have sent this message to this rank.
    bool ready(int rank, const PipeAction& a, double& at) {
        at = clock[size_t(rank)];
        for (const Need& need : needsOf(a, s, split)) {
            const int owner = s.rankOfChunk(need.chunk);
            if (owner == rank) {
                auto it = done.find({need.op, need.microbatch, need.chunk});
                if (it == done.end())
                    return false;
                at = std::max(at, it->second);
            } else {
                const bool grad = need.op != PipeOp::Forward;
                const MessageKey key{grad, a.microbatch, grad ? a.chunk : a.chunk - 1};
                auto it = sent.find({rank, key});
                if (it == sent.end())
                    return false;
                at = std::max(at, it->second);
            }
        }
        return true;
    }

    // Runs every rank as far as it can; returns false when nobody can move.
    bool pass() {
        bool moved = false;
        for (int r = 0; r < s.stages; ++r) {
            auto& list = sched[size_t(r)];
            while (pc[size_t(r)] < list.size()) {
                const PipeAction& a = list[pc[size_t(r)]];
                if (isCompute(a.op)) {
                    double start = 0.0;
                    if (!ready(r, a, start))
                        break;
                    const double end = start + duration(a.op);
                    done[{a.op, a.microbatch, a.chunk}] = end;
                    clock[size_t(r)] = end;
                    slots.push_back({r, a, start, end});
                } else if (a.op == PipeOp::SendAct || a.op == PipeOp::SendGrad) {
                    sent[{a.peer, messageOf(a)}] = clock[size_t(r)];
                } // a receive is only posted (at the latest here): it never blocks; the compute waits
                ++pc[size_t(r)];
                moved = true;
            }
        }
        return moved;
    }

    bool finished() const {
        for (int r = 0; r < s.stages; ++r)
            if (pc[size_t(r)] < sched[size_t(r)].size())
                return false;
        return true;
    }

    void run() {
        pc.assign(size_t(s.stages), 0);
        clock.assign(size_t(s.stages), 0.0);
        while (!finished() && pass()) {
        }
    }
};

bool usesSplitBackward(const PipelineSchedule& sched) {
    for (const auto& list : sched)
        for (const auto& a : list)
            if (a.op == PipeOp::BackwardInput || a.op == PipeOp::BackwardWeight)
                return true;
    return false;
}

} // namespace

const std::vector<std::string>& pipelineScheduleNames() {
    static const std::vector<std::string> names = {"gpipe", "1f1b", "interleaved", "zb-h1"};
    return names;
}

std::string pipelineShapeProblem(const std::string& name, const PipelineShape& s) {
    if (std::find(pipelineScheduleNames().begin(), pipelineScheduleNames().end(), name) ==
        pipelineScheduleNames().end())
        return "unknown pipeline schedule \"" + name + "\" (expected gpipe, 1f1b, interleaved or zb-h1)";
    if (s.stages < 1 || s.microbatches < 1 || s.chunks_per_rank < 1)
        return "stages, microbatches and chunks must be >= 1";
    if (name == "interleaved") {
        if (s.chunks_per_rank < 2)
            return "interleaved needs chunks_per_rank >= 2 (with 1 chunk per rank it is plain 1f1b)";
        if (s.microbatches % s.stages != 0)
            return "interleaved needs microbatches (" + std::to_string(s.microbatches) +
                   ") to be a multiple of the stages (" + std::to_string(s.stages) + ")";
    } else if (s.chunks_per_rank != 1) {
        return name + " runs one chunk per rank: chunks_per_rank must be 1 (use schedule = \"interleaved\")";
    }
    return "";
}

PipelineSchedule makePipelineSchedule(const std::string& name, const PipelineShape& shape) {
    const std::string problem = pipelineShapeProblem(name, shape);
    if (!problem.empty())
        throw UsageError(problem);
    if (name == "gpipe")
        return gpipe(shape);
    if (name == "1f1b")
        return oneForwardOneBackward(shape);
    if (name == "zb-h1")
        return zeroBubbleH1(shape);
    return interleaved(shape);
}

std::string describeAction(const PipeAction& a) {
    const char* name = "?";
    switch (a.op) {
    case PipeOp::Forward:
        name = "F";
        break;
    case PipeOp::Backward:
        name = "B";
        break;
    case PipeOp::BackwardInput:
        name = "Bi";
        break;
    case PipeOp::BackwardWeight:
        name = "W";
        break;
    case PipeOp::SendAct:
        name = "SendAct";
        break;
    case PipeOp::RecvAct:
        name = "RecvAct";
        break;
    case PipeOp::SendGrad:
        name = "SendGrad";
        break;
    case PipeOp::RecvGrad:
        name = "RecvGrad";
        break;
    case PipeOp::Optimizer:
        return "Optimizer";
    }
    std::string text =
        std::string(name) + "(mb " + std::to_string(a.microbatch) + ", chunk " + std::to_string(a.chunk);
    if (a.peer >= 0)
        text += ", peer " + std::to_string(a.peer);
    return text + ")";
}

std::string ScheduleProblem::message() const {
    return "rank " + std::to_string(rank) + ", action " + std::to_string(index) + " " + action + ": " +
           reason;
}

std::optional<ScheduleProblem> validatePipelineSchedule(const PipelineSchedule& sched,
                                                        const PipelineShape& s) {
    const auto problem = [](int rank, int index, const PipeAction& a, const std::string& reason) {
        return ScheduleProblem{rank, index, describeAction(a), reason};
    };
    if (int(sched.size()) != s.stages)
        return ScheduleProblem{-1, -1, "",
                               "the schedule has " + std::to_string(sched.size()) + " ranks, the shape " +
                                   std::to_string(s.stages)};
    const bool split = usesSplitBackward(sched);
    std::map<std::pair<int, MessageKey>, int> sends, receives; // (sender or receiver side, message) counts
    for (int r = 0; r < s.stages; ++r) {
        std::set<std::tuple<PipeOp, int, int>> seen;
        const auto& list = sched[size_t(r)];
        for (size_t i = 0; i < list.size(); ++i) {
            const PipeAction& a = list[i];
            const int idx = int(i);
            if (a.op == PipeOp::Optimizer) {
                if (i + 1 != list.size())
                    return problem(r, idx, a, "the optimizer step must be the last action");
                continue;
            }
            if (a.microbatch < 0 || a.microbatch >= s.microbatches)
                return problem(r, idx, a, "microbatch out of range 0.." + std::to_string(s.microbatches - 1));
            if (a.chunk < 0 || a.chunk >= s.chunks())
                return problem(r, idx, a, "chunk out of range 0.." + std::to_string(s.chunks() - 1));
            if (isCompute(a.op)) {
                if (s.rankOfChunk(a.chunk) != r)
                    return problem(r, idx, a,
                                   "chunk " + std::to_string(a.chunk) + " lives on rank " +
                                       std::to_string(s.rankOfChunk(a.chunk)));
                if (split && a.op == PipeOp::Backward)
                    return problem(r, idx, a, "a split-backward schedule mixes B with Bi/W");
                if (!seen.insert({a.op, a.microbatch, a.chunk}).second)
                    return problem(r, idx, a, "runs twice");
                // Local dependencies must come earlier in this rank's list.
                for (const Need& need : needsOf(a, s, split)) {
                    if (s.rankOfChunk(need.chunk) != r)
                        continue;
                    if (!seen.count({need.op, need.microbatch, need.chunk}))
                        return problem(r, idx, a,
                                       "needs " + describeAction({need.op, need.microbatch, need.chunk, -1}) +
                                           " first, which this rank has not run yet");
                }
                continue;
            }
            const bool is_send = a.op == PipeOp::SendAct || a.op == PipeOp::SendGrad;
            const int expected_peer = a.op == PipeOp::SendAct || a.op == PipeOp::RecvGrad
                                          ? s.rankOfChunk(a.chunk + 1)
                                          : s.rankOfChunk(a.chunk - 1);
            if (a.op == PipeOp::SendAct || a.op == PipeOp::RecvGrad) {
                if (a.chunk + 1 >= s.chunks())
                    return problem(r, idx, a, "the last chunk has no next chunk");
            } else if (a.chunk == 0) {
                return problem(r, idx, a, "chunk 0 has no previous chunk");
            }
            if (a.peer != expected_peer)
                return problem(r, idx, a,
                               "the peer must be rank " + std::to_string(expected_peer) +
                                   ", which owns the neighbouring chunk");
            if (is_send) {
                const PipeOp producer = a.op == PipeOp::SendAct
                                            ? PipeOp::Forward
                                            : (split ? PipeOp::BackwardInput : PipeOp::Backward);
                if (!seen.count({producer, a.microbatch, a.chunk}))
                    return problem(r, idx, a,
                                   "sends what " + describeAction({producer, a.microbatch, a.chunk, -1}) +
                                       " produces before it has run");
                ++sends[{a.peer, messageOf(a)}];
            } else {
                ++receives[{r, messageOf(a)}];
            }
        }
        // Every owned chunk computed for every microbatch.
        for (int mb = 0; mb < s.microbatches; ++mb)
            for (int g = r; g < s.chunks(); g += s.stages) {
                const std::vector<PipeOp> ops =
                    split
                        ? std::vector<PipeOp>{PipeOp::Forward, PipeOp::BackwardInput, PipeOp::BackwardWeight}
                        : std::vector<PipeOp>{PipeOp::Forward, PipeOp::Backward};
                for (PipeOp op : ops)
                    if (!seen.count({op, mb, g}))
                        return ScheduleProblem{r, int(list.size()), describeAction({op, mb, g, -1}),
                                               "never runs"};
            }
        if (list.empty() || list.back().op != PipeOp::Optimizer)
            return ScheduleProblem{r, int(list.size()), "Optimizer",
                                   "missing: every rank ends with the optimizer step"};
    }
    for (const auto& [key, count] : sends) {
        if (receives[key] != count)
            return ScheduleProblem{key.first, -1, std::get<0>(key.second) ? "RecvGrad" : "RecvAct",
                                   "a message for microbatch " + std::to_string(std::get<1>(key.second)) +
                                       " across chunk boundary " + std::to_string(std::get<2>(key.second)) +
                                       " is sent to this rank but never received"};
    }
    for (const auto& [key, count] : receives) {
        if (sends[key] != count)
            return ScheduleProblem{key.first, -1, std::get<0>(key.second) ? "RecvGrad" : "RecvAct",
                                   "waits for microbatch " + std::to_string(std::get<1>(key.second)) +
                                       " across chunk boundary " + std::to_string(std::get<2>(key.second)) +
                                       ", which no rank sends"};
    }
    // No deadlock: execute it.
    Executor ex{sched, s, split, {}, {}, {}, {}, {}, {}};
    ex.run();
    if (!ex.finished()) {
        for (int r = 0; r < s.stages; ++r) {
            const size_t at = ex.pc[size_t(r)];
            if (at < sched[size_t(r)].size())
                return ScheduleProblem{
                    r, int(at), describeAction(sched[size_t(r)][at]),
                    "deadlock: it waits for data that the other ranks, all blocked too, never send"};
        }
    }
    return std::nullopt;
}

std::vector<PredictedSlot> simulatePipelineSchedule(const PipelineSchedule& sched, const PipelineShape& s,
                                                    const PipeDurations& durations) {
    Executor ex{sched, s, usesSplitBackward(sched), durations, {}, {}, {}, {}, {}};
    ex.run();
    return ex.slots;
}

double simulatedBubble(const std::vector<PredictedSlot>& slots, int stages) {
    double makespan = 0.0, busy = 0.0;
    for (const auto& slot : slots) {
        makespan = std::max(makespan, slot.end);
        busy += slot.end - slot.start;
    }
    return makespan > 0 ? 1.0 - busy / (makespan * stages) : 0.0;
}

double bubbleTheory(const std::string& name, const PipelineShape& s, double t_f, double t_b, double t_w) {
    const double p = s.stages, m = s.microbatches, v = s.chunks_per_rank;
    if (name == "interleaved")
        return (p - 1) / (v * m + p - 1);
    if (name == "zb-h1") {
        const double bubble = (p - 1) * std::max(0.0, t_f + t_b - t_w);
        return bubble / (m * (t_f + t_b + t_w) + bubble);
    }
    return (p - 1) / (m + p - 1);
}

} // namespace dt
