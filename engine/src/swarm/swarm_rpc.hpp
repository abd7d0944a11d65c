// swarm_rpc.hpp: the calls between a SWARM trainer and a stage's server, one
// TCP connection per (trainer, server) pair, as Hivemind's RemoteExpert calls
// an expert (DistQat's trainers; dtlab: framed TCP instead of libp2p RPC).
// The activations go back to the trainer between stages (hub and spoke, as
// DistQat's RemoteModel.forward calls the stages one after another).
//
// Connection: the server sends a 32-hex-digit nonce and a newline; the trainer
// answers HMAC-SHA256(token, "swarm-call <nonce>") in hex and a newline; a
// wrong proof closes the connection. Then requests and replies alternate.
//
// Request  header 40 bytes: "DTSW", op (1 forward, 2 backward), tensor count,
//          2 pad, trainer rank, step, microbatch, 4 pad, sent_ns (the Session
//          clock), payload bytes; then the tensors:
//   forward   [x]       x = tokens (B/m, T) int64 for stage 0, else (B/m, T, C) fp32
//   backward  [x, dy]   the same x again and dy, the gradient of the stage's output
//                       (the server is stateless: it recomputes the forward, as
//                       Hivemind's ModuleBackend.backward does)
// Reply    header 24 bytes: "DTSR", status (0 ok, 1 error: the payload is the
//          message, 2 dropped: older than 0.8 x request_timeout_ms), tensor count, 2
//          pad, service_ns (the server's time on it), payload bytes; then:
//   forward   [y]       (B/m, T, C), or the logits (B/m, T, V) from the last stage
//   backward  [dx]      (B/m, T, C); nothing from stage 0 (its input is tokens)
// Tensor   dtype u8 (0 fp32, 1 int64), ndim u8 (<= 4), 6 pad, ndim int64
//          sizes, then the elements.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dt::swarm {

enum class CallOp : uint8_t { Forward = 1, Backward = 2 };

struct CallRequest {
    CallOp op = CallOp::Forward;
    int trainer = -1;
    int step = -1;
    int microbatch = -1;
    int64_t sent_ns = 0;
    std::vector<at::Tensor> tensors;
};

enum class ReplyStatus : uint8_t { Ok = 0, Error = 1, Dropped = 2 };

struct CallReply {
    ReplyStatus status = ReplyStatus::Ok;
    int64_t service_ns = 0;
    std::vector<at::Tensor> tensors;
    std::string error; // status Error
};

// What a socket read came to.
enum class IoResult { Ok, Closed, TimedOut };

// Tensors laid out as above, and back. decode throws std::runtime_error on a
// malformed payload (a size that does not add up, an unknown dtype).
[[nodiscard]] std::string encodeTensors(const std::vector<at::Tensor>& tensors);
[[nodiscard]] std::vector<at::Tensor> decodeTensors(const std::string& payload, int count);

// Frames. send: false when the connection is gone. receive: Closed, or
// TimedOut when the socket's receive timeout passed (setReceiveTimeout);
// throws std::runtime_error on a malformed frame.
[[nodiscard]] bool sendRequest(int fd, const CallRequest& request, int64_t& bytes);
[[nodiscard]] IoResult receiveRequest(int fd, CallRequest& request, int64_t& bytes);
[[nodiscard]] bool sendReply(int fd, const CallReply& reply, int64_t& bytes);
[[nodiscard]] IoResult receiveReply(int fd, CallReply& reply, int64_t& bytes);

// Sockets (listening and connecting: wire::listenTcp, wire::connectWithin).
void setReceiveTimeout(int fd, double timeout_ms); // 0 = wait without limit
void setSendTimeout(int fd, double timeout_ms);    // 0 = wait without limit
// What the last failed send or receive came to: TimedOut when errno says the
// socket's timeout passed, else Closed. Call right after the failure.
[[nodiscard]] IoResult lastFailure();
// The handshake above; false = refused or the peer went away.
[[nodiscard]] bool serverHandshake(int fd, const std::string& token);
[[nodiscard]] bool clientHandshake(int fd, const std::string& token);

} // namespace dt::swarm
