// scenario.hpp: the declarative description of a run, read from TOML.
//
// A scenario file (scenarios/*.toml) fills these structs; dtrun flags such as
// --ranks and --steps override fields afterwards and the result is validated
// again. The Session hands the resolved scenario to every rank as JSON through
// the rendezvous store, so a rank started by mpirun or torchrun needs only the address.
#pragma once

#include "dtlab/errors.hpp"
#include "dtlab/fault_action.hpp"
#include "dtlab/strategy_kind.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dt {

struct TopologyConfig {
    int ranks = 4;    // world size
    int replicas = 1; // hsdp: replica groups; each shards the model over ranks / replicas ranks
    int stages = 1;   // pipeline: stages per pipeline; ranks / stages pipelines run data-parallel
    // The communicator backend of the fixed process groups (world, hsdp shard
    // and replicate, pipeline data-parallel): "gloo" (TCP, survives nothing
    // but tolerates ranks joining over the network) or "mpi" (Open MPI; the
    // Session starts the ranks through mpirun). MPI aborts the whole job when
    // a rank dies, so fault tolerance ([fault_tolerance]) needs "gloo".
    std::string backend = "gloo";
};

struct ModelConfig {
    std::string kind = "tiny_gpt"; // "tiny_gpt" | "mlp"
    // tiny_gpt
    int vocab = 128;
    int context = 64;
    int d_model = 128;
    int layers = 4;
    int heads = 4;
    int mlp_ratio = 4;
    // Quantization-aware training (tiny_gpt; model/fake_quant.hpp): "none", or
    // "int8" / "int4" fake-quantized Linear weights and inputs, weights per
    // output "channel" or per "tensor".
    std::string quantize = "none";
    std::string quantize_weights = "channel";
    // mlp (fashion-mnist: 784 inputs, 10 classes)
    std::vector<int> hidden = {256, 128};
};

struct DataConfig {
    std::string source = "fortunes"; // "fortunes" | "fashion_mnist"
    std::string path;                // empty = the Debian package's location
    int batch_per_rank = 16;
};

struct StrategyConfig {
    // The kinds and their traits are listed in strategy_kinds.def:
    // "ddp"   replicate everything, all-reduce gradients
    // "zero1" shard optimizer state          (ZeRO stage 1)
    // "zero2" ... and gradients              (ZeRO stage 2)
    // "fsdp"  ... and parameters             (ZeRO stage 3, FSDP FULL_SHARD)
    // "hsdp"  fsdp inside each replica group, gradients all-reduced across groups
    // "pipeline" stages of contiguous blocks, one per rank ([topology] stages),
    //          microbatches run by `schedule`; ranks / stages pipelines are
    //          data-parallel (stage gradients all-reduced across them)
    // "diloco" every rank is a replica that trains on its own for [diloco]
    //          inner_steps, then the replicas average pseudo-gradients
    //          (classic DiLoCo, or Streaming DiLoCo with fragments)
    StrategyKind kind = StrategyKind::Ddp;
    std::string schedule = "1f1b"; // pipeline: "gpipe" | "1f1b" | "interleaved" | "zb-h1"
    int chunks_per_rank = 1;       // pipeline: model chunks per rank (interleaved: >= 2)
    int slow_stage = -1;           // pipeline: a straggler stage (-1 = none) ...
    double slow_stage_ms = 0.0;    // ... that sleeps this long in every forward and backward
    double bucket_mb = 1.0;        // DDP bucket cap in MiB
    bool overlap = true;           // ddp/zero: launch a bucket's / unit's gradient collective during backward
    // fsdp/hsdp: issue the next unit's all-gather before it is needed
    bool forward_prefetch = false; // in forward: unit i+1's all-gather when unit i starts
    bool backward_prefetch = true; // in backward: unit i-1's all-gather before unit i's reduce-scatter
    int prefetch_limit = 2;        // all-gathers in flight at most (FSDP's rate limiter)
    // Gradient accumulation: batch_per_rank is split into `microbatches` equal parts.
    int microbatches = 1;
    bool sync_every_microbatch = true;     // false = communicate only after the last microbatch (no_sync)
    bool activation_checkpointing = false; // per unit: keep only its input, recompute in backward
    // zero1/zero2/fsdp/hsdp: ZeRO-Offload. Each rank's AdamW state, and the fp32
    // copy of its shard that AdamW updates, live in host memory (memory/host_memory.hpp):
    // every step the shard's gradient goes down to the host, AdamW runs there and
    // the updated shard comes back up.
    bool offload_optimizer = false;
    // pipeline with several pipelines side by side (ranks / stages > 1): how the
    // copies of a stage in different pipelines stay equal. "ddp": all-reduce
    // the stage's gradients; "zero1": reduce-scatter them, AdamW on this rank's
    // shard of the stage (optimizer state / pipelines), all-gather the stage.
    // "fsdp": as zero1, but only the shard is kept between steps (the stage
    // is all-gathered when a step starts and freed after its reduce-scatter).
    std::string pipeline_data_parallel = "ddp";
};

