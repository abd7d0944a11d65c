// communicator.cpp: the queue, the thread and the Work records shared by
// every backend (the backends only implement the blocking do* calls).
#include "comm/communicator.hpp"

#include "telemetry/event_sink.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

namespace dt {
namespace {

// Bytes on the wire per rank for one collective of b payload bytes on N ranks:
//   all-reduce (ring: reduce-scatter then all-gather)   2 (N-1)/N b   sent and received
//   all-gather (ring), b = this rank's input             (N-1) b       sent and received
//   reduce-scatter (ring), b = the full input            (N-1)/N b     sent and received
//   broadcast: the root sends b to each of N-1 ranks; every other rank receives b
//   send: b sent; recv: b received; barrier: ~0
struct WireBytes {
    int64_t sent = 0;
    int64_t received = 0;
};
WireBytes modelBytes(EventKind kind, int64_t b, int n, int rank, int peer) {
    switch (kind) {
    case EventKind::AllReduce:
        return {2 * (n - 1) * b / n, 2 * (n - 1) * b / n};
    case EventKind::AllGather:
        return {(n - 1) * b, (n - 1) * b};
    case EventKind::ReduceScatter:
        return {(n - 1) * b / n, (n - 1) * b / n};
    case EventKind::Broadcast:
        return rank == peer ? WireBytes{(n - 1) * b, 0} : WireBytes{0, b};
    case EventKind::Send:
        return {b, 0};
    case EventKind::Recv:
        return {0, b};
    default:
        return {};
    }
}

} // namespace

CommWork::State CommWork::state() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_state;
}

bool CommWork::isCompleted() const {
    const State s = state();
    return s == State::Completed || s == State::Failed;
}

void CommWork::wait() {
    if (m_owner != nullptr && state() == State::Scheduled)
        m_owner->runInlineIfNext(this);
    std::unique_lock<std::mutex> lock(m_mutex);
    m_done.wait(lock, [this] { return m_state == State::Completed || m_state == State::Failed; });
    if (m_state == State::Failed)
        throw CommError(m_error_kind, m_error);
}

void CommWork::finish(State state, CommErrorKind error_kind, const std::string& error) {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_state = state;
        m_error_kind = error_kind;
        m_error = error;
    }
    m_done.notify_all();
}

Communicator::Communicator(int rank, int size, EventSink* sink) : m_rank(rank), m_size(size), m_sink(sink) {
    m_thread = std::thread([this] { threadLoop(); });
}

Communicator::~Communicator() {
    shutdown();
}

void Communicator::reapPosted() {
    std::lock_guard<std::mutex> lock(m_posted_mutex);
    std::vector<Posted> alive;
    for (auto& p : m_posted) {
        if (p.done->load())
            p.thread.join();
        else
            alive.push_back(std::move(p));
    }
    m_posted = std::move(alive);
}

void Communicator::shutdown() {
    {
        // Posted messages end with their peers (or their timeout).
        std::lock_guard<std::mutex> lock(m_posted_mutex);
        for (auto& p : m_posted)
            if (p.thread.joinable())
                p.thread.join();
        m_posted.clear();
    }
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (m_stopping)
            return;
        m_stopping = true;
    }
    m_wake.notify_all();
    if (m_thread.joinable())
        m_thread.join();
    for (auto& job : m_queue)
        job.work->finish(CommWork::State::Failed, CommErrorKind::Other, "communicator shut down");
    m_queue.clear();
}

void Communicator::emitWork(const Job& job, EventPhase phase) {
    if (!m_sink)
        return;
    Event e;
    e.t_ns = m_sink->now();
    e.kind = job.kind;
    e.phase = phase;
    e.rank = m_rank;
    e.step = job.tag.step;
    e.unit = int16_t(job.tag.unit);
    e.microbatch = int16_t(job.tag.microbatch);
    e.bytes = job.bytes;
    e.seq = job.seq;
    e.peer = int16_t(job.peer);
    e.group_size = uint16_t(m_size);
    e.group = m_group;
    e.backend = backend();
    m_sink->emit(e);
}

CommWorkPtr Communicator::enqueue(EventKind kind, CommTag tag, int64_t bytes, int peer,
                                  std::function<void()> run, Dispatch dispatch, CommWorkPtr after) {
    auto work = std::make_shared<CommWork>();
    work->m_owner = this;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        // Collectives are numbered in issue order, identical on every rank of
        // the group. Point-to-point messages are numbered per (direction, peer),
        // so a rank's k-th send to j matches j's k-th recv from it.
        uint64_t seq = 0;
        if (kind == EventKind::Send)
            seq = m_p2p_sent[peer]++;
        else if (kind == EventKind::Recv)
            seq = m_p2p_received[peer]++;
        else
            seq = m_next_seq++;
        Job job{kind, tag, bytes, peer, seq, work, std::move(run), std::move(after)};
        emitWork(job, EventPhase::WorkScheduled);
        if (m_stopping) {
            work->finish(CommWork::State::Failed, CommErrorKind::Other, "communicator shut down");
            return work;
        }
        m_queue.push_back(std::move(job));
    }
    if (dispatch == Dispatch::WakeThread)
        m_wake.notify_one();
    return work;
}

