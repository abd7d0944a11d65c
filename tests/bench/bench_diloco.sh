#!/usr/bin/env bash
# bench_diloco.sh: DDP against DiLoCo and Streaming DiLoCo on slow links.
#
# 2 replicas (ranks) of TinyGPT (4 blocks, d_model 128: 0.83 M parameters,
# 3.3 MB of fp32), batch 8 per replica, STEPS steps, the same seed and data,
# on 3 modelled links ([network] bandwidth_mbit_s: 0 = uncapped loopback,
# 1000, 100; no added latency). Runs, each at each bandwidth:
#   ddp                 gradients all-reduced every step
#   diloco H=10, H=50   classic DiLoCo, fp32 pseudo-gradients
#   streaming F=2, F=4  Streaming DiLoCo, H=40, sync_delay 1, int8 pseudo-gradients
# From each run's summary: the loss by step and each step's end (wall-clock),
# bytes sent per replica, syncs and the peak bytes of one sync.
# Goal (issue 7): at 100 Mbit/s DiLoCo reaches DDP's loss at the same number
# of samples within 5% (the mean loss of the last 20 steps) while taking at
# least 5x less wall-clock time.
# Plots (tests/plot_png): loss against steps, and loss against wall-clock at
# 100 Mbit/s and at 1 Gbit/s (losses smoothed over 10 steps) into PLOT_DIR.
#
# Usage: tests/bench/bench_diloco.sh [BUILD_DIR]
# Environment: STEPS=200, BATCH=8 (per replica), BANDWIDTHS="0 1000 100", PLOT_DIR=docs/images,
#              BENCH_MD=FILE (also write the tables as Markdown)
set -euo pipefail
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${1:-$ROOT/build}"
DTRUN="$BUILD_DIR/app/dtrun"
PLOT="$BUILD_DIR/tests/plot_png"
[[ -x "$DTRUN" ]] || { echo "bench_diloco.sh: error: $DTRUN not found (build first)" >&2; exit 2; }
[[ -x "$PLOT" ]] || { echo "bench_diloco.sh: error: $PLOT not found (build the plot_png target)" >&2; exit 2; }
STEPS="${STEPS:-200}"
BATCH="${BATCH:-8}"
BANDWIDTHS="${BANDWIDTHS:-0 1000 100}"
PLOT_DIR="${PLOT_DIR:-$ROOT/docs/images}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# scenario NAME KIND BANDWIDTH DILOCO_TOML
scenario() {
    cat > "$OUT/$1.toml" <<TOML
[scenario]
name = "bench diloco $1"
[topology]
ranks = 2
[model]
kind = "tiny_gpt"
layers = 4
d_model = 128
[data]
source = "fortunes"
batch_per_rank = $BATCH
[strategy]
kind = "$2"
[network]
bandwidth_mbit_s = $3
[run]
steps = $STEPS
seed = 1
$4
TOML
}

# label|strategy|[diloco] lines (\n between lines)
RUNS=("ddp|ddp|"
      "diloco H=10|diloco|[diloco]\ninner_steps = 10"
      "diloco H=50|diloco|[diloco]\ninner_steps = 50"
      "streaming F=2|diloco|[diloco]\ninner_steps = 40\nfragments = 2\nsync_delay = 1\npseudo_gradient = \"int8\""
      "streaming F=4|diloco|[diloco]\ninner_steps = 40\nfragments = 4\nsync_delay = 1\npseudo_gradient = \"int8\"")

for bw in $BANDWIDTHS; do
    for run in "${RUNS[@]}"; do
        IFS='|' read -r label kind diloco <<< "$run"
        file="$(echo "$label" | tr ' =' '__')-$bw"
        scenario "$file" "$kind" "$bw" "$(printf '%b' "$diloco")"
        echo "bench_diloco: $label at ${bw} Mbit/s" >&2
        "$DTRUN" run "$OUT/$file.toml" --summary "$OUT/$file.json" --quiet
    done
done

python3 - "$OUT" "$STEPS" "$BANDWIDTHS" "${BENCH_MD:-}" "$PLOT_DIR" "$PLOT" <<'PY'
import json, os, subprocess, sys
out, steps, bandwidths, md_path, plot_dir, plot = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4], sys.argv[5], sys.argv[6]
labels = ["ddp", "diloco H=10", "diloco H=50", "streaming F=2", "streaming F=4"]
def name(label, bw): return label.replace(" ", "_").replace("=", "_") + "-" + bw
def load(label, bw): return json.load(open(os.path.join(out, name(label, bw) + ".json")))
def tail_loss(j, n=20):
    xs = [x for x in j["loss_by_step"][-n:] if x is not None]
    return sum(xs) / len(xs)