// The optimizer of a training step ("sgd": plain SGD with weight decay, no
// momentum; ddp and diloco only). Under diloco it is the inner optimizer.
struct OptimizerConfig {
    std::string kind = "adamw"; // "adamw" | "sgd"
    double lr = 3e-4;
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double weight_decay = 0.01;
};

struct RunConfig {
    int steps = 50;
    uint64_t seed = 1;
    double timeout_s = 30.0;    // collective timeout; a hung peer fails within this
    double step_delay_ms = 0.0; // added to every step on every rank (pacing)
    // Sharded checkpoints (zero1/zero2/fsdp/hsdp): DIR/step-<S>/ holds one file per shard.
    std::string checkpoint_dir; // "" = no checkpoints
    int checkpoint_every = 0;   // save after every k-th step (and the last); 0 = only the last
    std::string resume_from;    // a checkpoint directory (DIR/step-<S>) to load before step 0
    // Every eval_every steps rank 0 computes the loss of a fixed batch no step
    // trains on (EvalLoss; with [model] quantize also without fake
    // quantization, EvalLossFp32). 0 = never.
    int eval_every = 0;
    // Not a scenario key: the Session draws one per run (16 hex digits) and the
    // ranks write it into every checkpoint file, so files of different runs
    // mixed in one checkpoint are refused.
    std::string run_id;
};

// DiLoCo and Streaming DiLoCo ([strategy] kind = "diloco"; diloco_strategy.cpp).
// A fragment f of F syncs after the steps s with (s + 1 - f H / F) a positive
// multiple of H; its pseudo-gradient is sent then and applied sync_delay steps
// later. fragments = 1, sync_delay = 0, alpha = 0: classic DiLoCo.
struct DilocoConfig {
    int inner_steps = 50;                 // H: inner optimizer steps between two syncs of a fragment
    double outer_lr = 0.7;                // outer SGD learning rate
    double outer_momentum = 0.9;          // outer momentum (0 = plain SGD)
    bool nesterov = true;                 // Nesterov momentum
    int fragments = 1;                    // Streaming DiLoCo: groups of blocks that sync at staggered steps
    int sync_delay = 0;                   // tau: steps between sending a pseudo-gradient and applying it
    double alpha = 0.0;                   // local <- alpha local + (1 - alpha) global after an outer step
    std::string pseudo_gradient = "fp32"; // values on the wire: "fp32" | "bf16" | "int8" | "int4"
};

// SWARM parallelism ([strategy] kind = "swarm"; engine/src/swarm/), as
// DistQat runs it on Hivemind: T trainer ranks own the data and the loss and
// hold no parameters; each of the [topology] stages is served by K server
// ranks. Ranks 0..T-1 are trainers, rank T + s K + k is server k of stage s
// (swarm_layout.hpp), so [topology] ranks = T + stages x K.
struct SwarmConfig {
    int trainers = 2;          // T
    int servers_per_stage = 2; // K
    // How a trainer picks a stage's server for each call:
    //  "throughput"  SWARM's stochastic wiring: at random, in proportion to
    //                each server's throughput as this trainer measured it
    //  "fastest"     Hivemind's ExpertBalancer: the lowest expected finish time
    std::string routing = "throughput";
    // A server takes an inner AdamW step after this many backward calls
    // (0 = [strategy] microbatches; Hivemind steps after every one).
    int server_batch = 0;
    // DiLoCo among a stage's servers: an outer step every outer_every inner
    // steps (0 = never), Nesterov SGD on the average pseudo-gradient.
    int outer_every = 10;
    double outer_lr = 0.7;
    double outer_momentum = 0.9;
    double join_timeout_ms = 1000;    // an outer round waits this long for the stage's other servers
    double request_timeout_ms = 5000; // a call not answered this long goes to another server
    // A server that died is restarted (Hivemind's servers are restarted by
    // whoever runs them): "auto" after restart_delay_ms, "manual", "never".
    std::string restart = "auto";
    double restart_delay_ms = 500;
};

