// collectives_run.hpp: [strategy] kind = "collectives", the backend comparison.
#pragma once

#include "dtlab/launch_env.hpp"
#include "dtlab/scenario.hpp"

#include <c10/util/intrusive_ptr.h>

namespace c10d {
class Store;
}

namespace dt {

class TelemetrySender;
class StepGate;

// Times [collectives] ops at each size on each backend (one size per step)
// and reports a BusBandwidth counter per (backend, op, size). Returns 0.
int runCollectives(const LaunchEnv& env, const Scenario& scenario, TelemetrySender& sender, StepGate& gate,
                   c10::intrusive_ptr<c10d::Store> store);

} // namespace dt
