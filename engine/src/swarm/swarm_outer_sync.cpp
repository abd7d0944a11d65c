// swarm_outer_sync.cpp: a stage's DiLoCo rounds through the store (see
// swarm_outer_sync.hpp for the steps).
#include "swarm/swarm_outer_sync.hpp"

#include "dtlab/errors.hpp"
#include "dtlab/swarm_layout.hpp"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstring>
#include <thread>

namespace dt::swarm {
namespace {

std::vector<uint8_t> bytesOf(const std::string& text) {
    return {text.begin(), text.end()};
}

std::string textOf(const std::vector<uint8_t>& bytes) {
    return {bytes.begin(), bytes.end()};
}

void append(std::vector<uint8_t>& out, const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    out.insert(out.end(), p, p + n);
}

int64_t nowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

} // namespace

OuterSync::OuterSync(const Scenario& scenario, c10::intrusive_ptr<c10d::Store> store, int stage, int rank,
                     std::vector<at::Tensor> local)
    : m_config(scenario.swarm), m_store(std::move(store)), m_stage(stage),
      m_servers(scenario.swarm.servers_per_stage),
      m_first_server_rank(scenario.swarm.trainers + stage * scenario.swarm.servers_per_stage), m_rank(rank),
      m_local(std::move(local)) {
    const int server_batch =
        scenario.swarm.server_batch > 0 ? scenario.swarm.server_batch : scenario.strategy.microbatches;
    m_calls_per_round = std::max<int64_t>(1, int64_t(scenario.swarm.outer_every) * server_batch * m_servers);
    m_global = flatLocal().clone();
    m_momentum = at::zeros_like(m_global);
    if (m_global.numel() * 8 + 64 > (int64_t(16) << 20))
        throw UsageError("a swarm stage of " + std::to_string(m_global.numel()) +
                         " parameters is too large for its param mirror in the Session's store (16 MiB a "
                         "value): use a smaller [model] or more [topology] stages");
}

at::Tensor OuterSync::flatLocal() const {
    std::vector<at::Tensor> parts;
    for (const auto& t : m_local)
        parts.push_back(t.detach().reshape({-1}));
    return at::cat(parts);
}

void OuterSync::setLocal(const at::Tensor& flat) {
    at::NoGradGuard no_grad;
    int64_t offset = 0;
    for (const auto& t : m_local) {
        t.detach().copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
        offset += t.numel();
    }
}

// Every key of this stage's rounds lives under one prefix: "dtlab/swarm/s<stage>/".
std::string OuterSync::stageKey(const std::string& leaf) const {
    return "dtlab/swarm/s" + std::to_string(m_stage) + "/" + leaf;
}

std::string OuterSync::mirrorKey() const {
    return stageKey("mirror");
}

void OuterSync::putMirror(const std::string& key) {
    std::vector<uint8_t> value;
    const int64_t header[2] = {m_round, m_global.numel()};
    append(value, header, sizeof(header));
    append(value, m_global.data_ptr(), size_t(m_global.nbytes()));
    append(value, m_momentum.data_ptr(), size_t(m_momentum.nbytes()));
    m_store->set(key, value);
    if (key == mirrorKey())
        m_store->set(stageKey("mirror_round"), bytesOf(std::to_string(m_round)));
}

bool OuterSync::takeMirror(const std::string& key, int at_least_round, int64_t timeout_ms, int64_t& bytes) {
    const int64_t deadline = nowMs() + timeout_ms;
    while (true) {
        if (m_store->check({key})) {
            const std::vector<uint8_t> value = m_store->get(key);
            int64_t header[2] = {0, 0};
            const size_t want = sizeof(header) + size_t(m_global.nbytes()) * 2;
            if (value.size() != want)
                throw CommError(CommErrorKind::Other, "the param mirror of stage " + std::to_string(m_stage) +
                                                          " holds " + std::to_string(value.size()) +
                                                          " bytes, expected " + std::to_string(want));
            std::memcpy(header, value.data(), sizeof(header));
            if (header[0] >= at_least_round) {
                std::memcpy(m_global.data_ptr(), value.data() + sizeof(header), size_t(m_global.nbytes()));
                std::memcpy(m_momentum.data_ptr(), value.data() + sizeof(header) + size_t(m_global.nbytes()),
                            size_t(m_momentum.nbytes()));
                setLocal(m_global);
                m_round = int(header[0]);
                bytes = int64_t(value.size());
                return true;
            }
        }
        if (nowMs() >= deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

int64_t OuterSync::loadMirror(int& round) {
    int64_t bytes = 0;
    if (!takeMirror(mirrorKey(), 0, 0, bytes))
        return 0;
    round = m_round;
    return bytes;
}

int64_t OuterSync::addProgress(int64_t calls) {
    return m_store->add(stageKey("progress"), calls);
}

bool OuterSync::roundDue(int64_t progress) const {
    return m_config.outer_every > 0 && progress >= int64_t(m_round + 1) * m_calls_per_round;
}

int OuterSync::registeredServers() const {
    int n = 0;
    for (int k = 0; k < m_servers; ++k) {
        const std::string key = swarmRegistrationKey(m_first_server_rank + k);
        n += m_store->check({key}) && !m_store->get(key).empty() ? 1 : 0;
    }
    return n;
}

int OuterSync::mirrorRound() const {
    const std::string key = stageKey("mirror_round");
    return m_store->check({key}) ? std::stoi(textOf(m_store->get(key))) : -1;
}

RoundResult OuterSync::runRound(int inner_steps_since_last, bool final_round) {
    RoundResult result;
    const int r = m_round + 1;
    result.round = r;
    int64_t bytes = 0;
    // 0. behind: the stage already finished round r (this server was busy, hung or
    // restarted): take that result instead of joining a round nobody leads any more.
    if (!final_round && mirrorRound() >= r) {
        (void)takeMirror(mirrorKey(), r, 0, bytes);
        result.round = m_round;
        return result;
    }
    const std::string prefix = stageKey(final_round ? std::string("final/") : "r" + std::to_string(r) + "/");
    const int64_t wait_ms = int64_t(m_config.join_timeout_ms) + 5000;
    const std::string own_key = prefix + "in" + std::to_string(m_rank);
    // The last round's result has a key of its own: a regular round still
    // ending on another server cannot overwrite it in the shared mirror.
    const std::string result_key = final_round ? prefix + "mirror" : mirrorKey();
    // The leader is named with its registration ("host:port incarnation"),
    // so a follower tells a dead leader from its restarted successor.
    const auto leaderGone = [&] {
        if (!m_store->check({prefix + "leader"}))
            return false;
        const std::string leader = textOf(m_store->get(prefix + "leader"));
        const auto bar = leader.find('|');
        return bar == std::string::npos ||
               textOf(m_store->get(swarmRegistrationKey(std::stoi(leader.substr(0, bar))))) !=
                   leader.substr(bar + 1);
    };
    // A follower (or a latecomer): wait for the leader's "done", then take the mirror.
    const auto follow = [&]() {
        // Until "done", or the leader is gone (the Session cleared its
        // registration, or a new incarnation registered) or silent for
        // wait_ms: then give the round up and keep this state (or the
        // round's result, if the leader put it before it died), rather than
        // hold the stage's calls. Its contribution stays: a leader that was
        // only stopped may still be reading it.
        const int64_t give_up = nowMs() + wait_ms;
        while (!m_store->check({prefix + "done"})) {
            if (leaderGone() || nowMs() >= give_up) {
                if (!takeMirror(result_key, r, 0, bytes))
                    m_round = r;
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        (void)takeMirror(result_key, 0, 0, bytes);
        result.averaged = std::stoi(textOf(m_store->get(prefix + "closed")));
        m_store->deleteKey(own_key); // put after the close: the leader never read it
    };
    if (m_store->check({prefix + "closed"})) { // already closed: nothing to contribute
        follow();
        return result;
    }
    // 1. join: the contribution first, then the count
    std::vector<uint8_t> contribution;
    const at::Tensor local = flatLocal().contiguous();
    const double weight = double(inner_steps_since_last);
    append(contribution, &weight, sizeof(weight));
    append(contribution, local.data_ptr(), size_t(local.nbytes()));
    m_store->set(own_key, contribution);
    result.bytes_put = int64_t(contribution.size());
    (void)m_store->add(prefix + "joined", 1);
    const std::string me = std::to_string(m_rank) + "|" + textOf(m_store->get(swarmRegistrationKey(m_rank)));
    if (textOf(m_store->compareSet(prefix + "leader", {}, bytesOf(me))) != me) { // 3. not the leader
        follow();
        return result;
    }
    // 2. the leader: wait for the others (every server of the stage still
    // registered: the Session clears a dead one's registration; or the join
    // timeout), close, average
    const int64_t deadline = nowMs() + int64_t(m_config.join_timeout_ms);
    // (a server that dies while the leader waits is dropped from the count within 50 ms)
    int expected = std::min(m_servers, std::max(1, registeredServers()));
    int joined = int(m_store->add(prefix + "joined", 0));
    for (int tick = 1; joined < expected && nowMs() < deadline; ++tick) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        joined = int(m_store->add(prefix + "joined", 0));
        if (tick % 25 == 0)
            expected = std::min(m_servers, std::max(1, registeredServers()));
    }
    m_store->set(prefix + "closed", bytesOf(std::to_string(joined))); // later joiners only follow
    // Every contribution there now: each was put before its server counted
    // itself, so nothing is waited for (a server that died after putting
    // still gave its parameters; one that died before is simply absent).
    std::vector<std::string> keys;
    for (int k = 0; k < m_servers; ++k)
        keys.push_back(prefix + "in" + std::to_string(m_first_server_rank + k));
    at::Tensor sum = at::zeros_like(m_global);
    double total_weight = 0.0;
    int averaged = 0;
    for (const std::string& key : keys) {
        if (!m_store->check({key}))
            continue;
        const std::vector<uint8_t> value = m_store->get(key);
        m_store->deleteKey(key); // read once, by the leader only: the store keeps no round behind
        if (value.size() != sizeof(double) + size_t(m_global.nbytes()))
            throw CommError(CommErrorKind::Other,
                            "a swarm round contribution of " + std::to_string(value.size()) + " bytes at " +
                                key + " (expected " + std::to_string(sizeof(double) + m_global.nbytes()) +
                                ")");
        double w = 0.0;
        std::memcpy(&w, value.data(), sizeof(w));
        at::Tensor x = at::empty_like(m_global);
        std::memcpy(x.data_ptr(), value.data() + sizeof(w), size_t(x.nbytes()));
        sum.add_(x, w);
        total_weight += w;
        ++averaged;
    }
    if (total_weight > 0) {
        const at::Tensor average = sum.div(total_weight);
        const at::Tensor delta = m_global - average; // the pseudo-gradient
        const double mu = m_config.outer_momentum;
        m_momentum.mul_(mu).add_(delta);
        const at::Tensor update = mu > 0 ? delta + m_momentum * mu : delta; // Nesterov
        m_global.sub_(update, m_config.outer_lr);
    }
    m_round = r;
    setLocal(m_global);
    putMirror(result_key);
    m_store->set(prefix + "closed", bytesOf(std::to_string(averaged)));
    m_store->set(prefix + "done", bytesOf(std::to_string(r)));
    result.averaged = averaged;
    result.led = true;
    return result;
}

} // namespace dt::swarm
