// fuzz_decoders.cpp: a seeded mutation fuzzer for every decoder of outside
// input in dtcore, meant to run under AddressSanitizer and UBSan (the
// "sanitize" preset) and, more briefly, in the plain build.
//
//   fuzz_decoders TARGET ITERATIONS SEED CORPUS_DIR [OUT_DIR]
//   TARGET   scenario | expression | recording | lighthouse | store | json | all
//
// Steps, per target:
//   1. Seeds: the corpus files of CORPUS_DIR/<target>/ (the inputs kept from
//      earlier findings), plus what the tree itself provides: every
//      scenarios/*.toml and tests/regression/scenarios/*.toml (scenario), the
//      same scenarios as JSON (json), their [[checks]] expressions
//      (expression), a small recording written here (recording), a QUORUM
//      line and a STATUS JSON (lighthouse), one request of each kind
//      (store: the op code, then the body).
//   2. Each iteration picks a seed and applies 1..8 mutations (flip a bit, set
//      a byte to an interesting value, insert, delete, duplicate a range,
//      splice in part of another seed, truncate), from a std::mt19937_64
//      seeded with SEED: a failure replays exactly.
//   3. The input goes to the decoder. A refusal (any std::exception: dtlab
//      throws UsageError with file:line:column) is the expected outcome for
//      bad input; what is accepted is used further (a parsed scenario is
//      validated and printed to JSON and back; a loaded recording is turned
//      into a summary and a Chrome trace; a decoded store request must encode
//      to the same bytes) so that what a decoder lets through is exercised too.
//   4. A crash, a sanitizer report or a non-std exception ends the process:
//      the input that caused it is in OUT_DIR/last-<target> (written before
//      each try), to keep as a regression input under tests/fuzz/corpus.
// Prints, per target: iterations, accepted, refused.
#include "dtlab/closing_check.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/lighthouse.hpp"
#include "dtlab/recording.hpp"
#include "dtlab/scenario.hpp"
#include "dtlab/summary.hpp"
#include "ft/lighthouse_detail.hpp"
#include "store/store_protocol.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::string readAll(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

void writeAll(const fs::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
}

std::vector<std::string> filesIn(const fs::path& dir, const std::string& extension = "") {
    std::vector<std::string> out;
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        return out;
    std::vector<fs::path> paths;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.is_regular_file() && (extension.empty() || entry.path().extension() == extension))
            paths.push_back(entry.path());
    std::sort(paths.begin(), paths.end()); // the same order everywhere: SEED replays
    for (const auto& p : paths)
        out.push_back(readAll(p));
    return out;
}

class Mutator {
  public:
    explicit Mutator(uint64_t seed) : m_rng(seed) {}

    std::string mutate(const std::vector<std::string>& seeds) {
        std::string s = seeds[pick(seeds.size())];
        const size_t count = 1 + pick(8);
        for (size_t i = 0; i < count; ++i)
            mutateOnce(s, seeds);
        return s;
    }

  private:
    size_t pick(size_t n) { return n == 0 ? 0 : size_t(m_rng() % n); }

    void mutateOnce(std::string& s, const std::vector<std::string>& seeds) {
        static const char kInteresting[] = {'\0', '\xff', '(', ')', '-', '\n', '"', '[', ']', '=',
                                            '.',  'e',    '9', '0', '#', '\\', '{', '}', ',', ' '};
        switch (pick(7)) {
        case 0: // flip a bit
            if (!s.empty())
                s[pick(s.size())] ^= char(1u << pick(8));
            break;
        case 1: // an interesting byte
            if (!s.empty())
                s[pick(s.size())] = kInteresting[pick(sizeof(kInteresting))];
            break;
        case 2: { // insert a few random bytes
            std::string bytes(1 + pick(8), '\0');
            for (char& c : bytes)
                c = char(m_rng());
            s.insert(pick(s.size() + 1), bytes);
            break;
        }
        case 3: // delete a range
            if (!s.empty()) {
                const size_t at = pick(s.size());
                s.erase(at, 1 + pick(std::min<size_t>(64, s.size() - at)));
            }
            break;
        case 4: // duplicate a range many times (deep nesting, long lines)
            if (!s.empty() && s.size() < (1u << 20)) {
                const size_t at = pick(s.size());
                const std::string part = s.substr(at, 1 + pick(8));
                std::string repeated;
                for (size_t k = 0, n = 1 + pick(2000); k < n; ++k)
                    repeated += part;
                s.insert(at, repeated);
            }
            break;
        case 5: { // splice in part of another seed
            const std::string& other = seeds[pick(seeds.size())];
            if (!other.empty()) {
                const size_t from = pick(other.size());
                s.insert(pick(s.size() + 1), other.substr(from, 1 + pick(256)));
            }
            break;
        }
        default: // truncate
            if (!s.empty())
                s.resize(pick(s.size()));
            break;
        }
    }

    std::mt19937_64 m_rng;
};

struct Tally {
    long iterations = 0, accepted = 0, refused = 0;
};

