// flat_unit.hpp: FSDP's FlatParameter. One unit's parameters laid end to end
// in one flat fp32 vector, right-padded to a multiple of the shard count N and
// split into N equal shards; rank r owns elements [r*S, (r+1)*S).
//
//   full   (padded)           the unsharded vector. The model's parameter
//                             tensors are views into it (set_data), so forward
//                             and backward read it in place. Under fsdp its
//                             storage is freed (0 bytes) while the unit is
//                             sharded and re-allocated for each all-gather.
//   shard  (S = padded / N)   what this rank keeps: a view of `full` for
//                             zero1/zero2, its own storage for fsdp/hsdp.
//
// Freeing keeps the tensors and their autograd links; only the bytes go, as
// PyTorch FSDP does with storage().resize_(0). Every tensor that views `full`
// (the parameters, tensors autograd saved for backward) sees the bytes again
// once the storage is re-allocated and the all-gather has filled it.
#pragma once

#include "comm/communicator.hpp"

#include <ATen/Tensor.h>

#include <cstdint>
#include <vector>

namespace dt {

struct NamedParameter;

struct FlatUnit {
    int id = -1;                  // block / layer index; -1 = the root unit
    std::vector<int> params;      // indices into the model's parameter list, in model order
    std::vector<int64_t> offsets; // element offset of each parameter inside `full`
    int64_t numel = 0;            // parameters, without padding
    int64_t padded = 0;           // numel rounded up to a multiple of N
    int64_t shard_numel = 0;      // padded / N
    at::Tensor full;              // (padded)
    at::Tensor shard;             // (shard_numel)
    at::Tensor shard_grad;        // (shard_numel) reduced gradient of the shard
    at::Tensor flat_grad;         // zero1 only: (padded), the parameters' .grad are views into it
    at::Tensor host_shard;    // offload_optimizer: (S) fp32 copy of `shard` in host memory; AdamW updates it
    at::Tensor host_grad;     // offload_optimizer: (S) host copy of shard_grad, host_shard's .grad
    bool materialized = true; // full's bytes are alive and hold the parameters
    CommWorkPtr gather;       // all-gather in flight into `full`
    int pending_grads = 0;    // parameters whose gradient is not ready yet this microbatch

    // The tensor AdamW updates (its state is keyed by it): the host copy when offloaded.
    [[nodiscard]] const at::Tensor& optimizedShard() const {
        return host_shard.defined() ? host_shard : shard;
    }
};

// Groups parameters by unit (units 0..k in order, then the root unit -1 if
// any parameter belongs to it), copies each unit's values into its flat
// `full` vector and makes the parameters views into it.
[[nodiscard]] std::vector<FlatUnit> buildFlatUnits(std::vector<NamedParameter>& params,
                                                   const std::vector<int>& unit_of_param, int shards,
                                                   int shard_rank);

// Free / re-allocate the bytes behind a tensor's storage (shared by its views).
void releaseStorage(const at::Tensor& t);
void allocateStorage(const at::Tensor& t); // to t.numel() elements

[[nodiscard]] int64_t storageNbytes(const at::Tensor& t);

} // namespace dt
