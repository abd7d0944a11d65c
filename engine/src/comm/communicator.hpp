// communicator.hpp: one interface for the collectives every strategy uses.
//
// Calls are asynchronous and run in issue order on the communicator's own
// thread (as a c10d ProcessGroup does), so they overlap with compute. The
// blocking forms (allReduceNow, ..., barrierNow) are for calls the caller waits
// on at once (a tensor-parallel activation, a barrier, a broadcast at start):
// they queue without waking the thread and run on the caller's thread when
// nothing is queued before them, which saves two thread hand-offs (tens of
// microseconds on a loaded machine, more than a 4 KiB MPI all-reduce takes).
// Order and telemetry are the same either way. wait() on an async Work that
// the thread has not picked up yet, when it is next in line, runs it inline too.
//
// Each async call returns a CommWork, c10d-style: Scheduled -> Started -> Completed | Failed,
// and each state change is emitted as a telemetry Work record with the
// payload bytes, group size and a sequence number that is the same on every
// rank, which is how the parts of one collective are matched across lanes.
//
// Semantics (N = group size, x = payload tensor, float32, contiguous):
//   allReduce(x)            x := sum over ranks of x                  (in place)
//   allGather(out, x)       out (N*numel(x)) := concat of every rank's x
//   reduceScatter(out, x)   out (numel(x)/N) := this rank's chunk of sum(x)
//   broadcast(x, root)      x := root's x
//   send(x, peer) / recv(x, peer), barrier()
// An async call may name `after`, a Work of another communicator: the call is
// queued at once but starts only when `after` is done (it fails if `after`
// failed). This is CUDA's stream order across process groups: HSDP issues a
// unit's all-reduce over the replicas right after the unit's reduce-scatter,
// on the same post-backward stream, without the CPU waiting in between.
// Failures (peer lost, timeout) surface as CommError from CommWork::wait().
#pragma once

#include "comm/link_shaper.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/events.hpp"

#include <ATen/Tensor.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace dt {

class EventSink;
class Communicator;

// Where a collective sits in the step, for telemetry.
struct CommTag {
    int step = -1;
    int unit = -1; // bucket / unit index
    int microbatch = -1;
};

class CommWork {
  public:
    enum class State { Scheduled, Started, Completed, Failed };
    [[nodiscard]] State state() const;
    [[nodiscard]] bool isCompleted() const; // Completed or Failed
    // Blocks until done; throws CommError if the collective failed.
    void wait();

  private:
    friend class Communicator;
    void finish(State state, CommErrorKind error_kind, const std::string& error);
    Communicator* m_owner =
        nullptr; // queued Works: may run it in wait() (it outlives them: shutdown fails them)
    mutable std::mutex m_mutex;
    std::condition_variable m_done;
    State m_state = State::Scheduled;
    CommErrorKind m_error_kind = CommErrorKind::Other;
    std::string m_error;
};
using CommWorkPtr = std::shared_ptr<CommWork>;

class Communicator {
  public:
    Communicator(int rank, int size, EventSink* sink);
    virtual ~Communicator();
    Communicator(const Communicator&) = delete;
    Communicator& operator=(const Communicator&) = delete;

    [[nodiscard]] int rank() const { return m_rank; }
    [[nodiscard]] int size() const { return m_size; }
    [[nodiscard]] virtual CommBackend backend() const = 0;
    [[nodiscard]] std::string backendName() const { return std::string(commBackendLabel(backend())); }
    // The process-group id stamped on this communicator's Work records
    // (Event::group): kGroupWorld unless a strategy builds sub-groups (hsdp).
    void setGroupId(uint8_t group) { m_group = group; }

    CommWorkPtr allReduce(at::Tensor x, CommTag tag = {}, CommWorkPtr after = nullptr);
    CommWorkPtr allGather(at::Tensor out, at::Tensor x, CommTag tag = {});
    CommWorkPtr reduceScatter(at::Tensor out, at::Tensor x, CommTag tag = {});
    CommWorkPtr broadcast(at::Tensor x, int root, CommTag tag = {});
    CommWorkPtr send(at::Tensor x, int peer, CommTag tag = {});
    CommWorkPtr recv(at::Tensor x, int peer, CommTag tag = {});
    CommWorkPtr barrier(CommTag tag = {});

    // Blocking forms: issue, then run on this thread when nothing is queued
    // before (else wait for the communicator thread). Throw CommError.
    void allReduceNow(at::Tensor x, CommTag tag = {});
    void allGatherNow(at::Tensor out, at::Tensor x, CommTag tag = {});
    void reduceScatterNow(at::Tensor out, at::Tensor x, CommTag tag = {});
    void broadcastNow(at::Tensor x, int root, CommTag tag = {});
    void barrierNow(CommTag tag = {});

