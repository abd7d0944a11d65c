// view_quorum.hpp: quorum fault tolerance as it happens, one lane per replica.
//
// Drawn from the real events of a fault-tolerant run ([fault_tolerance]):
//   header     the lighthouse: quorum id, members, the reason of its last
//              decision (live: its status; replay: its logged decisions), or
//              LIGHTHOUSE DOWN
//   replicas   one row each: state (healthy, healing, hung, dead, restarting,
//              finished, unreachable), incarnation, steps committed and aborted, heartbeat
//              age, whether it is in the quorum
//   sequence   the last few seconds (or the seconds before the time cursor)
//              per replica: heartbeats, the quorum request, reconfigure, heal,
//              the all-reduce, then commit (green) or abort (red), with the
//              lighthouse's quorums as vertical lines; faults as red marks
//   stopwatch  the latest fault's recovery (recovery_measure.hpp): detected,
//              new quorum, survivors' next commit, restart, heal, rejoined
//              (at a time cursor: measured on the events up to it)
// Per frame: the strip walks back from the window's end over the spans and
// the fault-tolerance instants it shows; the stopwatch is recomputed only
// when new events arrived.
#pragma once

#include "dtlab/recovery_measure.hpp"
#include "views/short_pane.hpp"
#include "views/view.hpp"
#include "views/view_inputs.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dt::app {

// Unreachable: alive, but the lighthouse does not hear it (partitioned, or its
// last heartbeat is older than heartbeat_timeout_ms): never shown as healthy.
enum class ReplicaHealth { Healthy, Healing, Hung, Dead, Restarting, Finished, Starting, Unreachable };
[[nodiscard]] const char* replicaHealthLabel(ReplicaHealth health);

struct ReplicaRow {
    int replica = 0; // the rank of this row
    int group = 0;   // its replica group, the quorum's member (= replica when groups have one rank)
    ReplicaHealth health = ReplicaHealth::Starting;
    int incarnation = 0;
    int64_t committed = 0;        // Commit events seen
    int64_t aborted = 0;          // Abort events seen
    double heartbeat_age_ms = -1; // -1 = unknown
    bool in_quorum = false;       // a member of the latest quorum
    bool partitioned = false;
};

struct QuorumViewState {
    bool fault_tolerant = false;
    int64_t quorum_id = -1;         // latest quorum issued (-1 = none yet)
    uint64_t members = 0;           // bit g = replica group g is a member
    int group_size = 1;             // ranks per replica group (ftGroupSize)
    bool group_is_pipeline = false; // a group's ranks are pipeline stages (else: shards)
    // The highest step among its members when the latest quorum formed. The
    // fast path re-issues the same quorum every step without a new event, so
    // this is where that quorum began, not where training is now:
    int64_t max_step = 0;
    int64_t steps_committed = 0; // now: the most steps any replica committed (its last Commit's step + 1)
    int64_t quorums = 0;         // quorums issued so far
    std::string reason;          // of the lighthouse's last decision
    // The quorum that decision issued (-1 = unknown). Its reason may name the quorum before
    // ("every member of quorum 4 is healthy ..., with newcomer replica 1" issued quorum 5):
    // the view says "decision (quorum 5):" so the two lines never seem to disagree.
    int64_t reason_quorum_id = -1;
    bool lighthouse_down = false;
    std::vector<ReplicaRow> rows;
    std::optional<Recovery> recovery; // the latest fault's
};

// The state at time t_ns from the run (pure; tests check it). `ranks` may be
// null (a replay): health then comes from the events.
[[nodiscard]] QuorumViewState quorumViewState(const RunModel& model, const std::vector<RankProgress>* ranks,
                                              const std::optional<ft::LighthouseStatus>& lighthouse,
                                              int64_t t_ns);

// Appends to a decision that calls members healthy what has changed since (a member now dead,
// restarting, hung or unreachable), so the line never contradicts a badge.
void markStaleDecision(QuorumViewState& st);
// The latest fault's recovery, from the events that ended by `until` (INT64_MAX: all).
[[nodiscard]] std::optional<Recovery> latestRecovery(const RunModel& model, int64_t until);
// The moment the view shows: the cursor, else now (live) or the run's end.
[[nodiscard]] int64_t quorumViewTime(const ViewInputs& inputs);

class QuorumView : public View {
  public:
    QuorumView();

    [[nodiscard]] const char* helpText() const override;
    // Open for fault-tolerant runs ([fault_tolerance] enabled).
    [[nodiscard]] std::optional<bool> relevantTo(const Scenario& scenario) const override;
    // The lower band, stacked over the DiLoCo view: as tall as preferredHeight()
    // for the scenario's replicas, at most 45 % of the body (30 % when crowded).
    [[nodiscard]] LayoutPlace layoutPlace(const LayoutContext& context) const override;
    [[nodiscard]] bool isEmpty(const ViewInputs& inputs) const override;
    void drawEmptyState(const ViewInputs& inputs) override;
    // The fault buttons of a live run (drawFaultButtons), then the view.
    void drawContent(const ViewInputs& inputs) override;

    [[nodiscard]] const QuorumViewState& lastState() const { return m_state; }
    // The line comparing this run's recoveries with the run before's ("" = none shown).
    [[nodiscard]] const std::string& lastComparison() const { return m_comparison; }
    // The last frame drew the stopwatch above the replica rows (a pane too short for both).
    [[nodiscard]] bool stopwatchFirst() const { return m_stopwatch_first; }
    [[nodiscard]] static float preferredHeight(int replicas);
    // The replica rows, and how many of them the last draw showed whole.
    [[nodiscard]] std::optional<ShownContent> shownContent() const override { return m_shown; }
    // In a pane shorter than its content, the lighthouse's and the decision's lines take
    // one line each (in full on hover) and the strip's colours go to a tooltip.
    [[nodiscard]] float heightSavedByCompacting() const override { return m_pane.savedPx(); }

  private:
    void drawFaultButtons(const ViewInputs& inputs);
    void drawRareFaultButtons(const ViewInputs& inputs, int r, bool running, bool partitioned);
    void drawHeader(const ViewInputs& inputs);
    void drawRows(const ViewInputs& inputs, int64_t t_end);
    void drawStopwatch(const ViewInputs& inputs, int64_t t_end);
    void drawComparison(const ViewInputs& inputs);

    QuorumViewState m_state;
    uint64_t m_recovery_generation = ~uint64_t(0);
    int64_t m_recovery_until = INT64_MAX; // the cursor m_recovery was measured up to
    std::optional<Recovery> m_recovery;
    std::vector<JobHold> m_holds; // the job's holds, with m_recovery
    std::string m_comparison;     // drawComparison's line
    bool m_stopwatch_first = false;
    std::optional<ShownContent> m_shown;
    ShortPane m_pane;
    bool m_compact = false; // this frame draws the short pane (m_pane.begin())
};

} // namespace dt::app
