// data_files.hpp: the training data's files, read and checked without LibTorch,
// so that `dtrun check` (scenario validation) and the ranks' data sources
// apply the same rules: a scenario that passes the check cannot fail later on
// its data.
//
//   fortunes       a regular file, or a directory whose extension-less regular
//                  files are concatenated in sorted order; each byte & 0x7F is a
//                  token (0..127), so the model needs vocab >= 128; at least
//                  context + 2 bytes (one window of inputs and shifted targets).
//   fashion_mnist  train-images-idx3-ubyte.gz (magic 2051, n, 28, 28, n*784
//                  pixel bytes) and train-labels-idx1-ubyte.gz (magic 2049, n,
//                  n label bytes, each < 10), n > 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dt {

inline constexpr int kFortunesTokenCount = 128; // bytes & 0x7F
inline constexpr int kFashionMnistClasses = 10;

[[nodiscard]] std::string defaultFortunesPath();
[[nodiscard]] std::string defaultFashionMnistPath();

// The files of the corpus at `path` in the order they are concatenated; throws
// UsageError when `path` is neither a regular file nor a directory holding one.
[[nodiscard]] std::vector<std::string> fortunesFiles(const std::string& path);
// Their bytes & 0x7F, concatenated.
[[nodiscard]] std::vector<uint8_t> loadFortunesCorpus(const std::string& path);
// What would make the corpus at `path` unusable with windows of `context`
// tokens (reads file sizes only), or nothing.
[[nodiscard]] std::optional<std::string> fortunesProblem(const std::string& path, int context);

struct FashionMnistFiles {
    std::vector<uint8_t> images; // the whole idx3 file: 16-byte header, then count * 784 pixels
    std::vector<uint8_t> labels; // the whole idx1 file: 8-byte header, then count labels
    uint32_t count = 0;
};
// Reads and checks both files under `dir`; throws UsageError saying what is wrong.
[[nodiscard]] FashionMnistFiles loadFashionMnistFiles(const std::string& dir);

} // namespace dt
