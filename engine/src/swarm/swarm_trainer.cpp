// swarm_trainer.cpp: one SWARM trainer: data and loss, no parameters.
//
// One step, B = [data] batch_per_rank rows of this trainer's shard, in M =
// [strategy] microbatches microbatches of B/M rows, one after another:
//   x_0 = tokens (B/M, T)
//   for s = 0..S-1:   x_{s+1} = forward call to a server of stage s (x_s)
//   loss = cross_entropy(x_S = logits (B/M, T, V), targets); dy = dloss/dlogits
//   for s = S-1..0:   dy = backward call to a server of stage s (x_s, dy)
// The step's loss is the mean over its microbatches, each counted once: a
// call that fails (connection lost, or no answer within request_timeout_ms)
// is sent again to another server of the same stage (swarm_routing.hpp), so
// a dead server costs only the calls it held. The failed server is banned for
// 1 s (or until it registers again), then probed; a call nobody answers for
// 120 s (or 10 request timeouts) fails the trainer, saying so. Bytes per forward call: B/M x T
// x C x 4 each way (x V instead of C for the logits); a backward call sends
// x and dy and gets dx.
#include "swarm/swarm.hpp"

#include "data/data_source.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/swarm_layout.hpp"
#include "rank/rank_telemetry.hpp"
#include "rank/replica_step.hpp"
#include "strategy/training_strategy.hpp"
#include "swarm/swarm_routing.hpp"
#include "swarm/swarm_rpc.hpp"
#include "telemetry/telemetry_sender.hpp"
#include "telemetry/telemetry_wire.hpp"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <limits>
#include <thread>
#include <unistd.h>

namespace dt {
namespace {

using namespace dt::swarm;

struct ServerEntry {
    std::string host;
    int port = 0;
    int incarnation = -1; // -1 = not registered yet
    int fd = -1;
    int64_t banned_until_ns = 0; // after a failed call: not chosen before this (Session clock)
};

constexpr int64_t kBanNs = 1'000'000'000; // 1 s

class Trainer {
  public:
    explicit Trainer(const RankContext& c)
        : m_c(c), m_scenario(*c.scenario), m_layout(SwarmLayout::of(m_scenario)), m_rank(c.env.rank),
          m_telemetry(c.sender, m_rank, m_scenario.telemetry.enabled),
          m_data(makeDataSource(m_scenario.data, m_scenario.model, m_scenario.run.seed)),
          m_router(m_scenario.swarm.routing, m_layout.stages, m_layout.servers_per_stage,
                   m_scenario.run.seed * 1000003ULL + uint64_t(m_rank)),
          m_servers(size_t(m_layout.stages * m_layout.servers_per_stage)) {
        for (int s = 0; s < m_layout.stages; ++s)
            for (int k = 0; k < m_layout.servers_per_stage; ++k)
                m_router.markDead(s, k); // until registered
    }

    ~Trainer() {
        for (auto& e : m_servers)
            if (e.fd >= 0)
                ::close(e.fd);
    }

    int run() {
        waitForServers();
        m_telemetry.instant(EventKind::RankReady).emit();
        const int M = m_scenario.strategy.microbatches;
        const int B = m_scenario.data.batch_per_rank;
        const int rows = B / M;
        for (int step = 0; step < m_scenario.run.steps; ++step) {
            const int64_t step_begin = beginReplicaStep(m_c, m_telemetry, step);
            refreshDirectory();
            int64_t t = m_telemetry.now();
            const Batch batch = m_data->batch(step, m_rank, m_layout.trainers, B);
            m_telemetry.span(EventKind::Data).from(t).step(step).emit();
            double loss_sum = 0.0;
            for (int mb = 0; mb < M; ++mb)
                loss_sum += microbatch(step, mb, batch.inputs.narrow(0, int64_t(mb) * rows, rows),
                                       batch.targets.narrow(0, int64_t(mb) * rows, rows));
            const double loss = loss_sum / M;
            requireFiniteLoss(loss, step);
            m_telemetry.counter(EventKind::LossValue).step(step).value(loss).emit();
            endReplicaStep(m_c, m_telemetry, step, step_begin, m_bytes_sent);
        }
        m_telemetry.instant(EventKind::RankFinished).step(m_scenario.run.steps - 1).emit();
        return 0;
    }

  private:
    double microbatch(int step, int mb, const at::Tensor& tokens, const at::Tensor& targets) {
        const int S = m_layout.stages;
        std::vector<at::Tensor> x(size_t(S + 1));
        x[0] = tokens.contiguous();
        for (int s = 0; s < S; ++s)
            x[size_t(s + 1)] = call(CallOp::Forward, s, {x[size_t(s)]}, step, mb).at(0);
        const int64_t t = m_telemetry.now();
        at::Tensor logits = x[size_t(S)].detach().requires_grad_(true);
        const int64_t V = logits.size(-1);
        at::Tensor loss = at::cross_entropy_loss(logits.reshape({-1, V}), targets.reshape({-1}));
        loss.backward();
        m_telemetry.span(EventKind::Loss).from(t).step(step).microbatch(mb).emit();
        at::Tensor dy = logits.grad();
        for (int s = S - 1; s >= 0; --s) {
            std::vector<at::Tensor> out = call(CallOp::Backward, s, {x[size_t(s)], dy}, step, mb);
            dy = s > 0 ? out.at(0) : at::Tensor();
        }
        return loss.item<double>();
    }

