// breakpoints.hpp: pause the run when a chosen event happens, as in a debugger.
//
// A Breakpoint is a kind (breakpoint_kinds.def) and, for some kinds, an
// argument (a step number, a duration in ms). BreakpointList::check() reads
// each new event of a live run once, in order, and returns what was hit:
//   rank_dies          ProcessExited with a signal or an error (value != 0)
//   rank_hangs         FaultInjected with SIGSTOP (the Hang action's code)
//   quorum_changes     QuorumFormed whose id differs from the last one seen
//   collective_fails   a collective's WorkFailed record
//   collective_hangs   the hang diagnosis (RunModel::hungCollectives) lists a
//                      collective not seen before: checkHung(), each frame,
//                      since a hang is time passing, not an event
//   collective_slower  WorkCompleted more than X ms after its WorkStarted
//                      (same rank, process group and sequence number)
//   heal               a receiving Heal span (a restarted replica got a peer's state)
//   step               a Step span with index N - 1 (N steps completed by some rank)
//   loss_nan           a LossValue that is NaN
// The app pauses the Session on a hit (ranks finish the step they are in) and
// says which breakpoint it was. Plain data and pure logic: tests feed events.
#pragma once

#include "dtlab/events.hpp"
#include "dtlab/hung_collectives.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace dt::app {

enum class BreakpointKind : uint8_t {
#define DT_BREAKPOINT_KIND(name, id, label, has_arg) name,
#include "model/breakpoint_kinds.def"
#undef DT_BREAKPOINT_KIND
};

struct BreakpointKindInfo {
    BreakpointKind kind;
    const char* id;    // "rank_dies": the script's and the menu's name
    const char* label; // "a rank dies"; "%g" stands for the argument
    bool has_arg;
};
[[nodiscard]] const std::vector<BreakpointKindInfo>& breakpointKinds();
[[nodiscard]] const BreakpointKindInfo& breakpointKindInfo(BreakpointKind kind);
[[nodiscard]] bool parseBreakpointKind(const std::string& id, BreakpointKind& out);

struct Breakpoint {
    BreakpointKind kind = BreakpointKind::RankDies;
    double arg = 0.0;                           // step N, or X ms; unused by kinds without an argument
    [[nodiscard]] std::string describe() const; // "step 12 is completed"
};

struct BreakpointHit {
    Breakpoint breakpoint;
    std::string what; // "rank 1 died (signal 9)"
};

class BreakpointList {
  public:
    // Adds a breakpoint (a second one of the same kind replaces the first).
    void add(const Breakpoint& b);
    // Removes the breakpoint of this kind; false when there was none.
    bool remove(BreakpointKind kind);
    void clear() { m_list.clear(); }
    [[nodiscard]] const std::vector<Breakpoint>& list() const { return m_list; }
    // Forgets what was seen (a new run); keeps the breakpoints.
    void resetRun();

    // Reads one event; the first breakpoint it hits, if any.
    [[nodiscard]] std::optional<BreakpointHit> check(const Event& e);
    // Reads the hang diagnosis now: collective_hangs hits on a collective not
    // listed before ("all-reduce bucket 2 of step 14: ranks {0,2,3} waiting, rank 1 never joined").
    [[nodiscard]] std::optional<BreakpointHit> checkHung(const std::vector<HungCollective>& hung);

  private:
    std::vector<Breakpoint> m_list;
    double m_last_quorum_id = -1.0;
    // (rank, group, seq) -> WorkStarted time, for collective_slower
    std::map<std::tuple<int, int, uint64_t>, int64_t> m_started;
    // (group, kind, sender, peer, seq) of the hung collectives already reported
    std::set<std::tuple<int, int, int, int, uint64_t>> m_hung_seen;
};

} // namespace dt::app
