// gloo_ring.cpp: ring collectives on Gloo's TCP pairs in synchronous mode.
//
// Why not ProcessGroupGloo's own calls: c10d hands each collective to its
// worker thread, and Gloo's asynchronous pairs hand every received message
// from the device's event-loop thread to the waiting one. On this machine kind
// (a virtual machine, 2 cores, up to 4 rank processes on them) each cross-thread
// wake-up costs about 100 us, so a 4 KiB all-reduce took 1.4 ms at 2 ranks and
// 5.5 ms at 4. Here the rank's own thread writes to and reads from the sockets
// (Gloo's Pair::setSync): 0.08 ms and 0.25 ms (docs/PERFORMANCE.md). The wire
// format is Gloo's, the algorithms are the textbook rings below.
//
// One ring step (step()): send a region to the right neighbour (rank + 1),
// receive a region from the left one (rank - 1). A synchronous send blocks
// until the kernel has taken every byte, so if every rank sent first, a message
// larger than the socket buffers would deadlock the ring. Even ranks therefore
// send first and odd ranks receive first (with N odd, ranks N-1 and 0 are both
// even: rank 0's send to rank 1 completes, then rank 0 receives from N-1).
//
// Each message goes to a buffer the receiver registered under a fixed slot; a
// pair carries one collective's messages in order, so the next collective's
// messages wait in the socket until the receiver reads them there.
//
// Algorithms (N ranks, b payload bytes, chunk c = ceil(numel / N) elements):
//   all-reduce     reduce-scatter ring (N-1 steps: send chunk (r-k), receive
//                  chunk (r-k-1) into scratch and add it), then all-gather ring
//                  (N-1 steps: send chunk (r+1-k), receive chunk (r-k) in place).
//                  Each rank sends and receives 2 (N-1)/N b. Every rank ends with
//                  the owner's bits of each chunk, so replicas stay bit-identical.
//   all-gather     own input to out[r]; N-1 steps: send out[r-k], receive
//                  out[r-k-1]. (N-1) b sent and received, b = one rank's input.
//   reduce-scatter acc = copy of x; N-1 steps: send acc[r-k-1], receive
//                  acc[r-k-2] of the left into scratch and add; acc[r] is the
//                  sum. (N-1)/N b sent and received, b = the full input.
//   broadcast      the root sends x to each other rank in turn: (N-1) b sent by
//                  the root, b received by every other rank.
//   barrier        an all-reduce of one float.
//
// A failure (a closed connection, a read or write timeout) closes every pair of
// this mesh before it is rethrown, as TorchFT aborts a failed process group: a
// ring's ranks wait on their left neighbour only, so without this a rank two
// hops from a dead one would wait for its timeout; with it the failure runs
// round the ring as closed connections within milliseconds. Later calls fail at
// once with the first failure's message. A timeout is per read or write system
// call (SO_RCVTIMEO / SO_SNDTIMEO, as Gloo sets them), not per collective.
#include "comm/gloo_ring.hpp"

#include <gloo/context.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/buffer.h>
#include <gloo/transport/device.h>
#include <gloo/transport/pair.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <algorithm>
#include <csignal>
#include <mutex>
#include <stdexcept>

namespace dt {
namespace {

// Fixed slots: a registered receive buffer per kind of message.
constexpr int kSlotScatter = 1; // reduce-scatter partial sums (into scratch)
constexpr int kSlotGather = 2;  // all-gather chunks (in place)
constexpr int kSlotBroadcast = 3;

// Gloo's rendezvous reads and writes the addresses of the pairs through this.
class StoreAdapter final : public gloo::rendezvous::Store {
  public:
    explicit StoreAdapter(c10::intrusive_ptr<c10d::Store> store) : m_store(std::move(store)) {}
    void set(const std::string& key, const std::vector<char>& data) override {
        m_store->set(key, std::vector<uint8_t>(data.begin(), data.end()));
    }
    std::vector<char> get(const std::string& key) override {
        const std::vector<uint8_t> value = m_store->get(key);
        return {value.begin(), value.end()};
    }
    void wait(const std::vector<std::string>& keys) override { m_store->wait(keys); }
    void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
        m_store->wait(keys, timeout);
    }

  private:
    c10::intrusive_ptr<c10d::Store> m_store;
};

using BufferPtr = std::unique_ptr<gloo::transport::Buffer>;

// A half-open range of elements [begin, end) of chunk `i` of a numel-long
// tensor cut into N chunks of c = ceil(numel / N) (the last ones may be short or empty).
struct Chunk {
    int64_t begin;
    int64_t end;
    [[nodiscard]] int64_t size() const { return end - begin; }
};
Chunk chunkOf(int i, int64_t numel, int n) {
    const int64_t c = (numel + n - 1) / n;
    const int64_t begin = std::min(numel, int64_t(i) * c);
    return {begin, std::min(numel, begin + c)};
}

// A synchronous pair writes with writev(2) on the rank's own thread; a write to
// a peer that has closed its socket (a killed rank) would raise SIGPIPE and kill
// this process instead of failing the collective. So SIGPIPE is ignored, once
// per process and only while it has its default action (a handler someone
// installed stays): the write then fails with EPIPE, which Gloo reports and the
// caller turns into CommError (PeerLost). The Supervisor restores the default
// in the processes it starts.
void ignoreBrokenPipes() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction current {};
        if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
            struct sigaction ignore {};
            ignore.sa_handler = SIG_IGN;
            sigemptyset(&ignore.sa_mask);
            sigaction(SIGPIPE, &ignore, nullptr);
        }
    });
}