    // Before the first step: every server registered (they start together),
    // or at least one per stage after 30 s.
    void waitForServers() {
        const auto start = std::chrono::steady_clock::now();
        while (true) {
            refreshDirectory();
            int stages_served = 0, live = 0;
            for (int s = 0; s < m_layout.stages; ++s) {
                stages_served += m_router.liveCount(s) > 0 ? 1 : 0;
                live += m_router.liveCount(s);
            }
            const bool late = std::chrono::steady_clock::now() - start > std::chrono::seconds(30);
            if (live == m_layout.stages * m_layout.servers_per_stage ||
                (late && stages_served == m_layout.stages))
                return;
            if (std::chrono::steady_clock::now() - start > std::chrono::seconds(120))
                throw CommError(CommErrorKind::Timeout, "swarm trainer " + std::to_string(m_rank) +
                                                            ": some stage has no server after 120 s");
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }

    // Reads every server's registration; a new incarnation is live again.
    void refreshDirectory() {
        for (int s = 0; s < m_layout.stages; ++s)
            for (int k = 0; k < m_layout.servers_per_stage; ++k) {
                const std::string key = swarmRegistrationKey(m_layout.serverRank(s, k));
                if (!m_c.store->check({key}))
                    continue;
                const std::vector<uint8_t> value = m_c.store->get(key);
                const std::string text(value.begin(), value.end());
                // Cleared by the Session when the server died (swarm.hpp): a trainer
                // still learns it by a failed call, as a Hivemind client does before
                // the DHT entry expires; the stage's rounds use the cleared key.
                if (text.empty())
                    continue;
                const auto colon = text.rfind(':'), space = text.find(' ');
                if (colon == std::string::npos || space == std::string::npos || space < colon)
                    throw CommError(CommErrorKind::Other,
                                    "a swarm server's registration is malformed: '" + text + "'");
                const int incarnation = std::stoi(text.substr(space + 1));
                ServerEntry& e = entry(s, k);
                if (incarnation > e.incarnation) {
                    if (e.fd >= 0)
                        ::close(e.fd);
                    e.fd = -1;
                    e.host = text.substr(0, colon);
                    e.port = std::stoi(text.substr(colon + 1, space - colon - 1));
                    e.incarnation = incarnation;
                    e.banned_until_ns = 0;
                    m_router.markLive(s, k);
                }
            }
    }

    ServerEntry& entry(int stage, int k) { return m_servers[size_t(stage * m_layout.servers_per_stage + k)]; }

    void reroute(int stage, int k, int reason, int step, int mb) {
        m_telemetry.instant(EventKind::SwarmReroute)
            .step(step)
            .microbatch(mb)
            .unit(stage)
            .peer(m_layout.serverRank(stage, k))
            .value(double(reason))
            .emit();
    }

    // A failed call bans its server (SWARM's balancer bans an expert after a
    // failed call, but only re-queues it as the slowest after a deadline
    // exceeded: dtlab bans on a timeout too, docs/concepts/swarm.md); the ban
    // ends after kBanNs (then one call probes it again) or when the server
    // registers a new incarnation. A timeout also counts as one slow sample.
    void failed(int stage, int k, IoResult why, double samples, double seconds, int step, int mb) {
        ServerEntry& e = entry(stage, k);
        if (e.fd >= 0)
            ::close(e.fd);
        e.fd = -1;
        if (why == IoResult::TimedOut)
            m_router.recordTimeout(stage, k, samples, seconds);
        m_router.markDead(stage, k);
        e.banned_until_ns = m_telemetry.now() + kBanNs;
        reroute(stage, k, why == IoResult::TimedOut ? 2 : 1, step, mb);
    }

    // Bans that ran out: the server may be back (a hang that ended, a slow spell).
    void liftBans(int stage) {
        const int64_t now = m_telemetry.now();
        for (int k = 0; k < m_layout.servers_per_stage; ++k) {
            ServerEntry& e = entry(stage, k);
            if (e.incarnation >= 0 && !m_router.live(stage, k) && e.banned_until_ns <= now)
                m_router.markLive(stage, k);
        }
    }

    // One call, retried on another server of the stage until one answers, for
    // at most the larger of 120 s and 10 x request_timeout_ms.
    std::vector<at::Tensor> call(CallOp op, int stage, std::vector<at::Tensor> tensors, int step, int mb) {
        const double timeout_ms = m_scenario.swarm.request_timeout_ms;
        const double samples = double(tensors[0].size(0));
        const int64_t give_up_ns = m_telemetry.now() + int64_t(std::max(120'000.0, 10 * timeout_ms) * 1e6);
        bool waiting = false; // the stage has no live server: say so once
        int failures = 0;
        while (true) {
            if (m_telemetry.now() > give_up_ns)
                throw CommError(
                    CommErrorKind::Timeout,
                    "swarm trainer " + std::to_string(m_rank) + ": no server of stage " +
                        std::to_string(stage) + " answered microbatch " + std::to_string(mb) + " of step " +
                        std::to_string(step) + " for " +
                        std::to_string(int(std::max(120.0, timeout_ms / 100))) +
                        " s (every server dead, hung, or slower than [swarm] request_timeout_ms)");
            liftBans(stage);
            const int k = m_router.choose(stage, double(m_telemetry.now()) / 1e9, samples);
            if (k < 0) {
                if (!waiting) {
                    m_telemetry.instant(EventKind::SwarmStageEmpty).step(step).unit(stage).value(1.0).emit();
                    m_c.sender->log(LogLevel::Warning, "swarm trainer " + std::to_string(m_rank) +
                                                           ": stage " + std::to_string(stage) +
                                                           " has no live server; waiting for one");
                    waiting = true;
                }
                if (m_c.faults->job_finished.load())
                    throw CommError(CommErrorKind::PeerLost, "the job ended while stage " +
                                                                 std::to_string(stage) +
                                                                 " had no live server");
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                refreshDirectory();
                continue;
            }
            if (waiting) {
                m_telemetry.instant(EventKind::SwarmStageEmpty).step(step).unit(stage).value(0.0).emit();
                waiting = false;
            }
            if (failures > 0 && failures % 10 == 0)
                m_c.sender->log(LogLevel::Warning,
                                "swarm trainer " + std::to_string(m_rank) + ": " + std::to_string(failures) +
                                    " failed tries of one call to stage " + std::to_string(stage) +
                                    " (step " + std::to_string(step) + ", microbatch " + std::to_string(mb) +
                                    ")");
            ServerEntry& e = entry(stage, k);
            const int64_t begin = m_telemetry.now();
            if (e.fd < 0) {
                e.fd = wire::connectWithin(e.host, e.port, std::min(timeout_ms, 2000.0));
                if (e.fd < 0) { // refused: nobody listens there (dead)
                    ++failures;
                    failed(stage, k, IoResult::Closed, samples, 0.0, step, mb);
                    continue;
                }
                setReceiveTimeout(e.fd, std::min(timeout_ms, 2000.0));
                setSendTimeout(e.fd, timeout_ms);
                if (!clientHandshake(e.fd, m_c.token)) { // no nonce in time: a busy or stopped server
                    const IoResult why = lastFailure();
                    ++failures;
                    failed(stage, k, why, samples, double(m_telemetry.now() - begin) / 1e9, step, mb);
                    continue;
                }
            }
            setReceiveTimeout(e.fd, timeout_ms);
            CallRequest request;
            request.op = op;
            request.trainer = m_rank;
            request.step = step;
            request.microbatch = mb;
            request.sent_ns = begin;
            request.tensors = tensors;
            int64_t sent = 0, received = 0;
            CallReply reply;
            IoResult got = IoResult::Closed;
            if (sendRequest(e.fd, request, sent))
                got = receiveReply(e.fd, reply, received);
            else
                got = lastFailure();
            const double seconds = double(m_telemetry.now() - begin) / 1e9;
            if (got == IoResult::Ok && reply.status == ReplyStatus::Ok) {
                m_router.recordCall(stage, k, samples, seconds);
                m_bytes_sent += sent;
                m_telemetry.span(EventKind::SwarmCall)
                    .from(begin)
                    .step(step)
                    .microbatch(mb)
                    .unit(stage)
                    .peer(m_layout.serverRank(stage, k))
                    .value(op == CallOp::Forward ? 0.0 : 1.0)
                    .bytes(sent + received)
                    .emit();
                return std::move(reply.tensors);
            }
            if (got == IoResult::Ok && reply.status == ReplyStatus::Error)
                throw CommError(CommErrorKind::Other,
                                "swarm server rank " + std::to_string(m_layout.serverRank(stage, k)) +
                                    " (stage " + std::to_string(stage) + ") failed a call: " + reply.error);
            ++failures;
            if (got == IoResult::Ok) { // answered "dropped": too old when served; the connection is fine
                m_router.recordTimeout(stage, k, samples, seconds);
                reroute(stage, k, 2, step, mb);
                continue;
            }
            failed(stage, k, got, samples, seconds, step, mb);
        }
    }

    const RankContext& m_c;
    const Scenario& m_scenario;
    SwarmLayout m_layout;
    int m_rank = 0;
    RankTelemetry m_telemetry;
    std::unique_ptr<DataSource> m_data;
    Router m_router;
    std::vector<ServerEntry> m_servers;
    int64_t m_bytes_sent = 0;
};

} // namespace

int trainSwarm(const RankContext& context) {
    Trainer trainer(context);
    return trainer.run();
}

} // namespace dt
