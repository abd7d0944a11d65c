// scenario_parse.cpp: reads a scenario TOML file (toml++) into a Scenario.
// Every mistake becomes a UsageError pointing at file:line:column: TOML syntax,
// unknown tables and keys, wrong types, out-of-range values (rules shared with
// validateScenario through scenario_rules.hpp) and cross-field problems.
#include "dtlab/scenario.hpp"
#include "scenario/scenario_keys.hpp"
#include "scenario/scenario_rules.hpp"

#include "dtlab/closing_check.hpp"
#include "dtlab/screen_claim.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace dt {

namespace {

using scenario_rules::tableLabel;
using namespace scenario_keys;

std::string joinNames(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& name : names)
        out += (out.empty() ? "" : ", ") + name;
    return out;
}

// "a string", "an integer", ...: the TOML type of a value, for messages.
std::string typeName(const toml::node& node) {
    switch (node.type()) {
    case toml::node_type::string:
        return "a string";
    case toml::node_type::integer:
        return "an integer";
    case toml::node_type::floating_point:
        return "a float";
    case toml::node_type::boolean:
        return "a boolean";
    case toml::node_type::date:
        return "a date";
    case toml::node_type::time:
        return "a time";
    case toml::node_type::date_time:
        return "a date-time";
    case toml::node_type::array:
        return "an array";
    case toml::node_type::table:
        return "a table";
    default:
        return "nothing";
    }
}

// One key = value of a table, with where the key itself is written.
struct Entry {
    std::string key;
    const toml::node* node;
    toml::source_region keySource;
};

class ScenarioReader {
  public:
    explicit ScenarioReader(std::string file) : m_file(std::move(file)) {}

    Scenario read(const toml::table& root) {
        Scenario s;
        s.path = m_file;
        bool haveName = false;
        for (const Entry& e : entriesOf(root)) {
            if (std::find(kTables.begin(), kTables.end(), e.key) == kTables.end()) {
                std::vector<std::string> labels;
                for (const std::string& table : kTables)
                    labels.push_back(tableLabel(table));
                std::string expected = "expected one of: " + joinNames(labels);
                if (e.node->is_table())
                    fail(e.keySource, "unknown table [" + e.key + "]; " + expected);
                fail(e.keySource,
                     "unknown top-level key '" + e.key + "'; every key belongs in a table, " + expected);
            }
            if (e.key == "faults") {
                readFaults(*e.node, s.faults);
                continue;
            }
            if (e.key == "steps") {
                readSteps(*e.node, s.steps);
                continue;
            }
            if (e.key == "checks") {
                readChecks(*e.node, s.checks);
                continue;
            }
            const toml::table& t = tableOf(e);
            if (e.key == "scenario")
                haveName = readScenarioTable(t, s);
            else if (e.key == "topology")
                readTopology(t, s.topology);
            else if (e.key == "model")
                readModel(t, s.model);
            else if (e.key == "data")
                readData(t, s.data);
            else if (e.key == "strategy")
                readStrategy(t, s.strategy);
            else if (e.key == "optimizer")
                readOptimizer(t, s.optimizer);
            else if (e.key == "run")
                readRun(t, s.run);
            else if (e.key == "telemetry")
                readTelemetry(t, s.telemetry);
            else if (e.key == "fault_tolerance")
                readFaultTolerance(t, s.fault_tolerance);
            else if (e.key == "chaos")
                readChaos(t, s.chaos);
            else if (e.key == "diloco")
                readDiloco(t, s.diloco);
            else if (e.key == "swarm")
                readSwarm(t, s.swarm);
            else if (e.key == "network")
                readNetwork(t, s.network);
            else if (e.key == "collectives")
                readCollectives(t, s.collectives);
        }
        if (!haveName) {
            const toml::node* scenarioTable = root.get("scenario");
            if (scenarioTable)
                fail(scenarioTable->source(), "missing key 'name' in [scenario]");
            throw UsageError(
                SourceLocation{m_file, 1, 1},
                "missing table [scenario]; every scenario needs at least [scenario] name = \"...\"");
        }
        if (auto problem = scenario_rules::findCrossFieldProblem(s))
            fail(locate(root, *problem), problem->message);
        // A baseline must make a valid scenario too, or --check would fail late.
        for (const ClosingCheck& check : s.checks) {
            if (check.baseline.empty())
                continue;
            try {
                (void)scenarioForBaseline(s, check.baseline);
            } catch (const UsageError& e) {
                throw UsageError(check.where, e.what());
            }
        }
        return s;
    }

