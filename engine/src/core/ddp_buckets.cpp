// ddp_buckets.cpp: greedy reverse-order bucket packing (rule in the header).
#include "dtlab/ddp_buckets.hpp"

#include "dtlab/errors.hpp"

namespace dt {

std::vector<BucketPlan> planBuckets(const std::vector<int64_t>& param_numel, int64_t element_bytes,
                                    int64_t cap_bytes) {
    DT_ENFORCE(element_bytes > 0 && cap_bytes > 0, "bucket cap and element size must be positive");
    std::vector<BucketPlan> buckets;
    BucketPlan current;
    for (int i = int(param_numel.size()) - 1; i >= 0; --i) {
        const int64_t numel = param_numel[size_t(i)];
        if (!current.slots.empty() && (current.numel + numel) * element_bytes > cap_bytes) {
            buckets.push_back(std::move(current));
            current = BucketPlan{};
        }
        current.slots.push_back(BucketSlot{i, current.numel, numel});
        current.numel += numel;
    }
    if (!current.slots.empty())
        buckets.push_back(std::move(current));
    return buckets;
}

std::vector<ParameterShape> parameterLayout(const ModelConfig& m) {
    std::vector<ParameterShape> out;
    if (m.kind == "tiny_gpt") {
        const int64_t C = m.d_model, R = m.mlp_ratio;
        out.push_back({"tok_emb.weight", int64_t(m.vocab) * C, -1});
        out.push_back({"pos_emb.weight", int64_t(m.context) * C, -1});
        for (int b = 0; b < m.layers; ++b) {
            const std::string p = "block" + std::to_string(b) + ".";
            out.push_back({p + "ln1.weight", C, b});
            out.push_back({p + "ln1.bias", C, b});
            out.push_back({p + "qkv.weight", 3 * C * C, b});
            out.push_back({p + "qkv.bias", 3 * C, b});
            out.push_back({p + "proj.weight", C * C, b});
            out.push_back({p + "proj.bias", C, b});
            out.push_back({p + "ln2.weight", C, b});
            out.push_back({p + "ln2.bias", C, b});
            out.push_back({p + "fc1.weight", R * C * C, b});
            out.push_back({p + "fc1.bias", R * C, b});
            out.push_back({p + "fc2.weight", R * C * C, b});
            out.push_back({p + "fc2.bias", C, b});
        }
        out.push_back({"ln_f.weight", C, -1});
        out.push_back({"ln_f.bias", C, -1});
        out.push_back({"head.weight", int64_t(m.vocab) * C, -1});
    } else if (m.kind == "mlp") {
        int64_t in = 784;
        for (size_t i = 0; i <= m.hidden.size(); ++i) {
            const bool last = i == m.hidden.size();
            const int64_t outs = last ? 10 : m.hidden[i];
            const std::string p = last ? "out." : "fc" + std::to_string(i) + ".";
            out.push_back({p + "weight", outs * in, int(i)});
            out.push_back({p + "bias", outs, int(i)});
            in = outs;
        }
    }
    return out;
}

std::vector<BucketPlan> ddpBucketPlan(const Scenario& s) {
    std::vector<int64_t> numel;
    for (const ParameterShape& p : parameterLayout(s.model))
        numel.push_back(p.numel);
    return planBuckets(numel, 4, int64_t(s.strategy.bucket_mb * 1024 * 1024));
}

} // namespace dt
