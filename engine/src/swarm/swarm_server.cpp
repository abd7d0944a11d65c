// swarm_server.cpp: one SWARM server: a stage served to every trainer.
//
// Steps:
//  1. Build the stage (swarm_stage.hpp) from the seed; a restarted server
//     then takes the stage's state from the param mirror (global parameters
//     and outer momentum of the last round; its inner AdamW starts afresh).
//  2. Listen on the rank's interface and register "host:port incarnation" in
//     the store (dtlab/swarm/server/<rank>): trainers find it there.
//  3. One thread, poll(): accept a trainer (handshake), or serve the next
//     request of a connected one. A call older than 0.8 x request_timeout_ms
//     when it is read or when its backward finishes is answered "dropped"
//     and its gradient is not added: its trainer gives up at the full timeout
//     and sends it elsewhere, and the margin keeps a gradient from counting
//     twice when the reply is slow to leave. The Session's Slow delay is
//     spent in every call. Replies have a send timeout, so a stopped trainer
//     cannot block the server.
//  4. After server_batch backward calls: an inner AdamW step on their mean
//     gradient. When the stage's servers together have done outer_every inner
//     steps each (the stage's progress counter, checked after every backward
//     call and every idle 50 ms): an inner step on what is accumulated, then
//     a DiLoCo round with the stage's other servers (swarm_outer_sync.hpp).
//  5. When the Session says the job is done: a last inner step on what is
//     accumulated, a final round, the stage's checksum, and leave.
#include "swarm/swarm.hpp"

#include "checkpoint/params_io.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/swarm_layout.hpp"
#include "rank/rank_groups.hpp"
#include "rank/rank_telemetry.hpp"
#include "rank/step_gate.hpp"
#include "swarm/swarm_outer_sync.hpp"
#include "swarm/swarm_rpc.hpp"
#include "swarm/swarm_stage.hpp"
#include "telemetry/telemetry_sender.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace dt {
namespace {

using namespace dt::swarm;

class StageServer {
  public:
    explicit StageServer(const RankContext& c)
        : m_c(c), m_scenario(*c.scenario), m_layout(SwarmLayout::of(m_scenario)), m_rank(c.env.rank),
          m_stage(m_layout.stageOf(m_rank)), m_telemetry(c.sender, m_rank, m_scenario.telemetry.enabled),
          m_module(m_scenario, m_stage), m_outer(m_scenario, c.store, m_stage, m_rank, m_module.tensors()) {
        m_server_batch = m_scenario.swarm.server_batch > 0 ? m_scenario.swarm.server_batch
                                                           : m_scenario.strategy.microbatches;
    }

    int run() {
        // 1. the stage's state
        int round = 0;
        const int64_t loaded = m_outer.loadMirror(round);
        // 2. listen and register
        int port = 0;
        try {
            m_listen = wire::listenTcp(glooInterfaceFor(m_c.env), 0, &port);
        } catch (const std::exception& e) {
            throw CommError(CommErrorKind::Other,
                            "swarm server (rank " + std::to_string(m_rank) + "): " + e.what());
        }
        const std::string address =
            glooInterfaceFor(m_c.env) + ":" + std::to_string(port) + " " + std::to_string(m_c.incarnation);
        m_c.store->set(swarmRegistrationKey(m_rank), std::vector<uint8_t>(address.begin(), address.end()));
        m_telemetry.instant(EventKind::SwarmJoined)
            .unit(m_stage)
            .value(double(m_c.incarnation))
            .bytes(loaded)
            .seq(uint64_t(round))
            .emit();
        m_telemetry.instant(EventKind::RankReady).emit();
        emitMemory();
        // 3. serve until the job is done
        while (!m_c.faults->job_finished.load())
            pollOnce();
        // 5. leave
        for (int fd : m_clients)
            ::close(fd);
        m_clients.clear();
        ::close(m_listen);
        if (m_module.accumulated() > 0)
            innerStep();
        if (m_scenario.swarm.outer_every > 0)
            outerRound(/*final_round=*/true);
        const int last_step = m_scenario.run.steps - 1;
        m_telemetry.instant(EventKind::ParamsChecksum)
            .step(last_step)
            .seq(parametersChecksum(m_module.parameters()))
            .emit();
        if (!m_c.params_out_dir.empty())
            saveParameters(m_c.params_out_dir + "/rank" + std::to_string(m_rank) + ".params",
                           m_module.parameters());
        m_telemetry.instant(EventKind::RankFinished)
            .step(last_step)
            .value(1.0)
            .emit(); // left: the job is done
        return 0;
    }

  private:
    void pollOnce() {
        std::vector<pollfd> fds;
        fds.push_back({m_listen, POLLIN, 0});
        for (int fd : m_clients)
            fds.push_back({fd, POLLIN, 0});
        const int ready = ::poll(fds.data(), nfds_t(fds.size()), 50);
        if (ready <= 0) { // idle: has the stage as a whole reached the next round?
            if (m_scenario.swarm.outer_every > 0 && m_outer.roundDue(m_outer.addProgress(0)))
                roundNow();
            return;
        }
        if (fds[0].revents & POLLIN)
            acceptTrainer();
        for (size_t i = 1; i < fds.size(); ++i)
            if (fds[i].revents & (POLLIN | POLLHUP | POLLERR))
                if (!serve(fds[i].fd))
                    drop(fds[i].fd);
    }

