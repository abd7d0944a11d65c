// gloo_communicator.cpp: Communicator backend on Gloo's TCP transport.
//
// Two meshes of Gloo pairs per group, both rendezvoused through the store:
//   - the collectives (all-reduce, all-gather, reduce-scatter, broadcast,
//     barrier) run as rings on pairs in synchronous mode, on the calling thread
//     (gloo_ring.cpp: the algorithms, and why: ~30x less latency per call on
//     this machine kind than ProcessGroupGloo's worker and event-loop threads);
//   - point-to-point messages (a pipeline's activations, a heal's tensors) go
//     through c10d's ProcessGroupGloo, whose asynchronous pairs let a rank have
//     sends and receives to several peers in flight at once. So does a sum of
//     a dtype the rings do not add (anything but float32/64, int32/64): a
//     choice by dtype, the same on every rank of the collective.
//
// Errors: Gloo reports a dead peer as a closed connection (within ~1 ms on
// loopback) and a hung one by its timeout; both become CommError.
#include "comm/gloo_communicator.hpp"

#include "comm/gloo_ring.hpp"

#include <cstdlib>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

namespace dt {
namespace {

CommError toCommError(const std::exception& e, const std::string& op) {
    const std::string what = e.what();
    std::string first_line = what.substr(0, what.find('\n'));
    CommErrorKind kind = CommErrorKind::Other;
    if (what.find("Timed out") != std::string::npos || what.find("timed out") != std::string::npos ||
        what.find("Timeout") != std::string::npos || what.find("timeout") != std::string::npos)
        kind = CommErrorKind::Timeout;
    else if (what.find("Connection closed") != std::string::npos ||
             what.find("Connection reset") != std::string::npos ||
             what.find("Broken pipe") != std::string::npos || what.find("connection") != std::string::npos)
        kind = CommErrorKind::PeerLost;
    const char* label = kind == CommErrorKind::Timeout    ? "timed out"
                        : kind == CommErrorKind::PeerLost ? "lost a peer"
                                                          : "failed";
    return CommError(kind, "Gloo " + op + " " + label + ": " + first_line);
}

class GlooCommunicator final : public Communicator {
  public:
    GlooCommunicator(c10::intrusive_ptr<c10d::ProcessGroupGloo> pg, std::unique_ptr<GlooRing> ring, int rank,
                     int size, EventSink* sink)
        : Communicator(rank, size, sink), m_pg(std::move(pg)), m_ring(std::move(ring)) {}
    ~GlooCommunicator() override { shutdown(); }

    CommBackend backend() const override { return CommBackend::Gloo; }

  protected:
    // Runs `call` (a ring of gloo_ring.cpp, or a ProcessGroupGloo call and its
    // wait), turning Gloo's and c10d's exceptions into CommError.
    template <typename Call> void ring(const std::string& op, Call call) {
        try {
            call();
        } catch (const CommError&) {
            throw;
        } catch (const std::exception& e) {
            throw toCommError(e, op);
        }
    }
    template <typename MakeWork> void run(const std::string& op, MakeWork make_work) {
        ring(op, [&] { make_work()->wait(); });
    }

    void doAllReduce(at::Tensor& x) override {
        if (m_rings && GlooRing::sumsDtype(x.scalar_type()))
            return ring("all-reduce", [&] { m_ring->allReduce(x); });
        std::vector<at::Tensor> tensors{x};
        run("all-reduce", [&] { return m_pg->allreduce(tensors); });
    }

    void doAllGather(at::Tensor& out, at::Tensor& x) override {
        if (m_rings)
            return ring("all-gather", [&] { m_ring->allGather(out, x); });
        // Gloo gathers into one flat buffer, then copies rank i's part into
        // outputs[0][i]: give it views of `out`, so the bytes are copied once.
        std::vector<at::Tensor> inputs{x};
        std::vector<std::vector<at::Tensor>> outputs(1);
        const at::Tensor flat = out.view(-1);
        const int64_t n = x.numel();
        for (int i = 0; i < size(); ++i)
            outputs[0].push_back(flat.narrow(0, i * n, n).view_as(x));
        run("all-gather", [&] { return m_pg->allgather(outputs, inputs); });
    }

