// view_ddp_buckets.hpp: why DDP all-reduces during backward, drawn from one
// real step.
//
// Backward walks the autograd graph from the loss to the first layer, so the
// gradients of the last layers are ready first. After step 0 (one bucket of
// everything) DDP packs the parameters in the order their gradients arrived
// into buckets, PyTorch 1.13's rule (ddp_buckets.hpp: the first closes at
// 1 MiB, the others at [strategy] bucket_mb), and a hook on each parameter's
// gradient accumulator launches a bucket's all-reduce once its last gradient
// is ready and every earlier bucket has been launched.
//
// The view draws the model as its backward visits it (TinyGPT: head, blocks
// L-1 .. 0, embeddings; MLP: the last layer first), the buckets as brackets
// under the layers whose parameters they hold, and for one step of the
// selected rank (or rank 0; the step at the time cursor, else the latest
// step whose all-reduces all completed) where each bucket's all-reduce was
// launched (its Work's scheduled time, stamped by the real hook): which
// block's backward was running, how far into backward, how long it took and
// how much of it was hidden behind the rest of backward.
#pragma once

#include "views/view.hpp"
#include "views/view_inputs.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dt::app {

// Why the view has nothing to draw (pure; tests check it).
enum class BucketsEmpty { None, NoRun, NotDdp };
[[nodiscard]] BucketsEmpty ddpBucketsEmpty(const ViewInputs& inputs);

struct BucketRow {
    int bucket = 0;
    int64_t bytes = 0;
    int first_node = 0, last_node = 0; // the layers (nodes, backward order) its parameters come from
    std::string first_param,
        last_param; // in backward order: the first gradient ready, the one that launches it
    // Measured in the picture's step (false while none is found):
    bool measured = false;
    int64_t measured_bytes = 0;    // what the all-reduce carried
    double launched_ms = 0.0;      // after backward began
    int launched_during_node = -1; // the node whose backward was running; -1 = after backward ended
    double allreduce_ms = 0.0;     // scheduled -> completed
    double hidden_ms = 0.0;        // the part of it before backward ended
};

struct BucketPicture {
    std::vector<std::string> nodes; // backward order: "head", "block 3", ..., "embeddings"
    std::vector<BucketRow> buckets; // bucket 0 first (the first launched)
    int rank = 0;
    int step = -1; // -1 = no step measured yet
    double backward_ms = 0.0;
    bool overlap = true; // [strategy] overlap
};

// The picture for `rank` at `at_ns` (nullopt = the latest complete step). Pure: tests build it from synthetic
// events.
[[nodiscard]] BucketPicture computeBucketPicture(const RunModel& model, int rank,
                                                 std::optional<int64_t> at_ns);

class DdpBucketsView final : public View {
  public:
    DdpBucketsView() : View("ddp", "DDP buckets") { open = false; }
    [[nodiscard]] const char* helpText() const override;
    // Open for plain DDP ([strategy] kind = "ddp" without [fault_tolerance]).
    [[nodiscard]] std::optional<bool> relevantTo(const Scenario& scenario) const override;
    // The band under the timeline, as tall as preferredHeight() for the scenario's buckets (at most 36 %).
    [[nodiscard]] LayoutPlace layoutPlace(const LayoutContext& context) const override;
    [[nodiscard]] bool isEmpty(const ViewInputs& inputs) const override;
    void drawEmptyState(const ViewInputs& inputs) override;
    void drawContent(const ViewInputs& inputs) override;

    // Window height for the graph, the brackets and one line per bucket (the layout uses it).
    [[nodiscard]] static float preferredHeight(int buckets);
    [[nodiscard]] const BucketPicture& lastPicture() const { return m_picture; }

  private:
    BucketPicture m_picture;
    uint64_t m_generation = ~uint64_t(0); // the model generation, rank and cursor m_picture was computed for
    int m_rank = -1;
    std::optional<int64_t> m_at;
};

} // namespace dt::app
