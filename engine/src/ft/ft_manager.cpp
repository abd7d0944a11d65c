// ft_manager.cpp: one replica group's side of quorum fault tolerance
// (TorchFT's Manager, in C++). One round = one step (DDP) or one outer sync
// (DiLoCo); s = the step of the round, N = replicas in the quorum, P = the
// elements of the all-reduced tensor.
//
//  1. startQuorum: ask the lighthouse for a quorum (QUORUM <committed steps>
//     <commit failures>) on a helper thread, in 2 s slices so that "the job
//     finished" is noticed while waiting. The same thread then does steps 2
//     and 3 (TorchFT's _async_quorum: configure, then send / receive the
//     checkpoint). quorum_mode "async" (TorchFT's default,
//     use_async_quorum=True): the loop computes meanwhile, so the quorum, the
//     new group and the heal transfer all overlap forward and backward (the
//     state a source sends is not written until the commit). "sync"
//     (use_async_quorum=False): the loop waits for the quorum, heals
//     (healBeforeCompute) and only then computes. (The DiLoCo loop: a
//     restarted replica asks first and skips its inner steps while it will
//     heal; healsBeforeCompute.) waitQuorum joins the thread.
//  2. configure: role = computeQuorumRole (lighthouse.hpp). A new
//     quorum id rebuilds the cross-replica Gloo group on a fresh store prefix
//     dtlab/ft/q<id>/<members> (a Reconfigure span), so no stale key is ever
//     read (TorchFT: "{store}/torchft/{quorum_id}/{group_rank}").
//  3. heal, over that group: an up-to-date replica posts its state (DDP
//     4 (3P + 2) bytes, replica_state.hpp; DiLoCo adds the global model and
//     the outer momentum, 8P) to each healer it serves and goes on; a healer
//     posts the receives. As TorchFT's PGTransport: first the metadata's
//     length and the metadata (int64: the source's committed steps, n, each
//     part's elements), which the healer checks against the quorum's step and
//     its own layout before receiving anything else (a mismatch fails the
//     heal at once, naming both); then one point-to-point message per part
//     (tags: healTags). The parts are the live
//     tensors where the loop steps nothing before the vote (ReplicaState-
//     Transfer::live: header, each parameter, each exp_avg, each exp_avg_sq,
//     as TorchFT's PGTransport sends each tensor), else save()'s copies.
//  4. allReduce the tensor (P fp32; ring: 2 (N-1)/N x 4P bytes sent per
//     replica), divided by participants() (TorchFT's num_participants). Async:
//     a healer contributes zeros (its gradient came from stale parameters)
//     and only the replicas up to date participate; sync: the healer healed
//     before computing, so every replica of the quorum participates.
//  5. shouldCommit: a healer whose transfer succeeded adopts the received
//     state and step first, whatever the vote (TorchFT applies the pending
//     state before voting), so an aborted heal round is not healed again.
//     Then TorchFT's vote: commit iff the group was built, the all-reduce and
//     the heal succeeded, the averaged tensor is finite and participants() >=
//     min_replicas. With 2 replicas and min_replicas = 2, async, the heal
//     round of a restarted replica has 1 participant: it aborts, and the next
//     round commits with 2. Commit: everyone applies the same update to the
//     same average, so the replicas stay bit-identical (the loops'
//     ParamsChecksum after every commit shows it). Abort: nothing is applied,
//     commit_failures += 1 (the lighthouse then issues a new quorum id), and
//     after a collective or heal failure the group is dropped so that the
//     next round rebuilds it.
//  6. On a checkpoint step ([run] checkpoint_dir, checkpoint_every) the lowest
//     replica id of the quorum writes a durable checkpoint of the committed
//     state; a new job can resume from it.
// Replica groups of G ranks (zero1/zero2/fsdp inside, ft_group_training.cpp):
// every rank has a Manager. The group's rank 0 asks the lighthouse and
// publishes the quorum line in the store (dtlab/ft/r<replica>/i<incarnation>/
// q<round>); the others read it there, so the whole group holds one quorum
// (TorchFT: the ManagerServer on group rank 0 answers its ranks' quorum
// calls). Rank i of each member builds the cross-group group of "rank i of
// every member" (prefix .../g<i>/), averages its shard there and heals from
// rank i of its source: shard by shard, in parallel. The heal and the vote
// are agreed inside the group (GroupAgreement: an AND of one flag): the group
// adopts a heal only if every rank received its shard, and commits only if
// every rank votes yes (else GroupVotedNo).
// Every replica sees the same all-reduce result, so they agree; one left
// behind by a collective that failed part-way is behind at the next quorum,
// and heals.
//
// Where this differs from TorchFT:
//  - the group's agreement is one all-reduce on the group's own Gloo group,
//    not RPCs to a ManagerServer. A non-finite average is a reason to abort too.
//  - the DiLoCo loop adopts a heal only when its outer step commits.
//  - sync mode: if a healer's transfer fails, it does not take part in the
//    all-reduce, so the others' all-reduce fails too and the whole round
//    aborts (collective failed); the next quorum gets a new id and heals again.
//  - allReduce blocks until the sum is in (TorchFT returns a future);
//    startAllReduce / finishAllReduce split it, for Streaming DiLoCo's overlap.
#include "ft/ft_manager.hpp"