    void doReduceScatter(at::Tensor& out, at::Tensor& x) override {
        // LibTorch 1.13's ProcessGroupGloo has no reduce-scatter: always the ring.
        ring("reduce-scatter", [&] { m_ring->reduceScatter(out, x); });
    }

    void doBroadcast(at::Tensor& x, int root) override {
        if (m_rings)
            return ring("broadcast", [&] { m_ring->broadcast(x, root); });
        std::vector<at::Tensor> tensors{x};
        c10d::BroadcastOptions opts;
        opts.rootRank = root;
        run("broadcast", [&] { return m_pg->broadcast(tensors, opts); });
    }

    void doSend(at::Tensor& x, int peer) override {
        std::vector<at::Tensor> tensors{x};
        run("send", [&] { return m_pg->send(tensors, peer, 0); });
    }

    void doRecv(at::Tensor& x, int peer) override {
        std::vector<at::Tensor> tensors{x};
        run("recv", [&] { return m_pg->recv(tensors, peer, 0); });
    }

    // Gloo's send/recv return at once; the transfer runs on Gloo's own I/O
    // thread, and wait() blocks until it is done (a send until the receiver
    // has taken it). Tags keep messages between the same two ranks apart.
    std::function<void()> doPostSend(at::Tensor& x, int peer, int tag) override {
        return post(
            "send", [&](std::vector<at::Tensor>& t) { return m_pg->send(t, peer, tag); }, x);
    }
    std::function<void()> doPostRecv(at::Tensor& x, int peer, int tag) override {
        return post(
            "recv", [&](std::vector<at::Tensor>& t) { return m_pg->recv(t, peer, tag); }, x);
    }
    template <typename Start> std::function<void()> post(const std::string& op, Start start, at::Tensor& x) {
        auto tensors = std::make_shared<std::vector<at::Tensor>>(std::vector<at::Tensor>{x});
        c10::intrusive_ptr<c10d::Work> work;
        try {
            work = start(*tensors);
        } catch (const std::exception& e) {
            throw toCommError(e, op);
        }
        return [work, tensors, op]() {
            try {
                work->wait();
            } catch (const std::exception& e) {
                throw toCommError(e, op);
            }
        };
    }

    void doBarrier() override {
        if (m_rings)
            return ring("barrier", [&] { m_ring->barrier(); });
        run("barrier", [&] { return m_pg->barrier(); });
    }

  private:
    c10::intrusive_ptr<c10d::ProcessGroupGloo> m_pg;
    std::unique_ptr<GlooRing> m_ring;
    // DTLAB_GLOO_C10D=1 (benchmarks only: tests/bench compare both in one run)
    // runs all-reduce, all-gather, broadcast and barrier through ProcessGroupGloo
    // as before the rings; reduce-scatter, which c10d's Gloo lacks, stays a ring.
    // Every rank of a group must see the same setting (ranks the Session starts
    // inherit its environment), or their collectives would take different paths.
    bool m_rings = std::getenv("DTLAB_GLOO_C10D") == nullptr;
};

} // namespace

std::unique_ptr<Communicator> makeGlooCommunicator(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                                                   const GlooOptions& options, EventSink* sink) {
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>(options.prefix, store);
    auto gloo_options = c10d::ProcessGroupGloo::Options::create(options.timeout);
    gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(options.interface_host));
    gloo_options->threads = 1;
    try {
        auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, size, gloo_options);
        // The rings' mesh: its own keys in the store, the same device (one event-loop thread).
        auto ring_store = c10::make_intrusive<c10d::PrefixStore>(options.prefix + "/ring", store);
        auto ring =
            std::make_unique<GlooRing>(ring_store, rank, size, gloo_options->devices[0], options.timeout);
        return std::make_unique<GlooCommunicator>(std::move(pg), std::move(ring), rank, size, sink);
    } catch (const std::exception& e) {
        throw toCommError(e, "rendezvous");
    }
}

} // namespace dt
