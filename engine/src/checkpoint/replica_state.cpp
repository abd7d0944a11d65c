// replica_state.cpp: pack / unpack a replica's parameters and AdamW state
// (layout in replica_state.hpp).
#include "checkpoint/replica_state.hpp"

#include "dtlab/errors.hpp"

#include <ATen/ATen.h>
#include <torch/optim/adamw.h>

#include <algorithm>
#include <string>

namespace dt {
namespace {

torch::optim::AdamWParamState* adamState(torch::optim::AdamW& optimizer, const at::Tensor& param) {
    auto& state = optimizer.state();
    auto it = state.find(c10::guts::to_string(param.unsafeGetTensorImpl()));
    return it == state.end() ? nullptr : static_cast<torch::optim::AdamWParamState*>(it->second.get());
}

int64_t totalNumel(const std::vector<at::Tensor>& params) {
    int64_t n = 0;
    for (const auto& p : params)
        n += p.numel();
    return n;
}

} // namespace

int64_t replicaStateNumel(const std::vector<at::Tensor>& params) {
    return 2 + 3 * totalNumel(params);
}

at::Tensor packReplicaState(const std::vector<at::Tensor>& params, torch::optim::AdamW& optimizer,
                            int64_t committed_steps) {
    const int64_t P = totalNumel(params);
    // Every element is written once (no zero fill first: a heal of a 100 MB
    // model packs 304 MB while the step runs beside it).
    at::Tensor out = at::empty({2 + 3 * P}, at::kFloat);
    out[0] = double(committed_steps);
    int64_t adam_step = 0, offset = 2;
    for (const auto& p : params) {
        const int64_t n = p.numel();
        out.narrow(0, offset, n).copy_(p.detach().reshape({-1}));
        if (auto* s = adamState(optimizer, p)) {
            adam_step = s->step();
            out.narrow(0, P + offset, n).copy_(s->exp_avg().reshape({-1}));
            out.narrow(0, 2 * P + offset, n).copy_(s->exp_avg_sq().reshape({-1}));
        } else {
            out.narrow(0, P + offset, n).zero_();
            out.narrow(0, 2 * P + offset, n).zero_();
        }
        offset += n;
    }
    out[1] = double(adam_step);
    return out;
}

std::vector<at::Tensor> replicaStateViews(const std::vector<at::Tensor>& params,
                                          torch::optim::AdamW& optimizer, int64_t committed_steps) {
    std::vector<at::Tensor> views;
    views.reserve(1 + 3 * params.size());
    at::Tensor header = at::empty({2}, at::kFloat);
    header[0] = double(committed_steps);
    header[1] = 0.0;
    views.push_back(header);
    for (const auto& p : params)
        views.push_back(p.detach().reshape({-1}));
    for (int moment = 0; moment < 2; ++moment)
        for (const auto& p : params) {
            auto* s = adamState(optimizer, p);
            if (s && moment == 0)
                header[1] = double(s->step());
            views.push_back(!s            ? at::zeros({p.numel()}, at::kFloat)
                            : moment == 0 ? s->exp_avg().reshape({-1})
                                          : s->exp_avg_sq().reshape({-1}));
        }
    return views;
}

std::vector<int64_t> replicaStateViewNumels(const std::vector<at::Tensor>& params) {
    std::vector<int64_t> numels{2};
    for (int moment = 0; moment < 3; ++moment) // parameters, exp_avg, exp_avg_sq
        for (const auto& p : params)
            numels.push_back(p.numel());
    return numels;
}

std::vector<ReplicaStateRun> replicaStateRuns(const std::vector<int64_t>& piece_numels,
                                              const std::vector<int64_t>& message_numels) {
    std::vector<ReplicaStateRun> runs;
    size_t message = 0;
    int64_t offset = 0; // of the next piece inside its message
    for (size_t i = 0; i < piece_numels.size(); ++i) {
        bool new_message = false;
        while (message < message_numels.size() && offset == message_numels[message]) {
            ++message;
            offset = 0;
            new_message = true;
        }
        // (A run holding a large piece is at kReplicaStateInPlaceNumel or more already: nothing joins it.)
        if (!runs.empty() && !new_message &&
            runs.back().numel + piece_numels[i] <= kReplicaStateInPlaceNumel) {
            runs.back().end = i + 1;
            runs.back().numel += piece_numels[i];
        } else {
            runs.push_back(ReplicaStateRun{i, i + 1, piece_numels[i]});
        }
        offset += piece_numels[i];
    }
    return runs;
}

at::Tensor replicaStateMetadata(int64_t committed_steps, const std::vector<int64_t>& message_numels) {
    at::Tensor meta = at::empty({2 + int64_t(message_numels.size())}, at::kLong);
    int64_t* m = meta.data_ptr<int64_t>();
    m[0] = committed_steps;
    m[1] = int64_t(message_numels.size());
    for (size_t i = 0; i < message_numels.size(); ++i)
        m[2 + i] = message_numels[i];
    return meta;
}

namespace {
std::string numelsText(const int64_t* numels, size_t n) {
    std::string text = std::to_string(n) + (n == 1 ? " message of " : " messages of ");
    for (size_t i = 0; i < n && i < 4; ++i)
        text += (i ? ", " : "") + std::to_string(numels[i]);
    return text + (n > 4 ? ", ..." : "") + " elements";
}
} // namespace

std::string replicaStateMetadataMismatch(const at::Tensor& meta, int64_t expected_step,
                                         const std::vector<int64_t>& expected_numels) {
    if (meta.scalar_type() != at::kLong || meta.dim() != 1 || meta.numel() < 2)
        return "malformed metadata (" + std::to_string(meta.numel()) + " values)";
    const int64_t* m = meta.data_ptr<int64_t>();
    const int64_t n = m[1];
    if (n != meta.numel() - 2)
        return "malformed metadata (" + std::to_string(meta.numel()) + " values for " + std::to_string(n) +
               " messages)";
    if (m[0] != expected_step)
        return "the source sends the state of step " + std::to_string(m[0]) + ", the quorum's step is " +
               std::to_string(expected_step);
    if (n != int64_t(expected_numels.size()) ||
        !std::equal(expected_numels.begin(), expected_numels.end(), m + 2))
        return "the source's state is " + numelsText(m + 2, size_t(n)) + ", this rank's is " +
               numelsText(expected_numels.data(), expected_numels.size());
    return "";
}

int64_t unpackReplicaState(const at::Tensor& state, const std::vector<at::Tensor>& params,
                           torch::optim::AdamW& optimizer) {
    const int64_t P = totalNumel(params);
    DT_ENFORCE(state.numel() == 2 + 3 * P,
               "a heal message of the wrong size: the peers run different models");
    const int64_t committed = int64_t(state[0].item<float>());
    const int64_t adam_step = int64_t(state[1].item<float>());
    at::NoGradGuard no_grad;
    optimizer.state().clear();
    int64_t offset = 2;
    for (const auto& p : params) {
        const int64_t n = p.numel();
        p.detach().copy_(state.narrow(0, offset, n).view(p.sizes()));
        if (adam_step > 0) {
            auto s = std::make_unique<torch::optim::AdamWParamState>();
            s->step(adam_step);
            s->exp_avg(state.narrow(0, P + offset, n).view(p.sizes()).clone());
            s->exp_avg_sq(state.narrow(0, 2 * P + offset, n).view(p.sizes()).clone());
            optimizer.state()[c10::guts::to_string(p.unsafeGetTensorImpl())] = std::move(s);
        }
        offset += n;
    }
    return committed;
}

} // namespace dt
