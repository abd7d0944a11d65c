// data_files.cpp: reading and checking the training data's files (rules in the header).
#include "data/data_files.hpp"

#include "dtlab/errors.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <sys/stat.h>
#include <zlib.h>

namespace dt {
namespace {

bool isRegularFile(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

int64_t fileSize(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 ? int64_t(st.st_size) : 0;
}

std::vector<uint8_t> readGzip(const std::string& path) {
    if (!isRegularFile(path))
        throw UsageError("cannot open '" + path +
                         "': not a regular file (install Debian's dataset-fashion-mnist or set [data] path)");
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

} // namespace

std::string defaultFortunesPath() {
    return "/usr/share/games/fortunes";
}

std::string defaultFashionMnistPath() {
    return "/usr/share/datasets/fashion-mnist";
}

std::vector<std::string> fortunesFiles(const std::string& path) {
    if (isRegularFile(path))
        return {path};
    DIR* dir = opendir(path.c_str());
    if (!dir)
        throw UsageError("cannot open the fortunes directory '" + path + "': " + std::strerror(errno) +
                         " (install Debian's 'fortunes' package or set [data] path to a text file or a "
                         "directory of them)");
    std::vector<std::string> names;
    while (dirent* entry = readdir(dir)) {
        std::string name = entry->d_name;
        if (name.empty() || name[0] == '.' || name.find('.') != std::string::npos)
            continue;
        if (isRegularFile(path + "/" + name))
            names.push_back(name);
    }
    closedir(dir);
    std::sort(names.begin(), names.end());
    if (names.empty())
        throw UsageError("no fortune text files found in '" + path + "'");
    std::vector<std::string> files;
    for (const auto& name : names)
        files.push_back(path + "/" + name);
    return files;
}

std::vector<uint8_t> loadFortunesCorpus(const std::string& path) {
    std::vector<uint8_t> corpus;
    for (const std::string& file : fortunesFiles(path)) {
        std::ifstream in(file, std::ios::binary);
        if (!in)
            throw UsageError("cannot read fortunes file '" + file + "': " + std::strerror(errno));
        std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        for (char c : bytes)
            corpus.push_back(uint8_t(c) & 0x7F);
    }
    return corpus;
}

std::optional<std::string> fortunesProblem(const std::string& path, int context) {
    try {
        int64_t bytes = 0;
        for (const std::string& file : fortunesFiles(path))
            bytes += fileSize(file);
        if (bytes < int64_t(context) + 2)
            return "the fortunes text at '" + path + "' has " + std::to_string(bytes) +
                   " bytes, fewer than [model] context + 2 = " + std::to_string(int64_t(context) + 2) +
                   " (one window of inputs and the targets shifted by one)";
    } catch (const UsageError& e) {
        return std::string(e.what());
    }
    return std::nullopt;
}

FashionMnistFiles loadFashionMnistFiles(const std::string& dir) {
    const std::string image_path = dir + "/train-images-idx3-ubyte.gz";
    const std::string label_path = dir + "/train-labels-idx1-ubyte.gz";
    FashionMnistFiles f;
    f.images = readGzip(image_path);
    f.labels = readGzip(label_path);
    if (f.images.size() < 16 || bigEndian32(f.images, 0) != 2051)
        throw UsageError("'" + image_path + "' is not an idx3 image file (magic 2051)");
    if (f.labels.size() < 8 || bigEndian32(f.labels, 0) != 2049)
        throw UsageError("'" + label_path + "' is not an idx1 label file (magic 2049)");
    f.count = bigEndian32(f.images, 4);
    if (bigEndian32(f.images, 8) != 28 || bigEndian32(f.images, 12) != 28 ||
        f.images.size() != 16 + size_t(f.count) * 784 || bigEndian32(f.labels, 4) != f.count ||
        f.labels.size() != 8 + size_t(f.count))
        throw UsageError("Fashion-MNIST files in '" + dir + "' are truncated or do not match");
    if (f.count == 0) // a sample is image hash mod count
        throw UsageError("Fashion-MNIST files in '" + dir + "' hold no images: nothing to train on");
    for (size_t i = 8; i < f.labels.size(); ++i)
        if (f.labels[i] >= kFashionMnistClasses)
            throw UsageError("'" + label_path + "': label " + std::to_string(f.labels[i]) + " of image " +
                             std::to_string(i - 8) + " is not a class 0.." +
                             std::to_string(kFashionMnistClasses - 1));
    return f;
}

} // namespace dt
