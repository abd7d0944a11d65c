// diloco_strategy.cpp: DiLoCo (Douillard et al. 2023, Alg. 1) and Streaming
// DiLoCo (Douillard et al. 2025, Alg. 2) as a TrainingStrategy. Every rank is
// one replica training on its own data shard (the worker gives rank r shard r).
//
// State per rank (P = parameters, P_f = parameters of fragment f):
//   local   the model the inner optimizer trains: 4P bytes, plus its state
//           (AdamW 8P; it never leaves the rank)
//   global  the outer parameters, flat per fragment (4P), equal on every rank
//   outer momentum, per fragment (4P)
// Each step s:
//   1. forward and backward on this replica's batch: no communication.
//   2. the inner optimizer steps the local model.
//   3. each fragment f that syncs after s (diloco_schedule.hpp) computes its
//      pseudo-gradient delta_f = global_f - local_f (P_f fp32), encodes it
//      (pseudo_gradient_codec.hpp) and starts the exchange, asynchronously:
//        fp32            all-reduce, 2 (N-1)/N x 4 P_f bytes sent per rank
//        bf16/int8/int4  all-gather of the encoded bytes, (N-1) x encoded(P_f)
//                        bytes sent per rank, decoded and summed in fp32
//   4. each fragment whose exchange was sent sync_delay (tau) steps ago, s
//      included when tau = 0, applies it (the outer step):
//        delta = sum / N
//        b = mu b + delta;  u = nesterov ? delta + mu b : b   (mu = 0: u = delta)
//        global_f -= outer_lr u
//        local_f = alpha local_f + (1 - alpha) global_f
// Classic DiLoCo (F = 1, fp32) sends DDP's bytes of one step once every H
// steps; a streaming sync sends one fragment (about 1/F of the model), times
// the encoded width. The last step syncs every fragment, so that all replicas
// end with the same global model (fullParameters returns it).
#include "checkpoint/diloco_checkpoint.hpp"
#include "dtlab/diloco_schedule.hpp"
#include "strategy/optimizer_factory.hpp"
#include "strategy/outer_optimizer.hpp"
#include "strategy/pseudo_gradient_codec.hpp"
#include "strategy/training_strategy.hpp"

#include "dtlab/scenario.hpp"
#include "memory/memory_accounting.hpp"
#include "rank/rank_telemetry.hpp"

#include <ATen/ATen.h>
#include <torch/optim/optimizer.h>

namespace dt {

namespace {

class DilocoStrategy final : public TrainingStrategy {
  public:
    explicit DilocoStrategy(const StrategyContext& c)
        : m_scenario(*c.scenario), m_config(c.scenario->diloco), m_model(*c.model), m_comm(*c.world),
          m_telemetry(c.sink, c.rank, c.sink != nullptr), m_rank(c.rank),
          m_format(parsePseudoGradientFormat(c.scenario->diloco.pseudo_gradient)) {
        at::NoGradGuard no_grad;
        const auto named = m_model.trainableParameters();
        const std::vector<int> units = m_model.parameterUnits();
        m_fragments.resize(size_t(m_config.fragments));
        for (size_t i = 0; i < named.size(); ++i) {
            m_params.push_back(named[i].tensor);
            Fragment& f = m_fragments[size_t(diloco::fragmentOfUnit(units[i], m_config.fragments))];
            f.params.push_back(int(i));
            f.numel += named[i].tensor.numel();
        }
        for (Fragment& f : m_fragments) {
            f.global = flattenLocal(f);
            f.momentum = at::zeros_like(f.global);
        }
        m_optimizer = makeOptimizer(m_params, m_scenario.optimizer);
    }

    std::string name() const override { return "diloco"; }

    void beginStep(int step) override {
        m_step = step;
        for (auto& p : m_params)
            if (p.grad().defined())
                p.mutable_grad().zero_();
    }
    void beginMicrobatch(int, bool) override {}
    void finishMicrobatch() override {}

