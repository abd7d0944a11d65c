// ft_manager.hpp: one replica group's side of quorum fault tolerance
// (TorchFT's Manager, torchft/manager.py, in C++). The training loops
// (ft_training.cpp: DDP, one round per step; ft_group_training.cpp: a rank of
// a replica group, one round per step; ft_diloco.cpp: DiLoCo, one round per
// outer sync; ft_streaming_diloco.cpp: one round per fragment's sync) call it
// in this order each round:
//
//   startQuorum(step, committed)  on a helper thread (compute may overlap), as
//                                 TorchFT's _async_quorum: ask the lighthouse,
//                                 then configure (a new quorum id rebuilds the
//                                 cross-replica group) and heal (post the state
//                                 transfers to healers / from the source)
//   waitQuorum()                  join it: the quorum and this replica's role in it
//   allReduce(tensor, tag)        sum / up-to-date replicas; a healer sends zeros
//   shouldCommit()                the vote; on commit a healer adopts the received state
//   committed(...) / aborted(...) the bookkeeping of the round
//
// Steps, bytes and the rules are in ft_manager.cpp's top comment. Every rank
// of a replica group has its own Manager: rank i of a group averages and heals
// with rank i of the others (its own cross-group Gloo group); the group's rank
// 0 alone talks to the lighthouse and hands the quorum to the others through
// the store (TorchFT's ManagerServer), and the vote is agreed inside the group
// (GroupAgreement).
#pragma once

#include "comm/communicator.hpp"
#include "comm/gloo_communicator.hpp"
#include "dtlab/lighthouse.hpp"
#include "ft/ft_training.hpp"
#include "ft/http_heal_transport.hpp"
#include "rank/rank_telemetry.hpp"

#include <ATen/Tensor.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

namespace dt::ft {

// Why a round was not committed (the Abort event's value).
enum class AbortReason {
    None = 0,
    CollectiveFailed = 1,
    NanGradients = 2,
    TooFewReplicas = 3,
    HealFailed = 4,
    GroupVotedNo = 5, // another rank of this replica group could not commit
};
[[nodiscard]] const char* abortText(AbortReason reason);

// What a healing replica receives from a live peer (TorchFT's state_dict /
// load_state_dict pair, sent over the process group as its PGTransport does):
// flat fp32 messages, one point-to-point send each.
struct ReplicaStateTransfer {
    std::vector<int64_t> message_numels; // elements of each message
    // Copies to send, one per message (over the process group once per
    // healer served, over HTTP once per round; safe while training goes on).
    std::function<std::vector<at::Tensor>()> save;
    // Optional: views of the live state whose bytes, laid end to end, are
    // save()'s messages. Set by loops that step nothing between the quorum
    // and the vote; the HTTP heal then serves them without a copy (TorchFT's
    // HTTPTransport serves the live CPU state dict under its lock). Unset:
    // it serves one save().
    std::function<std::vector<at::Tensor>()> live;
    // With live: each piece's element count, in order (the same on every
    // rank). The heal over the process group then sends each live piece as
    // its own message and the healer receives it in its place in the flat
    // messages, as TorchFT's PGTransport sends each tensor of the state dict.
    std::vector<int64_t> live_numels;
    // The healer adopts the received messages when the round commits; returns
    // the step this replica is at now (the step of the round's events).
    std::function<int64_t(const std::vector<at::Tensor>&)> load;
};

// AND over the ranks of this replica group (an all-reduce of one flag on the
// group's own communicator; TorchFT's ManagerServer collects the ranks'
// should_commit). Null for a group of one rank. Throws CommError when a rank
// of the group is gone (the group then goes down together).
using GroupAgreement = std::function<bool(bool)>;

class Manager {
  public:
    // Connects to the lighthouse ([fault_tolerance] lighthouse, or the
    // Session's from the store), starts heartbeats, attaches the fault
    // switches; on a first start waits until every replica is up. Emits RankReady.
    Manager(const RankContext& context, const RankTelemetry& telemetry, ReplicaStateTransfer state,
            GroupAgreement group_agree = nullptr);
    ~Manager(); // detaches the fault switches, stops the heartbeats
    Manager(const Manager&) = delete;
    Manager& operator=(const Manager&) = delete;

    // A restarted replica that has not committed yet will heal: it asks for
    // the quorum before computing anything (the DiLoCo loop's rule).
    [[nodiscard]] bool healsBeforeCompute() const;
    // A restarted process that loaded the job's durable checkpoint is up to
    // date: from its next round on it computes first, as one that committed.
    void markUpToDate() { m_committed_once = true; }
    // TorchFT's use_async_quorum ([fault_tolerance] quorum_mode): true = the
    // quorum is asked while the replica computes, a healer contributes zeros;
    // false = the loop waits for the quorum and heals (healBeforeCompute)
    // before it computes, and every replica of the quorum contributes.
    [[nodiscard]] bool asyncQuorum() const { return m_async; }
    // Sync mode, after heal(): a healer waits for the received state and
    // adopts it now, so that it computes its gradient on the healed weights.
    void healBeforeCompute();
    // TorchFT's num_participants: the replicas whose contribution is real
    // (async: those up to date; sync: the whole quorum, healers healed first).
    [[nodiscard]] int participants() const;

