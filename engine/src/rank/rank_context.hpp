// rank_context.hpp: what a training loop of one rank process is given by the
// worker (worker.cpp) when the run is fault tolerant or SWARM: its launch
// environment, the scenario, the telemetry sender, the Session's step gate,
// the c10d store, and the fault switches the Session flips over the control
// channel. The fault-tolerant loops (ft/) and SWARM (swarm/) both read it.
#pragma once

#include "comm/link_shaper.hpp"

#include "dtlab/launch_env.hpp"
#include "dtlab/scenario.hpp"

#include <atomic>
#include <functional>
#include <mutex>
#include <string>

#include <c10/util/intrusive_ptr.h>

namespace c10d {
class Store;
}

namespace dt {

class TelemetrySender;
class StepGate;

// Faults the Session sends over the control channel; set on the telemetry
// reader thread, read by the training thread.
class RankFaultSwitches {
  public:
    std::atomic<bool> fail_next_collective{false};
    std::atomic<bool> nan_gradients{false};
    std::atomic<bool> job_finished{false}; // the others finished: leave
    // The quorum in which the first replica to finish committed the job's
    // last step (-1: unknown). A replica that was in that same quorum for
    // that step commits it too (the same average, the same update) rather
    // than leave one step short. Set before job_finished.
    std::atomic<int64_t> finished_quorum_id{-1};
    // The Session holds the job (paused, or between paced steps, with every
    // replica that steps waiting at its gate): time spent so does not count
    // against the quorum timeout, so a restarted replica waiting for the others
    // does not give up while they are held.
    std::atomic<bool> job_held{false};
    // The Session greets a rank that said hello with JobFinished (when the job
    // is done) and then its step gate; greeted is set with the gate.
    std::atomic<bool> greeted{false};

    // A restarted replica waits for the greeting before it asks for a quorum,
    // so that it never trains alone after the others finished. False on timeout.
    bool waitForGreeting(int64_t timeout_ms) const;
    std::atomic<double> traffic_delay_ms{0.0};

    // A partition cuts the rank off its lighthouse: the switch forwards it to the
    // sink (the fault-tolerance Manager's lighthouse client) once there is one.
    using PartitionSink = std::function<void(bool partitioned)>;
    void setPartitioned(bool partitioned);
    void attachPartitionSink(PartitionSink sink); // nullptr = detach

  private:
    std::mutex m_mutex;
    PartitionSink m_sink;
    bool m_partitioned = false;
};

struct RankContext {
    LaunchEnv env;
    const Scenario* scenario = nullptr;
    TelemetrySender* sender = nullptr;
    StepGate* gate = nullptr;
    c10::intrusive_ptr<c10d::Store> store;
    std::string params_out_dir;
    int incarnation = 0; // 0 = first start; k = k-th restart
    RankFaultSwitches* faults = nullptr;
    const LinkShaper* link = nullptr; // the rank's modelled link ([network]), null = none
    std::string token;                // the run's token: the lighthouse HELLO proves it
};

} // namespace dt
