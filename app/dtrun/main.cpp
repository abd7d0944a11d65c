// dtrun: dtlab's command line.
//
//   dtrun run SCENARIO.toml [--ranks N] [--steps N] [--trace FILE] [--summary FILE] [--check] ...
//       Runs a scenario headless: starts a Session with N rank processes,
//       shows a progress line, writes the trace and the summary, and prints
//       the scenario's closing checks (--check also runs their baselines and
//       exits 1 when one fails).
//   dtrun check SCENARIO.toml
//       Parses and validates a scenario; prints what it would run.
//   dtrun lighthouse [--listen HOST] [--port P] [--min-replicas N] ...
//       The quorum server of fault-tolerant training on its own (a scenario
//       names it with [fault_tolerance] lighthouse = "HOST:PORT").
//   dtrun worker [--rank R --world N] [--join HOST:PORT]
//       One rank. Started by a Session, by mpirun, or by torchrun-style
//       variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT).
//
// Exit codes: 0 success; 1 the run failed (a rank died or failed); 2 usage
// error (bad flag, bad scenario, unwritable output): nothing was started.
#include "progress_line.hpp"

#include "dtlab/atomic_file.hpp"
#include "dtlab/checkpoint.hpp"
#include "dtlab/closing_check.hpp"
#include "dtlab/errors.hpp"
#include "dtlab/exercise.hpp"
#include "dtlab/hung_collectives.hpp"
#include "dtlab/lighthouse.hpp"
#include "dtlab/recording.hpp"
#include "dtlab/recovery_measure.hpp"
#include "dtlab/scenario.hpp"
#include "dtlab/session.hpp"
#include "dtlab/summary.hpp"
#include "dtlab/worker.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace {

// CLI11 validators see the text before it becomes a number: they refuse what
// the conversion would let through (NaN passes "> 0"; a seed past 2^63 is
// clamped into an int64 without a word).
CLI::Validator finitePositiveAtMost(double most) {
    return CLI::Validator(
        [most](std::string& text) -> std::string {
            char* end = nullptr;
            const double value = std::strtod(text.c_str(), &end);
            if (text.empty() || *end != '\0' || !std::isfinite(value) || value <= 0.0 || value > most)
                return "expected a number > 0 and <= " + std::to_string(int64_t(most)) + ", got '" + text +
                       "'";
            return "";
        },
        "NUMBER in (0, " + std::to_string(int64_t(most)) + "]");
}

CLI::Validator wholeNumberAtMostInt64Max() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            const bool digits =
                !text.empty() && text.size() <= 19 &&
                std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
            if (!digits || (text.size() == 19 && text > "9223372036854775807"))
                return "expected a whole number from 0 to 9223372036854775807, got '" + text + "'";
            return "";
        },
        "INT in [0, 2^63)");
}

std::atomic<int> g_interrupt{0};
void onSignal(int signo) {
    g_interrupt.store(signo);
}

std::string selfExecutable() {
    char buf[4096];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0)
        return "dtrun";
    buf[n] = 0;
    return buf;
}