    // Point-to-point, posted at once from the calling thread instead of queued
    // behind collectives, so a pipeline stage can have sends and receives to
    // both neighbours in flight together (a queued, blocking send to the next
    // stage while the next stage sends to us would deadlock). A waiter thread
    // per message completes the CommWork when the transfer is done. `tag`
    // names the message: a send matches the receive with the same tag.
    // Telemetry: Send / Recv Work records as for queued messages.
    CommWorkPtr postSend(at::Tensor x, int peer, int tag, CommTag ctag = {});
    CommWorkPtr postRecv(at::Tensor x, int peer, int tag, CommTag ctag = {});
    // Joins the waiter threads of finished messages (call between steps).
    void reapPosted();

    // Stop the thread; queued work fails with "communicator shut down".
    void shutdown();

    // Cumulative bytes this rank sent / received in completed collectives,
    // from the cost model of each algorithm (see modelBytes in communicator.cpp).
    [[nodiscard]] int64_t modeledBytesSent() const { return m_bytes_sent.load(); }
    [[nodiscard]] int64_t modeledBytesReceived() const { return m_bytes_received.load(); }

    // The modelled link of this rank (link_shaper.hpp; owned by the caller,
    // alive as long as this communicator, null = none): every collective and
    // message completes no sooner than latency + bytes / bandwidth.
    void shareLink(const LinkShaper* link) { m_link = link; }

  protected:
    // Backend operations, run on the communicator thread, blocking. Throw
    // CommError on failure.
    virtual void doAllReduce(at::Tensor& x) = 0;
    virtual void doAllGather(at::Tensor& out, at::Tensor& x) = 0;
    virtual void doReduceScatter(at::Tensor& out, at::Tensor& x) = 0;
    virtual void doBroadcast(at::Tensor& x, int root) = 0;
    virtual void doSend(at::Tensor& x, int peer) = 0;
    virtual void doRecv(at::Tensor& x, int peer) = 0;
    virtual void doBarrier() = 0;
    // Post a point-to-point message; return a function that blocks until it is
    // done (throws CommError on failure). The tensor must stay alive until then.
    virtual std::function<void()> doPostSend(at::Tensor& x, int peer, int tag) = 0;
    virtual std::function<void()> doPostRecv(at::Tensor& x, int peer, int tag) = 0;

  private:
    struct Job {
        EventKind kind;
        CommTag tag;
        int64_t bytes;
        int peer;
        uint64_t seq;
        CommWorkPtr work;
        std::function<void()> run;
        CommWorkPtr after; // another communicator's Work this one starts after (or null)
    };
    enum class Dispatch { WakeThread, CallerRuns };
    CommWorkPtr enqueue(EventKind kind, CommTag tag, int64_t bytes, int peer, std::function<void()> run,
                        Dispatch dispatch = Dispatch::WakeThread, CommWorkPtr after = nullptr);
    void runNow(const CommWorkPtr& work); // CallerRuns: inline if next, else wake the thread; then wait
    CommWorkPtr issueAllReduce(at::Tensor x, CommTag tag, Dispatch dispatch, CommWorkPtr after = nullptr);
    CommWorkPtr issueAllGather(at::Tensor out, at::Tensor x, CommTag tag, Dispatch dispatch);
    CommWorkPtr issueReduceScatter(at::Tensor out, at::Tensor x, CommTag tag, Dispatch dispatch);
    CommWorkPtr issueBroadcast(at::Tensor x, int root, CommTag tag, Dispatch dispatch);
    CommWorkPtr issueBarrier(CommTag tag, Dispatch dispatch);
    CommWorkPtr post(EventKind kind, at::Tensor x, int peer, int tag, CommTag ctag);
    friend class CommWork;
    // Runs `work` on the calling thread if it is next in the queue and no job runs.
    void runInlineIfNext(const CommWork* work);
    void runJob(Job& job); // Started, then finishJob
    void finishJob(Job& job, const std::function<void()>& run);
    void emitWork(const Job& job, EventPhase phase);
    void threadLoop();

    int m_rank;
    int m_size;
    EventSink* m_sink;
    uint8_t m_group = kGroupWorld;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::deque<Job> m_queue;
    bool m_stopping = false;
    bool m_running = false; // a job runs (on the thread or inline in a wait)
    uint64_t m_next_seq = 0;
    std::map<int, uint64_t> m_p2p_sent, m_p2p_received;
    std::atomic<int64_t> m_bytes_sent{0};
    std::atomic<int64_t> m_bytes_received{0};
    const LinkShaper* m_link = nullptr;
    std::thread m_thread;
    struct Posted {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> done;
    };
    std::mutex m_posted_mutex;
    std::vector<Posted> m_posted;
};

} // namespace dt