// A modelled network link for every rank ([network]; changeable live): each
// collective takes at least latency_ms + bytes sent / bandwidth.
struct NetworkConfig {
    double bandwidth_mbit_s = 0.0; // 0 = no cap (loopback speed)
    double latency_ms = 0.0;       // added to each collective
};

// [strategy] kind = "collectives": no model, the same collectives timed on
// each backend, one message size per step (the backend comparison). Each
// (backend, op, size) is run `repeats` times after one warm-up; every rank
// reports the median as a BusBandwidth counter (busbw = algbw x the ring
// factor: 2(N-1)/N for all-reduce, (N-1)/N for all-gather / reduce-scatter).
struct CollectivesConfig {
    std::vector<std::string> ops = {"all_reduce"}; // "all_reduce" | "all_gather" | "reduce_scatter"
    std::vector<int> sizes_kb = {4, 64, 1024,
                                 16384}; // message sizes (the full tensor); step s measures sizes_kb[s]
    std::vector<std::string> backends = {"gloo", "mpi"}; // compared side by side on one timeline
    int repeats = 5;                                     // timed calls per (backend, op, size)
};

struct TelemetryConfig {
    bool enabled = true;
    int queue_capacity = 65536; // events buffered per rank before dropping
};

// Quorum fault tolerance (TorchFT style; engine/src/ft/). The quorum's
// members are replica groups (the failure domain, ftReplicaGroups): they get
// a quorum from the lighthouse every step, average gradients over the quorum,
// vote to commit, and a restarted group heals from a live one. ddp and
// diloco: one rank per group; zero1/zero2/fsdp: [topology] replicas groups,
// each sharding the model over its ranks (TorchFT over FSDP, i.e. HSDP with
// the replicate dimension managed by the quorum); pipeline: each pipeline of
// [topology] stages ranks is a group, and stage i averages with stage i of
// the other pipelines.
struct FaultToleranceConfig {
    bool enabled = false;
    std::string lighthouse;        // "" = the Session's own; "host:port" = an external `dtrun lighthouse`
    int min_replicas = 1;          // fewer healthy replicas: no quorum, training waits
    double join_timeout_ms = 1000; // how long a quorum waits for a healthy replica that has not asked yet
    double heartbeat_interval_ms = 100;
    double heartbeat_timeout_ms = 1000; // a replica silent this long is out (a hang, a partition)
    double quorum_timeout_ms = 60000; // a replica gives up waiting for a quorum after this (lighthouse gone)
    double collective_timeout_ms = 3000; // the cross-replica all-reduce: a hung peer fails it after this
    std::string restart =
        "auto"; // "auto": restart a dead replica after restart_delay_ms; "manual": on request; "never"
    double restart_delay_ms = 500;
    int max_restarts_per_minute = 10; // restart = "auto": a replica restarted this often in 60 s stays down
    // TorchFT's max_retries: a replica whose commits failed more than this
    // many times in a row raises (its process fails, and is restarted per
    // `restart`). -1 = no limit (TorchFT's default, None).
    int max_retries = -1;
    // TorchFT's init_sync: at the job's first quorum at step 0, every replica
    // group but the primary heals from it, so all start from the same weights whatever
    // their seeds (the primary is the lowest group, for every rank of a
    // group). TorchFT's default is true; dtlab's is false, because its
    // replicas start from the same seed and the heal would copy identical
    // bits. Only when every member is a first start (after every replica was
    // down at once, the restarted ones load the durable checkpoint instead,
    // as TorchFT's users load theirs before the first quorum). ddp and
    // replica groups; DiLoCo reports inner steps, so its first sync is not at 0.
    bool init_sync = false;
    // TorchFT's use_async_quorum. "async": the quorum is asked while the
    // replica computes; a replica that heals contributes zeros that round and
    // only the replicas already up to date count as participants (the vote
    // needs min_replicas of them). "sync": every replica waits for the quorum
    // before computing, a healer heals first and then contributes a real
    // gradient. "" = the kind's default: "async" for ddp (TorchFT's default),
    // "sync" for diloco (TorchFT's DiLoCo requires it). See asyncQuorum().
    std::string quorum_mode;
    // How the lighthouse notices a dead replica. "connection": at once, when
    // its TCP connection closes (dtlab's fast path, within a millisecond on
    // one host). "heartbeat": as TorchFT's lighthouse does, only when no
    // heartbeat arrived for heartbeat_timeout_ms (until then the dead replica
    // still counts as healthy, and a quorum waits for it up to join_timeout_ms).
    // Either way a survivor's collective with it fails at once and aborts its step.
    std::string detection = "connection";
    // How a healer receives the state (TorchFT's CheckpointTransport).
    // "pg": sent over the reconfigured cross-replica process group (TorchFT's
    // PGTransport). "http": fetched from the source's HTTP server, whose
    // address the healer reads from the store (TorchFT's HTTPTransport, its
    // Manager's default, with num_chunks = 0). healTransportOf() reads it.
    std::string heal_transport = "pg";
    // "http" only: 0 = one GET of the whole state; N > 0 = the metadata and N
    // chunks fetched at once, one connection and thread each (TorchFT's num_chunks).
    int heal_chunks = 0;
};