// `x` itself if contiguous, else a contiguous copy that `finish` copies back.
struct ContiguousView {
    at::Tensor original;
    at::Tensor data;
    explicit ContiguousView(const at::Tensor& x) : original(x), data(x.contiguous()) {}
    void finish() {
        if (!data.is_same(original))
            original.copy_(data);
    }
};

int mod(int a, int n) {
    return ((a % n) + n) % n;
}

// One ring step: send `send_len` bytes at `send_offset` of the send buffer into
// the right neighbour's buffer at `remote_offset`, and receive one message into
// the receive buffer (if `receive` is set), even ranks sending first.
void step(int rank, gloo::transport::Buffer& to_right, size_t send_offset, size_t send_len,
          size_t remote_offset, gloo::transport::Buffer& from_left, bool receive) {
    auto send = [&] {
        if (send_len == 0)
            return;
        to_right.send(send_offset, send_len, remote_offset);
        to_right.waitSend();
    };
    if (rank % 2 == 0)
        send();
    if (receive)
        from_left.waitRecv();
    if (rank % 2 == 1)
        send();
}

} // namespace

GlooRing::GlooRing(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                   std::shared_ptr<gloo::transport::Device> device, std::chrono::milliseconds timeout)
    : m_rank(rank), m_size(size) {
    ignoreBrokenPipes();
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(timeout);
    StoreAdapter adapter(store);
    context->connectFullMesh(adapter, device);
    for (int peer = 0; peer < size; ++peer)
        if (peer != rank)
            context->getPair(peer)->setSync(true, /*busyPoll=*/false);
    // Nobody sends before every pair is synchronous: a message reaching a pair
    // still in asynchronous mode would be picked up by the device's event loop
    // (shared with ProcessGroupGloo), which finds no buffer for it and spins.
    store->set("ready/" + std::to_string(rank), std::vector<uint8_t>{1});
    std::vector<std::string> ready;
    for (int r = 0; r < size; ++r)
        ready.push_back("ready/" + std::to_string(r));
    store->wait(ready, timeout);
    m_context = std::move(context);
}

GlooRing::~GlooRing() = default;

bool GlooRing::sumsDtype(at::ScalarType dtype) {
    return dtype == at::kFloat || dtype == at::kDouble || dtype == at::kInt || dtype == at::kLong;
}

void GlooRing::allReduceRing(at::Tensor& x) {
    const int n = m_size, r = m_rank;
    if (n == 1 || x.numel() == 0)
        return;
    const at::Tensor flat = x.view(-1);
    const int64_t numel = flat.numel(), item = flat.element_size();
    const at::Tensor scratch = at::empty({chunkOf(0, numel, n).size()}, flat.options());
    auto& right = m_context->getPair(mod(r + 1, n));
    auto& left = m_context->getPair(mod(r - 1, n));
    const size_t bytes = size_t(numel * item);
    // With N = 2 left and right are one pair, and a send and a receive buffer
    // share each slot; a Buffer's destructor unregisters whatever buffer holds
    // its slot on its pair, so these four live and die together.
    BufferPtr to_right = right->createSendBuffer(kSlotScatter, flat.data_ptr(), bytes);
    BufferPtr into_scratch =
        left->createRecvBuffer(kSlotScatter, scratch.data_ptr(), size_t(scratch.nbytes()));
    BufferPtr gather_to_right = right->createSendBuffer(kSlotGather, flat.data_ptr(), bytes);
    BufferPtr gather_from_left = left->createRecvBuffer(kSlotGather, flat.data_ptr(), bytes);

    for (int k = 0; k < n - 1; ++k) { // reduce-scatter
        const Chunk out = chunkOf(mod(r - k, n), numel, n), in = chunkOf(mod(r - k - 1, n), numel, n);
        step(r, *to_right, size_t(out.begin * item), size_t(out.size() * item), 0, *into_scratch,
             in.size() > 0);
        if (in.size() > 0)
            flat.narrow(0, in.begin, in.size()).add_(scratch.narrow(0, 0, in.size()));
    }
    for (int k = 0; k < n - 1; ++k) { // all-gather: rank r owns chunk r+1 now
        const Chunk out = chunkOf(mod(r + 1 - k, n), numel, n), in = chunkOf(mod(r - k, n), numel, n);
        step(r, *gather_to_right, size_t(out.begin * item), size_t(out.size() * item),
             size_t(out.begin * item), *gather_from_left, in.size() > 0);
    }
}

