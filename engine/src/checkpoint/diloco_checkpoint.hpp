// diloco_checkpoint.hpp: durable checkpoints of a DiLoCo run, which hold both
// copies of the model (DiLoCo, Alg. 1): the global parameters with the outer
// optimizer state, equal on every replica, and each replica's local
// parameters with its inner optimizer state.
//
// Layout, DIR/step-<S> (S = the last step it contains):
//   checkpoint.json        format "dtlab diloco checkpoint", version 1, step S,
//                          replicas N, fragments F, parameters P,
//                          fragment_numel [F], inner optimizer kind, model
//   outer.dtparams         "global.f<k>" and "momentum.f<k>" (P_k fp32 each)
//                          and "outer_steps" (F values): 8P + 4F bytes
//   replica-<r>.dtparams   replica r's inner state: AdamW "inner_state" in
//                          replica_state.hpp's layout (4 (3P + 2) bytes), or
//                          SGD "local" (4P bytes)
// All files use params_io's format (FNV-1a checksum over every byte).
// Saving: every replica writes its file into DIR/step-<S>.partial, a barrier,
// then replica 0 writes outer.dtparams and checkpoint.json and renames the
// directory: a crash leaves a .partial directory, never a torn step-<S>. A
// checkpoint is taken only when no pseudo-gradient is in flight
// ([diloco] sync_delay = 0), so it holds every applied outer step.
// Loading: same replicas and fragments as when saved.
#pragma once

#include "comm/communicator.hpp"

#include <ATen/Tensor.h>

#include <string>
#include <vector>

namespace torch::optim {
class Optimizer;
}

namespace dt {

struct Scenario;

struct DilocoOuterState {
    std::vector<at::Tensor> global;   // per fragment, flat fp32
    std::vector<at::Tensor> momentum; // per fragment, flat fp32
    std::vector<int> outer_steps;     // per fragment
};

// Every replica calls it (a collective: two barriers). Returns the bytes this replica wrote.
int64_t saveDilocoCheckpoint(const std::string& step_dir, int last_step, const Scenario& scenario,
                             const DilocoOuterState& outer, const std::vector<at::Tensor>& local_params,
                             torch::optim::Optimizer& inner, Communicator& comm);

// Fills `outer` (tensors of the right sizes already allocated), the local
// parameters and the inner optimizer of replica `rank`. Returns the last step.
int loadDilocoCheckpoint(const std::string& step_dir, const Scenario& scenario, DilocoOuterState& outer,
                         const std::vector<at::Tensor>& local_params, torch::optim::Optimizer& inner,
                         int rank, int64_t& bytes_read);

// checkpoint.json readable, the sizes fit the scenario, every file present
// with a good checksum, steps left to train. Throws UsageError naming the file.
void verifyDilocoCheckpoint(const std::string& step_dir, const Scenario& scenario);

} // namespace dt
