// process_helpers.cpp: fork/exec with a timeout, temp dirs, JSON, ports, /proc.
#include "process_helpers.hpp"

#include "comm/mpi_communicator.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <netinet/in.h>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace it {
namespace {

std::string realPath(const std::string& path) {
    char buf[PATH_MAX];
    if (::realpath(path.c_str(), buf))
        return buf;
    return path;
}

void removeTree(const std::string& path) {
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        for (const auto& name : listDirectory(path))
            removeTree(path + "/" + name);
        ::rmdir(path.c_str());
    } else {
        ::unlink(path.c_str());
    }
}

std::string readFileOrEmpty(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// One scratch directory per test process for the children's stdout/stderr files.
const std::string& captureDir() {
    static TempDir dir("dtlab-it-capture");
    return dir.path();
}

} // namespace

std::string dtrunPath() {
    return DTRUN_PATH;
}
std::string sourceDir() {
    return DTLAB_SOURCE_DIR;
}
std::string mpiSkipReason() {
    if (!dt::mpiAvailable())
        return "dtlab was built without MPI (libopenmpi-dev not found by CMake)";
    if (findInPath("mpirun").empty())
        return "mpirun is not on PATH (install openmpi-bin)";
    return "";
}

std::string findInPath(const std::string& program) {
    const char* path = std::getenv("PATH");
    const std::string dirs = path ? path : "/usr/bin:/bin";
    size_t start = 0;
    while (start <= dirs.size()) {
        const size_t end = dirs.find(':', start);
        const std::string dir =
            dirs.substr(start, end == std::string::npos ? std::string::npos : end - start);
        const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
        if (::access(candidate.c_str(), X_OK) == 0)
            return candidate;
        if (end == std::string::npos)
            break;
        start = end + 1;
    }
    return "";
}
std::string scenarioPath(const std::string& file_name) {
    return sourceDir() + "/scenarios/" + file_name;
}

double monotonicSeconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void sleepSeconds(double s) {
    std::this_thread::sleep_for(std::chrono::microseconds(int64_t(s * 1e6)));
}

std::string describe(const ProcessResult& r) {
    std::ostringstream s;
    if (r.timed_out)
        s << "TIMED OUT (group killed)";
    else if (r.signal)
        s << "killed by signal " << r.signal;
    else
        s << "exit code " << r.exit_code;
    s << " after " << r.seconds << " s";
    const size_t keep = 3000;
    s << "\n--- stderr" << (r.err.size() > keep ? " (tail)" : "") << " ---\n"
      << (r.err.size() > keep ? r.err.substr(r.err.size() - keep) : r.err);
    if (!r.out.empty())
        s << "\n--- stdout" << (r.out.size() > keep ? " (tail)" : "") << " ---\n"
          << (r.out.size() > keep ? r.out.substr(r.out.size() - keep) : r.out);
    return s.str();
}

// [SECTION] Process ------------------------------------------------------------
// Every child a test starts carries DTLAB_TEST_OWNER=<the test process's pid>, and its
// children (dtrun's ranks, mpirun's, dtlab's) inherit it: the orphan check of one test
// sees only its own processes, so tests that start real processes can run side by side.
namespace {
constexpr const char* kOwnerVariable = "DTLAB_TEST_OWNER";
std::string ownerMark() {
    return std::to_string(::getpid());
}
// True when /proc/PID/environ holds DTLAB_TEST_OWNER=ownerMark() (environ is NUL-separated).
bool startedByThisTest(const std::string& pid) {
    const std::string environ_text = readFileOrEmpty("/proc/" + pid + "/environ");
    const std::string entry = std::string(kOwnerVariable) + "=" + ownerMark();
    size_t at = 0;
    while (at < environ_text.size()) {
        const size_t end = environ_text.find('\0', at);
        const size_t stop = end == std::string::npos ? environ_text.size() : end;
        if (environ_text.compare(at, stop - at, entry) == 0)
            return true;
        at = stop + 1;
    }
    return false;
}
} // namespace