    // 1. TorchFT's start_quorum: asks on a helper thread, reporting
    //    `committed_steps` and this replica's commit failures; `step` is the
    //    step of the round's events.
    void startQuorum(int64_t step, int64_t committed_steps);
    // TorchFT's wait_quorum (a QuorumWait span). False: the job finished while
    // waiting (leave). Throws CommError when no quorum came in quorum_timeout_ms.
    [[nodiscard]] bool waitQuorum();
    // The job finished without this round: another replica committed its
    // last step (or round) in a quorum other than this round's, so a commit
    // now would diverge from every finished replica: leave instead. False
    // for a replica in the finisher's last quorum (healer or not): that is
    // the finisher's own last round (a quorum id changes with any change of
    // members, and the finisher's round needed this replica's contribution),
    // so it commits it as the finisher did.
    [[nodiscard]] bool jobFinishedWithoutThisRound() const;
    // 4. Averages `tensor` over the replicas up to date, in place (TorchFT's
    //    allreduce). A healer contributes zeros. A failure aborts the round.
    void allReduce(at::Tensor& tensor, const CommTag& tag);
    // The same in two halves, so that inner steps run while it is in flight
    // (Streaming DiLoCo's overlap, ft_streaming_diloco.cpp): start posts it
    // (a healer's contribution zeroed unless it already adopted its heal),
    // finish waits and divides. One at a
    // time; a failure aborts the round.
    void startAllReduce(at::Tensor tensor, const CommTag& tag);
    void finishAllReduce();
    // The quantized exchange (Streaming DiLoCo's bf16/int8/int4 pseudo-
    // gradients): every member's encoded bytes into `gathered` (members x
    // encoded, in replica-rank order), in two halves like the all-reduce. The
    // caller decodes, sums, divides by participants() and hands the result to
    // checkFinite. A healer's bytes must encode zeros. A failure aborts the round.
    void startAllGather(at::Tensor gathered, at::Tensor encoded, const CommTag& tag);
    void finishAllGather();
    // A NaN or Inf in a round's averaged result aborts it (NanGradients).
    void checkFinite(const at::Tensor& averaged);
    // 5. The vote (TorchFT's rule, see ft_manager.cpp): a healer first adopts
    //    the received state (ReplicaStateTransfer::load) if its heal succeeded,
    //    whatever the vote (TorchFT applies the pending state before voting;
    //    the DiLoCo loop adopts only on commit: adopt_before_vote = false).
    [[nodiscard]] bool shouldCommit(bool adopt_before_vote = true);
    // 6. After the round's update was applied: a Commit instant for every step
    //    in [first_step, last_step]; commit failures back to 0.
    void committed(int64_t first_step, int64_t last_step);
    // Or: an Abort instant for each step; commit failures + 1 (the lighthouse
    // then issues a new quorum id); a broken group is dropped.
    void aborted(int64_t first_step, int64_t last_step);
    // On a checkpoint step ([run] checkpoint_dir, checkpoint_every) the lowest
    // replica of the quorum calls save(step), which returns the bytes written
    // (negative: this run saved that step before; nothing is reported).
    // first_step: a round that committed the steps first_step..step (a DiLoCo
    // outer sync) saves when any of them is a checkpoint step.
    void checkpointIfDue(int64_t step, const std::function<int64_t(int64_t step)>& save,
                         int64_t first_step = -1);
    // The end: a note when leaving early, DroppedEvents and RankFinished.
    void finish(int64_t step, bool left_early);

    [[nodiscard]] bool healing() const { return m_role.heal; }
    [[nodiscard]] int64_t quorumMaxStep() const { return m_role.max_step; } // the highest step in the quorum
    [[nodiscard]] int upToDate() const { return m_role.up_to_date; }
    [[nodiscard]] int quorumSize() const { return m_role.replica_world; } // members of this round's quorum
    // Every member of this round's quorum is a restarted process (incarnation > 0).
    [[nodiscard]] bool quorumAllRestarted() const;
    [[nodiscard]] AbortReason abortReason() const { return m_abort; }
    [[nodiscard]] int64_t modeledBytesSent() const;                     // over every group this replica built
    [[nodiscard]] int replica() const { return m_replica; }             // this rank's replica group
    [[nodiscard]] int groupRank() const { return m_group_rank; }        // this rank's place in it
    [[nodiscard]] bool leadsGroup() const { return m_group_rank == 0; } // talks to the lighthouse