// The heal transports (one list: scenario rule, telemetry code, view label).
enum class HealTransport : uint8_t { ProcessGroup = 0, Http = 1 };
[[nodiscard]] HealTransport healTransportOf(const FaultToleranceConfig& config);
[[nodiscard]] const char* healTransportName(HealTransport transport); // "pg", "http"
[[nodiscard]] std::vector<std::string> healTransportNames();

// Random faults for a chaos run ([chaos]): every ~mean_interval_s the Session
// picks an action and a live rank with a seeded generator (the seed is printed
// so a failing run can be replayed).
struct ChaosConfig {
    bool enabled = false;
    uint64_t seed = 1;
    double mean_interval_s = 3.0;
    std::vector<FaultAction> actions = {FaultAction::Kill, FaultAction::Hang, FaultAction::Slow};
    double hang_s = 2.0;    // a hang is resumed after this
    double slow_ms = 100.0; // a slow-down adds this to each step ...
    double slow_s = 3.0;    // ... for this long
};

// A fault the Session injects when a condition is seen in the live telemetry.
// The actions are listed, with what each does, in fault_actions.def.
struct FaultConfig {
    FaultAction action = FaultAction::Kill;
    int rank = 0;
    int step = 0;
    FaultWhen when = FaultWhen::AllReduce; // allreduce: when that step's first all-reduce starts
                                           // step: when that step starts
                                           // time: at_s seconds after the run starts
    double at_s = 0.0;                     // when = "time"
    double duration_s = 0.0; // hang, slow, partition, delay_traffic, kill_lighthouse; 0 = until undone
    double delay_ms = 100.0; // slow, delay_traffic
    SourceLocation where;    // for error messages
};

// One narrated step of a workshop or talk ([[steps]] in the TOML file): the
// dtlab narration panel shows `text`, flashes the view named by `highlight`,
// and enables Next only once `until` holds in the live run.
// Predict, then run ([steps.question]): the narration asks the learner for a
// prediction the run then decides. `answer` is a measure over the run's
// summary (closing_check.hpp: "max(peak_memory.optimizer_state) / 1e6"),
// evaluated at the step's moment (its `until`; at the end of the run when it
// has none). A number is right within `tolerance` (relative); with `choices`
// the measure is the 0-based index of the right choice (a comparison: 1 when
// it holds). engine/include/dtlab/exercise.hpp judges an answer.
struct NarrationQuestion {
    std::string ask;                  // required: the question, as the room reads it
    std::string answer;               // required: the measure that decides it
    std::string unit;                 // "MB", "%", "" = none
    double tolerance = 0.1;           // numbers: right within this fraction of the measured value
    std::vector<std::string> choices; // empty: a number is asked; else at least two
    std::string explain;              // the formula or the reason, shown beside the measured value
    // The exercise's own answer key, for the scenario's author and its tests
    // (never shown before the run decides): what the formula in `explain`
    // gives (a choice: its index), and a typical mistake the run must judge
    // wrong. No formula_answer: the run's own measurement is the right answer
    // (a machine-dependent choice).
    std::optional<double> formula_answer;
    std::optional<double> typical_mistake;
};