void GlooRing::allGatherRing(at::Tensor& out, const at::Tensor& x) {
    const int n = m_size, r = m_rank;
    const at::Tensor flat = out.view(-1);
    const int64_t part = x.numel();
    flat.narrow(0, r * part, part).copy_(x.reshape(-1));
    if (n == 1 || part == 0)
        return;
    const size_t part_bytes = size_t(part * x.element_size()), bytes = size_t(flat.nbytes());
    BufferPtr to_right =
        m_context->getPair(mod(r + 1, n))->createSendBuffer(kSlotGather, flat.data_ptr(), bytes);
    BufferPtr from_left =
        m_context->getPair(mod(r - 1, n))->createRecvBuffer(kSlotGather, flat.data_ptr(), bytes);
    for (int k = 0; k < n - 1; ++k) {
        const size_t offset = size_t(mod(r - k, n)) * part_bytes;
        step(r, *to_right, offset, part_bytes, offset, *from_left, true);
    }
}

void GlooRing::reduceScatterRing(at::Tensor& out, const at::Tensor& x) {
    const int n = m_size, r = m_rank;
    if (n == 1) {
        out.copy_(x.view_as(out));
        return;
    }
    const at::Tensor acc = x.reshape({n, -1}).clone(); // (N, numel / N)
    const at::Tensor scratch = at::empty_like(acc[0]);
    const size_t chunk_bytes = size_t(scratch.nbytes());
    if (chunk_bytes > 0) {
        BufferPtr to_right = m_context->getPair(mod(r + 1, n))
                                 ->createSendBuffer(kSlotScatter, acc.data_ptr(), size_t(acc.nbytes()));
        BufferPtr into_scratch = m_context->getPair(mod(r - 1, n))
                                     ->createRecvBuffer(kSlotScatter, scratch.data_ptr(), chunk_bytes);
        for (int k = 0; k < n - 1; ++k) {
            step(r, *to_right, size_t(mod(r - k - 1, n)) * chunk_bytes, chunk_bytes, 0, *into_scratch, true);
            acc[mod(r - k - 2, n)].add_(scratch);
        }
    }
    out.copy_(acc[r].view_as(out));
}

void GlooRing::broadcastRing(at::Tensor& x, int root) {
    if (m_size == 1 || x.numel() == 0)
        return;
    const size_t bytes = size_t(x.nbytes());
    if (m_rank == root) {
        for (int peer = 0; peer < m_size; ++peer) {
            if (peer == root)
                continue;
            BufferPtr to_peer =
                m_context->getPair(peer)->createSendBuffer(kSlotBroadcast, x.data_ptr(), bytes);
            to_peer->send();
            to_peer->waitSend();
        }
    } else {
        BufferPtr from_root = m_context->getPair(root)->createRecvBuffer(kSlotBroadcast, x.data_ptr(), bytes);
        from_root->waitRecv();
    }
}

void GlooRing::barrier() {
    at::Tensor token = at::zeros({1}, at::kFloat);
    allReduce(token);
}

void GlooRing::allReduce(at::Tensor& x) {
    ContiguousView v(x);
    guarded([&] { allReduceRing(v.data); });
    v.finish();
}
void GlooRing::allGather(at::Tensor& out, const at::Tensor& x) {
    if (out.numel() != x.numel() * m_size || out.scalar_type() != x.scalar_type())
        throw std::invalid_argument("all-gather: the output must hold " + std::to_string(m_size) +
                                    " x the input's elements, of the same dtype");
    ContiguousView v(out);
    guarded([&] { allGatherRing(v.data, x); });
    v.finish();
}
void GlooRing::reduceScatter(at::Tensor& out, const at::Tensor& x) {
    if (x.numel() % m_size != 0 || out.numel() * m_size != x.numel())
        throw std::invalid_argument("reduce-scatter: the input's " + std::to_string(x.numel()) +
                                    " elements must be " + std::to_string(m_size) + " x the output's");
    guarded([&] { reduceScatterRing(out, x); });
}
void GlooRing::broadcast(at::Tensor& x, int root) {
    ContiguousView v(x);
    guarded([&] { broadcastRing(v.data, root); });
    v.finish();
}

void GlooRing::guarded(const std::function<void()>& ring) {
    if (!m_failure.empty()) // worded as the first failure was, so it is classified alike
        throw std::runtime_error("an earlier collective of this group failed, its pairs are closed: " +
                                 m_failure);
    try {
        ring();
    } catch (const std::exception& e) {
        m_failure = e.what();
        for (int peer = 0; peer < m_size; ++peer)
            if (peer != m_rank)
                m_context->getPair(peer)->close();
        throw;
    }
}

} // namespace dt
