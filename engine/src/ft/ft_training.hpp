// ft_training.hpp: the fault-tolerant training loops, one rank each. The
// worker calls trainFaultTolerant (DDP, ft_training.cpp),
// trainFaultTolerantDiloco (ft_diloco.cpp) or trainFaultTolerantGroup
// (zero1/zero2/fsdp replica groups, ft_group_training.cpp) instead of its
// usual loop when the scenario has [fault_tolerance] enabled = true. Both are thin loops over
// ft::Manager (ft_manager.hpp: quorum, heal, all-reduce, vote), which also
// reads the fault switches and the context below.
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

    void setPartitioned(bool partitioned);     // forwards to the client once there is one
    void attach(ft::LighthouseClient* client); // nullptr = detach

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
    int incarnation = 0; // 0 = first start; k = k-th restart
    FtFaultSwitches* faults = nullptr;
    const LinkShaper* link = nullptr; // the rank's modelled link ([network]), null = none
    std::string token;                // the run's token: the lighthouse HELLO proves it
};

// Trains until the replica has committed every step (or the Session says the
// job finished). Returns the exit code; throws CommError when no quorum comes
// within quorum_timeout_ms.
int trainFaultTolerant(const FtRankContext& context);
// The same for [strategy] kind = "diloco" (ft_diloco.cpp): a quorum per outer sync.
int trainFaultTolerantDiloco(const FtRankContext& context);
// Streaming DiLoCo ([diloco] fragments > 1, sync_delay, alpha or quantized;
// ft_streaming_diloco.cpp): a quorum per fragment's round, every H / F steps.
int trainFaultTolerantStreamingDiloco(const FtRankContext& context);
// zero1, zero2 and fsdp (ft_group_training.cpp): this rank's part of a replica
// group of ftGroupSize ranks that shards the model; the quorum across groups.
int trainFaultTolerantGroup(const FtRankContext& context);

} // namespace dt