    // The inner step, then the fragment syncs due after this step.
    void optimizerStep() override {
        const int step = m_step;
        m_optimizer->step();
        const bool last = step == m_scenario.run.steps - 1;
        const int H = m_config.inner_steps, F = m_config.fragments;
        for (size_t k = 0; k < m_fragments.size(); ++k) {
            Fragment& f = m_fragments[k];
            f.inner_steps_since_send += 1;
            if (last && f.pending)
                applyOuterStep(int(k), step);
            if (diloco::sendsAfterStep(step, int(k), H, F) || (last && f.inner_steps_since_send > 0))
                sendPseudoGradient(int(k), step);
        }
        for (size_t k = 0; k < m_fragments.size(); ++k) {
            Fragment& f = m_fragments[k];
            if (f.pending && (last || f.apply_step <= step))
                applyOuterStep(int(k), step);
        }
    }

    StrategyMemory memory() const override {
        StrategyMemory m;
        m.parameters = storageBytes(m_params);
        std::vector<at::Tensor> globals, momenta, buffers, grads;
        for (const Fragment& f : m_fragments) {
            globals.push_back(f.global);
            momenta.push_back(f.momentum);
            if (f.pending) {
                buffers.push_back(f.send_buffer);
                if (f.gathered.defined())
                    buffers.push_back(f.gathered);
            }
        }
        for (const auto& p : m_params)
            grads.push_back(p.grad());
        m.parameters += storageBytes(globals);
        m.gradients = storageBytes(grads);
        m.optimizer_state = optimizerStateBytes(*m_optimizer) + storageBytes(momenta);
        m.comm_buffers = storageBytes(buffers);
        return m;
    }

    std::vector<NamedParameter> fullParameters() override {
        // The global model (after the last step's sync it is equal on every rank).
        std::vector<NamedParameter> named = m_model.trainableParameters();
        for (const Fragment& f : m_fragments) {
            int64_t offset = 0;
            for (int i : f.params) {
                at::Tensor& t = named[size_t(i)].tensor;
                t = f.global.narrow(0, offset, t.numel()).view(t.sizes()).clone();
                offset += t.numel();
            }
        }
        return named;
    }

    int64_t modeledBytesSent() const override { return m_comm.modeledBytesSent(); }
    int64_t modeledBytesReceived() const override { return m_comm.modeledBytesReceived(); }

    // Both copies (diloco_checkpoint.hpp). With sync_delay = 0 (the scenario
    // checks it) nothing is in flight after a step.
    int64_t saveCheckpoint(const std::string& step_dir, int last_step) override {
        return saveDilocoCheckpoint(step_dir, last_step, m_scenario, outerState(), m_params, *m_optimizer,
                                    m_comm);
    }
    int loadCheckpoint(const std::string& step_dir, int64_t& bytes_read) override {
        DilocoOuterState outer = outerState();
        const int last =
            loadDilocoCheckpoint(step_dir, m_scenario, outer, m_params, *m_optimizer, m_rank, bytes_read);
        for (size_t k = 0; k < m_fragments.size(); ++k)
            m_fragments[k].outer_steps = outer.outer_steps[k];
        return last;
    }

  private:
    struct Fragment {
        std::vector<int> params; // indices into m_params
        int64_t numel = 0;
        at::Tensor global;   // flat fp32, numel
        at::Tensor momentum; // flat fp32, numel
        int outer_steps = 0;
        int inner_steps_since_send = 0;
        // the exchange in flight
        bool pending = false;
        int send_step = -1, apply_step = -1;
        int64_t wire_bytes = 0;
        CommWorkPtr work;
        at::Tensor send_buffer; // fp32: delta, all-reduced in place; else the encoded bytes (as fp32 words)
        at::Tensor gathered;    // quantized: every rank's encoded bytes
    };

    // The outer state as views of the fragments' tensors (loading writes into them).
    DilocoOuterState outerState() const {
        DilocoOuterState outer;
        for (const Fragment& f : m_fragments) {
            outer.global.push_back(f.global);
            outer.momentum.push_back(f.momentum);
            outer.outer_steps.push_back(f.outer_steps);
        }
        return outer;
    }

    at::Tensor flattenLocal(const Fragment& f) const {
        std::vector<at::Tensor> parts;
        for (int i : f.params)
            parts.push_back(m_params[size_t(i)].detach().reshape({-1}));
        return at::cat(parts).contiguous();
    }