Process::Process(const std::vector<std::string>& argv, const ProcessOptions& options) : m_options(options) {
    if (argv.empty())
        throw std::invalid_argument("Process: empty argv");
    static int counter = 0;
    const std::string base =
        captureDir() + "/p" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    m_out_path = base + ".out";
    m_err_path = base + ".err";

    // Everything the child needs is built before fork (only async-signal-safe calls after it).
    std::map<std::string, std::string> env;
    for (char** e = environ; e && *e; ++e) {
        const char* eq = std::strchr(*e, '=');
        if (eq)
            env[std::string(*e, size_t(eq - *e))] = eq + 1;
    }
    for (const auto& k : options.unset_env)
        env.erase(k);
    for (const auto& [k, v] : options.env)
        env[k] = v;
    env[kOwnerVariable] = ownerMark(); // runningWorkerPids counts only this test's processes
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : env)
        env_strings.push_back(k + "=" + v);
    std::vector<char*> envp, args;
    for (auto& s : env_strings)
        envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_copy = argv;
    for (auto& s : argv_copy)
        args.push_back(s.data());
    args.push_back(nullptr);

    const int out_fd = ::open(m_out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int err_fd = ::open(m_err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out_fd < 0 || err_fd < 0 || null_fd < 0)
        throw std::runtime_error("Process: cannot open capture files in " + captureDir());

    m_start = monotonicSeconds();
    const pid_t pid = ::fork();
    if (pid < 0)
        throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
    if (pid == 0) {
        ::setpgid(0, 0);
        // Default dispositions: the test runner may ignore some signals.
        ::signal(SIGINT, SIG_DFL);
        ::signal(SIGTERM, SIG_DFL);
        ::signal(SIGPIPE, SIG_DFL);
        ::dup2(null_fd, 0);
        ::dup2(out_fd, 1);
        ::dup2(err_fd, 2);
        if (!options.cwd.empty() && ::chdir(options.cwd.c_str()) != 0)
            _exit(126);
        ::execve(args[0], args.data(), envp.data());
        const char msg[] = "process_helpers: exec failed\n";
        (void)!::write(2, msg, sizeof(msg) - 1);
        _exit(127);
    }
    ::setpgid(pid, pid); // also from the parent, so the group exists before we may signal it
    ::close(out_fd);
    ::close(err_fd);
    ::close(null_fd);
    m_pid = pid;
}

Process::~Process() {
    if (!m_done && m_pid > 0) {
        ::kill(-m_pid, SIGKILL);
        ::kill(m_pid, SIGKILL);
        int status = 0;
        ::waitpid(m_pid, &status, 0);
    }
    ::unlink(m_out_path.c_str());
    ::unlink(m_err_path.c_str());
}

void Process::reaped(int status) {
    m_done = true;
    m_result.seconds = monotonicSeconds() - m_start;
    if (WIFEXITED(status))
        m_result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        m_result.signal = WTERMSIG(status);
}

bool Process::running() {
    if (m_done)
        return false;
    int status = 0;
    const pid_t r = ::waitpid(m_pid, &status, WNOHANG);
    if (r == m_pid)
        reaped(status);
    return !m_done;
}

void Process::signal(int signo) {
    if (!m_done)
        ::kill(m_pid, signo);
}

void Process::signalGroup(int signo) {
    if (!m_done)
        ::kill(-m_pid, signo);
}

double Process::secondsSinceStart() const {
    return monotonicSeconds() - m_start;
}
std::string Process::stderrSoFar() const {
    return readFileOrEmpty(m_err_path);
}
std::string Process::stdoutSoFar() const {
    return readFileOrEmpty(m_out_path);
}

ProcessResult Process::wait(double timeout_s) {
    const double deadline = timeout_s >= 0 ? monotonicSeconds() + timeout_s : m_start + m_options.timeout_s;
    while (running()) {
        if (monotonicSeconds() >= deadline) {
            ::kill(-m_pid, SIGKILL);
            ::kill(m_pid, SIGKILL);
            int status = 0;
            ::waitpid(m_pid, &status, 0);
            reaped(status);
            m_result.timed_out = true;
            break;
        }
        sleepSeconds(0.01);
    }
    m_result.out = readFileOrEmpty(m_out_path);
    m_result.err = readFileOrEmpty(m_err_path);
    return m_result;
}

ProcessResult runProcess(const std::vector<std::string>& argv, const ProcessOptions& options) {
    Process p(argv, options);
    return p.wait();
}

ProcessResult runDtrun(const std::vector<std::string>& args, const ProcessOptions& options) {
    std::vector<std::string> argv{dtrunPath()};
    argv.insert(argv.end(), args.begin(), args.end());
    return runProcess(argv, options);
}

