// test_pipeline_schedule.cpp: the schedule generators produce schedules the
// validator accepts for many shapes; the simulator reproduces the papers'
// bubble formulas; broken schedules are refused with the rank, the action and
// the reason.
#include "dtlab/errors.hpp"
#include "dtlab/pipeline_schedule.hpp"

#include <catch2/catch.hpp>

using dt::PipeAction;
using dt::PipelineShape;
using dt::PipeOp;

namespace {

PipelineShape shape(int p, int m, int v = 1) {
    PipelineShape s;
    s.stages = p;
    s.microbatches = m;
    s.chunks_per_rank = v;
    return s;
}

int peakInFlight(const dt::PipelineSchedule& sched, int rank) {
    int alive = 0, peak = 0; // forwards whose backward has not run yet on this rank
    for (const auto& a : sched[size_t(rank)]) {
        if (a.op == PipeOp::Forward)
            peak = std::max(peak, ++alive);
        if (a.op == PipeOp::Backward || a.op == PipeOp::BackwardInput)
            --alive;
    }
    return peak;
}

} // namespace

TEST_CASE("Every generated schedule passes the validator", "[pipeline]") {
    for (int p : {1, 2, 3, 4, 8})
        for (int m : {1, 2, 3, 4, 8, 16}) {
            for (const char* name : {"gpipe", "1f1b", "zb-h1"}) {
                CAPTURE(name, p, m);
                const auto sched = dt::makePipelineSchedule(name, shape(p, m));
                const auto problem = dt::validatePipelineSchedule(sched, shape(p, m));
                INFO((problem ? problem->message() : std::string("ok")));
                CHECK_FALSE(problem.has_value());
            }
            for (int v : {2, 3}) {
                if (m % p != 0)
                    continue;
                CAPTURE(p, m, v);
                const auto sched = dt::makePipelineSchedule("interleaved", shape(p, m, v));
                const auto problem = dt::validatePipelineSchedule(sched, shape(p, m, v));
                INFO((problem ? problem->message() : std::string("ok")));
                CHECK_FALSE(problem.has_value());
            }
        }
}

TEST_CASE("The simulated schedules have the papers' bubbles and memory", "[pipeline]") {
    SECTION("gpipe and 1f1b: (p-1)/(m+p-1) of the step is idle") {
        for (int p : {2, 4})
            for (int m : {1, 4, 8, 16})
                for (const char* name : {"gpipe", "1f1b"}) {
                    CAPTURE(name, p, m);
                    const auto s = shape(p, m);
                    const auto slots = dt::simulatePipelineSchedule(dt::makePipelineSchedule(name, s), s);
                    CHECK(dt::simulatedBubble(slots, p) == Approx(dt::bubbleTheory(name, s)).epsilon(1e-9));
                }
    }
    SECTION("interleaving v chunks per rank divides the bubble by about v") {
        const auto s = shape(4, 8, 2);
        dt::PipeDurations half{0.5, 1.0, 0.5, 0.5}; // each chunk is half a stage
        const double simulated = dt::simulatedBubble(
            dt::simulatePipelineSchedule(dt::makePipelineSchedule("interleaved", s), s, half), 4);
        CHECK(simulated == Approx(dt::bubbleTheory("interleaved", s)).epsilon(0.02));
        CHECK(simulated < dt::bubbleTheory("1f1b", shape(4, 8)));
    }
    SECTION("zb-h1 idles less than 1f1b with the same F, B and W work") {
        for (int p : {2, 4})
            for (int m : {4, 8}) {
                CAPTURE(p, m);
                const auto s = shape(p, m);
                dt::PipeDurations d{1.0, 2.0, 1.0, 1.0};
                const double one = dt::simulatedBubble(
                    dt::simulatePipelineSchedule(dt::makePipelineSchedule("1f1b", s), s, d), p);
                const double zb = dt::simulatedBubble(
                    dt::simulatePipelineSchedule(dt::makePipelineSchedule("zb-h1", s), s, d), p);
                CHECK(zb < one - 0.02);
                // equal F, Bi and W: the paper's (p-1)(t_f + t_b - t_w) bubble exactly
                CHECK(zb == Approx(dt::bubbleTheory("zb-h1", s)).epsilon(1e-9));
            }
    }
    SECTION("gpipe holds m microbatches' activations, 1f1b at most p - r") {
        const auto s = shape(4, 8);
        const auto g = dt::makePipelineSchedule("gpipe", s), f = dt::makePipelineSchedule("1f1b", s);
        for (int r = 0; r < 4; ++r) {
            CHECK(peakInFlight(g, r) == 8);
            CHECK(peakInFlight(f, r) == 4 - r);
        }
    }
}