void Communicator::runNow(const CommWorkPtr& work) {
    runInlineIfNext(work.get());
    if (!work->isCompleted())
        m_wake.notify_one(); // queued behind others: the thread runs it in turn
    work->wait();
}

void Communicator::threadLoop() {
    while (true) {
        Job job;
        {
            std::unique_lock<std::mutex> lock(m_mutex);
            m_wake.wait(lock, [this] { return m_stopping || (!m_queue.empty() && !m_running); });
            if (m_stopping)
                return;
            job = std::move(m_queue.front());
            m_queue.pop_front();
            m_running = true;
        }
        runJob(job);
        std::lock_guard<std::mutex> lock(m_mutex);
        m_running = false;
    }
}

void Communicator::runInlineIfNext(const CommWork* work) {
    Job job;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (m_stopping || m_running || m_queue.empty() || m_queue.front().work.get() != work)
            return;
        job = std::move(m_queue.front());
        m_queue.pop_front();
        m_running = true;
    }
    runJob(job);
    bool more = false;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_running = false;
        more = !m_queue.empty();
    }
    // Only then: waking the thread for nothing costs two context switches.
    if (more)
        m_wake.notify_one(); // the thread takes the jobs queued behind it
}

void Communicator::runJob(Job& job) {
    if (job.after) { // stream order: start once the other communicator's Work is done
        try {
            job.after->wait();
        } catch (...) { // it failed: so does this one, with its reason
            const std::exception_ptr error = std::current_exception();
            finishJob(job, [error] { std::rethrow_exception(error); });
            return;
        }
        job.after = nullptr;
    }
    {
        std::lock_guard<std::mutex> lock(job.work->m_mutex);
        job.work->m_state = CommWork::State::Started;
    }
    emitWork(job, EventPhase::WorkStarted);
    finishJob(job, job.run);
}

// Runs a job's blocking part, then records the bytes, the telemetry and the
// Work's final state.
void Communicator::finishJob(Job& job, const std::function<void()>& run) {
    try {
        const auto begin = std::chrono::steady_clock::now();
        run();
        // Drop the tensors the job captured before the waiter wakes: after wait()
        // the caller frees its buffers, and this thread must not keep them alive
        // (the allocator's comm-buffer bytes showed it did, until its next job).
        job.run = nullptr;
        const WireBytes wire = modelBytes(job.kind, job.bytes, m_size, m_rank, job.peer);
        if (m_link && m_link->active()) { // hold the collective as long as the modelled link needs
            const auto until = begin + m_link->linkTime(std::max(wire.sent, wire.received));
            std::this_thread::sleep_until(until);
        }
        m_bytes_sent += wire.sent;
        m_bytes_received += wire.received;
        emitWork(job, EventPhase::WorkCompleted);
        job.work->finish(CommWork::State::Completed, CommErrorKind::Other, "");
    } catch (const CommError& e) {
        emitWork(job, EventPhase::WorkFailed);
        job.work->finish(CommWork::State::Failed, e.kind(), e.what());
    } catch (const std::exception& e) {
        emitWork(job, EventPhase::WorkFailed);
        job.work->finish(CommWork::State::Failed, CommErrorKind::Other, e.what());
    }
}

CommWorkPtr Communicator::post(EventKind kind, at::Tensor x, int peer, int tag, CommTag ctag) {
    auto work = std::make_shared<CommWork>();
    Job job;
    job.kind = kind;
    job.tag = ctag;
    job.bytes = int64_t(x.nbytes());
    job.peer = peer;
    job.work = work;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        job.seq = kind == EventKind::Send ? m_p2p_sent[peer]++ : m_p2p_received[peer]++;
    }
    emitWork(job, EventPhase::WorkScheduled);
    {
        std::lock_guard<std::mutex> lock(job.work->m_mutex);
        job.work->m_state = CommWork::State::Started;
    }
    emitWork(job, EventPhase::WorkStarted);
    std::function<void()> wait;
    try {
        wait = kind == EventKind::Send ? doPostSend(x, peer, tag) : doPostRecv(x, peer, tag);
    } catch (...) { // could not even post: the Work fails now, with the reason
        const std::exception_ptr error = std::current_exception();
        finishJob(job, [error] { std::rethrow_exception(error); });
        return work;
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    std::thread waiter([this, job, wait, done]() mutable {
        finishJob(job, wait);
        done->store(true);
    });
    std::lock_guard<std::mutex> lock(m_posted_mutex);
    m_posted.push_back(Posted{std::move(waiter), done});
    return work;
}

