// ft_training.hpp: one replica of fault-tolerant DDP (TorchFT's Manager, in
// C++). The worker calls trainFaultTolerant instead of its usual loop when
// the scenario has [fault_tolerance] enabled = true. See ft_training.cpp for
// the steps of one training step.
#pragma once

#include "comm/link_shaper.hpp"

#include "dtlab/launch_env.hpp"
#include "dtlab/scenario.hpp"

#include <atomic>
#include <mutex>
#include <string>

#include <c10/util/intrusive_ptr.h>

namespace c10d {
class Store;
}

namespace dt {

class TelemetrySender;
class StepGate;
namespace ft {
class LighthouseClient;
}

// Faults the Session sends over the control channel; set on the telemetry
// reader thread, read by the training thread.
class FtFaultSwitches {
public:
    std::atomic<bool> fail_next_collective{false};
    std::atomic<bool> nan_gradients{false};
    std::atomic<bool> job_finished{false};        // the others finished: leave
    std::atomic<double> traffic_delay_ms{0.0};

    void setPartitioned(bool partitioned);        // forwards to the client once there is one
    void attach(ft::LighthouseClient* client);    // nullptr = detach

private:
    std::mutex m_mutex;
    ft::LighthouseClient* m_client = nullptr;
    bool m_partitioned = false;
};

struct FtRankContext {
    LaunchEnv env;
    const Scenario* scenario = nullptr;
    TelemetrySender* sender = nullptr;
    StepGate* gate = nullptr;
    c10::intrusive_ptr<c10d::Store> store;
    std::string params_out_dir;
    int incarnation = 0;                          // 0 = first start; k = k-th restart
    FtFaultSwitches* faults = nullptr;
    const LinkShaper* link = nullptr;             // the rank's modelled link ([network]), null = none
};

// Trains until the replica has committed every step (or the Session says the
// job finished). Returns the exit code; throws CommError when no quorum comes
// within quorum_timeout_ms.
int trainFaultTolerant(const FtRankContext& context);
// The same for [strategy] kind = "diloco" (ft_diloco.cpp): a quorum per outer sync.
int trainFaultTolerantDiloco(const FtRankContext& context);

} // namespace dt
