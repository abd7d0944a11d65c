// replica_step.cpp: the begin and end of one step of a fault-tolerant or SWARM
// rank (steps in replica_step.hpp).
#include "rank/replica_step.hpp"

#include "rank/step_gate.hpp"

#include <chrono>
#include <thread>

namespace dt {

int64_t beginReplicaStep(const RankContext& context, const RankTelemetry& telemetry, int64_t step) {
    const int64_t gate_begin = telemetry.now();
    if (context.gate->waitToStart(step, [&](bool retry) {
            telemetry.instant(EventKind::GateWait).step(step).value(retry ? 1.0 : 0.0).emit();
        }))
        telemetry.span(EventKind::Paused).from(gate_begin).step(step).emit();
    return telemetry.now();
}

int64_t beginGroupReplicaStep(const RankContext& context, const RankTelemetry& telemetry, int64_t step,
                              const std::function<GroupGateLook(const GateLook&)>& agree) {
    const int64_t gate_begin = telemetry.now();
    const bool waited = passGateTogether(*context.gate, step, agree, [&](bool retry) {
        // each wait says so: the Session counts the rank as held
        telemetry.instant(EventKind::GateWait).step(step).value(retry ? 1.0 : 0.0).emit();
    });
    if (waited)
        telemetry.span(EventKind::Paused).from(gate_begin).step(step).emit();
    return telemetry.now();
}

void endReplicaStep(const RankContext& context, const RankTelemetry& telemetry, int64_t step,
                    int64_t step_begin, int64_t bytes_sent) {
    const double slow_ms = context.scenario->run.step_delay_ms + context.gate->delayMs();
    if (slow_ms > 0) {
        const int64_t t = telemetry.now();
        std::this_thread::sleep_for(std::chrono::microseconds(int64_t(slow_ms * 1000)));
        telemetry.span(EventKind::SlowDelay).from(t).step(step).emit();
    }
    telemetry.span(EventKind::Step).from(step_begin).step(step).emit();
    const double step_ms = double(telemetry.now() - step_begin) / 1e6;
    telemetry.counter(EventKind::StepTimeMs).step(step).value(step_ms).emit();
    telemetry.counter(EventKind::BytesSent).step(step).value(double(bytes_sent)).emit();
}

} // namespace dt
