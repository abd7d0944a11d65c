// pipeline_schedule.cpp: the validator and the simulator of pipeline_schedule.hpp
// (the generators: one file per schedule in schedules/; the list: schedules.def).
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

} // namespace dt
