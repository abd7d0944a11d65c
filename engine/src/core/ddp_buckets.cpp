// ddp_buckets.cpp: PyTorch 1.13's bucket assignment (the rule is in the header).
#include "dtlab/ddp_buckets.hpp"

#include "dtlab/errors.hpp"

#include <algorithm>
#include <limits>

namespace dt {

std::vector<BucketPlan> assignBucketsBySize(const std::vector<int>& order,
                                            const std::vector<int64_t>& param_numel, int64_t element_bytes,
                                            const std::vector<int64_t>& limits_bytes) {
    DT_ENFORCE(element_bytes > 0 && !limits_bytes.empty(), "bucket limits and element size must be given");
    for (int64_t limit : limits_bytes)
        DT_ENFORCE(limit > 0, "bucket limits must be positive");
    std::vector<BucketPlan> buckets;
    BucketPlan open;
    size_t limit = 0; // index into limits_bytes; the last one repeats
    for (int i : order) {
        DT_ENFORCE(i >= 0 && size_t(i) < param_numel.size(),
                   "bucket order names a parameter that does not exist");
        const int64_t numel = param_numel[size_t(i)];
        open.slots.push_back(BucketSlot{i, open.numel, numel});
        open.numel += numel;
        if (open.numel * element_bytes >= limits_bytes[limit]) {
            buckets.push_back(std::move(open));
            open = BucketPlan{};
            limit = std::min(limit + 1, limits_bytes.size() - 1);
        }
    }
    if (!open.slots.empty())
        buckets.push_back(std::move(open));
    return buckets;
}

std::vector<BucketPlan> firstIterationBuckets(const std::vector<int64_t>& param_numel) {
    std::vector<int> registration(param_numel.size());
    for (size_t i = 0; i < registration.size(); ++i)
        registration[i] = int(i);
    return assignBucketsBySize(registration, param_numel, 1, {std::numeric_limits<int64_t>::max()});
}

std::vector<BucketPlan> rebuiltBuckets(const std::vector<int>& ready_order,
                                       const std::vector<int64_t>& param_numel, int64_t element_bytes,
                                       int64_t cap_bytes, int64_t first_bucket_bytes) {
    return assignBucketsBySize(ready_order, param_numel, element_bytes, {first_bucket_bytes, cap_bytes});
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

std::vector<int> expectedGradientReadyOrder(const ModelConfig& model) {
    const std::vector<ParameterShape> layout = parameterLayout(model);
    std::vector<int> order;
    for (int i = int(layout.size()) - 1; i >= 0; --i) {
        // A LayerNorm's "weight" is registered just before its "bias": keep that pair's order.
        const std::string& name = layout[size_t(i)].name;
        const bool layer_norm_bias = name.find("ln") != std::string::npos && name.size() > 5 &&
                                     name.compare(name.size() - 5, 5, ".bias") == 0;
        if (layer_norm_bias && i > 0) {
            order.push_back(i - 1);
            order.push_back(i);
            --i;
        } else {
            order.push_back(i);
        }
    }
    return order;
}

int64_t bucketCapBytes(const Scenario& s) {
    // PyTorch: int(bucket_cap_mb * 1024 * 1024); at least one byte, so a tiny cap means one parameter per
    // bucket.
    return std::max<int64_t>(1, int64_t(s.strategy.bucket_mb * 1024.0 * 1024.0));
}

std::vector<BucketPlan> ddpBucketPlan(const Scenario& s) {
    std::vector<int64_t> numel;
    for (const ParameterShape& p : parameterLayout(s.model))
        numel.push_back(p.numel);
    return rebuiltBuckets(expectedGradientReadyOrder(s.model), numel, 4, bucketCapBytes(s));
}

} // namespace dt
