// fashion_mnist.cpp: Fashion-MNIST images from Debian's dataset-fashion-mnist.
//
// Files: train-images-idx3-ubyte.gz (magic 2051, n, 28, 28, then n*784 bytes)
// and train-labels-idx1-ubyte.gz (magic 2049, n, then n bytes), big-endian
// headers, read through zlib. Sample g is image sampleHash(seed, g) mod n;
// pixels scaled to [0,1]: inputs (B,784) float32, targets (B) int64.
#include "data/data_source.hpp"

#include "dtlab/errors.hpp"

#include <cstring>
#include <zlib.h>

namespace dt {
namespace {

std::vector<uint8_t> readGzip(const std::string& path) {
    gzFile file = gzopen(path.c_str(), "rb");
    if (!file)
        throw UsageError("cannot open '" + path +
                         "' (install Debian's dataset-fashion-mnist or set [data] path)");
    std::vector<uint8_t> out;
    uint8_t buffer[1 << 16];
    int n = 0;
    while ((n = gzread(file, buffer, sizeof(buffer))) > 0)
        out.insert(out.end(), buffer, buffer + n);
    const bool failed = n < 0;
    gzclose(file);
    if (failed)
        throw UsageError("'" + path + "' is not a readable gzip file");
    return out;
}

uint32_t bigEndian32(const std::vector<uint8_t>& bytes, size_t at) {
    return uint32_t(bytes[at]) << 24 | uint32_t(bytes[at + 1]) << 16 | uint32_t(bytes[at + 2]) << 8 |
           bytes[at + 3];
}

class FashionMnist final : public DataSource {
  public:
    FashionMnist(const std::string& dir, uint64_t seed) : m_seed(seed) {
        const std::string image_path = dir + "/train-images-idx3-ubyte.gz";
        const std::string label_path = dir + "/train-labels-idx1-ubyte.gz";
        m_images = readGzip(image_path);
        m_labels = readGzip(label_path);
        if (m_images.size() < 16 || bigEndian32(m_images, 0) != 2051)
            throw UsageError("'" + image_path + "' is not an idx3 image file (magic 2051)");
        if (m_labels.size() < 8 || bigEndian32(m_labels, 0) != 2049)
            throw UsageError("'" + label_path + "' is not an idx1 label file (magic 2049)");
        m_count = bigEndian32(m_images, 4);
        if (bigEndian32(m_images, 8) != 28 || bigEndian32(m_images, 12) != 28 ||
            m_images.size() != 16 + size_t(m_count) * 784 || bigEndian32(m_labels, 4) != m_count ||
            m_labels.size() != 8 + size_t(m_count))
            throw UsageError("Fashion-MNIST files in '" + dir + "' are truncated or do not match");
        if (m_count == 0) // a sample is image hash mod count
            throw UsageError("Fashion-MNIST files in '" + dir + "' hold no images: nothing to train on");
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

std::string defaultFashionMnistPath() {
    return "/usr/share/datasets/fashion-mnist";
}

std::unique_ptr<DataSource> makeFashionMnist(const std::string& dir, uint64_t seed) {
    return std::make_unique<FashionMnist>(dir, seed);
}

} // namespace dt
