// gloo_ring.hpp: the collectives of dtlab's Gloo backend, run as rings on Gloo's
// TCP pairs in synchronous mode, on the calling thread (gloo_ring.cpp has the
// steps and the bytes on the wire).
#pragma once

#include <ATen/Tensor.h>
#include <c10/util/intrusive_ptr.h>

#include <chrono>
#include <functional>
#include <string>

#include <memory>

namespace c10d {
class Store;
} // namespace c10d
namespace gloo {
class Context;
namespace transport {
class Device;
} // namespace transport
} // namespace gloo

namespace dt {

class GlooRing {
  public:
    // Connects a full mesh of Gloo pairs through `store` (every rank of the
    // group calls it; blocks until all have joined or `timeout` passes), then
    // switches each pair to synchronous mode. Throws on failure.
    GlooRing(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
             std::shared_ptr<gloo::transport::Device> device, std::chrono::milliseconds timeout);
    ~GlooRing();
    GlooRing(const GlooRing&) = delete;
    GlooRing& operator=(const GlooRing&) = delete;

    // Whether the rings can sum `x`'s dtype (float32/64, int32/64); the caller
    // runs any other sum through ProcessGroupGloo. The choice depends on the
    // dtype only, which every rank of a collective shares, never on a rank's own
    // tensor layout: two ranks of one collective must take the same path.
    [[nodiscard]] static bool sumsDtype(at::ScalarType dtype);

    // Semantics as Communicator's (N = size): x := sum over ranks of x;
    // out (N * numel(x)) := every rank's x in rank order; out := this rank's
    // chunk of the sum of x (numel(x) divisible by N); x := root's x. Any
    // layout: a non-contiguous tensor goes through a contiguous copy. Wrong
    // sizes throw std::invalid_argument before anything is sent.
    // Throw gloo's exceptions (a closed connection, a read/write timeout);
    // after one, every pair is closed and each later call throws at once.
    void allReduce(at::Tensor& x);
    void allGather(at::Tensor& out, const at::Tensor& x);
    void reduceScatter(at::Tensor& out, const at::Tensor& x);
    void broadcast(at::Tensor& x, int root);
    void barrier();

  private:
    void allReduceRing(at::Tensor& x);
    void allGatherRing(at::Tensor& out, const at::Tensor& x);
    void reduceScatterRing(at::Tensor& out, const at::Tensor& x);
    void broadcastRing(at::Tensor& x, int root);
    void guarded(const std::function<void()>& ring); // closes every pair on failure

    int m_rank;
    int m_size;
    std::shared_ptr<gloo::Context> m_context;
    std::string m_failure; // the first failure's message; empty while healthy
};

} // namespace dt
