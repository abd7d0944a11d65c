// fashion_mnist.cpp: Fashion-MNIST images from Debian's dataset-fashion-mnist.
//
// Files: train-images-idx3-ubyte.gz (magic 2051, n, 28, 28, then n*784 bytes)
// and train-labels-idx1-ubyte.gz (magic 2049, n, then n bytes), big-endian
// headers, read and checked by data_files.cpp. Sample g is image sampleHash(seed, g) mod n;
// pixels scaled to [0,1]: inputs (B,784) float32, targets (B) int64.
#include "data/data_files.hpp"
#include "data/data_source.hpp"

#include "dtlab/errors.hpp"

namespace dt {
namespace {

class FashionMnist final : public DataSource {
  public:
    FashionMnist(const std::string& dir, uint64_t seed) : m_seed(seed) {
        FashionMnistFiles files = loadFashionMnistFiles(dir); // checked: n > 0, 28 x 28, labels < 10
        m_images = std::move(files.images);
        m_labels = std::move(files.labels);
        m_count = files.count;
    }

    Batch batch(int64_t step, int rank, int world, int B) const override {
        auto inputs = at::empty({B, 784}, at::kFloat);
        auto targets = at::empty({B}, at::kLong);
        float* x = inputs.data_ptr<float>();
        int64_t* y = targets.data_ptr<int64_t>();
        for (int j = 0; j < B; ++j) {
            const uint64_t g = uint64_t(step) * uint64_t(world) * uint64_t(B) + uint64_t(rank) * B + j;
            const uint64_t index = sampleHash(m_seed, g) % m_count;
            const uint8_t* pixels = m_images.data() + 16 + index * 784;
            for (int p = 0; p < 784; ++p)
                x[j * 784 + p] = pixels[p] / 255.0f;
            y[j] = m_labels[8 + index];
        }
        return {inputs, targets};
    }

    std::string describe() const override { return "Fashion-MNIST, " + std::to_string(m_count) + " images"; }

  private:
    std::vector<uint8_t> m_images, m_labels;
    uint32_t m_count = 0;
    uint64_t m_seed;
};

} // namespace

std::unique_ptr<DataSource> makeFashionMnist(const std::string& dir, uint64_t seed) {
    return std::make_unique<FashionMnist>(dir, seed);
}

} // namespace dt