TEST_CASE("Broken schedules are refused with the rank, the action and the reason", "[pipeline]") {
    const auto s = shape(2, 2);
    auto sched = dt::makePipelineSchedule("1f1b", s);

    SECTION("a missing backward") {
        auto broken = sched;
        auto& list = broken[1];
        auto b = std::find_if(list.begin(), list.end(),
                              [](const PipeAction& a) { return a.op == PipeOp::Backward; });
        list.erase(b, b + 2); // the backward and the send of its input gradient
        const auto problem = dt::validatePipelineSchedule(broken, s);
        REQUIRE(problem);
        CHECK(problem->rank == 1);
        CHECK(problem->message().find("never runs") != std::string::npos);
    }
    SECTION("a send to the wrong rank") {
        auto broken = dt::makePipelineSchedule("1f1b", shape(3, 2));
        for (auto& a : broken[0])
            if (a.op == PipeOp::SendAct)
                a.peer = 2;
        const auto problem = dt::validatePipelineSchedule(broken, shape(3, 2));
        REQUIRE(problem);
        CHECK(problem->rank == 0);
        CHECK(problem->message().find("peer must be rank 1") != std::string::npos);
    }
    SECTION("a backward before its forward on the same rank") {
        auto broken = sched;
        auto& list = broken[1]; // rank 1 (last stage): F0 B0 F1 B1
        std::swap(list[1], list[2]);
        const auto problem = dt::validatePipelineSchedule(broken, s);
        REQUIRE(problem);
        CHECK(problem->message().find("first") != std::string::npos);
    }
    SECTION("two ranks waiting for each other: a deadlock") {
        // rank 0 wants mb 0's gradient before it sends mb 1's activation;
        // rank 1 wants mb 1's activation before it computes mb 0's backward.
        dt::PipelineSchedule dead(2);
        dead[0] = {
            {PipeOp::Forward, 0, 0, -1},  {PipeOp::SendAct, 0, 0, 1},   {PipeOp::RecvGrad, 0, 0, 1},
            {PipeOp::Backward, 0, 0, -1}, {PipeOp::Forward, 1, 0, -1},  {PipeOp::SendAct, 1, 0, 1},
            {PipeOp::RecvGrad, 1, 0, 1},  {PipeOp::Backward, 1, 0, -1}, {PipeOp::Optimizer, -1, -1, -1}};
        dead[1] = {
            {PipeOp::RecvAct, 1, 1, 0},   {PipeOp::Forward, 1, 1, -1}, {PipeOp::Backward, 1, 1, -1},
            {PipeOp::SendGrad, 1, 1, 0},  {PipeOp::RecvAct, 0, 1, 0},  {PipeOp::Forward, 0, 1, -1},
            {PipeOp::Backward, 0, 1, -1}, {PipeOp::SendGrad, 0, 1, 0}, {PipeOp::Optimizer, -1, -1, -1}};
        const auto problem = dt::validatePipelineSchedule(dead, s);
        REQUIRE(problem);
        CHECK(problem->message().find("deadlock") != std::string::npos);
    }
    SECTION("a shape a schedule cannot run is a usage error") {
        CHECK_THROWS_AS(dt::makePipelineSchedule("interleaved", shape(4, 6, 2)), dt::UsageError);
        CHECK_THROWS_AS(dt::makePipelineSchedule("1f1b", shape(4, 8, 2)), dt::UsageError);
        CHECK_THROWS_AS(dt::makePipelineSchedule("pipedream", shape(4, 8)), dt::UsageError);
    }
}