// One decoder: returns normally when the input was accepted; throws a
// std::exception when it was refused.
using Decoder = std::function<void(const std::string&)>;

Tally fuzz(const std::string& name, const std::vector<std::string>& seeds, const Decoder& decode,
           long iterations, uint64_t seed, const fs::path& out_dir) {
    Tally t;
    if (seeds.empty()) {
        std::cerr << "fuzz_decoders: " << name << ": no seeds\n";
        std::exit(2);
    }
    Mutator mutator(seed);
    const fs::path last = out_dir / ("last-" + name);
    for (long i = 0; i < iterations; ++i) {
        const std::string input = i < long(seeds.size()) ? seeds[size_t(i)] : mutator.mutate(seeds);
        writeAll(last, input); // a crash leaves it here
        ++t.iterations;
        try {
            decode(input);
            ++t.accepted;
        } catch (const std::exception&) {
            ++t.refused;
        }
        // Anything else (not a std::exception) escapes main and fails the run.
    }
    std::error_code ec;
    fs::remove(last, ec);
    std::cout << "fuzz_decoders: " << name << ": " << t.iterations << " iterations, " << t.accepted
              << " accepted, " << t.refused << " refused (seed " << seed << ")\n";
    return t;
}

// A small real recording: two ranks, a few events of every phase, a log.
std::string sampleRecording(const fs::path& dir) {
    dt::RunRecord r;
    r.scenario = dt::parseScenarioText("[scenario]\nname = \"fuzz\"\n[topology]\nranks = 2\n", "fuzz.toml");
    r.t_start_ns = 1'000'000'000;
    r.t_end_ns = 3'000'000'000;
    r.ok = true;
    for (int rank = 0; rank < 2; ++rank) {
        dt::RankInfo info;
        info.rank = rank;
        info.pid = 100 + rank;
        info.started = info.exited = true;
        info.exit_code = 0;
        r.ranks.push_back(info);
        for (int step = 0; step < 3; ++step) {
            dt::Event e;
            e.rank = rank;
            e.step = step;
            e.t_ns = r.t_start_ns + step * 100'000'000;
            e.kind = dt::EventKind::Step;
            e.phase = dt::EventPhase::Span;
            e.dur_ns = 90'000'000;
            r.events.push_back(e);
            e.kind = dt::EventKind::AllReduce;
            e.phase = dt::EventPhase::WorkStarted;
            e.seq = uint64_t(step);
            e.bytes = 4096;
            e.group_size = 2;
            r.events.push_back(e);
            e.phase = dt::EventPhase::WorkCompleted;
            e.t_ns += 1'000'000;
            r.events.push_back(e);
            e.kind = dt::EventKind::LossValue;
            e.phase = dt::EventPhase::Counter;
            e.value = 4.0 - step * 0.1;
            r.events.push_back(e);
        }
        dt::Event sum;
        sum.rank = rank;
        sum.step = 2;
        sum.kind = dt::EventKind::ParamsChecksum;
        sum.phase = dt::EventPhase::Instant;
        sum.seq = 0xabcdef;
        r.events.push_back(sum);
    }
    r.logs.push_back({r.t_start_ns, 0, dt::LogLevel::Warning, "a log line"});
    const fs::path path = dir / "sample.dtrec";
    dt::writeRecording(r, path.string());
    return readAll(path);
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 5) {
        std::cerr << "usage: fuzz_decoders TARGET ITERATIONS SEED CORPUS_DIR [OUT_DIR]\n"
                     "  TARGET: scenario | expression | recording | lighthouse | store | json | all\n";
        return 2;
    }
    const std::string target = argv[1];
    const long iterations = std::atol(argv[2]);
    const uint64_t seed = std::strtoull(argv[3], nullptr, 10);
    const fs::path corpus = argv[4];
    const fs::path out_dir = argc > 5 ? fs::path(argv[5]) : fs::temp_directory_path();
    fs::create_directories(out_dir);
    const fs::path source = corpus.parent_path().parent_path().parent_path(); // tests/fuzz/corpus -> the tree
    const auto want = [&](const char* name) { return target == "all" || target == name; };
    bool ran = false;

    // What the tree provides: every shipped and regression scenario.
    std::vector<std::string> toml_seeds = filesIn(corpus / "scenario");
    std::vector<dt::Scenario> scenarios;
    for (const auto& dir : {source / "scenarios", source / "tests/regression/scenarios"})
        for (auto& text : filesIn(dir, ".toml")) {
            try {
                scenarios.push_back(dt::parseScenarioText(text, "seed.toml"));
            } catch (const std::exception&) {
            }
            toml_seeds.push_back(std::move(text));
        }
    const fs::path recording_file = out_dir / "fuzz.dtrec";
    const std::string recording = sampleRecording(out_dir);
    dt::RunRecord sample_record = dt::readRecording((out_dir / "sample.dtrec").string()).record;
    const std::string summary = dt::summaryJson(sample_record);

    if (want("scenario")) { // TOML -> Scenario (validated) -> JSON -> Scenario
        fuzz(
            "scenario", toml_seeds,
            [](const std::string& text) {
                const dt::Scenario s = dt::parseScenarioText(text, "fuzz.toml");
                (void)dt::scenarioFromJson(dt::scenarioToJson(s));
            },
            iterations, seed, out_dir);
        ran = true;
    }
    if (want("expression")) { // [[checks]] expect, against a real summary
        std::vector<std::string> seeds = filesIn(corpus / "expression");
        for (const dt::Scenario& s : scenarios)
            for (const auto& check : s.checks)
                seeds.push_back(check.expect);
        fuzz(
            "expression", seeds,
            [&](const std::string& expect) {
                if (dt::findCheckSyntaxProblem(expect, true))
                    throw std::runtime_error("syntax");
                (void)dt::evaluateCheck(expect, summary, summary);
            },
            iterations, seed, out_dir);
        ran = true;
    }
    if (want("recording")) { // bytes -> RunRecord -> summary and trace
        std::vector<std::string> seeds = filesIn(corpus / "recording");
        seeds.push_back(recording);
        fuzz(
            "recording", seeds,
            [&](const std::string& bytes) {
                writeAll(recording_file, bytes);
                const dt::RecordingLoad load = dt::readRecording(recording_file.string());
                (void)dt::summaryJson(load.record);
                std::ostringstream trace;
                dt::writeChromeTrace(load.record, trace);
            },
            iterations, seed, out_dir);
        ran = true;
    }
    if (want("lighthouse")) { // the QUORUM line and the STATUS JSON a client reads
        std::vector<std::string> seeds = filesIn(corpus / "lighthouse");
        dt::ft::Quorum q;
        q.quorum_id = 3;
        q.highest_step = 41;
        for (int r = 0; r < 3; ++r) {
            dt::ft::QuorumMember m;
            m.replica = r;
            m.incarnation = r;
            m.step = 40 + r;
            m.address = r == 1 ? "" : "127.0.0.1:4000" + std::to_string(r);
            q.members.push_back(m);
        }
        seeds.push_back(dt::ft::formatQuorumLine(q));
        dt::ft::LighthouseStatus status;
        status.running = true;
        status.quorum_id = 3;
        status.quorum_members = q.members;
        status.last_reason = "fast path";
        seeds.push_back(dt::ft::statusToJson(status));
        fuzz(
            "lighthouse", seeds,
            [](const std::string& line) {
                dt::ft::Quorum parsed;
                if (dt::ft::parseQuorumLine(line, parsed)) {
                    (void)dt::ft::formatQuorumLine(parsed);
                    return;
                }
                (void)dt::ft::statusFromJson(line); // throws std::runtime_error on anything else
            },
            iterations, seed, out_dir);
        ran = true;
    }
    if (want("store")) { // a rendezvous-store request: u32 op, then its body
        std::vector<std::string> seeds = filesIn(corpus / "store");
        using dt::store::Op;
        for (const dt::store::Request& r :
             std::vector<dt::store::Request>{{Op::Set, {"dtlab/scenario"}, "{}", {}, 0},
                                             {Op::CompareSet, {"k"}, "", "v", 0},
                                             {Op::Get, {"dtlab/world"}, {}, {}, 60000},
                                             {Op::Add, {"dtlab/ft/started"}, {}, {}, 1},
                                             {Op::Delete, {"k"}, {}, {}, 0},
                                             {Op::Check, {"a", "b"}, {}, {}, 0},
                                             {Op::NumKeys, {}, {}, {}, 0},
                                             {Op::Wait, {"a", "b", "c"}, {}, {}, 500}}) {
            const std::string frame = dt::store::encodeRequest(r);
            seeds.push_back(frame.substr(0, 4) + frame.substr(8)); // the op code, then the body
        }
        fuzz(
            "store", seeds,
            [](const std::string& bytes) {
                if (bytes.size() < 4)
                    throw std::runtime_error("short");
                uint32_t code = 0;
                std::memcpy(&code, bytes.data(), 4);
                std::string why;
                const auto request = dt::store::decodeRequest(code, bytes.substr(4), why);
                if (!request)
                    throw std::runtime_error(why);
                // What decodes must encode to the same bytes.
                const std::string frame = dt::store::encodeRequest(*request);
                if (frame.substr(8) != bytes.substr(4))
                    std::abort();
            },
            iterations, seed, out_dir);
        ran = true;
    }
    if (want("json")) { // a scenario as JSON (a recording's META)
        std::vector<std::string> seeds = filesIn(corpus / "json");
        for (const dt::Scenario& s : scenarios)
            seeds.push_back(dt::scenarioToJson(s));
        fuzz(
            "json", seeds,
            [](const std::string& json) {
                const dt::Scenario s = dt::scenarioFromJson(json);
                dt::validateRecordedScenario(s);
            },
            iterations, seed, out_dir);
        ran = true;
    }
    if (!ran) {
        std::cerr << "fuzz_decoders: unknown target '" << target << "'\n";
        return 2;
    }
    return 0;
}
