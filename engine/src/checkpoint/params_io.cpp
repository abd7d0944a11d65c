// params_io.cpp: parameter files and checksums (format in the header).
#include "checkpoint/params_io.hpp"

#include "dtlab/atomic_file.hpp"

#include "dtlab/errors.hpp"
#include "dtlab/read_file.hpp"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

namespace dt {
namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t fnv1a(uint64_t h, const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < size; ++i)
        h = (h ^ p[i]) * kFnvPrime;
    return h;
}

struct Writer {
    std::string bytes;
    template <typename T> void put(const T& v) { bytes.append(reinterpret_cast<const char*>(&v), sizeof(T)); }
    void put(const void* data, size_t size) { bytes.append(static_cast<const char*>(data), size); }
};

struct Reader {
    const std::string& bytes;
    size_t at = 0;
    const std::string& path;
    void need(size_t n) {
        if (at + n > bytes.size())
            throw UsageError("parameter file '" + path + "' is truncated at byte " + std::to_string(at));
    }
    template <typename T> T get() {
        need(sizeof(T));
        T v;
        std::memcpy(&v, bytes.data() + at, sizeof(T));
        at += sizeof(T);
        return v;
    }
};

} // namespace

uint64_t parametersChecksum(const std::vector<NamedParameter>& params) {
    uint64_t h = kFnvOffset;
    for (const auto& p : params) {
        auto t = p.tensor.detach().contiguous();
        h = fnv1a(h, t.data_ptr(), t.nbytes());
    }
    return h;
}

void saveParameters(const std::string& path, const std::vector<NamedParameter>& params) {
    Writer w;
    w.put("DTPARAMS", 8);
    w.put(uint32_t(1));
    w.put(uint32_t(params.size()));
    for (const auto& p : params) {
        auto t = p.tensor.detach().contiguous().to(at::kFloat);
        w.put(uint32_t(p.name.size()));
        w.put(p.name.data(), p.name.size());
        w.put(uint32_t(t.dim()));
        for (auto d : t.sizes())
            w.put(int64_t(d));
        w.put(t.data_ptr(), t.nbytes());
    }
    w.put(fnv1a(kFnvOffset, w.bytes.data(), w.bytes.size()));
    // temp file, fsync, rename, fsync of the directory: a crash leaves the old file or the new one.
    writeFileAtomically(path, w.bytes);
}

std::vector<NamedParameter> loadParameters(const std::string& path) {
    // A directory, a device or a FIFO at the path is a UsageError, not an uncaught ios failure.
    const std::string bytes = readRegularFile(path, "parameter file");
    if (bytes.size() < 24 || std::memcmp(bytes.data(), "DTPARAMS", 8) != 0)
        throw UsageError("'" + path + "' is not a dtlab parameter file (no DTPARAMS header)");
    uint64_t stored = 0;
    std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
    if (fnv1a(kFnvOffset, bytes.data(), bytes.size() - 8) != stored)
        throw UsageError("parameter file '" + path + "' is corrupt or torn: checksum mismatch");
    Reader r{bytes, 8, path};
    const auto version = r.get<uint32_t>();
    if (version != 1)
        throw UsageError("parameter file '" + path + "' has version " + std::to_string(version) +
                         ", expected 1");
    const auto count = r.get<uint32_t>();
    std::vector<NamedParameter> out;
    for (uint32_t i = 0; i < count; ++i) {
        const auto name_len = r.get<uint32_t>();
        r.need(name_len);
        std::string name = bytes.substr(r.at, name_len);
        r.at += name_len;
        const auto ndim = r.get<uint32_t>();
        std::vector<int64_t> dims;
        int64_t numel = 1; // checked against what is left before anything is allocated
        for (uint32_t d = 0; d < ndim; ++d) {
            dims.push_back(r.get<int64_t>());
            if (dims.back() < 0 || (dims.back() > 0 && numel > int64_t(bytes.size()) / 4 / dims.back()))
                throw UsageError("parameter file '" + path + "': tensor '" + name + "' has a size (" +
                                 std::to_string(dims.back()) + ") larger than the file");
            numel *= dims.back();
        }
        auto t = at::empty(dims, at::kFloat);
        r.need(t.nbytes());
        std::memcpy(t.data_ptr(), bytes.data() + r.at, t.nbytes());
        r.at += t.nbytes();
        out.push_back({name, t});
    }
    return out;
}

NamedParameter runIdentity(const std::string& run_id) {
    at::Tensor t = at::empty({int64_t(run_id.size())}, at::kFloat);
    for (size_t i = 0; i < run_id.size(); ++i)
        t[int64_t(i)] = float(static_cast<unsigned char>(run_id[i]));
    return {kRunIdentityKey, t};
}

void checkRunIdentity(const std::vector<NamedParameter>& tensors, const std::string& meta_run_id,
                      const std::string& file) {
    for (const NamedParameter& p : tensors) {
        if (p.name != kRunIdentityKey)
            continue;
        const at::Tensor t = p.tensor.reshape({-1});
        std::string id;
        for (int64_t i = 0; i < t.numel() && i < 64; ++i) {
            const float c = t[i].item<float>();
            id += (c >= 32.0f && c < 127.0f) ? char(int(c)) : '?';
        }
        if (!meta_run_id.empty() && id != meta_run_id)
            throw UsageError("checkpoint file '" + file + "' was written by run " + id +
                             ", its checkpoint.json by run " + meta_run_id +
                             " (a file copied in from another run's checkpoint?)");
        return;
    }
}

} // namespace dt