  private:
    struct HealSend {
        std::vector<CommWorkPtr> works;
        std::vector<at::Tensor> messages;
        int peer_replica = -1;
        int peer_rank = -1; // the healer's rank holding this rank's shard
        int64_t begin = 0;
    };
    // On the quorum thread once the quorum is in: the role, then 2. and 3.
    void prepareRound(const Quorum& quorum);
    // 2. QuorumFormed; a new quorum id rebuilds the group (TorchFT's pg.configure).
    void configure();
    // 3. Posts the state to each healer this replica serves, and the receive
    //    when this replica heals (TorchFT's send_checkpoint / recv_checkpoint).
    void heal();
    // The healer's first half of a process-group heal: the source's metadata,
    // checked against this rank's layout (false: the heal failed, logged).
    bool receiveHealMetadata(int length_tag, int metadata_tag, const std::vector<int64_t>& wire_numels,
                             const CommTag& ctag);
    // The heal of this round failed: abort it (HealFailed) and log why, naming the source.
    void healFailed(const std::string& why);
    void finishHealSends();
    // heal_transport = "http": the source stages its state on its server, the
    // healer fetches it (http_heal_transport.hpp). After the vote the source
    // stops serving and reports what it served (TorchFT's disallow_checkpoint).
    void healOverHttp();
    void endHttpServing();
    // The fault switches and error handling every collective of a round shares.
    CommWorkPtr postCollective(const char* what, const std::function<CommWorkPtr()>& post);
    bool waitCollective(const CommWorkPtr& work);
    void dropGroup();
    void applyHealedState();
    [[nodiscard]] int memberReplica(int replica_rank) const;
    // The rank that holds this rank's shard in the quorum's replica_rank-th member.
    [[nodiscard]] int peerRank(int replica_rank) const;
    // The quorum of round m_round: the group's rank 0 asks the lighthouse and
    // publishes the answer in the store; the other ranks read it there.
    [[nodiscard]] Quorum requestQuorumOnce(int64_t committed_steps, int failures);
    void publishQuorum(const std::string& line);

    const RankContext& m_context;
    const FaultToleranceConfig& m_config;
    const RankTelemetry m_telemetry;
    TelemetrySender& m_sender;
    ReplicaStateTransfer m_state;
    const int m_replica;    // replica group: rank / group size
    const int m_group_rank; // rank % group size
    const int m_group_size;
    GroupAgreement m_group_agree;
    int64_t m_round = 0;                     // quorum rounds of this incarnation (the store key of each)
    std::atomic<bool> m_group_leaves{false}; // the group's rank 0 left (the job finished)
    std::atomic<bool> m_stopping{false};     // the destructor runs: the quorum thread gives up
    GlooOptions m_gloo;
    std::unique_ptr<LighthouseClient> m_client; // the group's rank 0 only
    const HealTransport m_transport;
    std::unique_ptr<HealServer> m_http_server; // heal_transport = "http": every rank serves

    // The cross-replica group of the current quorum.
    std::unique_ptr<Communicator> m_group;
    int64_t m_group_quorum_id = -1;
    int64_t m_bytes_sent_before = 0; // modelled bytes of the groups already dropped
    int m_commit_failures = 0;
    bool m_committed_once = false;   // this process committed a round
    const bool m_async;              // TorchFT's use_async_quorum (asyncQuorum(scenario))
    const bool m_healers_contribute; // the ddp loop in sync mode: a healer heals, then computes

    // The round in progress.
    int64_t m_step = 0;
    int64_t m_committed_steps = 0; // this replica's, as it asked for the quorum
    int64_t m_quorum_begin = 0;
    std::future<Quorum> m_quorum_future;
    Quorum m_quorum;
    QuorumRole m_role;
    AbortReason m_abort = AbortReason::None;
    bool m_finite = true;      // every all-reduced tensor of the round was finite
    CommWorkPtr m_reduce_work; // startAllReduce's, until finishAllReduce
    at::Tensor m_reduce_tensor;
    CommWorkPtr m_gather_work; // startAllGather's, until finishAllGather
    std::vector<HealSend> m_heal_sends;
    std::vector<CommWorkPtr> m_heal_receives;
    std::vector<at::Tensor> m_heal_received;
    int64_t m_heal_begin = 0;
    int64_t m_heal_end = 0;      // the received state was complete (the quorum thread waited for it)
    bool m_heal_applied = false; // the received state was adopted this round
    bool m_heal_failed = false;  // a heal receive of this round failed
    // Wait for the heal receives; false (and HealFailed) when one failed.
    bool finishHealReceives();
};

} // namespace dt::ft
