// run_record.hpp: everything the Session collected about one run.
//
// Filled live by the Session's collector (events in arrival order, which is
// per-rank time order), then read by the summary, the Chrome trace export and
// the GUI. No torch types.
#pragma once

#include "dtlab/events.hpp"
#include "dtlab/scenario.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dt {

struct RankInfo {
    int rank = -1;
    int pid = 0;
    std::string host;
    bool started = false; // its process was started (or it joined)
    bool exited = false;  // the Session saw it end
    int exit_code = -1;   // valid when exited and term_signal == 0
    int term_signal = 0;  // signal that ended it (9 = SIGKILL), 0 = none
    std::string error;    // last error text the rank reported, if any
};

struct RunRecord {
    Scenario scenario;
    std::vector<RankInfo> ranks; // index = rank
    std::vector<Event> events;   // all ranks, per-rank time order
    std::vector<LogRecord> logs; // ranks and Session, arrival order
    int64_t t_start_ns = 0;      // Session clock when the run started
    int64_t t_end_ns = 0;
    bool ok = false;            // every rank finished every step
    std::string failure_reason; // one line for the user when !ok
};

} // namespace dt
