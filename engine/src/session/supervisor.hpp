// supervisor.hpp: starts rank processes and signals and reaps them.
//
// Every child gets PR_SET_PDEATHSIG = SIGKILL, so if the Session's process
// dies for any reason (even SIGKILL) the kernel kills its ranks: no orphans.
// Spawn from a thread that lives as long as the Session (the death signal
// follows the forking thread).
#pragma once

#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

namespace dt {

struct ChildExit {
    int rank = -1;
    pid_t pid = 0;
    int exit_code = -1; // when exited normally
    int signal = 0;     // when killed by a signal
};

class Supervisor {
  public:
    ~Supervisor(); // SIGKILLs and reaps every child still running

    // argv[0] is the executable path; env entries "KEY=VALUE" are added to
    // (and override) the parent's environment. `niceness` > 0 lowers the
    // child's CPU priority by that much (setpriority before exec).
    pid_t spawn(int rank, const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                int niceness = 0);
    bool signal(int rank, int signo);            // false if that rank is not running
    void killAll();                              // SIGKILL (and SIGCONT, so stopped ones die at once)
    [[nodiscard]] std::vector<ChildExit> reap(); // non-blocking; returns children that ended
    [[nodiscard]] bool anyRunning() const;
    [[nodiscard]] pid_t pidOf(int rank) const;

  private:
    std::map<int, pid_t> m_running; // rank -> pid
};

} // namespace dt
