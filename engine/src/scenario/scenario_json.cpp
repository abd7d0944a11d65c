// scenario_json.cpp: the Scenario <-> JSON round trip (nlohmann::json) the
// Session uses to hand the resolved scenario to every rank. Every field travels,
// the source locations of faults and narration steps included; the layout
// mirrors the TOML tables.
// scenarioFromJson does not validate (the data path may differ on a rank's host).
#include "dtlab/scenario.hpp"

#include <nlohmann/json.hpp>

namespace dt {

using nlohmann::json;

namespace {

// The kinds travel by name, so recordings keep reading the same.
StrategyKind strategyKindFromJson(const json& j) {
    const std::string name = j.get<std::string>();
    StrategyKind kind = StrategyKind::Ddp;
    if (!parseStrategyKind(name, kind))
        throw UsageError("invalid scenario JSON: unknown strategy kind \"" + name + "\"");
    return kind;
}

FaultAction faultActionFromJson(const json& j) {
    const std::string name = j.get<std::string>();
    FaultAction action = FaultAction::Kill;
    if (!parseFaultAction(name, action))
        throw UsageError("invalid scenario JSON: unknown fault action \"" + name + "\"");
    return action;
}

FaultWhen faultWhenFromJson(const json& j) {
    const std::string name = j.get<std::string>();
    FaultWhen when = FaultWhen::AllReduce;
    if (!parseFaultWhen(name, when))
        throw UsageError("invalid scenario JSON: unknown fault time \"" + name + "\"");
    return when;
}

} // namespace

std::string scenarioToJson(const Scenario& s) {
    json faults = json::array();
    for (const FaultConfig& f : s.faults) {
        faults.push_back({
            {"action", faultActionName(f.action)},
            {"rank", f.rank},
            {"step", f.step},
            {"when", faultWhenName(f.when)},
            {"at_s", f.at_s},
            {"duration_s", f.duration_s},
            {"delay_ms", f.delay_ms},
            {"where", {{"file", f.where.file}, {"line", f.where.line}, {"column", f.where.column}}},
        });
    }
    json chaos_actions = json::array();
    for (FaultAction action : s.chaos.actions)
        chaos_actions.push_back(faultActionName(action));
    json steps = json::array();
    for (const NarrationStep& n : s.steps) {
        json step = {
            {"text", n.text},
            {"highlight", n.highlight},
            {"until", n.until},
            {"pause", n.pause},
            {"expect", n.expect},
            {"where", {{"file", n.where.file}, {"line", n.where.line}, {"column", n.where.column}}},
        };
        if (n.question) {
            const NarrationQuestion& q = *n.question;
            step["question"] = {{"ask", q.ask},         {"answer", q.answer},
                                {"unit", q.unit},       {"tolerance", q.tolerance},
                                {"choices", q.choices}, {"explain", q.explain}};
            if (q.formula_answer) // the answer key: added after recording version 5, optional
                step["question"]["formula_answer"] = *q.formula_answer;
            if (q.typical_mistake)
                step["question"]["typical_mistake"] = *q.typical_mistake;
        }
        steps.push_back(step);
    }
    json checks = json::array();
    for (const ClosingCheck& c : s.checks) {
        const CheckBaseline& b = c.baseline;
        checks.push_back({
            {"claim", c.claim},
            {"expect", c.expect},
            {"baseline",
             {{"strategy", b.strategy ? strategyKindName(*b.strategy) : ""},
              {"microbatches", b.microbatches},
              {"schedule", b.schedule},
              {"overlap", b.overlap},
              {"activation_checkpointing", b.activation_checkpointing},
              {"offload_optimizer", b.offload_optimizer},
              {"pipeline_data_parallel", b.pipeline_data_parallel},
              {"pseudo_gradient", b.pseudo_gradient}}},
            {"where", {{"file", c.where.file}, {"line", c.where.line}, {"column", c.where.column}}},
        });
    }
    json j = {
        {"name", s.name},
        {"description", s.description},
        {"path", s.path},
        {"topology",
         {{"ranks", s.topology.ranks},
          {"replicas", s.topology.replicas},
          {"stages", s.topology.stages},
          {"backend", s.topology.backend}}},
        {"collectives",
         {{"ops", s.collectives.ops},
          {"sizes_kb", s.collectives.sizes_kb},
          {"backends", s.collectives.backends},
          {"repeats", s.collectives.repeats}}},
        {"model",
         {{"kind", s.model.kind},
          {"vocab", s.model.vocab},
          {"context", s.model.context},
          {"d_model", s.model.d_model},
          {"layers", s.model.layers},
          {"heads", s.model.heads},
          {"mlp_ratio", s.model.mlp_ratio},
          {"hidden", s.model.hidden},
          {"quantize", s.model.quantize},
          {"quantize_weights", s.model.quantize_weights}}},
        {"data",
         {{"source", s.data.source}, {"path", s.data.path}, {"batch_per_rank", s.data.batch_per_rank}}},
        {"strategy",
         {{"kind", strategyKindName(s.strategy.kind)},
          {"bucket_mb", s.strategy.bucket_mb},
          {"overlap", s.strategy.overlap},
          {"forward_prefetch", s.strategy.forward_prefetch},
          {"backward_prefetch", s.strategy.backward_prefetch},
          {"prefetch_limit", s.strategy.prefetch_limit},
          {"microbatches", s.strategy.microbatches},
          {"sync_every_microbatch", s.strategy.sync_every_microbatch},
          {"activation_checkpointing", s.strategy.activation_checkpointing},
          {"offload_optimizer", s.strategy.offload_optimizer},
          {"pipeline_data_parallel", s.strategy.pipeline_data_parallel},
          {"schedule", s.strategy.schedule},
          {"chunks_per_rank", s.strategy.chunks_per_rank},
          {"slow_stage", s.strategy.slow_stage},
          {"slow_stage_ms", s.strategy.slow_stage_ms}}},
        {"optimizer",
         {{"kind", s.optimizer.kind},
          {"lr", s.optimizer.lr},
          {"beta1", s.optimizer.beta1},
          {"beta2", s.optimizer.beta2},
          {"eps", s.optimizer.eps},
          {"weight_decay", s.optimizer.weight_decay}}},
        {"run",
         {{"steps", s.run.steps},
          {"seed", s.run.seed},
          {"timeout_s", s.run.timeout_s},
          {"step_delay_ms", s.run.step_delay_ms},
          {"checkpoint_dir", s.run.checkpoint_dir},
          {"checkpoint_every", s.run.checkpoint_every},
          {"resume_from", s.run.resume_from},
          {"eval_every", s.run.eval_every},
          {"run_id", s.run.run_id}}},
        {"telemetry", {{"enabled", s.telemetry.enabled}, {"queue_capacity", s.telemetry.queue_capacity}}},
        {"faults", faults},
        {"steps", steps},
        {"checks", checks},
        {"fault_tolerance",
         {{"enabled", s.fault_tolerance.enabled},
          {"lighthouse", s.fault_tolerance.lighthouse},
          {"min_replicas", s.fault_tolerance.min_replicas},
          {"join_timeout_ms", s.fault_tolerance.join_timeout_ms},
          {"heartbeat_interval_ms", s.fault_tolerance.heartbeat_interval_ms},
          {"heartbeat_timeout_ms", s.fault_tolerance.heartbeat_timeout_ms},
          {"quorum_timeout_ms", s.fault_tolerance.quorum_timeout_ms},
          {"collective_timeout_ms", s.fault_tolerance.collective_timeout_ms},
          {"restart", s.fault_tolerance.restart},
          {"restart_delay_ms", s.fault_tolerance.restart_delay_ms},
          {"max_restarts_per_minute", s.fault_tolerance.max_restarts_per_minute},
          {"max_retries", s.fault_tolerance.max_retries},
          {"init_sync", s.fault_tolerance.init_sync},
          {"quorum_mode", s.fault_tolerance.quorum_mode},
          {"detection", s.fault_tolerance.detection},
          {"heal_transport", s.fault_tolerance.heal_transport},
          {"heal_chunks", s.fault_tolerance.heal_chunks}}},
        {"diloco",
         {{"inner_steps", s.diloco.inner_steps},
          {"outer_lr", s.diloco.outer_lr},
          {"outer_momentum", s.diloco.outer_momentum},
          {"nesterov", s.diloco.nesterov},
          {"fragments", s.diloco.fragments},
          {"sync_delay", s.diloco.sync_delay},
          {"alpha", s.diloco.alpha},
          {"pseudo_gradient", s.diloco.pseudo_gradient}}},
        {"swarm",
         {{"trainers", s.swarm.trainers},
          {"servers_per_stage", s.swarm.servers_per_stage},
          {"routing", s.swarm.routing},
          {"server_batch", s.swarm.server_batch},
          {"outer_every", s.swarm.outer_every},
          {"outer_lr", s.swarm.outer_lr},
          {"outer_momentum", s.swarm.outer_momentum},
          {"join_timeout_ms", s.swarm.join_timeout_ms},
          {"request_timeout_ms", s.swarm.request_timeout_ms},
          {"restart", s.swarm.restart},
          {"restart_delay_ms", s.swarm.restart_delay_ms}}},
        {"network", {{"bandwidth_mbit_s", s.network.bandwidth_mbit_s}, {"latency_ms", s.network.latency_ms}}},
        {"chaos",
         {{"enabled", s.chaos.enabled},
          {"seed", s.chaos.seed},
          {"mean_interval_s", s.chaos.mean_interval_s},
          {"actions", chaos_actions},
          {"hang_s", s.chaos.hang_s},
          {"slow_ms", s.chaos.slow_ms},
          {"slow_s", s.chaos.slow_s}}},
    };
    return j.dump();
}

Scenario scenarioFromJson(const std::string& text) {
    try {
        const json j = json::parse(text);
        Scenario s;
        j.at("name").get_to(s.name);
        j.at("description").get_to(s.description);
        j.at("path").get_to(s.path);

        j.at("topology").at("ranks").get_to(s.topology.ranks);

        const json& m = j.at("model");
        m.at("kind").get_to(s.model.kind);
        m.at("vocab").get_to(s.model.vocab);
        m.at("context").get_to(s.model.context);
        m.at("d_model").get_to(s.model.d_model);
        m.at("layers").get_to(s.model.layers);
        m.at("heads").get_to(s.model.heads);
        m.at("mlp_ratio").get_to(s.model.mlp_ratio);
        m.at("hidden").get_to(s.model.hidden);
        if (m.contains("quantize")) // recordings before QAT have none
            m.at("quantize").get_to(s.model.quantize);
        if (m.contains("quantize_weights"))
            m.at("quantize_weights").get_to(s.model.quantize_weights);

        const json& d = j.at("data");
        d.at("source").get_to(s.data.source);
        d.at("path").get_to(s.data.path);
        d.at("batch_per_rank").get_to(s.data.batch_per_rank);

        j.at("topology").at("replicas").get_to(s.topology.replicas);
        j.at("topology").at("stages").get_to(s.topology.stages);
        if (j.at("topology").contains("backend"))
            j.at("topology").at("backend").get_to(s.topology.backend);
        if (j.contains("collectives")) {
            const json& c = j.at("collectives");
            c.at("ops").get_to(s.collectives.ops);
            c.at("sizes_kb").get_to(s.collectives.sizes_kb);
            c.at("backends").get_to(s.collectives.backends);
            c.at("repeats").get_to(s.collectives.repeats);
        }
        const json& st = j.at("strategy");
        st.at("schedule").get_to(s.strategy.schedule);
        st.at("chunks_per_rank").get_to(s.strategy.chunks_per_rank);
        st.at("slow_stage").get_to(s.strategy.slow_stage);
        st.at("slow_stage_ms").get_to(s.strategy.slow_stage_ms);
        s.strategy.kind = strategyKindFromJson(st.at("kind"));
        st.at("bucket_mb").get_to(s.strategy.bucket_mb);
        st.at("overlap").get_to(s.strategy.overlap);
        st.at("forward_prefetch").get_to(s.strategy.forward_prefetch);
        st.at("backward_prefetch").get_to(s.strategy.backward_prefetch);
        st.at("prefetch_limit").get_to(s.strategy.prefetch_limit);
        st.at("microbatches").get_to(s.strategy.microbatches);
        st.at("sync_every_microbatch").get_to(s.strategy.sync_every_microbatch);
        st.at("activation_checkpointing").get_to(s.strategy.activation_checkpointing);
        if (st.contains("offload_optimizer"))
            st.at("offload_optimizer").get_to(s.strategy.offload_optimizer); // since 2026-11-23
        if (st.contains("pipeline_data_parallel"))
            st.at("pipeline_data_parallel").get_to(s.strategy.pipeline_data_parallel);

        const json& o = j.at("optimizer");
        o.at("kind").get_to(s.optimizer.kind);
        o.at("lr").get_to(s.optimizer.lr);
        o.at("beta1").get_to(s.optimizer.beta1);
        o.at("beta2").get_to(s.optimizer.beta2);
        o.at("eps").get_to(s.optimizer.eps);
        o.at("weight_decay").get_to(s.optimizer.weight_decay);

        const json& r = j.at("run");
        r.at("steps").get_to(s.run.steps);
        r.at("seed").get_to(s.run.seed);
        r.at("timeout_s").get_to(s.run.timeout_s);
        r.at("step_delay_ms").get_to(s.run.step_delay_ms);
        r.at("checkpoint_dir").get_to(s.run.checkpoint_dir);
        r.at("checkpoint_every").get_to(s.run.checkpoint_every);
        r.at("resume_from").get_to(s.run.resume_from);
        if (r.contains("eval_every"))
            r.at("eval_every").get_to(s.run.eval_every);
        if (r.contains("run_id")) // recordings before it have none
            r.at("run_id").get_to(s.run.run_id);

        const json& t = j.at("telemetry");
        t.at("enabled").get_to(s.telemetry.enabled);
        t.at("queue_capacity").get_to(s.telemetry.queue_capacity);

        for (const json& jf : j.at("faults")) {
            FaultConfig f;
            f.action = faultActionFromJson(jf.at("action"));
            jf.at("rank").get_to(f.rank);
            jf.at("step").get_to(f.step);
            f.when = faultWhenFromJson(jf.at("when"));
            if (jf.contains("at_s")) { // recordings from before fault tolerance have none of these
                jf.at("at_s").get_to(f.at_s);
                jf.at("duration_s").get_to(f.duration_s);
                jf.at("delay_ms").get_to(f.delay_ms);
            }
            const json& w = jf.at("where");
            w.at("file").get_to(f.where.file);
            w.at("line").get_to(f.where.line);
            w.at("column").get_to(f.where.column);
            s.faults.push_back(f);
        }
        // "steps" arrived after recording version 1 was fixed: older files have none.
        if (j.contains("steps")) {
            for (const json& jn : j.at("steps")) {
                NarrationStep n;
                jn.at("text").get_to(n.text);
                jn.at("highlight").get_to(n.highlight);
                jn.at("until").get_to(n.until);
                n.pause = jn.value("pause", false); // added with recording version 5
                n.expect = jn.value("expect", std::string());
                if (jn.contains("question")) { // predict, then run: later files only
                    const json& jq = jn.at("question");
                    NarrationQuestion q;
                    jq.at("ask").get_to(q.ask);
                    jq.at("answer").get_to(q.answer);
                    jq.at("unit").get_to(q.unit);
                    jq.at("tolerance").get_to(q.tolerance);
                    jq.at("choices").get_to(q.choices);
                    jq.at("explain").get_to(q.explain);
                    if (jq.contains("formula_answer"))
                        q.formula_answer = jq.at("formula_answer").get<double>();
                    if (jq.contains("typical_mistake"))
                        q.typical_mistake = jq.at("typical_mistake").get<double>();
                    n.question = q;
                }
                const json& w = jn.at("where");
                w.at("file").get_to(n.where.file);
                w.at("line").get_to(n.where.line);
                w.at("column").get_to(n.where.column);
                s.steps.push_back(n);
            }
        }
        // "checks" arrived with recording version 4's later files: older ones have none.
        if (j.contains("checks")) {
            for (const json& jc : j.at("checks")) {
                ClosingCheck c;
                jc.at("claim").get_to(c.claim);
                jc.at("expect").get_to(c.expect);
                const json& b = jc.at("baseline");
                if (const std::string name = b.at("strategy").get<std::string>(); !name.empty())
                    c.baseline.strategy = strategyKindFromJson(b.at("strategy"));
                b.at("microbatches").get_to(c.baseline.microbatches);
                b.at("schedule").get_to(c.baseline.schedule);
                b.at("overlap").get_to(c.baseline.overlap);
                b.at("activation_checkpointing").get_to(c.baseline.activation_checkpointing);
                if (b.contains("offload_optimizer"))
                    b.at("offload_optimizer").get_to(c.baseline.offload_optimizer);
                if (b.contains("pipeline_data_parallel"))
                    b.at("pipeline_data_parallel").get_to(c.baseline.pipeline_data_parallel);
                b.at("pseudo_gradient").get_to(c.baseline.pseudo_gradient);
                const json& w = jc.at("where");
                w.at("file").get_to(c.where.file);
                w.at("line").get_to(c.where.line);
                w.at("column").get_to(c.where.column);
                s.checks.push_back(c);
            }
        }
        if (j.contains("fault_tolerance")) {
            const json& ft = j.at("fault_tolerance");
            FaultToleranceConfig& c = s.fault_tolerance;
            ft.at("enabled").get_to(c.enabled);
            ft.at("lighthouse").get_to(c.lighthouse);
            ft.at("min_replicas").get_to(c.min_replicas);
            ft.at("join_timeout_ms").get_to(c.join_timeout_ms);
            ft.at("heartbeat_interval_ms").get_to(c.heartbeat_interval_ms);
            ft.at("heartbeat_timeout_ms").get_to(c.heartbeat_timeout_ms);
            ft.at("quorum_timeout_ms").get_to(c.quorum_timeout_ms);
            ft.at("collective_timeout_ms").get_to(c.collective_timeout_ms);
            ft.at("restart").get_to(c.restart);
            ft.at("restart_delay_ms").get_to(c.restart_delay_ms);
            c.max_restarts_per_minute = ft.value("max_restarts_per_minute", c.max_restarts_per_minute);
            c.max_retries = ft.value("max_retries", c.max_retries);
            c.init_sync = ft.value("init_sync", c.init_sync);
            c.quorum_mode = ft.value("quorum_mode", c.quorum_mode);
            c.detection = ft.value("detection", c.detection);
            c.heal_transport = ft.value("heal_transport", c.heal_transport);
            c.heal_chunks = ft.value("heal_chunks", c.heal_chunks);
        }
        if (j.contains("diloco")) {
            const json& d = j.at("diloco");
            d.at("inner_steps").get_to(s.diloco.inner_steps);
            d.at("outer_lr").get_to(s.diloco.outer_lr);
            d.at("outer_momentum").get_to(s.diloco.outer_momentum);
            d.at("nesterov").get_to(s.diloco.nesterov);
            d.at("fragments").get_to(s.diloco.fragments);
            d.at("sync_delay").get_to(s.diloco.sync_delay);
            d.at("alpha").get_to(s.diloco.alpha);
            d.at("pseudo_gradient").get_to(s.diloco.pseudo_gradient);
        }
        if (j.contains("swarm")) {
            const json& w = j.at("swarm");
            w.at("trainers").get_to(s.swarm.trainers);
            w.at("servers_per_stage").get_to(s.swarm.servers_per_stage);
            w.at("routing").get_to(s.swarm.routing);
            w.at("server_batch").get_to(s.swarm.server_batch);
            w.at("outer_every").get_to(s.swarm.outer_every);
            w.at("outer_lr").get_to(s.swarm.outer_lr);
            w.at("outer_momentum").get_to(s.swarm.outer_momentum);
            w.at("join_timeout_ms").get_to(s.swarm.join_timeout_ms);
            w.at("request_timeout_ms").get_to(s.swarm.request_timeout_ms);
            w.at("restart").get_to(s.swarm.restart);
            w.at("restart_delay_ms").get_to(s.swarm.restart_delay_ms);
        }
        if (j.contains("network")) {
            const json& n = j.at("network");
            n.at("bandwidth_mbit_s").get_to(s.network.bandwidth_mbit_s);
            n.at("latency_ms").get_to(s.network.latency_ms);
        }
        if (j.contains("chaos")) {
            const json& ch = j.at("chaos");
            ch.at("enabled").get_to(s.chaos.enabled);
            ch.at("seed").get_to(s.chaos.seed);
            ch.at("mean_interval_s").get_to(s.chaos.mean_interval_s);
            s.chaos.actions.clear();
            for (const json& action : ch.at("actions"))
                s.chaos.actions.push_back(faultActionFromJson(action));
            ch.at("hang_s").get_to(s.chaos.hang_s);
            ch.at("slow_ms").get_to(s.chaos.slow_ms);
            ch.at("slow_s").get_to(s.chaos.slow_s);
        }
        return s;
    } catch (const json::exception& e) {
        throw UsageError(std::string("invalid scenario JSON: ") + e.what());
    }
}

} // namespace dt
