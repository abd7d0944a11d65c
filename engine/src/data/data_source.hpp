// data_source.hpp: where a rank's batches come from.
//
// Sharding rule (what makes "4 ranks x batch B" equal "1 rank x batch 4B"):
// the run is one global stream of samples; global sample g of step s is
//   g = s * (world * B) + rank * B + j      for j in [0, B)
// and sample g is drawn from a seeded hash of (seed, g). So every rank reads
// its own deterministic shard, and the union over ranks does not depend on
// the world size.
#pragma once

#include "data/data_files.hpp"

#include <ATen/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dt {

struct DataConfig;
struct ModelConfig;

struct Batch {
    at::Tensor inputs;  // tiny_gpt: (B,T) int64 tokens; mlp: (B,784) float32
    at::Tensor targets; // tiny_gpt: (B,T) int64;        mlp: (B) int64 labels
};

class DataSource {
  public:
    virtual ~DataSource() = default;
    // The batch of `rank` at `step`, world ranks of `batch_per_rank` samples each.
    [[nodiscard]] virtual Batch batch(int64_t step, int rank, int world, int batch_per_rank) const = 0;
    [[nodiscard]] virtual std::string describe() const = 0;
};

// splitmix64: a tiny, well-mixed hash; the sample picker.
[[nodiscard]] uint64_t splitmix64(uint64_t x);
[[nodiscard]] uint64_t sampleHash(uint64_t seed, uint64_t global_index);

// The bytes of Debian's `fortunes` text (every file without an extension in
// the directory), each byte masked to 7 bits so the vocabulary is 128.

[[nodiscard]] std::unique_ptr<DataSource> makeDataSource(const DataConfig& data, const ModelConfig& model,
                                                         uint64_t seed);

} // namespace dt