// An output path must be in an existing directory, and what is already at
// it must be a regular file dtrun may replace: never a directory, a symlink
// (its target would not be what is written), a device or a FIFO, nor a file
// without write permission. Checked before anything starts.
void checkOutputPath(const std::string& flag, const std::string& path) {
    if (path.empty())
        return;
    const auto slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw dt::UsageError(flag + ": the directory '" + dir + "' of '" + path + "' does not exist");
    if (access(dir.c_str(), W_OK) != 0)
        throw dt::UsageError(flag + ": the directory '" + dir + "' is not writable");
    // A name the file system cannot hold would be found out only when the run ends, and lose its output.
    if (path.size() >= PATH_MAX)
        throw dt::UsageError(flag + ": the path is " + std::to_string(path.size()) +
                             " characters long; the longest a file system takes is " +
                             std::to_string(PATH_MAX - 1));
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    if (name.size() > NAME_MAX)
        throw dt::UsageError(flag + ": the file name is " + std::to_string(name.size()) +
                             " characters long; the longest a file system takes is " +
                             std::to_string(NAME_MAX));
    if (lstat(path.c_str(), &st) != 0)
        return; // a new file
    if (S_ISDIR(st.st_mode))
        throw dt::UsageError(flag + ": '" + path + "' is a directory, expected a file name");
    if (S_ISLNK(st.st_mode))
        throw dt::UsageError(flag + ": '" + path +
                             "' is a symbolic link; dtrun does not replace it (give the "
                             "path of a regular file)");
    if (!S_ISREG(st.st_mode))
        throw dt::UsageError(flag + ": '" + path +
                             "' is not a regular file (a device, FIFO or socket); dtrun "
                             "does not replace it");
    // By its mode bits too: root may write anything, but a file marked read-only is kept.
    if (access(path.c_str(), W_OK) != 0 || (st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0)
        throw dt::UsageError(flag + ": '" + path + "' is read-only; dtrun does not replace it");
}

// The same file, by device and inode (a path that does not exist yet is no file).
bool sameFile(const std::string& a, const std::string& b) {
    struct stat sa {
    }, sb{};
    return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

// Whether `path` is `input` (the same file) or lies under it (a directory of
// inputs: a data folder, a checkpoint), by canonical path.
bool isOrUnder(const std::string& path, const std::string& input) {
    if (path == input || sameFile(path, input))
        return true;
    std::error_code ec;
    const auto out = std::filesystem::weakly_canonical(path, ec);
    const auto in = std::filesystem::weakly_canonical(input, ec);
    if (ec || in.empty())
        return false;
    auto o = out.begin();
    for (auto i = in.begin(); i != in.end(); ++i, ++o)
        if (o == out.end() || *o != *i)
            return false;
    return true;
}

// Where the outputs and the run's inputs may clash: an output that is an
// input (the scenario, the token file, a data file, the checkpoint being
// resumed, or anything under an input directory), an output under a
// directory the ranks write into (`output_dirs`: --params-out, the run's
// checkpoint directory), or two outputs at one path (the second would
// replace the first).
void checkOutputsApart(const std::vector<dt::ScenarioInput>& inputs,
                       const std::vector<std::pair<std::string, std::string>>& outputs,
                       const std::vector<std::pair<std::string, std::string>>& output_dirs) {
    for (size_t i = 0; i < outputs.size(); ++i) {
        const auto& [flag, path] = outputs[i];
        if (path.empty())
            continue;
        for (const auto& input : inputs)
            if (!input.path.empty() && isOrUnder(path, input.path))
                throw dt::UsageError(
                    flag + ": '" + path + "' is " + input.what +
                    (path == input.path || sameFile(path, input.path) ? "" : " ('" + input.path + "')") +
                    "; dtrun does not replace it");
        for (const auto& [dir_what, dir] : output_dirs)
            if (!dir.empty() && isOrUnder(path, dir))
                throw dt::UsageError(flag + ": '" + path + "' is " + dir_what + " ('" + dir +
                                     "') or under it, which the ranks write into; give another path");
        for (size_t j = i + 1; j < outputs.size(); ++j) {
            const auto& [other_flag, other] = outputs[j];
            if (!other.empty() &&
                (other == path || sameFile(other, path) ||
                 std::filesystem::weakly_canonical(other) == std::filesystem::weakly_canonical(path)))
                throw dt::UsageError(flag + " and " + other_flag + " name the same file '" + path +
                                     "'; give each output its own path");
        }
    }
}

// "Flag not given" for the integer overrides; 0 is a value (and refused by validation).
constexpr int kNotGiven = std::numeric_limits<int>::min();

struct RunFlags {
    std::string scenario_path;
    int ranks = kNotGiven;
    int steps = kNotGiven;
    int batch_per_rank = kNotGiven;
    std::string overlap;
    std::string strategy;
    int replicas = kNotGiven;
    int microbatches = kNotGiven;
    std::string checkpoint_dir;
    std::string resume_from;
    std::string trace_path;
    std::string summary_path;
    std::string params_out;
    std::string record_path;
    std::string backend;
    std::string token_file;
    std::string listen_host = "127.0.0.1";
    int port = 0;
    bool external = false;
    double join_timeout_s = 60.0;
    bool no_telemetry = false;
    bool quiet = false;
    bool log = false; // every log line of the run, as it arrives
    bool check = false;
    double pace = 0.0;
    int64_t chaos_seed = -1;
};

dt::Scenario resolveScenario(const RunFlags& f) {
    dt::Scenario s = dt::loadScenarioFile(f.scenario_path);
    if (f.ranks != kNotGiven) {
        s.topology.ranks = f.ranks;
        dt::validateScenario(s, "--ranks");
    }
    if (f.steps != kNotGiven) {
        s.run.steps = f.steps;
        dt::validateScenario(s, "--steps");
    }
    if (f.batch_per_rank != kNotGiven) {
        s.data.batch_per_rank = f.batch_per_rank;
        dt::validateScenario(s, "--batch-per-rank");
    }
    if (!f.overlap.empty())
        s.strategy.overlap = f.overlap == "on";
    if (!f.strategy.empty()) {
        s.strategy.kind = dt::strategyKindFromOverride(f.strategy, "--strategy");
        dt::validateScenario(s, "--strategy");
    }
    if (f.replicas != kNotGiven) {
        s.topology.replicas = f.replicas;
        dt::validateScenario(s, "--replicas");
    }
    if (f.microbatches != kNotGiven) {
        s.strategy.microbatches = f.microbatches;
        dt::validateScenario(s, "--microbatches");
    }
    if (!f.checkpoint_dir.empty()) {
        s.run.checkpoint_dir = f.checkpoint_dir;
        dt::validateScenario(s, "--checkpoint-dir");
    }
    if (!f.resume_from.empty()) {
        s.run.resume_from = f.resume_from;
        dt::validateScenario(s, "--resume");
    }
    if (f.chaos_seed >= 0) {
        s.chaos.enabled = true;
        s.chaos.seed = uint64_t(f.chaos_seed);
        dt::validateScenario(s, "--chaos-seed");
    }
    if (!f.backend.empty()) {
        s.topology.backend = f.backend;
        dt::validateScenario(s, "--backend");
    }
    if (f.no_telemetry)
        s.telemetry.enabled = false;
    return s;
}

// The backend comparison's result: one line per (backend, op, size), then
// the fitted cost model per (backend, op).
// The collectives that never completed, with the ranks that never joined them
// (hung_collectives.hpp), as Flight Recorder's analyzer lists them after a hang.
void printHungCollectives(const dt::RunRecord& record) {
    const dt::HangQuery query = dt::hangQueryFor(record.scenario, record.t_end_ns, true);
    const auto hung =
        dt::findHungCollectives(dt::workPartsFromEvents(record.events),
                                dt::groupMembersFor(record.scenario, int(record.ranks.size())), query);
    for (const dt::HungCollective& h : hung)
        std::cerr << "  hung collective: " << h.diagnosis << "\n";
}

void printBusBandwidth(const dt::RunRecord& record) {
    const nlohmann::json j = nlohmann::json::parse(dt::summaryJson(record)).at("bus_bandwidth");
    std::fprintf(stderr, "  %-6s %-15s %10s %12s %12s\n", "backend", "op", "size", "time", "bus GB/s");
    for (const auto& p : j.at("points"))
        std::fprintf(stderr, "  %-6s %-15s %8.0f K %9.1f us %12.3f\n",
                     p.at("backend").get<std::string>().c_str(), p.at("op").get<std::string>().c_str(),
                     p.at("size_bytes").get<double>() / 1024, p.at("time_us").get<double>(),
                     p.at("bus_bandwidth_gbs").get<double>());
    for (const auto& m : j.at("cost_model"))
        std::fprintf(stderr, "  cost model (fit) %s %s: alpha %.1f us, bandwidth %.2f GB/s\n",
                     m.at("backend").get<std::string>().c_str(), m.at("op").get<std::string>().c_str(),
                     m.at("alpha_us").get<double>(), m.at("bandwidth_gbs").get<double>());
}

// Starts a Session and waits for its end, with the progress line on a
// terminal; the record goes to `out`, and where its recording went (when
// options.record_path is set) to `recording`. Returns 0, or 2 when the Session
// refused to start (usage error; the message is printed).
int runToEnd(const dt::SessionOptions& options, const RunFlags& f, const std::string& label,
             dt::RunRecord& out, dt::RecordingStatus* recording = nullptr) {
    const dt::Scenario& scenario = options.scenario;
    dt::Session session(options);
    try {
        session.start();
    } catch (const dt::UsageError& e) {
        std::cerr << "dtrun: " << e.what() << "\n";
        return dt::kExitUsage;
    }
    if (f.pace > 0)
        session.setPace(f.pace);
    if (f.external && !f.quiet)
        std::cerr << "dtrun: waiting for ranks to join at " << session.storeAddress() << "\n";
    const bool tty = isatty(STDERR_FILENO) && !f.quiet;
    const auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    size_t logs_printed = 0;
    const auto printNewLogs = [&] {
        std::vector<dt::LogRecord> logs;
        logs_printed = session.copyLogsSince(logs_printed, logs);
        for (const dt::LogRecord& log : logs)
            std::cerr << (tty ? "\r\033[K" : "") << "dtrun: " << label
                      << (log.rank >= 0 ? "rank " + std::to_string(log.rank) : std::string("session")) << ": "
                      << log.text << "\n";
    };
    while (!session.finished()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (const int signo = g_interrupt.load())
            session.stop(std::string("interrupted by ") + strsignal(signo));
        if (f.log)
            printNewLogs();
        if (tty)
            std::cerr << "\r\033[K" << label
                      << dt::formatProgressLine(session.progress(), scenario.run.steps, elapsed())
                      << std::flush;
    }
    if (tty)
        std::cerr << "\r\033[K";
    if (f.log)
        printNewLogs();
    out = session.snapshot();
    if (recording)
        *recording = session.recordingStatus();
    if (!f.quiet && out.ok)
        std::cerr << "dtrun: " << label
                  << "done: " << dt::formatProgressLine(session.progress(), scenario.run.steps, elapsed())
                  << ", " << int(elapsed() * 10) / 10.0 << " s\n";
    return 0;
}

int runCommand(const RunFlags& f) {
    dt::Scenario scenario;
    try {
        scenario = resolveScenario(f);
        if (!scenario.run.resume_from.empty()) {
            // A checkpoint directory resumes from its newest valid checkpoint.
            const dt::CheckpointChoice choice = dt::chooseCheckpoint(scenario.run.resume_from, scenario);
            for (const std::string& why : choice.skipped)
                std::cerr << "dtrun: skipped checkpoint " << why << "\n";
            if (choice.step_dir != scenario.run.resume_from)
                std::cerr << "dtrun: resuming from " << choice.step_dir << "\n";
            scenario.run.resume_from = choice.step_dir;
            dt::checkCheckpointsNotOverwritten(scenario, choice.step + 1);
        }
        if (f.check && f.external)
            throw dt::UsageError(
                "--check starts baseline runs whose ranks dtrun starts itself; it cannot be combined "
                "with --external");
        std::vector<dt::ScenarioInput> inputs = dt::scenarioInputs(scenario);
        inputs.push_back({"the scenario being run", f.scenario_path});
        if (!f.token_file.empty())
            inputs.push_back({"the --token-file", f.token_file});
        const std::string partial_record =
            f.record_path.empty() ? "" : dt::partialRecordingPath(f.record_path);
        checkOutputsApart(
            inputs,
            {{"--trace", f.trace_path},
             {"--summary", f.summary_path},
             {"--record", f.record_path},
             {"--record's FILE.partial", partial_record}},
            {{"--params-out", f.params_out},
             {"the run's checkpoint directory ([run] checkpoint_dir)", scenario.run.checkpoint_dir}});
        checkOutputPath("--trace", f.trace_path);
        checkOutputPath("--summary", f.summary_path);
        checkOutputPath("--record", f.record_path);
        if (!f.record_path.empty())
            dt::checkRecordingPath(f.record_path); // a directory, device or symlink is never replaced
        if (!f.params_out.empty()) {
            struct stat st {};
            if (stat(f.params_out.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
                throw dt::UsageError("--params-out: '" + f.params_out + "' is not an existing directory");
        }
    } catch (const dt::UsageError& e) {
        std::cerr << "dtrun: " << e.what() << "\n";
        return dt::kExitUsage;
    }

    dt::SessionOptions options;
    options.scenario = scenario;
    options.worker_executable = selfExecutable();
    options.spawn_ranks = !f.external;
    options.join_timeout_s = f.join_timeout_s;
    options.listen_host = f.listen_host;
    try {
        options.token = dt::readSessionToken(f.token_file);
    } catch (const dt::UsageError& e) {
        std::cerr << "dtrun: " << e.what() << "\n";
        return dt::kExitUsage;
    }
    options.store_port = f.port;
    options.params_out_dir = f.params_out;
    options.record_path = f.record_path; // streamed as the run goes (recording.hpp)

    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    std::signal(SIGHUP, onSignal);

    if (!f.quiet) {
        std::cerr << "dtrun: " << scenario.name << ": " << scenario.topology.ranks << " ranks, "
                  << scenario.run.steps << " steps, " << dt::strategyKindName(scenario.strategy.kind)
                  << " over "
                  << (scenario.strategy.kind == dt::StrategyKind::Collectives ? "the backends compared"
                                                                              : scenario.topology.backend);
        if (!f.external && dt::scenarioUsesMpi(scenario))
            std::cerr << " (ranks started by mpirun)";
        if (f.pace > 0)
            std::cerr << "; paced at " << f.pace << " steps/s";
        if (scenario.fault_tolerance.enabled)
            std::cerr << "; fault tolerant (restart " << scenario.fault_tolerance.restart << ")";
        if (scenario.chaos.enabled)
            std::cerr << "; chaos seed " << scenario.chaos.seed << " (replay: --chaos-seed "
                      << scenario.chaos.seed << ")";
        std::cerr << "\n";
        if (!f.record_path.empty())
            std::cerr << "dtrun: recording to " << f.record_path << " (written as the run goes to "
                      << dt::partialRecordingPath(f.record_path) << ", renamed when it ends)\n";
    }
    dt::RunRecord record;
    dt::RecordingStatus recording;
    if (const int code = runToEnd(options, f, "", record, &recording); code != 0)
        return code;

    // Closing checks: the baselines run only with --check (each is a whole run more).
    std::map<std::string, std::string> baseline_summaries;
    if (f.check && record.ok) {
        for (const dt::ClosingCheck& check : scenario.checks) {
            const std::string key = check.baseline.describe();
            if (check.baseline.empty() || baseline_summaries.count(key))
                continue;
            dt::SessionOptions baseline_options = options;
            baseline_options.scenario = dt::scenarioForBaseline(scenario, check.baseline);
            baseline_options.params_out_dir.clear();
            baseline_options.record_path.clear();
            if (!f.quiet)
                std::cerr << "dtrun: closing checks: baseline run { " << key << " }\n";
            dt::RunRecord baseline;
            if (const int code = runToEnd(baseline_options, f, "baseline: ", baseline); code != 0)
                return code;
            if (!baseline.ok) {
                std::cerr << "dtrun: the baseline run { " << key << " } failed: " << baseline.failure_reason
                          << "\n";
                return 1;
            }
            baseline_summaries[key] = dt::summaryJson(baseline);
        }
    }
    std::string summary = dt::summaryJson(record);
    const auto results = dt::evaluateClosingChecks(scenario.checks, summary, baseline_summaries);
    if (!results.empty())
        summary = dt::summaryWithChecks(summary, results);
    const std::vector<dt::ScenarioExercise> exercises = dt::judgeScenarioExercises(scenario, summary);
    summary = dt::summaryWithExercises(summary, exercises);
    if (f.check && !f.quiet) // the presenter's rehearsal: what this run answers to each question
        for (const dt::ScenarioExercise& e : exercises)
            std::cerr << "dtrun: exercise at narration step " << e.step << ": \"" << e.question->ask
                      << "\" -> " << (e.verdict.decided ? e.verdict.measured_text : "not decided") << " ("
                      << e.verdict.detail << ")\n";

    int code = record.ok ? 0 : 1;
    try {
        if (!f.summary_path.empty())
            dt::writeFileAtomically(f.summary_path, summary);
        if (!f.trace_path.empty()) {
            std::ostringstream trace;
            dt::writeChromeTrace(record, trace);
            dt::writeFileAtomically(f.trace_path, trace.str());
        }
    } catch (const std::exception& e) {
        std::cerr << "dtrun: " << e.what() << "\n";
        code = 1;
    }
    if (!recording.error.empty()) {
        std::cerr << "dtrun: the recording failed: " << recording.error << "\n";
        code = 1;
    } else if (recording.finished && !f.quiet) {
        std::cerr << "dtrun: recorded " << recording.events_written << " events to " << recording.path
                  << "\n";
    }
    if (!f.quiet || !record.ok) {
        if (record.ok) {
            if (scenario.strategy.kind == dt::StrategyKind::Collectives)
                printBusBandwidth(record);
            // An ok run can still have had something go wrong that a person must
            // know (a replica left down after its restart budget): the errors.
            for (const auto& log : record.logs)
                if (log.level == dt::LogLevel::Error && log.rank < 0)
                    std::cerr << "dtrun: session: " << log.text << "\n";
            // Progress lost is never silent: the job went back when every replica was down at once.
            if (record.scenario.fault_tolerance.enabled) {
                const dt::RecoveryMeasure m = dt::measureRecoveries(record.events, int(record.ranks.size()),
                                                                    dt::ftGroupSize(record.scenario));
                if (m.rollbacks > 0)
                    std::cerr << "dtrun: every replica was down at once (" << m.rollbacks
                              << " time(s)): the job went back and redid " << m.steps_rolled_back
                              << " step(s) (fault_tolerance.steps_rolled_back in the summary)\n";
            }
        } else {
            std::cerr << "dtrun: the run failed: " << record.failure_reason << "\n";
            printHungCollectives(record);
            for (const auto& log : record.logs)
                if (log.level != dt::LogLevel::Info)
                    std::cerr << "  " << (log.rank >= 0 ? "rank " + std::to_string(log.rank) : "session")
                              << ": " << log.text << "\n";
        }
    }
    // Every check is printed; with --check a failed one fails the command.
    int failed = 0;
    for (const auto& r : results) {
        if (r.evaluated && !r.passed)
            ++failed;
        if (f.quiet && r.passed)
            continue;
        const char* mark = r.run_failed   ? "not judged"
                           : !r.evaluated ? "skipped"
                           : r.passed     ? "passed "
                                          : "FAILED ";
        std::cerr << "dtrun: check " << mark << ": " << r.claim << "\n    " << r.detail << "\n";
    }
    if (f.check && failed > 0) {
        std::cerr << "dtrun: " << failed << " of " << results.size()
                  << " closing check(s) failed: the run did not show what the scenario claims\n";
        code = 1;
    }
    return code;
}

struct LighthouseFlags {
    dt::ft::LighthouseOptions options;
    std::string token_file;
    bool quiet = false;
};

// A lighthouse on its own until SIGINT / SIGTERM: prints each quorum and lost member.
int lighthouseCommand(LighthouseFlags f) {
    try {
        f.options.token = dt::readSessionToken(f.token_file);
    } catch (const std::exception& e) {
        std::cerr << "dtrun lighthouse: " << e.what() << "\n";
        return dt::kExitUsage;
    }
    if (f.options.token.empty() && !f.quiet)
        std::cerr << "dtrun lighthouse: no token (--token-file or DTLAB_TOKEN): any process that reaches "
                     "this port can speak for a replica\n";
    dt::ft::LighthouseServer server(f.options);
    server.onRefused([](const std::string& why) { std::cerr << "dtrun lighthouse: " << why << "\n"; });
    std::mutex print_mutex;
    server.onQuorum([&](const dt::ft::Quorum& q, const dt::ft::QuorumDecision& d) {
        std::lock_guard<std::mutex> lock(print_mutex);
        std::string members;
        for (const auto& m : q.members)
            members += (members.empty() ? "" : ", ") + m.id() + "@" + std::to_string(m.step);
        std::cerr << "dtrun lighthouse: quorum " << q.quorum_id << " = {" << members << "}: " << d.reason
                  << "\n";
    });
    server.onMemberLost([&](const dt::ft::QuorumMember& m, const std::string& why) {
        std::lock_guard<std::mutex> lock(print_mutex);
        std::cerr << "dtrun lighthouse: replica " << m.id() << " lost: " << why << "\n";
    });
    try {
        server.start();
    } catch (const std::exception& e) {
        std::cerr << "dtrun lighthouse: " << e.what() << "\n";
        return dt::kExitUsage;
    }
    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    // The address on stdout (one line) so that scripts can read it.
    std::cout << server.address() << std::endl;
    if (!f.quiet)
        std::cerr << "dtrun lighthouse: listening on " << server.address() << ", min_replicas "
                  << f.options.min_replicas << ", join timeout " << f.options.join_timeout_ms
                  << " ms, heartbeat timeout " << f.options.heartbeat_timeout_ms << " ms\n";
    while (g_interrupt.load() == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    server.stop();
    return 0;
}

// Every file is checked (one line each: ok on stdout, the problem on stderr);
// exit 2 when any is refused.
int checkCommand(const std::vector<std::string>& paths) {
    int code = 0;
    for (const std::string& path : paths) {
        try {
            const dt::Scenario s = dt::loadScenarioFile(path);
            std::cout << path << ": ok: \"" << s.name << "\", " << s.topology.ranks << " ranks, "
                      << s.model.kind << ", " << dt::strategyKindName(s.strategy.kind) << ", " << s.run.steps
                      << " steps, " << s.faults.size() << " fault(s)\n";
        } catch (const dt::UsageError& e) {
            std::cerr << "dtrun: " << e.what() << "\n";
            code = dt::kExitUsage;
        }
    }
    return code;
}

} // namespace

// "override [strategy] kind: ddp, zero1, ..., tensor_parallel or collectives"
static std::string strategyHelp() {
    const std::vector<std::string> names = dt::strategyKindNames();
    std::string help = "override [strategy] kind: ";
    for (size_t i = 0; i < names.size(); ++i)
        help += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
    return help;
}

int main(int argc, char** argv) {
    CLI::App app{"dtrun: run dtlab scenarios headless, or be one rank of a run"};
    app.require_subcommand(1);

    RunFlags run;
    auto* run_cmd = app.add_subcommand("run", "run a scenario headless");
    run_cmd->add_option("scenario", run.scenario_path, "scenario TOML file")->required();
    run_cmd->add_option("--ranks", run.ranks, "override the number of ranks");
    run_cmd->add_option("--steps", run.steps, "override the number of steps");
    run_cmd->add_option("--batch-per-rank", run.batch_per_rank, "override the batch size per rank");
    run_cmd->add_option("--overlap", run.overlap, "DDP: all-reduce during backward (on) or after it (off)")
        ->check(CLI::IsMember({"on", "off"}));
    run_cmd->add_option("--strategy", run.strategy, strategyHelp());
    run_cmd->add_option("--replicas", run.replicas, "hsdp: override [topology] replicas");
    run_cmd->add_option("--microbatches", run.microbatches,
                        "override [strategy] microbatches (gradient accumulation)");
    run_cmd->add_option(
        "--checkpoint-dir", run.checkpoint_dir,
        "save checkpoints into DIR/step-<S> (sharded strategies, diloco, ddp under [fault_tolerance])");
    run_cmd->add_option("--resume", run.resume_from,
                        "load a checkpoint before training: DIR/step-<S>, or DIR for its newest valid one");
    run_cmd->add_option("--trace", run.trace_path, "write a Chrome trace (Perfetto) JSON file");
    run_cmd->add_option("--summary", run.summary_path, "write the run summary JSON file");
    run_cmd->add_option("--record", run.record_path,
                        "save the whole event stream as the run goes (open with dtlab --replay FILE; "
                        "FILE.partial until the run ends, which a crash leaves and dtlab also opens; a "
                        "FILE.partial already there is refused, never replaced)");
    run_cmd->add_option("--params-out", run.params_out,
                        "each rank writes its final parameters into this directory");
    run_cmd
        ->add_option("--backend", run.backend,
                     "override [topology] backend: gloo, or mpi (ranks started by mpirun)")
        ->check(CLI::IsMember({"gloo", "mpi"}));
    run_cmd->add_option("--listen", run.listen_host,
                        "address the Session listens on (default 127.0.0.1; another address needs a token)");
    run_cmd->add_option(
        "--token-file", run.token_file,
        "file (mode 600) whose first line is the token every rank must present (or set DTLAB_TOKEN)");
    run_cmd->add_option("--port", run.port, "rendezvous store port (default: any free port)")
        ->check(CLI::Range(0, 65535));
    run_cmd->add_flag("--external", run.external,
                      "start no ranks: wait for ranks started by mpirun or torchrun");
    run_cmd
        ->add_option("--join-timeout", run.join_timeout_s,
                     "with --external: seconds to wait for every rank to join before giving up (default 60)")
        ->check(finitePositiveAtMost(86400.0));
    run_cmd->add_flag("--no-telemetry", run.no_telemetry,
                      "send only per-step records (step time, loss, checksum)");
    run_cmd->add_flag("--quiet,-q", run.quiet, "no progress line");
    run_cmd->add_flag("--log", run.log,
                      "print every log line of the run (each rank's and the session's) as it arrives");
    run_cmd->add_flag(
        "--check", run.check,
        "evaluate the scenario's closing checks, running their baseline runs, and exit 1 if one fails");
    run_cmd->add_option("--pace", run.pace, "presentation pace: at most this many steps per second")
        ->check(finitePositiveAtMost(1000.0));
    run_cmd
        ->add_option("--chaos-seed", run.chaos_seed, "turn [chaos] on with this seed (replays a chaos run)")
        ->check(wholeNumberAtMostInt64Max());

    LighthouseFlags lighthouse;
    auto* lighthouse_cmd =
        app.add_subcommand("lighthouse", "run the quorum server of fault-tolerant training");
    lighthouse_cmd->add_option("--listen", lighthouse.options.host,
                               "address to listen on (default 127.0.0.1)");
    lighthouse_cmd
        ->add_option("--port", lighthouse.options.port, "port (default: any free port, printed on stdout)")
        ->check(CLI::Range(0, 65535));
    lighthouse_cmd->add_option("--token-file", lighthouse.token_file,
                               "file (mode 600) whose first line is the token every replica must prove "
                               "(or set DTLAB_TOKEN); the ranks need the same one");
    lighthouse_cmd
        ->add_option("--min-replicas", lighthouse.options.min_replicas, "fewest replicas in a quorum")
        ->check(CLI::PositiveNumber);
    lighthouse_cmd
        ->add_option("--join-timeout-ms", lighthouse.options.join_timeout_ms,
                     "how long a quorum waits for a healthy replica that has not asked yet")
        ->check(CLI::NonNegativeNumber);
    lighthouse_cmd
        ->add_option("--heartbeat-timeout-ms", lighthouse.options.heartbeat_timeout_ms,
                     "a replica silent this long is out")
        ->check(CLI::PositiveNumber);
    lighthouse_cmd
        ->add_option_function<std::string>(
            "--detection",
            [&lighthouse](const std::string& mode) {
                lighthouse.options.lost_on_close = mode == "connection";
            },
            "how a dead replica is noticed: connection (default: at once, when its connection closes) or "
            "heartbeat (TorchFT's rule: when its last heartbeat is --heartbeat-timeout-ms old)")
        ->check(CLI::IsMember({"connection", "heartbeat"}));
    lighthouse_cmd->add_flag("--quiet,-q", lighthouse.quiet, "print only the address");

    std::vector<std::string> check_paths;
    auto* check_cmd = app.add_subcommand("check", "validate scenario files");
    check_cmd->add_option("scenario", check_paths, "scenario TOML files (dtrun check scenarios/*.toml)")
        ->required();

    dt::WorkerArgs worker;
    auto* worker_cmd =
        app.add_subcommand("worker", "run one rank (started by a Session, mpirun or torchrun)");
    worker_cmd->add_option("--rank", worker.flags.rank, "this rank");
    worker_cmd->add_option("--world", worker.flags.world, "number of ranks");
    worker_cmd->add_option("--join", worker.flags.join, "the Session's store address HOST:PORT");
    worker_cmd->add_option("--params-out", worker.params_out_dir,
                           "write final parameters into this directory");
    worker_cmd->add_option("--token-file", worker.token_file, "the Session's token (default: DTLAB_TOKEN)");
    worker_cmd->add_option("--incarnation", worker.incarnation,
                           "fault tolerance: restarts of this rank so far (set by the Session)");

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << "dtrun: " << e.what() << "\nRun 'dtrun --help' for usage.\n";
        return dt::kExitUsage;
    }
    if (*run_cmd)
        return runCommand(run);
    if (*check_cmd)
        return checkCommand(check_paths);
    if (*lighthouse_cmd)
        return lighthouseCommand(lighthouse);
    if (*worker_cmd)
        return dt::runWorker(worker);
    return dt::kExitUsage;
}
