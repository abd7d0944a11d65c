// test_data.cpp: the data sources: the sharding rule (W ranks x batch B equals
// one rank x batch W*B), the fortunes windows against the corpus itself,
// Fashion-MNIST value ranges, errors for missing files, and pinned splitmix64.
#include "data/data_source.hpp"

#include "dtlab/errors.hpp"
#include "dtlab/scenario.hpp"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>
#include <zlib.h>

#include <filesystem>

#include <memory>
#include <string>
#include <tuple>
#include <unistd.h>
#include <vector>

using dt::DataConfig;
using dt::ModelConfig;

namespace {

constexpr uint64_t kSeed = 1234;

ModelConfig gptModel() {
    ModelConfig m;
    m.kind = "tiny_gpt";
    m.context = 16;
    return m;
}

ModelConfig mlpModel() {
    ModelConfig m;
    m.kind = "mlp";
    return m;
}

DataConfig dataConfig(const std::string& source, const std::string& path = "") {
    DataConfig d;
    d.source = source;
    d.path = path;
    return d;
}

// Rank r's batch (world W, batch B) against rows [r*B, (r+1)*B) of rank 0's
// batch in a world of one with batch W*B, for several steps and layouts.
void checkShardingRule(const dt::DataSource& source) {
    for (auto [world, batch, step] : std::vector<std::tuple<int, int, int64_t>>{
             {1, 4, 0}, {2, 3, 0}, {2, 3, 5}, {3, 2, 7}, {4, 1, 2}, {4, 5, 1000}}) {
        const auto whole = source.batch(step, 0, 1, world * batch);
        for (int rank = 0; rank < world; ++rank) {
            CAPTURE(world, batch, step, rank);
            const auto part = source.batch(step, rank, world, batch);
            CHECK(at::equal(part.inputs, whole.inputs.narrow(0, rank * batch, batch)));
            CHECK(at::equal(part.targets, whole.targets.narrow(0, rank * batch, batch)));
        }
    }
}

std::string missingPath() {
    return "/nonexistent/dtlab-test-data-" + std::to_string(::getpid());
}

} // namespace

TEST_CASE("splitmix64 gives the published values", "[data]") {
    SECTION("the first outputs of the seed-0 stream (Vigna's reference)") {
        // splitmix64(x) = mix(x + golden), so output k of the stream seeded with 0 is splitmix64(k * golden).
        const uint64_t golden = 0x9E3779B97F4A7C15ull;
        CHECK(dt::splitmix64(0) == 0xE220A8397B1DCDAFull);
        CHECK(dt::splitmix64(golden) == 0x6E789E6AA1B965F4ull);
        CHECK(dt::splitmix64(2 * golden) == 0x06C45D188009454Full);
    }

    SECTION("sampleHash is splitmix64 of the seeded index") {
        CHECK(dt::splitmix64(1) == 0x910A2DEC89025CC1ull);
        CHECK(dt::sampleHash(1, 5) == 0xB1441D254BD86CD7ull);
        CHECK(dt::sampleHash(1, 5) == dt::splitmix64(dt::splitmix64(1) ^ 5));
        CHECK(dt::sampleHash(1, 5) != dt::sampleHash(2, 5));
    }
}

TEST_CASE("Fortunes text batches", "[data]") {
    const auto model = gptModel();
    const auto source = dt::makeDataSource(dataConfig("fortunes"), model, kSeed);
    const int64_t T = model.context;

    SECTION("W ranks of batch B read the rows of one rank of batch W*B") {
        checkShardingRule(*source);
    }

    SECTION("shapes are (B,T) int64, tokens below 128, targets are inputs shifted by one") {
        const auto b = source->batch(3, 1, 2, 8);
        REQUIRE(b.inputs.sizes() == at::IntArrayRef({8, T}));
        REQUIRE(b.targets.sizes() == at::IntArrayRef({8, T}));
        CHECK(b.inputs.scalar_type() == at::kLong);
        CHECK(b.targets.scalar_type() == at::kLong);
        CHECK(b.inputs.min().item<int64_t>() >= 0);
        CHECK(b.inputs.max().item<int64_t>() < 128);
        CHECK(b.targets.max().item<int64_t>() < 128);
        CHECK(at::equal(b.inputs.narrow(1, 1, T - 1), b.targets.narrow(1, 0, T - 1)));
    }

    SECTION("each row is the corpus window the sample hash picks") {
        const auto corpus = dt::loadFortunesCorpus(dt::defaultFortunesPath());
        REQUIRE(corpus.size() > size_t(T) + 2);
        const uint64_t windows = corpus.size() - uint64_t(T) - 1;
        const int64_t step = 2, world = 3, rank = 1, B = 4;
        const auto b = source->batch(step, int(rank), int(world), int(B));
        const auto in = b.inputs.accessor<int64_t, 2>();
        const auto tg = b.targets.accessor<int64_t, 2>();
        for (int64_t j = 0; j < B; ++j) {
            const uint64_t g = uint64_t(step * world * B + rank * B + j);
            const uint64_t offset = dt::sampleHash(kSeed, g) % windows;
            for (int64_t t = 0; t < T; ++t) {
                CAPTURE(j, t);
                REQUIRE(in[j][t] == corpus[offset + uint64_t(t)]);
                REQUIRE(tg[j][t] == corpus[offset + uint64_t(t) + 1]);
            }
        }
    }

    SECTION("the corpus is 7-bit text and batches are deterministic") {
        const auto corpus = dt::loadFortunesCorpus(dt::defaultFortunesPath());
        bool all_7bit = true;
        for (uint8_t c : corpus)
            all_7bit = all_7bit && c < 128;
        CHECK(all_7bit);
        CHECK(at::equal(source->batch(9, 0, 2, 3).inputs, source->batch(9, 0, 2, 3).inputs));
        CHECK_FALSE(at::equal(source->batch(9, 0, 2, 3).inputs, source->batch(10, 0, 2, 3).inputs));
        const auto other_seed = dt::makeDataSource(dataConfig("fortunes"), model, kSeed + 1);
        CHECK_FALSE(at::equal(source->batch(0, 0, 1, 4).inputs, other_seed->batch(0, 0, 1, 4).inputs));
    }
}

