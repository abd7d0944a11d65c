// gloo_communicator.cpp: Communicator backend on c10d::ProcessGroupGloo.
//
// all-reduce, all-gather, broadcast, send/recv and barrier map one to one to
// ProcessGroupGloo. Gloo in LibTorch 1.13 has no reduce-scatter, so it is a
// ring here (one algorithm, steps below), built from Gloo send/recv:
//
//   x is split into N chunks c_0..c_{N-1} (numel/N elements each).
//   for k in 0..N-2:
//       send acc[(r-k-1) mod N] to rank r+1, recv into tmp from rank r-1,
//       acc[(r-k-2) mod N] += tmp
//   after N-1 steps acc[r] holds the sum over ranks of chunk r.
//   bytes on the wire per rank: (N-1)/N * size(x) sent, the same received.
//
// Errors: Gloo reports a dead peer as a closed connection (within ~1 ms on
// loopback) and a hung one by its timeout; both become CommError.
#include "comm/gloo_communicator.hpp"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

namespace dt {
namespace {

CommError toCommError(const std::exception& e, const std::string& op) {
    const std::string what = e.what();
    std::string first_line = what.substr(0, what.find('\n'));
    CommErrorKind kind = CommErrorKind::Other;
    if (what.find("Timed out") != std::string::npos || what.find("timed out") != std::string::npos ||
        what.find("Timeout") != std::string::npos)
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
    GlooCommunicator(c10::intrusive_ptr<c10d::ProcessGroupGloo> pg, int rank, int size, EventSink* sink)
        : Communicator(rank, size, sink), m_pg(std::move(pg)) {}
    ~GlooCommunicator() override { shutdown(); }

    CommBackend backend() const override { return CommBackend::Gloo; }

  protected:
    template <typename MakeWork> void run(const std::string& op, MakeWork make_work) {
        try {
            auto work = make_work();
            work->wait();
        } catch (const CommError&) {
            throw;
        } catch (const std::exception& e) {
            throw toCommError(e, op);
        }
    }

    void doAllReduce(at::Tensor& x) override {
        std::vector<at::Tensor> tensors{x};
        run("all-reduce", [&] { return m_pg->allreduce(tensors); });
    }

    void doAllGather(at::Tensor& out, at::Tensor& x) override {
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
        const int n = size(), r = rank();
        if (n == 1) {
            out.copy_(x.view_as(out));
            return;
        }
        auto acc = x.reshape({n, -1}).clone(); // (N, numel/N)
        auto tmp = at::empty_like(acc[0]);
        for (int k = 0; k < n - 1; ++k) {
            const int send_chunk = ((r - k - 1) % n + n) % n;
            const int recv_chunk = ((r - k - 2) % n + n) % n;
            std::vector<at::Tensor> send_buf{acc[send_chunk].contiguous()};
            std::vector<at::Tensor> recv_buf{tmp};
            try {
                auto send_work = m_pg->send(send_buf, (r + 1) % n, 1000 + k);
                auto recv_work = m_pg->recv(recv_buf, (r - 1 + n) % n, 1000 + k);
                recv_work->wait();
                send_work->wait();
            } catch (const std::exception& e) {
                throw toCommError(e, "reduce-scatter");
            }
            acc[recv_chunk].add_(tmp);
        }
        out.copy_(acc[r].view_as(out));
    }

    void doBroadcast(at::Tensor& x, int root) override {
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
        run("barrier", [&] { return m_pg->barrier(); });
    }

  private:
    c10::intrusive_ptr<c10d::ProcessGroupGloo> m_pg;
};

} // namespace

std::unique_ptr<Communicator> makeGlooCommunicator(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                                                   const GlooOptions& options, EventSink* sink) {
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>(options.prefix, std::move(store));
    auto gloo_options = c10d::ProcessGroupGloo::Options::create(options.timeout);
    gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(options.interface_host));
    gloo_options->threads = 1;
    try {
        auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, size, gloo_options);
        return std::make_unique<GlooCommunicator>(std::move(pg), rank, size, sink);
    } catch (const std::exception& e) {
        throw toCommError(e, "rendezvous");
    }
}

} // namespace dt
