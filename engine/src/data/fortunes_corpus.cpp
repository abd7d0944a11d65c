// fortunes_corpus.cpp: character-level text windows from Debian's `fortunes`.
//
// Corpus: every regular file without an extension under the fortunes
// directory (skipping the .dat index and .u8 copies), concatenated in sorted
// order, each byte & 0x7F (vocab 128). Sample g is the window starting at
// offset sampleHash(seed, g) mod (N - T - 1): inputs = bytes [o, o+T),
// targets = bytes [o+1, o+T+1).
#include "data/data_files.hpp"
#include "data/data_source.hpp"

#include "dtlab/errors.hpp"
#include "dtlab/scenario.hpp"

namespace dt {
namespace {

class FortunesText final : public DataSource {
  public:
    FortunesText(std::vector<uint8_t> corpus, int context, uint64_t seed)
        : m_corpus(std::move(corpus)), m_context(context), m_seed(seed) {
        if (m_corpus.size() < size_t(context) + 2)
            throw UsageError("the fortunes corpus has " + std::to_string(m_corpus.size()) +
                             " bytes, fewer than context + 2 = " + std::to_string(context + 2));
    }

    Batch batch(int64_t step, int rank, int world, int B) const override {
        const int64_t T = m_context;
        auto inputs = at::empty({B, T}, at::kLong);
        auto targets = at::empty({B, T}, at::kLong);
        int64_t* in = inputs.data_ptr<int64_t>();
        int64_t* tg = targets.data_ptr<int64_t>();
        const uint64_t windows = m_corpus.size() - uint64_t(T) - 1;
        for (int j = 0; j < B; ++j) {
            const uint64_t g = uint64_t(step) * uint64_t(world) * uint64_t(B) + uint64_t(rank) * B + j;
            const uint64_t offset = sampleHash(m_seed, g) % windows;
            for (int64_t t = 0; t < T; ++t) {
                in[j * T + t] = m_corpus[offset + t];
                tg[j * T + t] = m_corpus[offset + t + 1];
            }
        }
        return {inputs, targets};
    }

    std::string describe() const override {
        return "fortunes text, " + std::to_string(m_corpus.size()) + " bytes";
    }

  private:
    std::vector<uint8_t> m_corpus;
    int m_context;
    uint64_t m_seed;
};

} // namespace

uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

uint64_t sampleHash(uint64_t seed, uint64_t global_index) {
    return splitmix64(splitmix64(seed) ^ global_index);
}

std::unique_ptr<DataSource> makeFashionMnist(const std::string& dir, uint64_t seed);

std::unique_ptr<DataSource> makeDataSource(const DataConfig& data, const ModelConfig& model, uint64_t seed) {
    if (data.source == "fortunes") {
        const std::string path = data.path.empty() ? defaultFortunesPath() : data.path;
        return std::make_unique<FortunesText>(loadFortunesCorpus(path), model.context, seed);
    }
    if (data.source == "fashion_mnist")
        return makeFashionMnist(data.path.empty() ? defaultFashionMnistPath() : data.path, seed);
    throw UsageError("unknown data source '" + data.source + "'");
}

} // namespace dt
