// http_heal_transport.hpp: TorchFT's HTTPTransport
// (torchft/checkpointing/http_transport.py), the heal served over HTTP by a
// live peer instead of sent over the reconfigured process group.
//
// Steps:
//  1. Every rank of a run with [fault_tolerance] heal_transport = "http"
//     starts HealServer: a listening socket on its Gloo interface and a
//     thread that accepts; the Manager publishes "host:port" in the store
//     (dtlab/ft/http/<rank>). TorchFT hands the address to the healer through
//     the quorum (the source manager's checkpoint metadata); dtlab's healer
//     reads the store.
//  2. A rank that serves a healer this round stages its state once:
//     allow(step, pieces, message_numels) (TorchFT's send_checkpoint ->
//     allow_checkpoint). In shouldCommit, before anything steps, the Manager
//     calls disallow() (TorchFT: right after should_commit), which waits for
//     the requests in progress (cutting off one stalled past the timeout),
//     so the state never changes under a reader. The source's all-reduce
//     needs the healer, who enters it only after its fetch.
//  3. The healer fetches: GET /checkpoint/<step>/metadata and, for i < N,
//     GET /checkpoint/<step>/<i>of<N>, each on its own connection and thread
//     (TorchFT's ThreadPoolExecutor), or GET /checkpoint/<step>/full when
//     N = 0. Every byte is received straight into the healer's tensors.
//  4. A request waits while nothing is allowed (TorchFT's RW lock), and gets
//     503 if nothing is by the timeout; a request for another step than the
//     one allowed gets 400; a bad proof 403. At most 256 connections at once.
//
// Wire (HTTP/1.0, one request per connection):
//   request  "GET /checkpoint/<step>/<key> HTTP/1.0\r\n"
//            "X-Dtlab-Rank: <healer rank>\r\n"     who fetched (for the Heal span)
//            "X-Dtlab-Proof: <hex>\r\n\r\n"         HMAC-SHA256(token, "heal <step> <key>");
//                                                    TorchFT's server answers anyone
//   reply    "HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\n"
//            "Content-Length: <n>\r\n\r\n" then n bytes
//   metadata "dtlab-heal <step> <m> <numel_0> ... <numel_m-1>\n" (text)
//   <i>of<N> bytes [i*B/N, (i+1)*B/N) of the m fp32 messages laid end to end,
//            B = 4 * sum(numel). TorchFT splits the state dict's leaves
//            round-robin (values[i::N]); dtlab's state is a few flat buffers,
//            so it splits their bytes into N equal ranges instead.
//   full     the metadata line, then all B bytes.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dt::ft {

// One request the server answered (or failed to): for the source's Heal span.
struct ServedRequest {
    int healer_rank = -1;
    int64_t step = -1;
    int64_t begin_ns = 0; // steady clock (Clock::now, ns)
    int64_t end_ns = 0;
    int64_t bytes = 0; // body bytes written
    bool ok = false;
};

class HealServer {
  public:
    // Listens on host, any free port. timeout_ms: how long a request waits
    // for allow() and how long a socket may stall.
    HealServer(const std::string& host, std::string token, double timeout_ms);
    ~HealServer(); // stops the thread, closes every connection
    HealServer(const HealServer&) = delete;
    HealServer& operator=(const HealServer&) = delete;

    [[nodiscard]] std::string address() const; // "host:port"
    // Serve these pieces (fp32, contiguous, not changed while allowed) as
    // the state of `step`: laid end to end they are the messages of
    // message_numels (the metadata the healer checks its layout against).
    void allow(int64_t step, std::vector<at::Tensor> pieces, std::vector<int64_t> message_numels);
    // Stop serving: waits for the requests in progress, drops the messages.
    void disallow();
    // The requests answered since the last call.
    [[nodiscard]] std::vector<ServedRequest> takeServed();

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

struct HealFetch {
    std::string address; // the source's "host:port"
    int64_t step = -1;
    int chunks = 0; // 0 = one GET of "full"
    int healer_rank = -1;
    std::string token;
    double timeout_ms = 3000;
};

// Fetches the state of fetch.step into `into` (tensors already sized as this
// rank's own state: fp32, contiguous), as TorchFT's recv_checkpoint does.
// Throws CommError with the reason (connection refused, HTTP status, a
// layout that differs from `into`, a short body, a timeout).
void fetchHealState(const HealFetch& fetch, std::vector<at::Tensor>& into);

} // namespace dt::ft