#include "checkpoint/replica_state.hpp"
#include "dtlab/clock.hpp"
#include "dtlab/errors.hpp"
#include "ft/lighthouse_detail.hpp"
#include "rank/rank_groups.hpp"
#include "telemetry/telemetry_sender.hpp"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>

namespace dt {

namespace ft {
namespace {

std::string storeGet(c10d::Store& store, const std::string& key) {
    const auto bytes = store.get(key);
    return std::string(bytes.begin(), bytes.end());
}

// Consecutive slices of the flat messages, numels[i] elements each; a slice
// never spans two messages (the layouts are the same state's).
std::vector<at::Tensor> piecesOf(const std::vector<at::Tensor>& messages,
                                 const std::vector<int64_t>& numels) {
    std::vector<at::Tensor> pieces;
    pieces.reserve(numels.size());
    size_t message = 0;
    int64_t offset = 0;
    for (int64_t numel : numels) {
        while (message < messages.size() && offset == messages[message].numel()) {
            ++message;
            offset = 0;
        }
        DT_ENFORCE(message < messages.size() && offset + numel <= messages[message].numel(),
                   "the live state's pieces do not tile its messages");
        pieces.push_back(messages[message].narrow(0, offset, numel));
        offset += numel;
    }
    return pieces;
}

// Where rank r's heal server listens (heal_transport = "http"); a restarted
// rank publishes its new address before it asks for a quorum.
std::string httpAddressKey(int rank) {
    return "dtlab/ft/http/" + std::to_string(rank);
}

// Every replica of the first start waits for the others here, so that the
// first quorum holds them all (a restarted replica skips it and heals).
void waitForInitialReplicas(c10d::Store& store, int replicas, int64_t timeout_ms) {
    store.add("dtlab/ft/started", 1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (store.add("dtlab/ft/started", 0) < replicas) {
        if (std::chrono::steady_clock::now() > deadline)
            throw CommError(CommErrorKind::Timeout,
                            "not every replica started within " + std::to_string(timeout_ms) + " ms");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

uint64_t memberMask(const Quorum& quorum) {
    uint64_t mask = 0;
    for (const auto& m : quorum.members)
        if (m.replica >= 0 && m.replica < 64)
            mask |= uint64_t(1) << m.replica;
    return mask;
}

std::string groupPrefix(const Quorum& quorum, int group_rank) {
    std::string prefix =
        "dtlab/ft/q" + std::to_string(quorum.quorum_id) + "/g" + std::to_string(group_rank) + "/";
    for (const auto& m : quorum.members)
        prefix += m.id() + ",";
    return prefix;
}

// After every k-th step and the last, as the other strategies do.
bool isReplicaCheckpointStep(const RunConfig& run, int64_t step) {
    if (run.checkpoint_dir.empty())
        return false;
    if (step == run.steps - 1)
        return true;
    return run.checkpoint_every > 0 && (step + 1) % run.checkpoint_every == 0;
}

} // namespace

const char* abortText(AbortReason reason) {
    switch (reason) {
    case AbortReason::CollectiveFailed:
        return "a cross-replica collective failed";
    case AbortReason::NanGradients:
        return "the averaged gradients are not finite";
    case AbortReason::TooFewReplicas:
        return "fewer than min_replicas participants (replicas whose contribution was real)";
    case AbortReason::HealFailed:
        return "the heal transfer failed";
    case AbortReason::GroupVotedNo:
        return "another rank of this replica group could not commit";
    case AbortReason::None:
        break;
    }
    return "";
}

Manager::Manager(const RankContext& context, const RankTelemetry& telemetry, ReplicaStateTransfer state,
                 GroupAgreement group_agree)
    : m_context(context), m_config(context.scenario->fault_tolerance), m_telemetry(telemetry),
      m_sender(*context.sender), m_state(std::move(state)),
      m_replica(context.env.rank / ftGroupSize(*context.scenario)),
      m_group_rank(context.env.rank % ftGroupSize(*context.scenario)),
      m_group_size(ftGroupSize(*context.scenario)), m_group_agree(std::move(group_agree)),
      m_transport(healTransportOf(context.scenario->fault_tolerance)),
      m_async(dt::asyncQuorum(*context.scenario)),
      m_healers_contribute(!m_async && context.scenario->strategy.kind != StrategyKind::Diloco) {
    const std::string lighthouse =
        m_config.lighthouse.empty() ? storeGet(*context.store, "dtlab/lighthouse") : m_config.lighthouse;
    if (leadsGroup()) {
        m_client =
            std::make_unique<LighthouseClient>(lighthouse, m_replica, context.incarnation, context.token);
        if (m_telemetry.detailed())
            m_client->onHeartbeat([this] { m_telemetry.instant(EventKind::Heartbeat).step(-1).emit(); });
        context.faults->attachPartitionSink(
            [client = m_client.get()](bool partitioned) { client->setPartitioned(partitioned); });
        m_client->startHeartbeats(int64_t(m_config.heartbeat_interval_ms));
    }
    if (context.incarnation == 0)
        waitForInitialReplicas(*context.store, context.env.world, 60000);
    else
        (void)context.faults->waitForGreeting(5000); // then job_finished is known: the loop leaves at once
    m_telemetry.instant(EventKind::RankReady).step(-1).emit();

    m_gloo.interface_host = glooInterfaceFor(context.env);
    m_gloo.timeout = std::chrono::milliseconds(int64_t(m_config.collective_timeout_ms));
    if (m_transport == HealTransport::Http) { // TorchFT starts its checkpoint server with the Manager
        m_http_server = std::make_unique<HealServer>(m_gloo.interface_host, context.token,
                                                     m_config.collective_timeout_ms);
        const std::string address = m_http_server->address();
        context.store->set(httpAddressKey(context.env.rank),
                           std::vector<uint8_t>(address.begin(), address.end()));
    }
}

Manager::~Manager() {
    // The quorum thread may still be asking, or healing with this object's
    // members (a rank leaving on an exception): stop it and wait for it
    // before any member goes.
    m_stopping = true;
    if (m_quorum_future.valid())
        m_quorum_future.wait();
    m_context.faults->attachPartitionSink(nullptr);
}

bool Manager::healsBeforeCompute() const {
    return m_context.incarnation > 0 && !m_committed_once;
}

int Manager::memberReplica(int replica_rank) const {
    return m_quorum.members[size_t(replica_rank)].replica;
}

int Manager::peerRank(int replica_rank) const {
    return memberReplica(replica_rank) * m_group_size + m_group_rank;
}

void Manager::publishQuorum(const std::string& line) {
    if (m_group_size == 1)
        return;
    const std::string key = "dtlab/ft/r" + std::to_string(m_replica) + "/i" +
                            std::to_string(m_context.incarnation) + "/q" + std::to_string(m_round);
    m_context.store->set(key, std::vector<uint8_t>(line.begin(), line.end()));
}

Quorum Manager::requestQuorumOnce(int64_t committed_steps, int failures) {
    if (m_client) {
        Quorum quorum = m_client->requestQuorum(committed_steps, failures, "", 2000);
        publishQuorum(formatQuorumLine(quorum));
        return quorum;
    }
    // The group's rank 0 asks; this rank reads its answer (2 s slices, as the
    // client's). Polled with check(): a TCPStore wait() that times out leaves
    // its late reply in the connection, where the next request would read it.
    const std::string key = "dtlab/ft/r" + std::to_string(m_replica) + "/i" +
                            std::to_string(m_context.incarnation) + "/q" + std::to_string(m_round);
    const auto slice_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(2000);
    while (!m_context.store->check({key})) {
        if (m_stopping || std::chrono::steady_clock::now() > slice_end)
            throw CommError(CommErrorKind::Timeout, "no quorum from this group's rank 0 yet");
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const std::string line = storeGet(*m_context.store, key);
    Quorum quorum;
    if (line.rfind("LEAVE", 0) == 0) {
        m_group_leaves = true;
        throw CommError(CommErrorKind::Timeout, "this group's rank 0 leaves: the job finished");
    }
    if (line.rfind("ERROR ", 0) == 0)
        throw CommError(CommErrorKind::Timeout, "this group's rank 0: " + line.substr(6));
    if (!parseQuorumLine(line, quorum))
        throw CommError(CommErrorKind::Timeout, "this group's rank 0 published a malformed quorum: " + line);
    return quorum;
}

int64_t Manager::modeledBytesSent() const {
    return m_bytes_sent_before + (m_group ? m_group->modeledBytesSent() : 0);
}

void Manager::dropGroup() {
    if (m_group)
        m_bytes_sent_before += m_group->modeledBytesSent();
    m_group.reset();
}

// ---- 1. the quorum -----------------------------------------------------------
void Manager::startQuorum(int64_t step, int64_t committed_steps) {
    endHttpServing(); // a round that ended without a vote served nothing past it either
    m_step = step;
    m_committed_steps = committed_steps;
    m_abort = AbortReason::None;
    m_finite = true;
    m_heal_applied = false;
    m_heal_failed = false;
    m_role = QuorumRole();
    m_quorum_begin = m_telemetry.now();
    m_round += 1;
    const int failures = m_commit_failures;
    m_quorum_future = std::async(std::launch::async, [this, committed_steps, failures] {
        const auto timeout = std::chrono::milliseconds(int64_t(m_config.quorum_timeout_ms));
        auto deadline = std::chrono::steady_clock::now() + timeout;
        // In slices, so that "the job finished" and "the job is held" are
        // noticed while waiting; time while held does not count.
        for (;;) {
            try {
                Quorum quorum = requestQuorumOnce(committed_steps, failures);
                prepareRound(quorum);
                return quorum;
            } catch (const CommError& e) {
                const auto now = std::chrono::steady_clock::now();
                if (m_context.faults->job_held.load())
                    deadline = now + timeout;
                const bool finished = m_context.faults->job_finished.load();
                if (m_stopping || m_group_leaves || finished || now > deadline) {
                    if (m_client) // the group's other ranks leave or fail with this one
                        publishQuorum(finished ? "LEAVE" : std::string("ERROR ") + e.what());
                    throw;
                }
            }
        }
    });
}

bool Manager::waitQuorum() {
    try {
        m_quorum = m_quorum_future.get();
    } catch (const CommError&) {
        if (m_context.faults->job_finished.load() || m_group_leaves)
            return false;
        throw; // no lighthouse for quorum_timeout_ms: the rank fails (and the supervisor may restart it)
    }
    // The others finished every step while this replica waited (it was hung,
    // say): a quorum of the replicas still here would train on past the end
    // of the job, diverging from every finished replica. Leave instead.
    return !m_context.faults->job_finished.load();
}

bool Manager::jobFinishedWithoutThisRound() const {
    return m_context.faults->job_finished.load() &&
           m_quorum.quorum_id != m_context.faults->finished_quorum_id.load();
}

// On the quorum thread, as soon as the quorum is in: the role, the group
// (2) and the heal transfers (3), while the loop may still compute.
void Manager::prepareRound(const Quorum& quorum) {
    m_quorum = quorum;
    const double quorum_id = double(quorum.quorum_id);
    m_telemetry.span(EventKind::QuorumWait).from(m_quorum_begin).step(m_step).value(quorum_id).emit();
    m_role =
        computeQuorumRole(quorum, m_replica, m_context.incarnation, m_group_rank,
                          m_config.init_sync && m_context.scenario->strategy.kind != StrategyKind::Diloco);
    if (m_context.faults->job_finished.load())
        return; // waitQuorum says leave
    try {
        configure();
        heal();
    } catch (const std::exception& e) { // a transfer that cannot even be posted aborts the round
        m_abort = AbortReason::CollectiveFailed;
        m_sender.log(LogLevel::Warning, std::string("step ") + std::to_string(m_step) + ": " + e.what());
    }
}

// ---- 2. the group ------------------------------------------------------------
void Manager::configure() {
    // This replica's view of the quorum: value = the quorum id, group_size =
    // replicas in it, seq = the member mask, unit = the replicas already up to
    // date, bytes = the max step, peer = the heal source (-1: no heal).
    m_telemetry.instant(EventKind::QuorumFormed)
        .step(m_step)
        .value(double(m_role.quorum_id))
        .groupSize(m_role.replica_world)
        .seq(memberMask(m_quorum))
        .unit(m_role.up_to_date)
        .bytes(m_role.max_step)
        .peer(m_role.heal ? peerRank(m_role.heal_source) : -1)
        .emit();

    // Kept while the quorum id is the same, else rebuilt on a fresh store
    // prefix with the replica's modelled link. A group that cannot be built
    // is logged and aborts the round.
    if (m_group && m_group_quorum_id == m_role.quorum_id)
        return;
    const int64_t t = m_telemetry.now();
    dropGroup();
    try {
        GlooOptions options = m_gloo;
        options.prefix = groupPrefix(m_quorum, m_group_rank);
        EventSink* sink = m_telemetry.detailed() ? m_telemetry.sink() : nullptr;
        m_group =
            makeGlooCommunicator(m_context.store, m_role.replica_rank, m_role.replica_world, options, sink);
        // One rank per group: an id per quorum (1..127). Groups of G ranks: the
        // replicate group of this rank's shard (128 + i), as hsdp names it.
        m_group->setGroupId(m_group_size > 1 ? groupIdReplicate(m_group_rank)
                                             : uint8_t(1 + m_role.quorum_id % 127));
        m_group->shareLink(m_context.link);
        m_group_quorum_id = m_role.quorum_id;
    } catch (const std::exception& e) {
        m_group.reset();
        m_abort = AbortReason::CollectiveFailed;
        m_sender.log(LogLevel::Warning, std::string("could not build the group of quorum ") +
                                            std::to_string(m_role.quorum_id) + ": " + e.what());
    }
    m_telemetry.span(EventKind::Reconfigure)
        .from(t)
        .step(m_step)
        .value(double(m_role.quorum_id))
        .groupSize(m_role.replica_world)
        .emit();
}

// ---- 3. the state transfer ---------------------------------------------------
namespace {

// The heal's Gloo tags on the quorum's group, as TorchFT's PGTransport numbers
// its messages (tag 1 the metadata's length, tag 2 the metadata, 3 + i the
// i-th tensor): the metadata at 2 k and 2 k + 1, the n messages of the state
// at 2000 + 1000 n + n k + i, k = quorum id % 1000. (What keeps an earlier
// quorum's message from matching is that each quorum id builds its own group,
// configure(); the tags only keep one heal's messages apart.) The metadata's
// tags do not depend on n, so a healer whose layout differs still receives
// the metadata, and says so at once.
struct HealTags {
    int length = 0, metadata = 0, first_message = 0;
};
HealTags healTags(int64_t quorum_id, int messages) {
    const int k = int(quorum_id % 1000);
    return {2 * k, 2 * k + 1, 2000 + 1000 * messages + messages * k};
}

} // namespace

void Manager::heal() {
    m_heal_sends.clear();
    m_heal_receives.clear();
    m_heal_received.clear();
    if (m_abort != AbortReason::None)
        return;
    if (m_transport == HealTransport::Http)
        return healOverHttp();
    // TorchFT's PGTransport sends the metadata (its length, then the step
    // and each tensor's size), then each tensor of the state dict as its
    // own message; the healer checks the metadata, then receives each
    // tensor. With live views (nothing steps before the vote) the source
    // does the same: no packed copy of the large tensors on a core that
    // trains; runs of small neighbours go as one packed message each
    // (replicaStateRuns). Without live views, save()'s messages. Under a
    // modelled link ([network]) too: each message is held for its own
    // bytes' link time, so the state goes as one.
    const bool modelled_link = m_context.link && m_context.link->active();
    const bool by_pieces = bool(m_state.live) && !m_state.live_numels.empty() && !modelled_link;
    const std::vector<ReplicaStateRun> runs =
        by_pieces ? replicaStateRuns(m_state.live_numels, m_state.message_numels)
                  : std::vector<ReplicaStateRun>{};
    std::vector<int64_t> wire_numels; // each message's elements, as this rank lays them out
    if (by_pieces)
        for (const ReplicaStateRun& r : runs)
            wire_numels.push_back(r.numel);
    else
        wire_numels = m_state.message_numels;
    const int n = int(wire_numels.size());
    const HealTags tags = healTags(m_role.quorum_id, n);
    const CommTag ctag{int(m_step), -1, -1};
    std::vector<at::Tensor> live_messages; // one set serves every healer
    if (by_pieces && !m_role.heal_destinations.empty()) {
        const std::vector<at::Tensor> pieces = m_state.live();
        DT_ENFORCE(pieces.size() == m_state.live_numels.size(), "live state pieces differ from their layout");
        for (const ReplicaStateRun& r : runs)
            live_messages.push_back(r.end - r.begin == 1
                                        ? pieces[r.begin]
                                        : at::cat(std::vector<at::Tensor>(pieces.begin() + long(r.begin),
                                                                          pieces.begin() + long(r.end))));
    }
    if (!m_role.heal_destinations.empty()) {
        const at::Tensor meta = replicaStateMetadata(m_committed_steps, wire_numels);
        const at::Tensor length = at::full({1}, meta.numel(), at::kLong);
        for (int destination : m_role.heal_destinations) {
            HealSend s;
            s.begin = m_telemetry.now();
            s.messages = by_pieces ? live_messages : m_state.save();
            s.peer_replica = memberReplica(destination);
            s.peer_rank = peerRank(destination);
            s.works.push_back(m_group->postSend(length, destination, tags.length, ctag));
            s.works.push_back(m_group->postSend(meta, destination, tags.metadata, ctag));
            for (int i = 0; i < n; ++i)
                s.works.push_back(
                    m_group->postSend(s.messages[size_t(i)], destination, tags.first_message + i, ctag));
            m_heal_sends.push_back(std::move(s));
        }
    }
    if (m_role.heal) {
        m_heal_begin = m_telemetry.now();
        if (receiveHealMetadata(tags.length, tags.metadata, wire_numels, ctag)) {
            for (int64_t numel : m_state.message_numels)
                m_heal_received.push_back(at::empty({numel}, at::kFloat));
            // Each run lands in its place in the flat messages that load() reads.
            std::vector<at::Tensor> into = m_heal_received;
            if (by_pieces) {
                const std::vector<at::Tensor> pieces = piecesOf(m_heal_received, m_state.live_numels);
                into.clear();
                for (const ReplicaStateRun& r : runs) // consecutive pieces of one message: one slice of it
                    into.push_back(
                        pieces[r.begin].as_strided({r.numel}, {1}, pieces[r.begin].storage_offset()));
            }
            for (int i = 0; i < n; ++i)
                m_heal_receives.push_back(
                    m_group->postRecv(into[size_t(i)], m_role.heal_source, tags.first_message + i, ctag));
        }
    }
    // As TorchFT's send_checkpoint / recv_checkpoint over the process group,
    // on the quorum thread: both ends wait for the transfer here, so the Heal
    // spans are the transfer alone, and a received state is pending once it
    // is in; the loop adopts it later (shouldCommit or healBeforeCompute).
    if (m_role.heal && !m_heal_failed)
        (void)finishHealReceives();
    finishHealSends();
}

// TorchFT's recv_checkpoint, first half: the metadata's length, then the
// metadata, each waited for; then the check against this rank's own layout.
// A mismatch fails the heal at once, naming both, instead of receiving the
// wrong bytes; the group is dropped at once, so the source's pending sends
// fail with a closed connection instead of waiting for their timeout (a
// replica group's other ranks wait for that source rank's vote).
bool Manager::receiveHealMetadata(int length_tag, int metadata_tag, const std::vector<int64_t>& wire_numels,
                                  const CommTag& ctag) {
    std::string problem;
    try {
        at::Tensor length = at::zeros({1}, at::kLong);
        m_group->postRecv(length, m_role.heal_source, length_tag, ctag)->wait();
        const int64_t values = length.item<int64_t>();
        if (values < 2 || values > (int64_t(1) << 20)) {
            problem = "malformed metadata length " + std::to_string(values);
        } else {
            at::Tensor meta = at::empty({values}, at::kLong);
            m_group->postRecv(meta, m_role.heal_source, metadata_tag, ctag)->wait();
            problem = replicaStateMetadataMismatch(meta, m_role.max_step, wire_numels);
        }
    } catch (const CommError& e) {
        problem = e.what();
    }
    if (problem.empty())
        return true;
    healFailed(problem);
    m_heal_end = m_telemetry.now();
    dropGroup(); // nothing of ours is pending on it; aborted() would drop it at the round's end
    return false;
}

void Manager::healFailed(const std::string& why) {
    m_heal_failed = true;
    if (m_abort == AbortReason::None)
        m_abort = AbortReason::HealFailed;
    m_sender.log(LogLevel::Warning, "heal from replica " + std::to_string(memberReplica(m_role.heal_source)) +
                                        " failed: " + why);
}

void Manager::healOverHttp() {
    if (!m_role.heal_destinations.empty()) // one copy at most, however many healers fetch it
        m_http_server->allow(m_role.max_step, m_state.live ? m_state.live() : m_state.save(),
                             m_state.message_numels);
    if (!m_role.heal)
        return;
    m_heal_begin = m_telemetry.now();
    for (int64_t numel : m_state.message_numels)
        m_heal_received.push_back(at::empty({numel}, at::kFloat));
    HealFetch fetch;
    fetch.step = m_role.max_step;
    fetch.chunks = m_config.heal_chunks;
    fetch.healer_rank = m_context.env.rank;
    fetch.token = m_context.token;
    fetch.timeout_ms = m_config.collective_timeout_ms;
    const int source_rank = peerRank(m_role.heal_source);
    try {
        fetch.address = storeGet(*m_context.store, httpAddressKey(source_rank));
        fetchHealState(fetch, m_heal_received);
        // A modelled link ([network]) holds the transfer as it holds the process group's.
        if (m_context.link && m_context.link->active()) {
            int64_t bytes = 0;
            for (const auto& m : m_heal_received)
                bytes += m.numel() * 4;
            const int64_t until = m_heal_begin + m_context.link->linkTime(bytes).count();
            const int64_t left = until - m_telemetry.now();
            if (left > 0)
                std::this_thread::sleep_for(std::chrono::nanoseconds(left));
        }
        m_heal_end = m_telemetry.now();
    } catch (const std::exception& e) {
        m_heal_failed = true;
        m_heal_received.clear();
        if (m_abort == AbortReason::None)
            m_abort = AbortReason::HealFailed;
        m_sender.log(LogLevel::Warning,
                     "heal from rank " + std::to_string(source_rank) + " failed: " + e.what());
    }
}

void Manager::endHttpServing() {
    if (!m_http_server)
        return;
    m_http_server->disallow();
    // One Heal span (sending) per healer: from its first request to its last byte.
    const int64_t to_session = m_telemetry.now() - monotonicNowNs();
    std::map<int, ServedRequest> by_healer;
    for (const ServedRequest& r : m_http_server->takeServed()) {
        auto [it, first] = by_healer.try_emplace(r.healer_rank, r);
        if (!first) {
            it->second.begin_ns = std::min(it->second.begin_ns, r.begin_ns);
            it->second.end_ns = std::max(it->second.end_ns, r.end_ns);
            it->second.bytes += r.bytes;
            it->second.ok = it->second.ok && r.ok;
        }
    }
    for (const auto& [rank, r] : by_healer)
        m_telemetry.span(EventKind::Heal)
            .from(r.begin_ns + to_session)
            .to(r.end_ns + to_session)
            .step(r.step)
            .value(1.0) // sending
            .bytes(r.ok ? r.bytes : 0)
            .peer(rank)
            .unit(1)
            .seq(uint64_t(HealTransport::Http))
            .groupSize(m_config.heal_chunks)
            .emit();
}

// A source waits for its sends before it drops the group or ends the round
// (the healer may be slow; the others are not held up by it).
void Manager::finishHealSends() {
    for (auto& s : m_heal_sends) {
        bool sent = true;
        for (auto& w : s.works) {
            try {
                w->wait();
            } catch (const CommError& e) {
                sent = false;
                m_sender.log(LogLevel::Warning,
                             "heal of replica " + std::to_string(s.peer_replica) + " failed: " + e.what());
            }
        }
        int64_t bytes = 0;
        for (const auto& m : s.messages)
            bytes += m.numel() * 4;
        m_telemetry.span(EventKind::Heal)
            .from(s.begin)
            .step(m_step)
            .value(1.0) // sending
            .bytes(sent ? bytes : 0)
            .peer(s.peer_rank)
            .unit(1)
            .seq(uint64_t(HealTransport::ProcessGroup))
            .emit();
    }
    m_heal_sends.clear();
    if (m_group)
        m_group->reapPosted();
}

// ---- 4. the average ----------------------------------------------------------
void Manager::allReduce(at::Tensor& tensor, const CommTag& tag) {
    startAllReduce(tensor, tag);
    finishAllReduce();
}

// What every cross-group collective of a round does (the all-reduce, the
// quantized all-gather): nothing after an abort; the traffic-delay fault; the
// failed-collective fault (dropping our end of the group closes its
// connections: the peers' collective fails at once, as with a real broken
// link); then post(). A CommError aborts the round. Returns the work posted,
// or null.
CommWorkPtr Manager::postCollective(const char* what, const std::function<CommWorkPtr()>& post) {
    if (m_abort != AbortReason::None)
        return nullptr;
    const double delay = m_context.faults->traffic_delay_ms.load();
    if (delay > 0) {
        const int64_t t = m_telemetry.now();
        std::this_thread::sleep_for(std::chrono::microseconds(int64_t(delay * 1000)));
        m_telemetry.span(EventKind::SlowDelay).from(t).step(m_step).value(delay).unit(-3).emit();
    }
    if (m_context.faults->fail_next_collective.exchange(false)) {
        m_sender.log(LogLevel::Warning, std::string("fault: this replica's ") + what + " fails at step " +
                                            std::to_string(m_step));
        finishHealSends();
        dropGroup();
        m_abort = AbortReason::CollectiveFailed;
        return nullptr;
    }
    try {
        return post();
    } catch (const CommError& e) {
        m_abort = AbortReason::CollectiveFailed;
        m_sender.log(LogLevel::Warning, std::string("step ") + std::to_string(m_step) + ": " + e.what());
        return nullptr;
    }
}

// Waits for a posted collective; a CommError aborts the round. True when it completed.
bool Manager::waitCollective(const CommWorkPtr& work) {
    try {
        work->wait();
        return true;
    } catch (const CommError& e) {
        m_abort = AbortReason::CollectiveFailed;
        m_sender.log(LogLevel::Warning, std::string("step ") + std::to_string(m_step) + ": " + e.what());
        return false;
    }
}

void Manager::startAllReduce(at::Tensor tensor, const CommTag& tag) {
    DT_ENFORCE(!m_reduce_work, "one all-reduce at a time through the manager");
    if (m_role.heal && !m_heal_applied)
        tensor.zero_(); // async: its gradient came from stale weights
    m_reduce_work = postCollective("all-reduce", [&] { return m_group->allReduce(tensor, tag); });
    if (m_reduce_work)
        m_reduce_tensor = tensor;
}

void Manager::finishAllReduce() {
    if (!m_reduce_work)
        return;
    const CommWorkPtr work = std::move(m_reduce_work);
    at::Tensor tensor = std::move(m_reduce_tensor);
    m_reduce_work.reset();
    if (!waitCollective(work))
        return;
    tensor.div_(double(std::max(1, participants())));
    m_finite = m_finite && at::isfinite(tensor).all().item<bool>();
}

void Manager::startAllGather(at::Tensor gathered, at::Tensor encoded, const CommTag& tag) {
    DT_ENFORCE(!m_gather_work, "one all-gather at a time through the manager");
    m_gather_work = postCollective("all-gather", [&] { return m_group->allGather(gathered, encoded, tag); });
}

void Manager::finishAllGather() {
    if (!m_gather_work)
        return;
    const CommWorkPtr work = std::move(m_gather_work);
    m_gather_work.reset();
    waitCollective(work);
}

bool Manager::quorumAllRestarted() const {
    return std::all_of(m_role.members.begin(), m_role.members.end(),
                       [](const QuorumMember& m) { return m.incarnation > 0; });
}

void Manager::checkFinite(const at::Tensor& averaged) {
    m_finite = m_finite && at::isfinite(averaged).all().item<bool>();
}

// ---- 5. the vote -------------------------------------------------------------
int Manager::participants() const {
    // Healers count only where they heal before computing (the ddp loop in
    // sync mode); async, and the DiLoCo loop (a healer's delta is zeros), count
    // the replicas up to date.
    return m_healers_contribute ? m_role.replica_world : m_role.up_to_date;
}

bool Manager::finishHealReceives() {
    for (auto& w : m_heal_receives) {
        try {
            w->wait();
        } catch (const CommError& e) {
            healFailed(e.what());
            break;
        }
    }
    if (!m_heal_receives.empty())
        m_heal_end = m_telemetry.now();
    m_heal_receives.clear();
    return !m_heal_failed;
}

void Manager::healBeforeCompute() {
    if (!m_role.heal || m_heal_applied)
        return;
    bool received = m_abort == AbortReason::None && finishHealReceives();
    if (m_group_agree) // every rank of the group received its shard, or none adopts
        received = m_group_agree(received);
    if (received)
        applyHealedState();
}

bool Manager::shouldCommit(bool adopt_before_vote) {
    // The heal first (TorchFT applies the pending state before it votes): a
    // healer whose transfer succeeded is up to date from here on, even if the
    // round aborts, so it does not heal again and again.
    // (After a collective failure the group may be gone: its receives are not waited for.)
    bool received = m_heal_applied;
    if (!received && m_role.heal) {
        received = m_abort == AbortReason::None && finishHealReceives();
        if (m_group_agree) // every rank of the group received its shard, or none adopts
            received = m_group_agree(received);
    }
    if (received && !m_heal_applied && adopt_before_vote)
        applyHealedState();
    finishHealSends();
    endHttpServing(); // TorchFT's disallow_checkpoint: nothing steps before this returns
    if (m_abort == AbortReason::None && !m_finite)
        m_abort = AbortReason::NanGradients;
    // TorchFT's vote: enough participants (replicas whose contribution was real).
    if (m_abort == AbortReason::None && participants() < m_config.min_replicas)
        m_abort = AbortReason::TooFewReplicas;
    // The group commits together: every rank's yes, or an abort for all.
    if (m_group_agree && !m_group_agree(m_abort == AbortReason::None) && m_abort == AbortReason::None)
        m_abort = AbortReason::GroupVotedNo;
    if (m_abort != AbortReason::None)
        return false;
    if (m_role.heal && !m_heal_applied)
        applyHealedState();
    return true;
}

void Manager::applyHealedState() {
    const int64_t from_step = m_step;
    m_step = m_state.load(m_heal_received);
    int64_t bytes = 0;
    for (const auto& m : m_heal_received)
        bytes += m.numel() * 4;
    const int source = memberReplica(m_role.heal_source);
    const std::string what = m_group_size == 1 ? "replica " + std::to_string(source)
                                               : "rank " + std::to_string(peerRank(m_role.heal_source)) +
                                                     " (shard " + std::to_string(m_group_rank) +
                                                     " of replica group " + std::to_string(source) + ")";
    m_sender.log(LogLevel::Info, "healed from " + what + ": step " + std::to_string(from_step) + " -> " +
                                     std::to_string(m_step) + ", " + std::to_string(bytes) + " bytes");
    m_telemetry.span(EventKind::Heal)
        .from(m_heal_begin)
        .to(m_heal_end)
        .step(m_step)
        .value(0.0) // receiving
        .bytes(bytes)
        .peer(peerRank(m_role.heal_source))
        .unit(0)
        .seq(uint64_t(m_transport))
        .groupSize(m_transport == HealTransport::Http ? m_config.heal_chunks : 0)
        .emit();
    m_heal_received.clear();
    m_heal_applied = true;
}

void Manager::committed(int64_t first_step, int64_t last_step) {
    for (int64_t k = first_step; k <= last_step; ++k)
        m_telemetry.instant(EventKind::Commit).step(k).groupSize(participants()).emit();
    m_commit_failures = 0;
    m_committed_once = true;
}

void Manager::aborted(int64_t first_step, int64_t last_step) {
    for (int64_t k = first_step; k <= last_step; ++k)
        m_telemetry.instant(EventKind::Abort).step(k).value(double(int(m_abort))).emit();
    m_commit_failures += 1;
    if (m_abort == AbortReason::CollectiveFailed || m_abort == AbortReason::HealFailed)
        dropGroup(); // the next round rebuilds it
    // TorchFT's max_retries: past it the replica raises, and its process is restarted.
    if (m_config.max_retries >= 0 && m_commit_failures > m_config.max_retries)
        throw CommError(CommErrorKind::Timeout, std::to_string(m_commit_failures) +
                                                    " commits failed in a row, more than "
                                                    "[fault_tolerance] max_retries = " +
                                                    std::to_string(m_config.max_retries) +
                                                    " (last: " + abortText(m_abort) + ")");
}

// ---- 6. durable checkpoints --------------------------------------------------
void Manager::checkpointIfDue(int64_t step, const std::function<int64_t(int64_t step)>& save,
                              int64_t first_step) {
    bool due = false;
    for (int64_t k = first_step < 0 ? step : first_step; k <= step && !due; ++k)
        due = isReplicaCheckpointStep(m_context.scenario->run, k);
    if (!due)
        return;
    if (m_quorum.members.front().replica != m_replica)
        return;
    // Every replica holds these bits now; the lowest replica id of the quorum writes them.
    const int64_t t = m_telemetry.now();
    try {
        const int64_t bytes = save(step);
        if (bytes < 0)
            return; // this run saved that step already (before it went back)
        const double ms_saving = double(m_telemetry.now() - t) / 1e6;
        m_telemetry.instant(EventKind::CheckpointSaved).step(step).value(ms_saving).bytes(bytes).emit();
    } catch (const UsageError& e) {
        // Training goes on: a lost checkpoint is a warning, not a failed step.
        m_sender.log(LogLevel::Warning,
                     std::string("checkpoint of step ") + std::to_string(step) + " not saved: " + e.what());
    }
}

void Manager::finish(int64_t step, bool left_early) {
    const int64_t last = step - 1;
    if (m_client)
        m_client->leave(); // the job finished: this replica leaves, it is not lost
    if (left_early)
        m_sender.log(LogLevel::Info, "the other replicas finished every step while this one was at step " +
                                         std::to_string(step) + ": leaving");
    m_telemetry.counter(EventKind::DroppedEvents).step(last).value(double(m_sender.dropped())).emit();
    // seq: the quorum of this replica's last step (the Session tells the
    // others, so that a replica in that quorum commits the step too).
    m_telemetry.instant(EventKind::RankFinished)
        .step(last)
        .value(left_early ? 1.0 : 0.0)
        .seq(uint64_t(m_quorum.quorum_id))
        .emit();
}

} // namespace ft
} // namespace dt