    void acceptTrainer() {
        const int fd = ::accept4(m_listen, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0)
            return;
        setReceiveTimeout(fd, 2000);
        setSendTimeout(fd, 5000);
        if (!serverHandshake(fd, m_c.token)) {
            ::close(fd);
            return;
        }
        m_clients.push_back(fd);
    }

    void drop(int fd) {
        ::close(fd);
        m_clients.erase(std::remove(m_clients.begin(), m_clients.end(), fd), m_clients.end());
    }

    [[nodiscard]] bool stale(const CallRequest& request) const {
        return m_telemetry.now() - request.sent_ns > int64_t(0.8 * m_scenario.swarm.request_timeout_ms * 1e6);
    }

    // One request on fd; false = the connection is gone or spoke nonsense.
    bool serve(int fd) {
        CallRequest request;
        int64_t bytes_in = 0, bytes_out = 0;
        setReceiveTimeout(fd, 5000); // a request that started arrives whole
        try {
            if (receiveRequest(fd, request, bytes_in) != IoResult::Ok)
                return false;
        } catch (const std::exception& e) {
            m_c.sender->log(LogLevel::Warning, std::string("swarm server: ") + e.what() + "; closing");
            return false;
        }
        const int64_t begin = m_telemetry.now();
        const double slow_ms = m_c.gate->delayMs();
        if (slow_ms > 0) {
            std::this_thread::sleep_for(std::chrono::microseconds(int64_t(slow_ms * 1000)));
            m_telemetry.span(EventKind::SlowDelay).from(begin).step(request.step).emit();
        }
        CallReply reply;
        bool applied = false;
        if (stale(request)) {
            reply.status = ReplyStatus::Dropped;
        } else {
            try {
                if (request.op == CallOp::Forward) {
                    DT_ENFORCE(request.tensors.size() == 1, "a swarm forward carries one tensor");
                    reply.tensors.push_back(m_module.forward(request.tensors[0]));
                } else {
                    DT_ENFORCE(request.tensors.size() == 2, "a swarm backward carries two tensors");
                    std::vector<at::Tensor> grads;
                    const at::Tensor dx = m_module.backward(request.tensors[0], request.tensors[1], grads);
                    if (stale(request)) {
                        reply.status = ReplyStatus::Dropped; // its trainer gave up while we computed
                    } else {
                        m_module.accumulate(grads);
                        applied = true;
                        if (dx.defined())
                            reply.tensors.push_back(dx);
                    }
                }
            } catch (const std::exception& e) {
                reply.status = ReplyStatus::Error;
                const std::string what = e.what();
                reply.error = what.substr(0, what.find('\n'));
            }
        }
        reply.service_ns = m_telemetry.now() - begin;
        const bool sent = sendReply(fd, reply, bytes_out);
        m_telemetry.span(EventKind::SwarmServe)
            .from(begin)
            .step(request.step)
            .microbatch(request.microbatch)
            .unit(m_stage)
            .peer(request.trainer)
            .value(request.op == CallOp::Forward ? 0.0 : 1.0)
            .bytes(bytes_in + bytes_out)
            .seq(reply.status == ReplyStatus::Ok ? 0 : uint64_t(reply.status))
            .emit();
        m_last_step = request.step;
        if (applied && m_module.accumulated() >= m_server_batch)
            innerStep();
        if (applied && m_scenario.swarm.outer_every > 0 && m_outer.roundDue(m_outer.addProgress(1)))
            roundNow();
        return sent;
    }

    void innerStep() {
        const int64_t begin = m_telemetry.now();
        m_module.innerStep();
        ++m_since_round;
        m_telemetry.span(EventKind::Optimizer).from(begin).step(m_last_step).unit(m_stage).emit();
        emitMemory();
    }

    // The stage reached a round: step what is accumulated, then sync.
    void roundNow() {
        if (m_module.accumulated() > 0)
            innerStep();
        outerRound(/*final_round=*/false);
    }

    void outerRound(bool final_round) {
        const int64_t begin = m_telemetry.now();
        const RoundResult r = m_outer.runRound(m_since_round, final_round);
        m_since_round = 0;
        m_telemetry.span(EventKind::SwarmOuterSync)
            .from(begin)
            .step(m_last_step)
            .unit(m_stage)
            .value(double(r.round))
            .groupSize(r.averaged)
            .seq(r.led ? 1 : 0)
            .bytes(r.bytes_put)
            .emit();
    }

    void emitMemory() {
        const int64_t p = m_module.numel() * 4;
        m_telemetry.counter(EventKind::MemParameters).step(m_last_step).value(double(p)).emit();
        m_telemetry.counter(EventKind::MemGradients).step(m_last_step).value(double(p)).emit();
        // AdamW's moments, and the outer state: the global copy and the momentum.
        m_telemetry.counter(EventKind::MemOptimizer)
            .step(m_last_step)
            .value(double(m_module.optimizerBytes() + 2 * p))
            .emit();
    }

    const RankContext& m_c;
    const Scenario& m_scenario;
    SwarmLayout m_layout;
    int m_rank = 0;
    int m_stage = 0;
    RankTelemetry m_telemetry;
    StageModule m_module;
    OuterSync m_outer;
    int m_server_batch = 1;
    int m_listen = -1;
    std::vector<int> m_clients;
    int m_since_round = 0;
    int m_last_step = -1;
};

} // namespace

int serveSwarmStage(const RankContext& context) {
    StageServer server(context);
    return server.run();
}

int runSwarmRank(const RankContext& context) {
    return SwarmLayout::of(*context.scenario).isTrainer(context.env.rank) ? trainSwarm(context)
                                                                          : serveSwarmStage(context);
}

} // namespace dt
