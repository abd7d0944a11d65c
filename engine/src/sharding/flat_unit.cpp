// flat_unit.cpp: building flat units and freeing their bytes (see flat_unit.hpp).
#include "sharding/flat_unit.hpp"

#include "dtlab/errors.hpp"
#include "dtlab/sharding_theory.hpp"
#include "model/model.hpp"

#include <ATen/native/Resize.h>

#include <algorithm>
#include <map>

namespace dt {

std::vector<FlatUnit> buildFlatUnits(std::vector<NamedParameter>& params,
                                     const std::vector<int>& unit_of_param, int shards, int shard_rank) {
    DT_ENFORCE(params.size() == unit_of_param.size(), "one unit id per parameter");
    std::map<int, std::vector<int>> members; // unit id -> parameter indices (model order)
    for (size_t i = 0; i < params.size(); ++i)
        members[unit_of_param[i]].push_back(int(i));

    std::vector<int> order; // blocks in forward order, root last
    for (const auto& [id, _] : members)
        if (id >= 0)
            order.push_back(id);
    if (members.count(-1))
        order.push_back(-1);

    std::vector<FlatUnit> units;
    at::NoGradGuard no_grad;
    for (int id : order) {
        FlatUnit u;
        u.id = id;
        u.params = members[id];
        for (int p : u.params) {
            const at::Tensor& t = params[size_t(p)].tensor;
            DT_ENFORCE(t.scalar_type() == at::kFloat, "flat units hold float32 parameters");
            u.offsets.push_back(u.numel);
            u.numel += t.numel();
        }
        u.padded = paddedNumel(u.numel, shards);
        u.shard_numel = u.padded / shards;
        u.full = at::zeros({u.padded}, at::kFloat);
        for (size_t k = 0; k < u.params.size(); ++k) {
            at::Tensor& param = params[size_t(u.params[k])].tensor;
            auto slot = u.full.narrow(0, u.offsets[k], param.numel());
            slot.copy_(param.reshape({-1}));
            // The parameter keeps its autograd identity (and version counter);
            // only its data now lives inside `full`.
            param.set_data(slot.view(param.sizes()));
        }
        u.shard = u.full.narrow(0, int64_t(shard_rank) * u.shard_numel, u.shard_numel);
        units.push_back(std::move(u));
    }
    return units;
}

void releaseStorage(const at::Tensor& t) {
    at::native::resize_bytes_cpu(t.storage().unsafeGetStorageImpl(), 0);
}

void allocateStorage(const at::Tensor& t) {
    const size_t nbytes = size_t(t.storage_offset() + t.numel()) * t.element_size();
    if (t.storage().nbytes() < nbytes)
        at::native::resize_bytes_cpu(t.storage().unsafeGetStorageImpl(), nbytes);
}

int64_t storageNbytes(const at::Tensor& t) {
    return t.defined() ? int64_t(t.storage().nbytes()) : 0;
}

} // namespace dt
