// inprocess_gloo.hpp: a Gloo group whose ranks are threads of the test process.
//
// runGlooRanks(world, ...) starts one std::thread per rank; every rank builds
// its GlooCommunicator on one shared c10d::HashStore (fresh prefix per call),
// runs `body`, waits until every rank's body has returned (so no rank tears
// its group down under a peer still mid-collective), destroys its
// communicator and joins. Exceptions thrown in a rank are rethrown on the
// calling thread after every thread has joined.
//
// Catch2 2.13 assertions are not thread-safe: bodies store what they saw in
// per-rank slots, and the test checks those after runGlooRanks returns.
#pragma once

#include "comm/gloo_communicator.hpp"
#include "telemetry/event_sink.hpp"

#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dttest {

// A store prefix no other group in this process has used.
inline std::string uniqueGroupPrefix(const std::string& label) {
    static std::atomic<int> counter{0};
    return "dtlab-test/" + label + "/" + std::to_string(counter.fetch_add(1));
}

// Blocks until `count` threads have arrived (one use).
class Latch {
  public:
    explicit Latch(int count) : m_count(count) {}
    void arriveAndWait() {
        std::unique_lock<std::mutex> lock(m_mutex);
        if (--m_count <= 0) {
            m_cv.notify_all();
            return;
        }
        m_cv.wait(lock, [this] { return m_count <= 0; });
    }

  private:
    std::mutex m_mutex;
    std::condition_variable m_cv;
    int m_count;
};

using RankBody = std::function<void(int rank, std::unique_ptr<dt::Communicator>& comm)>;

struct GroupOptions {
    std::chrono::milliseconds timeout{20000};
    std::vector<dt::EventSink*> sinks; // empty, or one per rank
};

inline void runGlooRanks(int world, const std::string& label, const RankBody& body,
                         const GroupOptions& options = {}) {
    auto store = c10::make_intrusive<c10d::HashStore>();
    dt::GlooOptions gloo;
    gloo.prefix = uniqueGroupPrefix(label);
    gloo.interface_host = "127.0.0.1";
    gloo.timeout = options.timeout;

    Latch bodies_done(world);
    std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
    std::vector<std::thread> threads;
    for (int r = 0; r < world; ++r) {
        threads.emplace_back([&, r] {
            std::unique_ptr<dt::Communicator> comm;
            try {
                dt::EventSink* sink = options.sinks.empty() ? nullptr : options.sinks[size_t(r)];
                comm = dt::makeGlooCommunicator(store, r, world, gloo, sink);
                body(r, comm);
            } catch (...) {
                errors[size_t(r)] = std::current_exception();
            }
            bodies_done.arriveAndWait();
            comm.reset();
        });
    }
    for (auto& t : threads)
        t.join();
    for (auto& e : errors)
        if (e)
            std::rethrow_exception(e);
}

} // namespace dttest