TEST_CASE("Fashion-MNIST batches", "[data]") {
    const auto source = dt::makeDataSource(dataConfig("fashion_mnist"), mlpModel(), kSeed);

    SECTION("W ranks of batch B read the rows of one rank of batch W*B") {
        checkShardingRule(*source);
    }

    SECTION("images are (B,784) float in [0,1] in steps of 1/255, labels (B) in 0..9") {
        const auto b = source->batch(1, 0, 1, 64);
        REQUIRE(b.inputs.sizes() == at::IntArrayRef({64, 784}));
        REQUIRE(b.targets.sizes() == at::IntArrayRef({64}));
        CHECK(b.inputs.scalar_type() == at::kFloat);
        CHECK(b.targets.scalar_type() == at::kLong);
        CHECK(b.inputs.min().item<float>() >= 0.0f);
        CHECK(b.inputs.max().item<float>() <= 1.0f);
        const auto scaled = b.inputs * 255.0f;
        CHECK((scaled - scaled.round()).abs().max().item<float>() < 1e-3f);
        CHECK(b.inputs.max().item<float>() == 1.0f); // some pixel is saturated in 64 images
        CHECK(b.targets.min().item<int64_t>() >= 0);
        CHECK(b.targets.max().item<int64_t>() <= 9);
        // 64 draws from 10 balanced classes: seeing fewer than 5 classes is vanishingly unlikely
        CHECK(std::get<0>(at::_unique(b.targets)).numel() >= 5);
    }
}

TEST_CASE("A missing data path is a UsageError naming the path", "[data]") {
    const std::string path = missingPath();

    SECTION("fortunes") {
        try {
            (void)dt::makeDataSource(dataConfig("fortunes", path), gptModel(), kSeed);
            FAIL("expected a UsageError");
        } catch (const dt::UsageError& e) {
            CHECK_THAT(e.what(), Catch::Matchers::Contains(path));
        }
        CHECK_THROWS_AS(dt::loadFortunesCorpus(path), dt::UsageError);
    }

    SECTION("fashion_mnist") {
        try {
            (void)dt::makeDataSource(dataConfig("fashion_mnist", path), mlpModel(), kSeed);
            FAIL("expected a UsageError");
        } catch (const dt::UsageError& e) {
            CHECK_THAT(e.what(), Catch::Matchers::Contains(path));
        }
    }

    SECTION("an unknown source") {
        CHECK_THROWS_AS(dt::makeDataSource(dataConfig("imagenet"), gptModel(), kSeed), dt::UsageError);
    }
}

TEST_CASE("A Fashion-MNIST source with 0 images is a UsageError, not a division by zero", "[data]") {
    // Well-formed idx files that hold no image (this once killed a rank with SIGFPE).
    char tmpl[] = "/tmp/dtlab-fmnist-XXXXXX";
    const std::string dir = ::mkdtemp(tmpl);
    const auto writeGzip = [&](const std::string& name, const std::vector<uint8_t>& bytes) {
        gzFile file = gzopen((dir + "/" + name).c_str(), "wb");
        REQUIRE(file != nullptr);
        gzwrite(file, bytes.data(), unsigned(bytes.size()));
        gzclose(file);
    };
    writeGzip("train-images-idx3-ubyte.gz",
              {0, 0, 8, 3, 0, 0, 0, 0, 0, 0, 0, 28, 0, 0, 0, 28});     // magic 2051, 0 images
    writeGzip("train-labels-idx1-ubyte.gz", {0, 0, 8, 1, 0, 0, 0, 0}); // magic 2049, 0 labels
    try {
        (void)dt::makeDataSource(dataConfig("fashion_mnist", dir), mlpModel(), kSeed);
        FAIL("expected a UsageError");
    } catch (const dt::UsageError& e) {
        CHECK(std::string(e.what()) ==
              "Fashion-MNIST files in '" + dir + "' hold no images: nothing to train on");
    }
    std::filesystem::remove_all(dir);
}