// [SECTION] Files ----------------------------------------------------------------
TempDir::TempDir(const std::string& tag) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + tag + "-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back(0);
    if (!::mkdtemp(buf.data()))
        throw std::runtime_error("mkdtemp failed for " + templ + ": " + std::strerror(errno));
    m_path = buf.data();
}

TempDir::~TempDir() {
    if (!std::getenv("DTLAB_KEEP_TEMP"))
        removeTree(m_path);
}

std::string TempDir::write(const std::string& name, const std::string& text) const {
    const std::string p = file(name);
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out)
        throw std::runtime_error("cannot write " + p);
    return p;
}

std::vector<std::string> TempDir::list() const {
    return listDirectory(m_path);
}

std::vector<std::string> listDirectory(const std::string& path) {
    std::vector<std::string> names;
    DIR* d = ::opendir(path.c_str());
    if (!d)
        return names;
    while (const dirent* e = ::readdir(d)) {
        const std::string n = e->d_name;
        if (n != "." && n != "..")
            names.push_back(n);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
}

bool fileExists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

std::string readTextFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw std::runtime_error("cannot open '" + path + "'");
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

nlohmann::json readJsonFile(const std::string& path) {
    return nlohmann::json::parse(readTextFile(path));
}

// [SECTION] Ports and processes --------------------------------------------------
int freeTcpPort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        throw std::runtime_error("socket failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        ::close(fd);
        throw std::runtime_error("bind to 127.0.0.1:0 failed");
    }
    socklen_t len = sizeof(addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}

std::vector<pid_t> runningWorkerPids() {
    static const std::string dtrun = realPath(dtrunPath());
    std::vector<pid_t> pids;
    for (const auto& name : listDirectory("/proc")) {
        if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit))
            continue;
        const pid_t pid = pid_t(std::stol(name));
        if (pid == ::getpid())
            continue;
        // cmdline is NUL-separated; it is empty for zombies and kernel threads.
        const std::string cmdline = readFileOrEmpty("/proc/" + name + "/cmdline");
        std::vector<std::string> args;
        std::string cur;
        for (char c : cmdline) {
            if (c == 0) {
                args.push_back(cur);
                cur.clear();
            } else {
                cur += c;
            }
        }
        if (!cur.empty())
            args.push_back(cur);
        if (args.size() < 2)
            continue;
        if (args[0] != dtrun && realPath(args[0]) != dtrun)
            continue;
        if (std::find(args.begin() + 1, args.end(), "worker") == args.end())
            continue;
        if (!startedByThisTest(name))
            continue;
        // A process that ended but was not reaped yet still shows its cmdline for
        // a moment on some kernels; count only ones that are not zombies.
        const std::string stat = readFileOrEmpty("/proc/" + name + "/stat");
        const auto paren = stat.rfind(')');
        if (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z')
            continue;
        pids.push_back(pid);
    }
    return pids;
}

std::vector<pid_t> waitForNoWorkers(double timeout_s) {
    std::vector<pid_t> left;
    waitFor([&] { return (left = runningWorkerPids()).empty(); }, timeout_s);
    return left;
}

// [SECTION] Scenarios --------------------------------------------------------------
std::string scenarioToml(const ScenarioSpec& spec) {
    std::ostringstream s;
    s << "[scenario]\nname = \"" << spec.name << "\"\n\n"
      << "[topology]\nranks = " << spec.ranks << "\nreplicas = " << spec.replicas << "\n"
      << (spec.stages > 1 ? "stages = " + std::to_string(spec.stages) + "\n" : std::string()) << "\n"
      << "[model]\nkind = \"tiny_gpt\"\nd_model = " << spec.d_model << "\nlayers = " << spec.layers
      << "\nheads = " << spec.heads << "\n\n"
      << "[data]\nsource = \"fortunes\"\nbatch_per_rank = " << spec.batch_per_rank << "\n\n"
      << "[strategy]\nkind = \"" << spec.strategy
      << "\"\n"
      // bucket_mb is DDP's own: on another kind it is refused.
      << (spec.strategy == "ddp" ? "bucket_mb = " + std::to_string(spec.bucket_mb) + "\n" : std::string())
      << spec.strategy_toml << "\n"
      << "[run]\nsteps = " << spec.steps << "\nseed = 1\ntimeout_s = " << spec.timeout_s << "\n"
      << spec.run_toml << "\n"
      << spec.extra_toml << "\n"
      << spec.faults_toml;
    return s.str();
}

} // namespace it