struct NarrationStep {
    std::string text;      // required, not empty
    std::string highlight; // "" or a view: topology, timeline, memory, metrics, events, controls, narration,
                           // fsdp, ddp, pipeline, quorum, diloco, bandwidth
    std::string until;     // "" (no wait) or a condition, see NarrationCondition
    // Hold the teaching moment: when `until` happens in a live run, dtlab
    // pauses the run there (ranks finish the step they are in and wait at the
    // next step gate), so the room sees that moment frozen; Next resumes it.
    bool pause = false;
    // What the screen shows at that hold, as claims over the screen document
    // (dtlab/screen_claim.hpp): "ranks[1].dead == 1 and stopwatch.new_quorum_ms < 0".
    // Needs pause = true (or until = "run finished"): a claim is about a moment
    // that stands still. The text may bind values of the same document: "{stopwatch.detected_ms} ms".
    std::string expect;
    std::optional<NarrationQuestion> question; // predict, then run
    SourceLocation where;                      // for error messages
};

// The parsed form of NarrationStep::until. Accepted texts (spaces between
// words may vary, case matters):
//   ""                        no wait: Next is enabled at once
//   "step >= N"               every rank still alive has completed N steps
//   "first all-reduce ends"   some rank completed its first all-reduce
//   "first all-gather ends"   ... all-gather (zero1/2 after the optimizer; fsdp before a unit)
//   "first reduce-scatter ends" ... reduce-scatter (a unit's gradients, sharded)
//   "rank R dies"             rank R was killed or failed
//   "rank R heals"            rank R (a restarted replica) received a live peer's state
//   "new quorum forms"        a quorum with a new id (membership changed after the first)
//   "first outer sync ends"   DiLoCo: some replica completed its first outer step
//   "a collective hangs"      a collective is open 2 s (hangThresholdNs) while a rank of its group
//                             has not started it, or the run ended with it open or failed
//                             (dtlab/hung_collectives.hpp)
//   "run finished"            the Session ended (every rank exited)
struct NarrationCondition {
    enum class Kind {
        None,
        StepAtLeast,
        FirstAllReduceEnds,
        FirstAllGatherEnds,
        FirstReduceScatterEnds,
        RankDies,
        RankHeals,
        NewQuorumForms,
        FirstOuterSyncEnds,
        CollectiveHangs,
        RunFinished
    };
    Kind kind = Kind::None;
    int value = 0; // N for StepAtLeast, R for RankDies and RankHeals
};
// The accepted forms, for messages: "step >= N", "first all-reduce ends", ...
[[nodiscard]] const char* narrationConditionForms();
// Parses an `until` text; false when it is none of the accepted forms.
[[nodiscard]] bool parseNarrationCondition(const std::string& text, NarrationCondition& out);

// What a closing check's baseline run changes ([[checks]] baseline = { ... }):
// the same scenario run again with these fields replaced; "" / 0 / -1 = unchanged.
struct CheckBaseline {
    std::optional<StrategyKind> strategy; // [strategy] kind
    int microbatches = 0;                 // [strategy] microbatches
    std::string schedule;                 // [strategy] schedule
    int overlap = -1;                     // [strategy] overlap: 0 off, 1 on
    int activation_checkpointing = -1;    // [strategy] activation_checkpointing: 0 off, 1 on
    int offload_optimizer = -1;           // [strategy] offload_optimizer: 0 off, 1 on
    std::string pipeline_data_parallel;   // [strategy] pipeline_data_parallel
    std::string pseudo_gradient;          // [diloco] pseudo_gradient
    [[nodiscard]] bool empty() const {
        return !strategy && microbatches == 0 && schedule.empty() && overlap < 0 &&
               activation_checkpointing < 0 && offload_optimizer < 0 && pipeline_data_parallel.empty() &&
               pseudo_gradient.empty();
    }
    [[nodiscard]] std::string describe() const; // "strategy = ddp, microbatches = 8"
};