def smooth(xs, k=10):
    return [sum(xs[max(0, i - k + 1):i + 1]) / len(xs[max(0, i - k + 1):i + 1]) for i in range(len(xs))]
def bw_text(bw): return "uncapped" if bw == "0" else ("1 Gbit/s" if bw == "1000" else bw + " Mbit/s")

lines = []
lines.append("| link | run | wall s | loss (last 20 steps) | vs DDP loss | DDP time / run time | MB sent per replica | collectives per replica | peak MB per collective |")
lines.append("|---|---|---|---|---|---|---|---|---|")
goal = {}
for bw in bandwidths:
    ddp = load("ddp", bw)
    ddp_loss, ddp_time = tail_loss(ddp), ddp["step_end_s_by_step"][-1]
    for label in labels:
        j = load(label, bw)
        t = j["step_end_s_by_step"][-1]
        coll = j["collectives"]
        syncs = sum(c["count"] for k, c in coll.items() if k in ("all-reduce", "all-gather")) // j["ranks"]
        peak = max([c.get("max_bytes", 0) for k, c in coll.items() if k in ("all-reduce", "all-gather")] or [0])
        loss = tail_loss(j)
        lines.append(f"| {bw_text(bw)} | {label} | {t:.1f} | {loss:.3f} | {loss / ddp_loss - 1:+.1%} | {ddp_time / t:.2f} | "
                     f"{j['bytes_sent'][0] / 1e6:.1f} | {syncs} | {peak / 1e6:.2f} |")
        if bw == "100" and label.startswith("diloco"):
            goal[label] = (loss / ddp_loss - 1, ddp_time / t)
text = "\n".join(lines) + "\n"
if goal:
    text += "\nGoal at 100 Mbit/s (loss within 5% of DDP's, at least 5x less wall-clock):\n\n"
    for label, (dl, speed) in goal.items():
        text += f"- {label}: loss {dl:+.1%} vs DDP ({'met' if abs(dl) <= 0.05 else 'NOT met'}), {speed:.1f}x less time ({'met' if speed >= 5 else 'NOT met'})\n"
    # No DiLoCo run can beat its own compute: the most it can save is DDP's
    # time at 100 Mbit/s over the DiLoCo run's time on the uncapped link.
    if "0" in bandwidths:
        for label in goal:
            ceiling = load("ddp", "100")["step_end_s_by_step"][-1] / load(label, "0")["step_end_s_by_step"][-1]
            text += f"- ceiling for {label} (DDP at 100 Mbit/s / {label} uncapped): {ceiling:.1f}x\n"
print(text)
if md_path:
    open(md_path, "w").write(text)

# Plots: loss against steps (100 Mbit/s runs; steps do not depend on the link), against wall-clock per link.
os.makedirs(plot_dir, exist_ok=True)
def write_csv(path, bw, x_of):
    with open(path, "w") as f:
        for label in labels:
            j = load(label, bw)
            losses = smooth([x for x in j["loss_by_step"]])
            for i, (loss, end) in enumerate(zip(losses, j["step_end_s_by_step"])):
                f.write(f"{label},{x_of(i, end)},{loss}\n")
ref = "100" if "100" in bandwidths else bandwidths[-1]
write_csv(os.path.join(out, "steps.csv"), ref, lambda i, end: i)
subprocess.run([plot, os.path.join(plot_dir, "bench_diloco_loss_steps.png"), "Loss against steps (2 replicas, smoothed over 10)",
                "step", "loss", os.path.join(out, "steps.csv")], check=True)
for bw in bandwidths:
    if bw == "0": continue
    csv = os.path.join(out, f"time-{bw}.csv")
    write_csv(csv, bw, lambda i, end: end)
    subprocess.run([plot, os.path.join(plot_dir, f"bench_diloco_loss_time_{bw}mbit.png"),
                    f"Loss against wall-clock, {bw_text(bw)} link", "seconds", "loss", csv], check=True)
print("plots in " + plot_dir, file=sys.stderr)
PY