CommWorkPtr Communicator::postSend(at::Tensor x, int peer, int tag, CommTag ctag) {
    return post(EventKind::Send, std::move(x), peer, tag, ctag);
}

CommWorkPtr Communicator::postRecv(at::Tensor x, int peer, int tag, CommTag ctag) {
    return post(EventKind::Recv, std::move(x), peer, tag, ctag);
}

// Each call is defined once, with how it is dispatched; the public async and
// blocking forms below choose the dispatch.
CommWorkPtr Communicator::issueAllReduce(at::Tensor x, CommTag tag, Dispatch dispatch, CommWorkPtr after) {
    return enqueue(
        EventKind::AllReduce, tag, int64_t(x.nbytes()), -1, [this, x]() mutable { doAllReduce(x); }, dispatch,
        std::move(after));
}

CommWorkPtr Communicator::issueAllGather(at::Tensor out, at::Tensor x, CommTag tag, Dispatch dispatch) {
    DT_ENFORCE(out.numel() == x.numel() * m_size, "allGather output must hold group size x input elements");
    return enqueue(
        EventKind::AllGather, tag, int64_t(x.nbytes()), -1, [this, out, x]() mutable { doAllGather(out, x); },
        dispatch);
}

CommWorkPtr Communicator::issueReduceScatter(at::Tensor out, at::Tensor x, CommTag tag, Dispatch dispatch) {
    DT_ENFORCE(x.numel() == out.numel() * m_size,
               "reduceScatter input must hold group size x output elements");
    return enqueue(
        EventKind::ReduceScatter, tag, int64_t(x.nbytes()), -1,
        [this, out, x]() mutable { doReduceScatter(out, x); }, dispatch);
}

CommWorkPtr Communicator::issueBroadcast(at::Tensor x, int root, CommTag tag, Dispatch dispatch) {
    return enqueue(
        EventKind::Broadcast, tag, int64_t(x.nbytes()), root,
        [this, x, root]() mutable { doBroadcast(x, root); }, dispatch);
}

CommWorkPtr Communicator::issueBarrier(CommTag tag, Dispatch dispatch) {
    return enqueue(
        EventKind::Barrier, tag, 0, -1, [this]() { doBarrier(); }, dispatch);
}

CommWorkPtr Communicator::allReduce(at::Tensor x, CommTag tag, CommWorkPtr after) {
    return issueAllReduce(std::move(x), tag, Dispatch::WakeThread, std::move(after));
}
CommWorkPtr Communicator::allGather(at::Tensor out, at::Tensor x, CommTag tag) {
    return issueAllGather(std::move(out), std::move(x), tag, Dispatch::WakeThread);
}
CommWorkPtr Communicator::reduceScatter(at::Tensor out, at::Tensor x, CommTag tag) {
    return issueReduceScatter(std::move(out), std::move(x), tag, Dispatch::WakeThread);
}
CommWorkPtr Communicator::broadcast(at::Tensor x, int root, CommTag tag) {
    return issueBroadcast(std::move(x), root, tag, Dispatch::WakeThread);
}
CommWorkPtr Communicator::barrier(CommTag tag) {
    return issueBarrier(tag, Dispatch::WakeThread);
}

void Communicator::allReduceNow(at::Tensor x, CommTag tag) {
    runNow(issueAllReduce(std::move(x), tag, Dispatch::CallerRuns));
}
void Communicator::allGatherNow(at::Tensor out, at::Tensor x, CommTag tag) {
    runNow(issueAllGather(std::move(out), std::move(x), tag, Dispatch::CallerRuns));
}
void Communicator::reduceScatterNow(at::Tensor out, at::Tensor x, CommTag tag) {
    runNow(issueReduceScatter(std::move(out), std::move(x), tag, Dispatch::CallerRuns));
}
void Communicator::broadcastNow(at::Tensor x, int root, CommTag tag) {
    runNow(issueBroadcast(std::move(x), root, tag, Dispatch::CallerRuns));
}
void Communicator::barrierNow(CommTag tag) {
    runNow(issueBarrier(tag, Dispatch::CallerRuns));
}

CommWorkPtr Communicator::send(at::Tensor x, int peer, CommTag tag) {
    return enqueue(EventKind::Send, tag, int64_t(x.nbytes()), peer,
                   [this, x, peer]() mutable { doSend(x, peer); });
}

CommWorkPtr Communicator::recv(at::Tensor x, int peer, CommTag tag) {
    return enqueue(EventKind::Recv, tag, int64_t(x.nbytes()), peer,
                   [this, x, peer]() mutable { doRecv(x, peer); });
}

} // namespace dt
