// test_params_io.cpp: parameter files (round trip, corruption and truncation
// refused with the reason) and the parameters checksum.
#include "checkpoint/params_io.hpp"

#include "dtlab/errors.hpp"
#include "dtlab/scenario.hpp"
#include "model/model.hpp"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace {

// A file path under the temp directory, removed when the test ends.
struct TempFile {
    explicit TempFile(const std::string& name)
        : path((fs::temp_directory_path() / ("dtlab-test-" + std::to_string(::getpid()) + "-" + name))
                   .string()) {}
    ~TempFile() {
        std::error_code ec;
        fs::remove(path, ec);
    }
    std::string path;
};

std::string readBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writeBytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
}

std::vector<dt::NamedParameter> someParameters() {
    at::manual_seed(21);
    return {{"embed.weight", at::randn({5, 3}, at::kFloat)},
            {"block0.bias", at::randn({7}, at::kFloat)},
            {"scalar", at::full({}, 2.5f, at::kFloat)},
            {"cube", at::randn({2, 3, 4}, at::kFloat)}};
}

std::string usageErrorText(const std::string& path) {
    try {
        (void)dt::loadParameters(path);
    } catch (const dt::UsageError& e) {
        return e.what();
    }
    FAIL("expected loadParameters to throw a UsageError");
    return "";
}

} // namespace

TEST_CASE("Parameter files round-trip and refuse damage", "[params]") {
    TempFile file("params.bin");
    const auto params = someParameters();
    dt::saveParameters(file.path, params);

    SECTION("a round trip keeps names, shapes and values") {
        const auto loaded = dt::loadParameters(file.path);
        REQUIRE(loaded.size() == params.size());
        for (size_t i = 0; i < params.size(); ++i) {
            CAPTURE(i);
            CHECK(loaded[i].name == params[i].name);
            CHECK(loaded[i].tensor.sizes() == params[i].tensor.sizes());
            CHECK(at::equal(loaded[i].tensor, params[i].tensor));
        }
        CHECK(dt::parametersChecksum(loaded) == dt::parametersChecksum(params));
    }

    SECTION("the file has the documented size: header, records, checksum") {
        size_t expected = 8 + 4 + 4 + 8;
        for (const auto& p : params)
            expected += 4 + p.name.size() + 4 + 8 * p.tensor.dim() + 4 * p.tensor.numel();
        CHECK(readBytes(file.path).size() == expected);
        CHECK(readBytes(file.path).substr(0, 8) == "DTPARAMS");
    }

    SECTION("a real model's parameters round-trip") {
        dt::ModelConfig c;
        c.context = 8;
        c.d_model = 16;
        c.layers = 1;
        c.heads = 2;
        const auto model_params = dt::makeModel(c, 9)->trainableParameters();
        TempFile model_file("model.bin");
        dt::saveParameters(model_file.path, model_params);
        const auto loaded = dt::loadParameters(model_file.path);
        REQUIRE(loaded.size() == model_params.size());
        CHECK(dt::parametersChecksum(loaded) == dt::parametersChecksum(model_params));
        for (size_t i = 0; i < loaded.size(); ++i)
            CHECK(loaded[i].name == model_params[i].name);
    }

    SECTION("one flipped byte anywhere is refused as corrupt") {
        const std::string good = readBytes(file.path);
        for (size_t at : {size_t(9), good.size() / 2, good.size() - 20, good.size() - 1}) {
            CAPTURE(at);
            std::string bad = good;
            bad[at] = char(bad[at] ^ 0x10);
            writeBytes(file.path, bad);
            const std::string why = usageErrorText(file.path);
            CHECK_THAT(why, Catch::Matchers::Contains("corrupt"));
            CHECK_THAT(why, Catch::Matchers::Contains(file.path));
        }
    }

    SECTION("a truncated file is refused") {
        const std::string good = readBytes(file.path);
        for (size_t keep : {good.size() - 1, good.size() - 8, good.size() / 2, size_t(30)}) {
            CAPTURE(keep);
            writeBytes(file.path, good.substr(0, keep));
            const std::string why = usageErrorText(file.path);
            CAPTURE(why);
            CHECK((why.find("corrupt") != std::string::npos || why.find("truncated") != std::string::npos));
            CHECK_THAT(why, Catch::Matchers::Contains(file.path));
        }
    }

    SECTION("a file that is not a parameter file, or none at all, is refused") {
        writeBytes(file.path, std::string(100, 'x'));
        CHECK_THAT(usageErrorText(file.path), Catch::Matchers::Contains("DTPARAMS"));
        writeBytes(file.path, "");
        CHECK_THROWS_AS(dt::loadParameters(file.path), dt::UsageError);
        CHECK_THAT(usageErrorText(file.path + ".missing"), Catch::Matchers::Contains(file.path + ".missing"));
    }

    SECTION("a directory or a device at the path is refused, not an uncaught ios failure") {
        // A shard path that is a directory once aborted dtrun with std::__ios_failure (issue 23).
        const std::string dir = file.path + ".dir";
        std::filesystem::create_directory(dir);
        CHECK(usageErrorText(dir) == "parameter file '" + dir + "' is a directory, not a file");
        std::filesystem::remove(dir);
        CHECK(usageErrorText("/dev/zero") == "parameter file '/dev/zero' is a device, not a file");
    }

    SECTION("a save into a missing directory is a UsageError") {
        CHECK_THROWS_AS(dt::saveParameters("/nonexistent/dtlab/params.bin", params), dt::UsageError);
    }
}

TEST_CASE("parametersChecksum sees every value", "[params]") {
    auto params = someParameters();
    const uint64_t before = dt::parametersChecksum(params);

    SECTION("equal parameters give equal checksums") {
        CHECK(dt::parametersChecksum(someParameters()) == before);
        std::vector<dt::NamedParameter> copy;
        for (const auto& p : params)
            copy.push_back({p.name, p.tensor.clone()});
        CHECK(dt::parametersChecksum(copy) == before);
    }

    SECTION("changing one value changes the checksum") {
        params[3].tensor.view({-1})[17].add_(1e-6f);
        CHECK(dt::parametersChecksum(params) != before);
    }

    SECTION("changing one value of a model parameter that requires grad changes it") {
        dt::ModelConfig c;
        c.context = 8;
        c.d_model = 16;
        c.layers = 1;
        c.heads = 2;
        auto model = dt::makeModel(c, 4);
        const auto model_params = model->trainableParameters();
        const uint64_t h0 = dt::parametersChecksum(model_params);
        model_params.back().tensor.detach().view({-1})[0].add_(0.5f); // shares storage with the parameter
        CHECK(dt::parametersChecksum(model->trainableParameters()) != h0);
    }

    SECTION("the order of parameters matters") {
        std::swap(params[0], params[1]);
        CHECK(dt::parametersChecksum(params) != before);
    }

    SECTION("a non-contiguous view checksums like its contiguous copy") {
        const std::vector<dt::NamedParameter> transposed{{"t", params[0].tensor.t()}};
        const std::vector<dt::NamedParameter> copied{{"t", params[0].tensor.t().contiguous()}};
        CHECK(dt::parametersChecksum(transposed) == dt::parametersChecksum(copied));
    }
}