// A closing check ([[checks]]): what the run must have shown for the scenario
// to have taught its point, decided by an expression over the run summary
// (grammar in dtlab/closing_check.hpp). `dtrun run --check` evaluates them
// and fails when one does not hold; the test suite runs it for every scenario.
struct ClosingCheck {
    std::string claim;  // required: the sentence the presenter can say
    std::string expect; // required: e.g. "max(peak_memory.optimizer_state) <= 1.05 * theory.optimizer_state"
    CheckBaseline baseline; // empty = no baseline run
    SourceLocation where;   // for error messages
};

// The scenario that a check's baseline run trains: `scenario` with the
// baseline's fields replaced, validated (UsageError naming the check).
[[nodiscard]] struct Scenario scenarioForBaseline(const struct Scenario& scenario,
                                                  const CheckBaseline& baseline);

struct Scenario {
    std::string name;
    std::string description;
    std::string path; // file it came from ("" if built in code)
    TopologyConfig topology;
    ModelConfig model;
    DataConfig data;
    StrategyConfig strategy;
    OptimizerConfig optimizer;
    RunConfig run;
    DilocoConfig diloco;
    SwarmConfig swarm;
    NetworkConfig network;
    CollectivesConfig collectives;
    TelemetryConfig telemetry;
    FaultToleranceConfig fault_tolerance;
    ChaosConfig chaos;
    std::vector<FaultConfig> faults;
    std::vector<NarrationStep> steps; // narration; empty = none
    std::vector<ClosingCheck> checks; // closing checks; empty = none
};

// True when some process group of the run uses Open MPI ([topology] backend
// or [collectives] backends): the Session then starts the ranks with mpirun.
[[nodiscard]] bool scenarioUsesMpi(const Scenario& scenario);

// Parse and validate a scenario file. Throws UsageError with file:line:column
// and what was expected for: a TOML syntax error, an unknown table or key, a
// wrong type, an out-of-range value, an impossible topology or a missing data file.
[[nodiscard]] Scenario loadScenarioFile(const std::string& path);
[[nodiscard]] Scenario parseScenarioText(const std::string& text, const std::string& sourceName);

// Re-check a scenario after overrides (e.g. --ranks from the command line).
// `origin` names where the override came from for the message ("--ranks").
void validateScenario(const Scenario& scenario, const std::string& origin);

// Whether a fault-tolerant run asks for its quorum while it computes
// ([fault_tolerance] quorum_mode, or the kind's default: async for ddp).
[[nodiscard]] bool asyncQuorum(const Scenario& scenario);

// Under [fault_tolerance]: how many replica groups the quorum has, and the
// ranks in each. ddp and diloco: every rank is a group of one; zero1, zero2
// and fsdp: [topology] replicas groups of ranks / replicas ranks. Rank r is
// rank r % size of group r / size; a rank failure takes its whole group down.
// Without [fault_tolerance]: groups of 1.
[[nodiscard]] int ftReplicaGroups(const Scenario& scenario);
// Fault-tolerant DiLoCo with fragments > 1, a sync_delay, an alpha or
// quantized pseudo-gradients: the
// streaming loop (one fragment's round every inner_steps / fragments steps,
// diloco_schedule.hpp's quorumRoundSendsAfterStep); false otherwise.
[[nodiscard]] bool dilocoStreamsUnderQuorum(const Scenario& scenario);
[[nodiscard]] int ftGroupSize(const Scenario& scenario);

// What a run of this scenario reads from disk, so that no output replaces it:
// the data ([data] path, or the package's default location) and the
// checkpoint it resumes from ([run] resume_from). `what` names it for a
// message ("the training data", "the checkpoint being resumed"); a path may be
// a directory, meaning everything under it.
struct ScenarioInput {
    std::string what;
    std::string path;
};
[[nodiscard]] std::vector<ScenarioInput> scenarioInputs(const Scenario& scenario);

// Check the scenario stored in a recording by the same rules, except those about files on this
// machine (data, checkpoints). Throws UsageError "its scenario: [table] key: ...".
void validateRecordedScenario(const Scenario& scenario);

// The strategy a command-line override names ("--strategy", "zero2"); throws
// UsageError "ORIGIN: [strategy] kind: expected one of ..., got ..." otherwise.
[[nodiscard]] StrategyKind strategyKindFromOverride(const std::string& text, const std::string& origin);

// JSON round trip (how the Session hands the resolved scenario to ranks).
[[nodiscard]] std::string scenarioToJson(const Scenario& scenario);
[[nodiscard]] Scenario scenarioFromJson(const std::string& json);

} // namespace dt