  private:
    std::string m_file;

    [[noreturn]] void fail(const toml::source_region& where, const std::string& message) const {
        throw UsageError(
            SourceLocation{m_file, static_cast<int>(where.begin.line), static_cast<int>(where.begin.column)},
            message);
    }

    // The entries of a table in the order they are written (toml++ keeps them sorted by key).
    static std::vector<Entry> entriesOf(const toml::table& table) {
        std::vector<Entry> entries;
        for (auto&& [key, node] : table)
            entries.push_back(Entry{std::string(key.str()), &node, key.source()});
        std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
            const toml::source_position& pa = a.keySource.begin;
            const toml::source_position& pb = b.keySource.begin;
            return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
        });
        return entries;
    }

    // The entries of one of our tables, after checking every key is known.
    std::vector<Entry> checkedEntries(const toml::table& table, const std::string& name,
                                      const std::vector<std::string>& allowed) const {
        std::vector<Entry> entries = entriesOf(table);
        for (const Entry& e : entries)
            if (std::find(allowed.begin(), allowed.end(), e.key) == allowed.end())
                fail(e.keySource, "unknown key '" + e.key + "' in " + tableLabel(name) +
                                      "; expected one of: " + joinNames(allowed));
        return entries;
    }

    const toml::table& tableOf(const Entry& e) const {
        if (!e.node->is_table())
            fail(e.node->source(), e.key + ": expected a table [" + e.key + "], got " + typeName(*e.node));
        return *e.node->as_table();
    }

    [[noreturn]] void failType(const std::string& table, const std::string& key, const toml::node& node,
                               const std::string& expected) const {
        fail(node.source(),
             tableLabel(table) + " " + key + ": expected " + expected + ", got " + typeName(node));
    }

    void check(const toml::node& node, const std::string& problem) const {
        if (!problem.empty())
            fail(node.source(), problem);
    }

    int64_t readInt64(const std::string& table, const std::string& key, const toml::node& node) const {
        if (!node.is_integer())
            failType(table, key, node, "an integer");
        int64_t value = node.as_integer()->get();
        check(node, scenario_rules::checkInt(table, key, value));
        return value;
    }

    // checkInt keeps every int key inside the range of int, so the cast is exact.
    int readInt(const std::string& table, const std::string& key, const toml::node& node) const {
        return static_cast<int>(readInt64(table, key, node));
    }

    // Floats accept TOML integers too (lr = 1 means 1.0).
    double readFloat(const std::string& table, const std::string& key, const toml::node& node) const {
        double value = 0.0;
        if (node.is_integer())
            value = static_cast<double>(node.as_integer()->get());
        else if (node.is_floating_point())
            value = node.as_floating_point()->get();
        else
            failType(table, key, node, "a number");
        check(node, scenario_rules::checkFloat(table, key, value));
        return value;
    }

    bool readBool(const std::string& table, const std::string& key, const toml::node& node) const {
        if (!node.is_boolean())
            failType(table, key, node, "a boolean (true or false)");
        return node.as_boolean()->get();
    }

    // The kinds: readString has checked the name against the list, so the lookups succeed.
    StrategyKind readStrategyKind(const toml::node& node) const {
        StrategyKind kind = StrategyKind::Ddp;
        (void)parseStrategyKind(readString("strategy", "kind", node), kind);
        return kind;
    }
    FaultAction readFaultAction(const std::string& table, const std::string& key,
                                const toml::node& node) const {
        FaultAction action = FaultAction::Kill;
        (void)parseFaultAction(readString(table, key, node), action);
        return action;
    }

    std::string readString(const std::string& table, const std::string& key, const toml::node& node) const {
        if (!node.is_string())
            failType(table, key, node, "a string");
        std::string value = node.as_string()->get();
        check(node, scenario_rules::checkString(table, key, value));
        return value;
    }

    // Returns whether the table named the scenario.
    bool readScenarioTable(const toml::table& t, Scenario& s) const {
        bool haveName = false;
        for (const Entry& e : checkedEntries(t, "scenario", kScenarioKeys)) {
            if (e.key == "name") {
                s.name = readString("scenario", e.key, *e.node);
                haveName = true;
            } else if (e.key == "description") {
                s.description = readString("scenario", e.key, *e.node);
            }
        }
        return haveName;
    }

    void readTopology(const toml::table& t, TopologyConfig& out) const {
        for (const Entry& e : checkedEntries(t, "topology", kTopologyKeys))
            if (e.key == "ranks")
                out.ranks = readInt("topology", e.key, *e.node);
            else if (e.key == "replicas")
                out.replicas = readInt("topology", e.key, *e.node);
            else if (e.key == "stages")
                out.stages = readInt("topology", e.key, *e.node);
            else if (e.key == "backend")
                out.backend = readString("topology", e.key, *e.node);
    }

    void readCollectives(const toml::table& t, CollectivesConfig& out) const {
        const std::string table = "collectives";
        for (const Entry& e : checkedEntries(t, table, kCollectivesKeys)) {
            if (e.key == "repeats")
                out.repeats = readInt(table, e.key, *e.node);
            else if (e.key == "sizes_kb") {
                if (!e.node->is_array())
                    failType(table, e.key, *e.node, "an array of integers");
                out.sizes_kb.clear();
                for (const toml::node& item : *e.node->as_array())
                    out.sizes_kb.push_back(readInt(table, e.key, item));
            } else {
                std::vector<std::string>& list = e.key == "ops" ? out.ops : out.backends;
                if (!e.node->is_array())
                    failType(table, e.key, *e.node, "an array of strings");
                list.clear();
                for (const toml::node& item : *e.node->as_array())
                    list.push_back(readString(table, e.key, item));
            }
        }
    }

    void readModel(const toml::table& t, ModelConfig& out) const {
        for (const Entry& e : checkedEntries(t, "model", kModelKeys)) {
            const toml::node& n = *e.node;
            if (e.key == "kind")
                out.kind = readString("model", e.key, n);
            else if (e.key == "vocab")
                out.vocab = readInt("model", e.key, n);
            else if (e.key == "context")
                out.context = readInt("model", e.key, n);
            else if (e.key == "d_model")
                out.d_model = readInt("model", e.key, n);
            else if (e.key == "layers")
                out.layers = readInt("model", e.key, n);
            else if (e.key == "heads")
                out.heads = readInt("model", e.key, n);
            else if (e.key == "mlp_ratio")
                out.mlp_ratio = readInt("model", e.key, n);
            else if (e.key == "hidden")
                out.hidden = readHidden(n);
            else if (e.key == "quantize")
                out.quantize = readString("model", e.key, n);
            else if (e.key == "quantize_weights")
                out.quantize_weights = readString("model", e.key, n);
        }
    }

    std::vector<int> readHidden(const toml::node& node) const {
        if (!node.is_array())
            failType("model", "hidden", node, "an array of integers");
        std::vector<int> widths;
        const toml::array& array = *node.as_array();
        for (size_t i = 0; i < array.size(); ++i)
            widths.push_back(readInt("model", "hidden", array[i]));
        return widths;
    }

    // A relative data path is relative to the folder of the scenario file.
    void readData(const toml::table& t, DataConfig& out) const {
        for (const Entry& e : checkedEntries(t, "data", kDataKeys)) {
            const toml::node& n = *e.node;
            if (e.key == "source")
                out.source = readString("data", e.key, n);
            else if (e.key == "batch_per_rank")
                out.batch_per_rank = readInt("data", e.key, n);
            else if (e.key == "path") {
                std::filesystem::path path(readString("data", e.key, n));
                if (!path.empty() && path.is_relative())
                    path = (std::filesystem::path(m_file).parent_path() / path).lexically_normal();
                out.path = path.string();
            }
        }
    }

    void readStrategy(const toml::table& t, StrategyConfig& out) const {
        for (const Entry& e : checkedEntries(t, "strategy", kStrategyKeys)) {
            if (e.key == "kind")
                out.kind = readStrategyKind(*e.node);
            else if (e.key == "bucket_mb")
                out.bucket_mb = readFloat("strategy", e.key, *e.node);
            else if (e.key == "overlap")
                out.overlap = readBool("strategy", e.key, *e.node);
            else if (e.key == "forward_prefetch")
                out.forward_prefetch = readBool("strategy", e.key, *e.node);
            else if (e.key == "backward_prefetch")
                out.backward_prefetch = readBool("strategy", e.key, *e.node);
            else if (e.key == "prefetch_limit")
                out.prefetch_limit = readInt("strategy", e.key, *e.node);
            else if (e.key == "microbatches")
                out.microbatches = readInt("strategy", e.key, *e.node);
            else if (e.key == "schedule")
                out.schedule = readString("strategy", e.key, *e.node);
            else if (e.key == "chunks_per_rank")
                out.chunks_per_rank = readInt("strategy", e.key, *e.node);
            else if (e.key == "slow_stage")
                out.slow_stage = readInt("strategy", e.key, *e.node);
            else if (e.key == "slow_stage_ms")
                out.slow_stage_ms = readFloat("strategy", e.key, *e.node);
            else if (e.key == "sync_every_microbatch")
                out.sync_every_microbatch = readBool("strategy", e.key, *e.node);
            else if (e.key == "activation_checkpointing")
                out.activation_checkpointing = readBool("strategy", e.key, *e.node);
            else if (e.key == "offload_optimizer")
                out.offload_optimizer = readBool("strategy", e.key, *e.node);
            else if (e.key == "pipeline_data_parallel")
                out.pipeline_data_parallel = readString("strategy", e.key, *e.node);
        }
        // A key of another kind would be ignored without a word: the reader
        // would think it changed something (kKindScopedStrategyKeys).
        for (const Entry& e : checkedEntries(t, "strategy", kStrategyKeys))
            for (const KindScopedKey& scoped : kKindScopedStrategyKeys)
                if (e.key == scoped.key && !scoped.applies(out.kind))
                    fail(e.keySource, std::string("[strategy] ") + scoped.key + " applies only to " +
                                          scoped.kinds + "; this scenario's kind is \"" +
                                          strategyKindName(out.kind) + "\" (remove the key, or change kind)");
    }

    void readOptimizer(const toml::table& t, OptimizerConfig& out) const {
        for (const Entry& e : checkedEntries(t, "optimizer", kOptimizerKeys)) {
            if (e.key == "kind")
                out.kind = readString("optimizer", e.key, *e.node);
            else if (e.key == "lr")
                out.lr = readFloat("optimizer", e.key, *e.node);
            else if (e.key == "beta1")
                out.beta1 = readFloat("optimizer", e.key, *e.node);
            else if (e.key == "beta2")
                out.beta2 = readFloat("optimizer", e.key, *e.node);
            else if (e.key == "eps")
                out.eps = readFloat("optimizer", e.key, *e.node);
            else if (e.key == "weight_decay")
                out.weight_decay = readFloat("optimizer", e.key, *e.node);
        }
    }

    void readRun(const toml::table& t, RunConfig& out) const {
        for (const Entry& e : checkedEntries(t, "run", kRunKeys)) {
            if (e.key == "steps")
                out.steps = readInt("run", e.key, *e.node);
            else if (e.key == "seed")
                out.seed = static_cast<uint64_t>(readInt64("run", e.key, *e.node));
            else if (e.key == "timeout_s")
                out.timeout_s = readFloat("run", e.key, *e.node);
            else if (e.key == "step_delay_ms")
                out.step_delay_ms = readFloat("run", e.key, *e.node);
            else if (e.key == "checkpoint_dir")
                out.checkpoint_dir = readString("run", e.key, *e.node);
            else if (e.key == "checkpoint_every")
                out.checkpoint_every = readInt("run", e.key, *e.node);
            else if (e.key == "resume_from")
                out.resume_from = readString("run", e.key, *e.node);
            else if (e.key == "eval_every")
                out.eval_every = readInt("run", e.key, *e.node);
        }
    }

    void readTelemetry(const toml::table& t, TelemetryConfig& out) const {
        for (const Entry& e : checkedEntries(t, "telemetry", kTelemetryKeys)) {
            if (e.key == "enabled")
                out.enabled = readBool("telemetry", e.key, *e.node);
            else if (e.key == "queue_capacity")
                out.queue_capacity = readInt("telemetry", e.key, *e.node);
        }
    }

    void readFaultTolerance(const toml::table& t, FaultToleranceConfig& out) const {
        const std::string table = "fault_tolerance";
        for (const Entry& e : checkedEntries(t, table, kFaultToleranceKeys)) {
            if (e.key == "enabled")
                out.enabled = readBool(table, e.key, *e.node);
            else if (e.key == "lighthouse")
                out.lighthouse = readString(table, e.key, *e.node);
            else if (e.key == "min_replicas")
                out.min_replicas = readInt(table, e.key, *e.node);
            else if (e.key == "join_timeout_ms")
                out.join_timeout_ms = readFloat(table, e.key, *e.node);
            else if (e.key == "heartbeat_interval_ms")
                out.heartbeat_interval_ms = readFloat(table, e.key, *e.node);
            else if (e.key == "heartbeat_timeout_ms")
                out.heartbeat_timeout_ms = readFloat(table, e.key, *e.node);
            else if (e.key == "quorum_timeout_ms")
                out.quorum_timeout_ms = readFloat(table, e.key, *e.node);
            else if (e.key == "collective_timeout_ms")
                out.collective_timeout_ms = readFloat(table, e.key, *e.node);
            else if (e.key == "restart")
                out.restart = readString(table, e.key, *e.node);
            else if (e.key == "restart_delay_ms")
                out.restart_delay_ms = readFloat(table, e.key, *e.node);
            else if (e.key == "max_restarts_per_minute")
                out.max_restarts_per_minute = readInt(table, e.key, *e.node);
            else if (e.key == "max_retries")
                out.max_retries = readInt(table, e.key, *e.node);
            else if (e.key == "init_sync")
                out.init_sync = readBool(table, e.key, *e.node);
            else if (e.key == "quorum_mode")
                out.quorum_mode = readString(table, e.key, *e.node);
            else if (e.key == "detection")
                out.detection = readString(table, e.key, *e.node);
            else if (e.key == "heal_transport")
                out.heal_transport = readString(table, e.key, *e.node);
            else if (e.key == "heal_chunks")
                out.heal_chunks = readInt(table, e.key, *e.node);
        }
    }

    void readDiloco(const toml::table& t, DilocoConfig& out) const {
        const std::string table = "diloco";
        for (const Entry& e : checkedEntries(t, table, kDilocoKeys)) {
            if (e.key == "inner_steps")
                out.inner_steps = readInt(table, e.key, *e.node);
            else if (e.key == "outer_lr")
                out.outer_lr = readFloat(table, e.key, *e.node);
            else if (e.key == "outer_momentum")
                out.outer_momentum = readFloat(table, e.key, *e.node);
            else if (e.key == "nesterov")
                out.nesterov = readBool(table, e.key, *e.node);
            else if (e.key == "fragments")
                out.fragments = readInt(table, e.key, *e.node);
            else if (e.key == "sync_delay")
                out.sync_delay = readInt(table, e.key, *e.node);
            else if (e.key == "alpha")
                out.alpha = readFloat(table, e.key, *e.node);
            else if (e.key == "pseudo_gradient")
                out.pseudo_gradient = readString(table, e.key, *e.node);
        }
    }

    void readSwarm(const toml::table& t, SwarmConfig& out) const {
        const std::string table = "swarm";
        for (const Entry& e : checkedEntries(t, table, kSwarmKeys)) {
            if (e.key == "trainers")
                out.trainers = readInt(table, e.key, *e.node);
            else if (e.key == "servers_per_stage")
                out.servers_per_stage = readInt(table, e.key, *e.node);
            else if (e.key == "routing")
                out.routing = readString(table, e.key, *e.node);
            else if (e.key == "server_batch")
                out.server_batch = readInt(table, e.key, *e.node);
            else if (e.key == "outer_every")
                out.outer_every = readInt(table, e.key, *e.node);
            else if (e.key == "outer_lr")
                out.outer_lr = readFloat(table, e.key, *e.node);
            else if (e.key == "outer_momentum")
                out.outer_momentum = readFloat(table, e.key, *e.node);
            else if (e.key == "join_timeout_ms")
                out.join_timeout_ms = readFloat(table, e.key, *e.node);
            else if (e.key == "request_timeout_ms")
                out.request_timeout_ms = readFloat(table, e.key, *e.node);
            else if (e.key == "restart")
                out.restart = readString(table, e.key, *e.node);
            else if (e.key == "restart_delay_ms")
                out.restart_delay_ms = readFloat(table, e.key, *e.node);
        }
    }

    void readNetwork(const toml::table& t, NetworkConfig& out) const {
        for (const Entry& e : checkedEntries(t, "network", kNetworkKeys)) {
            if (e.key == "bandwidth_mbit_s")
                out.bandwidth_mbit_s = readFloat("network", e.key, *e.node);
            else if (e.key == "latency_ms")
                out.latency_ms = readFloat("network", e.key, *e.node);
        }
    }

    void readChaos(const toml::table& t, ChaosConfig& out) const {
        for (const Entry& e : checkedEntries(t, "chaos", kChaosKeys)) {
            if (e.key == "enabled")
                out.enabled = readBool("chaos", e.key, *e.node);
            else if (e.key == "seed")
                out.seed = static_cast<uint64_t>(readInt64("chaos", e.key, *e.node));
            else if (e.key == "mean_interval_s")
                out.mean_interval_s = readFloat("chaos", e.key, *e.node);
            else if (e.key == "hang_s")
                out.hang_s = readFloat("chaos", e.key, *e.node);
            else if (e.key == "slow_ms")
                out.slow_ms = readFloat("chaos", e.key, *e.node);
            else if (e.key == "slow_s")
                out.slow_s = readFloat("chaos", e.key, *e.node);
            else if (e.key == "actions") {
                if (!e.node->is_array())
                    failType("chaos", "actions", *e.node, "an array of strings");
                out.actions.clear();
                for (const toml::node& item : *e.node->as_array()) {
                    if (!item.is_string())
                        failType("chaos", "actions", item, "an array of strings");
                    out.actions.push_back(readFaultAction("chaos", "actions", item));
                }
            }
        }
    }

    void readFaults(const toml::node& node, std::vector<FaultConfig>& out) const {
        const char* expected = "faults: expected an array of tables ([[faults]]), got ";
        if (!node.is_array())
            fail(node.source(), expected + typeName(node));
        for (const toml::node& item : *node.as_array()) {
            if (!item.is_table())
                fail(item.source(), expected + ("an array holding " + typeName(item)));
            FaultConfig fault;
            const toml::source_region& where = item.source();
            fault.where = SourceLocation{m_file, static_cast<int>(where.begin.line),
                                         static_cast<int>(where.begin.column)};
            for (const Entry& e : checkedEntries(*item.as_table(), "faults", kFaultKeys)) {
                if (e.key == "action")
                    fault.action = readFaultAction("faults", e.key, *e.node);
                else if (e.key == "rank")
                    fault.rank = readInt("faults", e.key, *e.node);
                else if (e.key == "step")
                    fault.step = readInt("faults", e.key, *e.node);
                else if (e.key == "when")
                    (void)parseFaultWhen(readString("faults", e.key, *e.node), fault.when);
                else if (e.key == "at_s")
                    fault.at_s = readFloat("faults", e.key, *e.node);
                else if (e.key == "duration_s")
                    fault.duration_s = readFloat("faults", e.key, *e.node);
                else if (e.key == "delay_ms")
                    fault.delay_ms = readFloat("faults", e.key, *e.node);
            }
            out.push_back(fault);
        }
    }

    // Where a problem at `offset` inside a one-line "..." string is: the string's column + the
    // quote + the offset (a multi-line string: its start).
    static toml::source_region pointInto(toml::source_region at, const std::string& value, size_t offset) {
        if (at.begin.line == at.end.line && value.find('\n') == std::string::npos)
            at.begin.column += static_cast<toml::source_index>(1 + offset);
        return at;
    }

    // [[steps]]: the narration. `text` is required; `until` is checked against
    // the accepted condition forms (scenario_rules::checkString).
    void readSteps(const toml::node& node, std::vector<NarrationStep>& out) const {
        const char* expected = "steps: expected an array of tables ([[steps]]), got ";
        if (!node.is_array())
            fail(node.source(), expected + typeName(node));
        for (const toml::node& item : *node.as_array()) {
            if (!item.is_table())
                fail(item.source(), expected + ("an array holding " + typeName(item)));
            NarrationStep step;
            const toml::source_region& where = item.source();
            step.where = SourceLocation{m_file, static_cast<int>(where.begin.line),
                                        static_cast<int>(where.begin.column)};
            bool haveText = false;
            for (const Entry& e : checkedEntries(*item.as_table(), "steps", kStepKeys)) {
                if (e.key == "text") {
                    step.text = readString("steps", e.key, *e.node);
                    haveText = true;
                    if (auto problem = findBoundTextProblem(step.text))
                        fail(pointInto(e.node->source(), step.text, problem->offset),
                             "[[steps]] text: " + problem->message);
                } else if (e.key == "expect") {
                    step.expect = readString("steps", e.key, *e.node);
                    if (auto problem = findScreenClaimProblem(step.expect))
                        fail(pointInto(e.node->source(), step.expect, problem->offset),
                             "[[steps]] expect: " + problem->message);
                } else if (e.key == "highlight") {
                    step.highlight = readString("steps", e.key, *e.node);
                } else if (e.key == "until") {
                    step.until = readString("steps", e.key, *e.node);
                } else if (e.key == "pause") {
                    step.pause = readBool("steps", e.key, *e.node);
                } else if (e.key == "question") {
                    step.question = readQuestion(*e.node);
                }
            }
            if (!haveText)
                fail(where, "[[steps]]: missing key 'text' (what the presenter says at this step)");
            if (step.question && step.until.empty())
                fail(where,
                     "[[steps]] with a [steps.question]: set its 'until' (the moment the run decides the "
                     "question, e.g. \"step >= 2\" or \"run finished\")");
            out.push_back(step);
        }
    }

    // [steps.question]: ask and answer are required; answer is parsed here (a
    // measure), so a mistake points at its column.
    NarrationQuestion readQuestion(const toml::node& node) const {
        if (!node.is_table())
            fail(node.source(),
                 "steps.question: expected a table ([steps.question] with ask and answer), got " +
                     typeName(node));
        NarrationQuestion q;
        const toml::node* answerNode = nullptr;
        const toml::node* toleranceNode = nullptr;
        const toml::node* choicesNode = nullptr;
        for (const Entry& e : checkedEntries(*node.as_table(), "steps.question", kQuestionKeys)) {
            if (e.key == "ask")
                q.ask = readString("steps.question", e.key, *e.node);
            else if (e.key == "answer") {
                q.answer = readString("steps.question", e.key, *e.node);
                answerNode = e.node;
            } else if (e.key == "unit")
                q.unit = readString("steps.question", e.key, *e.node);
            else if (e.key == "explain")
                q.explain = readString("steps.question", e.key, *e.node);
            else if (e.key == "formula_answer")
                q.formula_answer = readFloat("steps.question", e.key, *e.node);
            else if (e.key == "typical_mistake")
                q.typical_mistake = readFloat("steps.question", e.key, *e.node);
            else if (e.key == "tolerance") {
                q.tolerance = readFloat("steps.question", e.key, *e.node);
                toleranceNode = e.node;
                if (!(q.tolerance >= 0.0 && q.tolerance <= 10.0))
                    fail(
                        e.node->source(),
                        "steps.question tolerance: expected a fraction of the measured value "
                        "from 0 to 10 (0.1 = within 10 %), got " +
                            [&] {
                                std::ostringstream v;
                                v << q.tolerance;
                                return v.str();
                            }());
            } else if (e.key == "choices") {
                choicesNode = e.node;
                const toml::array* items = e.node->as_array();
                if (!items)
                    fail(e.node->source(),
                         "steps.question choices: expected an array of strings, got " + typeName(*e.node));
                for (const toml::node& c : *items) {
                    if (!c.is_string() || c.as_string()->get().empty())
                        fail(c.source(),
                             "steps.question choices: expected non-empty strings, got " + typeName(c));
                    q.choices.push_back(c.as_string()->get());
                }
            }
        }
        if (q.ask.empty())
            fail(node.source(), "[steps.question]: missing key 'ask' (the question the room answers)");
        if (!answerNode)
            fail(node.source(), "[steps.question]: missing key 'answer' (a measure over the run summary that "
                                "decides it, e.g. \"max(peak_memory.optimizer_state) / 1e6\")");
        if (auto problem = findMeasureSyntaxProblem(q.answer))
            fail(pointInto(answerNode->source(), q.answer, problem->offset),
                 "[steps.question] answer: " + problem->message);
        if (choicesNode && q.choices.size() < 2)
            fail(choicesNode->source(), "steps.question choices: expected at least two choices, got " +
                                            std::to_string(q.choices.size()));
        if (choicesNode && toleranceNode)
            fail(toleranceNode->source(),
                 "steps.question tolerance: a question with choices has no tolerance "
                 "(its answer is the index of the right choice)");
        return q;
    }

    // [[checks]]: claim and expect are required; expect is parsed here so a
    // mistake points at its column inside the string.
    void readChecks(const toml::node& node, std::vector<ClosingCheck>& out) const {
        const char* expected = "checks: expected an array of tables ([[checks]]), got ";
        if (!node.is_array())
            fail(node.source(), expected + typeName(node));
        for (const toml::node& item : *node.as_array()) {
            if (!item.is_table())
                fail(item.source(), expected + ("an array holding " + typeName(item)));
            ClosingCheck check;
            const toml::source_region& where = item.source();
            check.where = SourceLocation{m_file, static_cast<int>(where.begin.line),
                                         static_cast<int>(where.begin.column)};
            const toml::node* expectNode = nullptr;
            for (const Entry& e : checkedEntries(*item.as_table(), "checks", kCheckKeys)) {
                if (e.key == "claim")
                    check.claim = readString("checks", e.key, *e.node);
                else if (e.key == "expect") {
                    check.expect = readString("checks", e.key, *e.node);
                    expectNode = e.node;
                } else if (e.key == "baseline")
                    readBaseline(*e.node, check.baseline);
            }
            if (check.claim.empty())
                fail(where,
                     "[[checks]]: missing key 'claim' (the sentence the run must show, for the presenter)");
            if (!expectNode)
                fail(where, "[[checks]]: missing key 'expect' (a comparison over the run summary, "
                            "e.g. \"final_loss < initial_loss\")");
            if (auto problem = findCheckSyntaxProblem(check.expect, !check.baseline.empty()))
                fail(pointInto(expectNode->source(), check.expect, problem->offset),
                     "[[checks]] expect: " + problem->message);
            out.push_back(check);
        }
    }

    void readBaseline(const toml::node& node, CheckBaseline& b) const {
        if (!node.is_table())
            fail(node.source(), "[[checks]] baseline: expected a table such as { strategy = \"ddp\" }, got " +
                                    typeName(node));
        for (const Entry& e : checkedEntries(*node.as_table(), "checks.baseline", kBaselineKeys)) {
            if (e.key == "strategy")
                b.strategy = readStrategyKind(*e.node);
            else if (e.key == "microbatches")
                b.microbatches = readInt("strategy", e.key, *e.node);
            else if (e.key == "schedule")
                b.schedule = readString("strategy", e.key, *e.node);
            else if (e.key == "overlap")
                b.overlap = readBool("strategy", e.key, *e.node) ? 1 : 0;
            else if (e.key == "activation_checkpointing")
                b.activation_checkpointing = readBool("strategy", e.key, *e.node) ? 1 : 0;
            else if (e.key == "offload_optimizer")
                b.offload_optimizer = readBool("strategy", e.key, *e.node) ? 1 : 0;
            else if (e.key == "pipeline_data_parallel")
                b.pipeline_data_parallel = readString("strategy", e.key, *e.node);
            else if (e.key == "pseudo_gradient")
                b.pseudo_gradient = readString("diloco", e.key, *e.node);
        }
        if (b.empty())
            fail(node.source(), "[[checks]] baseline: empty; name what the baseline run changes, e.g. "
                                "{ strategy = \"ddp\" }");
    }

    // Where to point for a cross-field problem: the first of its keys that is
    // written, else its table (or [[faults]] / [[steps]] entry), else the top of the file.
    toml::source_region locate(const toml::table& root, const scenario_rules::Problem& problem) const {
        const toml::node* table = root.get(problem.table);
        if (table && problem.entryIndex >= 0) {
            const toml::array* entries = table->as_array();
            table = entries ? entries->get(static_cast<size_t>(problem.entryIndex)) : nullptr;
        }
        if (!table || !table->is_table()) {
            toml::source_region top;
            top.begin = toml::source_position{1, 1};
            return top;
        }
        for (const std::string& key : problem.keys)
            if (const toml::node* node = table->as_table()->get(key))
                return node->source();
        return table->source();
    }
};

} // namespace

