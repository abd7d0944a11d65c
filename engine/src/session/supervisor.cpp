// supervisor.cpp: fork/exec with a parent-death signal, signals, reaping.
#include "session/supervisor.hpp"

#include <csignal>
#include <cstring>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace dt {

Supervisor::~Supervisor() {
    killAll();
    for (auto& [rank, pid] : m_running)
        waitpid(pid, nullptr, 0);
    m_running.clear();
}

pid_t Supervisor::spawn(int rank, const std::vector<std::string>& argv,
                        const std::map<std::string, std::string>& env, int niceness) {
    // Build everything before fork: after fork only async-signal-safe calls.
    std::map<std::string, std::string> merged;
    for (char** e = environ; e && *e; ++e) {
        const char* eq = std::strchr(*e, '=');
        if (eq)
            merged[std::string(*e, size_t(eq - *e))] = eq + 1;
    }
    for (const auto& [k, v] : env)
        merged[k] = v;
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : merged)
        env_strings.push_back(k + "=" + v);
    std::vector<char*> envp, args;
    for (auto& s : env_strings)
        envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_copy = argv;
    for (auto& s : argv_copy)
        args.push_back(s.data());
    args.push_back(nullptr);
    const pid_t parent = getpid();

    const pid_t pid = fork();
    if (pid < 0)
        throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);             // the parent died before prctl
        ::signal(SIGPIPE, SIG_DFL); // a worker starts with the default, whatever its parent ignores
        if (niceness > 0)           // relative to the parent's own; a failure leaves it as it is
            (void)setpriority(PRIO_PROCESS, 0, getpriority(PRIO_PROCESS, 0) + niceness);
        execve(args[0], args.data(), envp.data());
        const char msg[] = "dtlab: cannot exec the worker executable\n";
        (void)!write(2, msg, sizeof(msg) - 1);
        _exit(127);
    }
    m_running[rank] = pid;
    return pid;
}

bool Supervisor::signal(int rank, int signo) {
    auto it = m_running.find(rank);
    if (it == m_running.end())
        return false;
    return ::kill(it->second, signo) == 0;
}

void Supervisor::killAll() {
    for (auto& [rank, pid] : m_running) {
        ::kill(pid, SIGKILL);
        ::kill(pid, SIGCONT);
    }
}

std::vector<ChildExit> Supervisor::reap() {
    std::vector<ChildExit> out;
    for (auto it = m_running.begin(); it != m_running.end();) {
        int status = 0;
        const pid_t r = waitpid(it->second, &status, WNOHANG);
        if (r == it->second) {
            ChildExit e;
            e.rank = it->first;
            e.pid = r;
            if (WIFEXITED(status))
                e.exit_code = WEXITSTATUS(status);
            if (WIFSIGNALED(status))
                e.signal = WTERMSIG(status);
            out.push_back(e);
            it = m_running.erase(it);
        } else {
            ++it;
        }
    }
    return out;
}

bool Supervisor::anyRunning() const {
    return !m_running.empty();
}

pid_t Supervisor::pidOf(int rank) const {
    auto it = m_running.find(rank);
    return it == m_running.end() ? 0 : it->second;
}

} // namespace dt