    void emitSpan(EventKind kind, int64_t begin, int step, int fragment, double value, int64_t bytes) const {
        m_telemetry.span(kind)
            .from(begin)
            .step(step)
            .unit(fragment)
            .microbatch(-1)
            .bytes(bytes)
            .value(value)
            .emit();
    }

    void sendPseudoGradient(int k, int step) {
        at::NoGradGuard no_grad;
        Fragment& f = m_fragments[size_t(k)];
        const int64_t begin = m_telemetry.now();
        const at::Tensor delta = f.global - flattenLocal(f);
        const CommTag tag{step, k, -1};
        if (m_format == PseudoGradientFormat::Fp32) {
            f.send_buffer = delta;
            f.gathered = at::Tensor();
            f.wire_bytes = 4 * f.numel;
            f.work = m_comm.allReduce(f.send_buffer, tag);
        } else {
            f.wire_bytes = encodedBytes(f.numel, m_format);
            const int64_t words = (f.wire_bytes + 3) / 4;
            f.send_buffer = at::zeros({words}, at::kFloat);
            encodePseudoGradient(delta, m_format,
                                 reinterpret_cast<uint8_t*>(f.send_buffer.data_ptr<float>()));
            f.gathered = at::empty({words * m_comm.size()}, at::kFloat);
            f.work = m_comm.allGather(f.gathered, f.send_buffer, tag);
        }
        f.pending = true;
        f.send_step = step;
        f.apply_step = step + m_config.sync_delay;
        f.inner_steps_since_send = 0;
        emitSpan(EventKind::PseudoGradient, begin, step, k, double(f.outer_steps), f.wire_bytes);
    }

    void applyOuterStep(int k, int step) {
        at::NoGradGuard no_grad;
        Fragment& f = m_fragments[size_t(k)];
        const int64_t begin = m_telemetry.now();
        f.work->wait(); // throws CommError when a peer is gone
        const int N = m_comm.size();
        at::Tensor delta;
        if (m_format == PseudoGradientFormat::Fp32) {
            delta = f.send_buffer;
        } else {
            delta = at::zeros({f.numel}, at::kFloat);
            const auto* bytes = reinterpret_cast<const uint8_t*>(f.gathered.data_ptr<float>());
            const int64_t stride = f.send_buffer.numel() * 4;
            for (int r = 0; r < N; ++r)
                decodeAddPseudoGradient(bytes + r * stride, m_format, delta);
        }
        delta.div_(double(N));
        outerSgdStep(f.global, f.momentum, delta, m_config); // outer_optimizer.hpp
        // Mix the new global parameters into the local ones.
        const double alpha = m_config.alpha;
        int64_t offset = 0;
        for (int i : f.params) {
            at::Tensor& p = m_params[size_t(i)];
            const at::Tensor g = f.global.narrow(0, offset, p.numel()).view(p.sizes());
            if (alpha == 0.0)
                p.copy_(g);
            else
                p.mul_(alpha).add_(g, 1.0 - alpha);
            offset += p.numel();
        }
        f.outer_steps += 1;
        f.pending = false;
        f.work.reset();
        f.send_buffer = at::Tensor();
        f.gathered = at::Tensor();
        emitSpan(EventKind::OuterStep, begin, step, k, double(f.outer_steps), f.wire_bytes);
    }

    const Scenario& m_scenario;
    const DilocoConfig& m_config;
    TrainableModel& m_model;
    Communicator& m_comm;
    RankTelemetry m_telemetry; // no sink when telemetry is off: nothing is emitted
    int m_rank;
    int m_step = 0;
    PseudoGradientFormat m_format;
    std::vector<at::Tensor> m_params;
    std::vector<Fragment> m_fragments;
    std::unique_ptr<torch::optim::Optimizer> m_optimizer;
};

} // namespace

std::unique_ptr<TrainingStrategy> makeDilocoStrategy(const StrategyContext& context) {
    return std::make_unique<DilocoStrategy>(context);
}

} // namespace dt