Scenario parseScenarioText(const std::string& text, const std::string& sourceName) {
    toml::table root;
    try {
        root = toml::parse(std::string_view(text), std::string_view(sourceName));
    } catch (const toml::parse_error& e) {
        const toml::source_region& where = e.source();
        throw UsageError(SourceLocation{sourceName, static_cast<int>(where.begin.line),
                                        static_cast<int>(where.begin.column)},
                         "invalid TOML: " + std::string(e.description()));
    }
    return ScenarioReader(sourceName).read(root);
}

Scenario loadScenarioFile(const std::string& path) {
    std::error_code ec;
    int error = 0;
    if (!std::filesystem::exists(path, ec))
        error = ENOENT;
    else if (std::filesystem::is_directory(path, ec))
        error = EISDIR;
    else if (!std::filesystem::is_regular_file(path, ec)) // a FIFO would block the read forever
        throw UsageError("cannot open scenario file '" + path +
                         "': not a regular file (a FIFO, a device or a socket)");
    std::ifstream in;
    if (error == 0) {
        errno = 0;
        in.open(path, std::ios::binary);
        if (!in)
            error = errno != 0 ? errno : EACCES;
    }
    if (error != 0)
        throw UsageError("cannot open scenario file '" + path + "': " + std::strerror(error));
    std::ostringstream text;
    text << in.rdbuf();
    return parseScenarioText(text.str(), path);
}

} // namespace dt
