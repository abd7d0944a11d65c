// process_helpers.hpp: real processes for the integration tests.
//
// Every test here drives the real `dtrun` binary (DTRUN_PATH) as a child
// process: run it with a timeout and capture what it printed, or start it in
// the background and signal it; make scratch directories; read the JSON it
// wrote; find a free port for --external runs; and list the `dtrun worker`
// processes still alive, to prove that no run leaves an orphan behind.
//
// Children run in their own process group, so a timeout kills the child and
// everything it started (its rank processes too).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace it {

// Paths baked in by CMake.
[[nodiscard]] std::string dtrunPath();                                // DTRUN_PATH
[[nodiscard]] std::string sourceDir();                                // DTLAB_SOURCE_DIR
[[nodiscard]] std::string scenarioPath(const std::string& file_name); // sourceDir()/scenarios/NAME
// The first executable PROGRAM on $PATH, or "" (for tools such as mpirun).
[[nodiscard]] std::string findInPath(const std::string& program);
// Why tests that start ranks with mpirun cannot run here ("" when they can):
// dtlab built without MPI, or no mpirun on PATH.
[[nodiscard]] std::string mpiSkipReason();

struct ProcessOptions {
    std::vector<std::pair<std::string, std::string>> env; // set (or replace) in the child
    std::vector<std::string> unset_env;                   // removed from the child's environment
    double timeout_s = 120.0;                             // runProcess / wait: then SIGKILL the group
    std::string cwd;                                      // "" = the test's working directory
};

struct ProcessResult {
    int exit_code = -1;     // valid when signal == 0 and !timed_out
    int signal = 0;         // the signal that ended it, 0 = exited normally
    bool timed_out = false; // it ran past timeout_s and its group was killed
    double seconds = 0.0;   // wall time from start to end
    std::string out;        // stdout
    std::string err;        // stderr
};
// For CAPTURE / INFO: one line of code, signal, time, and the tail of stderr.
[[nodiscard]] std::string describe(const ProcessResult& r);

// A child process running in the background (its own process group). The
// destructor kills the group and reaps the child if it still runs.
class Process {
  public:
    Process(const std::vector<std::string>& argv, const ProcessOptions& options = {});
    ~Process();
    Process(const Process&) = delete;
    Process& operator=(const Process&) = delete;

    [[nodiscard]] pid_t pid() const { return m_pid; }
    [[nodiscard]] bool running(); // reaps if it has ended
    void signal(int signo);       // the child only, not its group
    void signalGroup(int signo);  // the child's whole process group
    // Waits up to options.timeout_s from start (or `timeout_s` from now if >= 0);
    // on timeout kills the group. Returns what it printed.
    ProcessResult wait(double timeout_s = -1.0);
    [[nodiscard]] std::string stderrSoFar() const;
    [[nodiscard]] std::string stdoutSoFar() const;
    [[nodiscard]] double secondsSinceStart() const;

  private:
    void reaped(int status);
    pid_t m_pid = -1;
    bool m_done = false;
    ProcessResult m_result;
    ProcessOptions m_options;
    std::string m_out_path, m_err_path;
    double m_start = 0.0;
};

// Runs argv to completion (or timeout) and returns what happened.
ProcessResult runProcess(const std::vector<std::string>& argv, const ProcessOptions& options = {});
// `dtrun ARGS...` with the given options.
ProcessResult runDtrun(const std::vector<std::string>& args, const ProcessOptions& options = {});

// A fresh directory under $TMPDIR (or /tmp), removed with its contents at the end.
class TempDir {
  public:
    explicit TempDir(const std::string& tag = "dtlab-it");
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    [[nodiscard]] const std::string& path() const { return m_path; }
    [[nodiscard]] std::string file(const std::string& name) const { return m_path + "/" + name; }
    // Writes `text` to path()/name and returns the full path.
    std::string write(const std::string& name, const std::string& text) const;
    [[nodiscard]] std::vector<std::string> list() const; // file names, sorted

  private:
    std::string m_path;
};

[[nodiscard]] std::string readTextFile(const std::string& path);    // throws if unreadable
[[nodiscard]] nlohmann::json readJsonFile(const std::string& path); // throws on a parse error
[[nodiscard]] bool fileExists(const std::string& path);
[[nodiscard]] std::vector<std::string> listDirectory(const std::string& path); // sorted names, no . / ..

// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0).
[[nodiscard]] int freeTcpPort();

// PIDs of live processes whose /proc/PID/cmdline names this build's dtrun
// (argv[0], path resolved) with an argument "worker" and that this test process
// started (directly or through dtrun, mpirun or dtlab: DTLAB_TEST_OWNER in their
// environment). Zombies do not count; another test's workers do not either.
[[nodiscard]] std::vector<pid_t> runningWorkerPids();
// Polls until no worker is left or `timeout_s` passes; returns what is left.
std::vector<pid_t> waitForNoWorkers(double timeout_s);
// Blocks until `pred()` or timeout; returns pred().
template <class Pred> bool waitFor(Pred pred, double timeout_s);
void sleepSeconds(double s);
[[nodiscard]] double monotonicSeconds();

template <class Pred> bool waitFor(Pred pred, double timeout_s) {
    const double end = monotonicSeconds() + timeout_s;
    while (monotonicSeconds() < end) {
        if (pred())
            return true;
        sleepSeconds(0.02);
    }
    return pred();
}

// A scenario file written by a test: TinyGPT on fortunes with DDP, with the
// defaults of ddp_basics.toml unless changed here. Tests write their own
// files so they do not depend on a shipped scenario's narration or tuning;
// the smoke test covers the shipped files.
struct ScenarioSpec {
    std::string name = "integration test";
    int ranks = 2;
    int steps = 3;
    int batch_per_rank = 4;
    int d_model = 128, layers = 4, heads = 4; // ddp_basics' TinyGPT
    double bucket_mb = 1.0;
    double timeout_s = 30.0;
    std::string faults_toml; // [[faults]] tables, appended verbatim
    int replicas = 1;
    int stages = 1; // kind = "pipeline": ranks / stages pipelines
    std::string strategy = "ddp";
    std::string strategy_toml; // more [strategy] lines, verbatim ("microbatches = 4\n")
    std::string run_toml;      // more [run] lines, verbatim
    std::string extra_toml;    // whole tables, verbatim ("[fault_tolerance]\nenabled = true\n")
};
[[nodiscard]] std::string scenarioToml(const ScenarioSpec& spec);

} // namespace it
