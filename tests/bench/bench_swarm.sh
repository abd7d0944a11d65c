#!/usr/bin/env bash
# bench_swarm.sh: SWARM throughput with 0 and 1 dead server per stage, and the
# time from a server's death to the end of the first call re-routed away from
# it, beside the anchor: the same model as a plain pipeline (2 stages, 1F1B,
# 2 pipelines side by side, the same global batch) in the same run.
#
# Usage: tests/bench/bench_swarm.sh [BUILD_DIR]
# Environment:
#   REPEATS=3     alternating repeats of each configuration (medians reported)
#   STEPS=30      trainer steps per run
#   BENCH_MD=FILE also write the tables as Markdown to FILE
# Configurations (2 trainers, 2 stages x 2 servers, batch 8 per trainer in 2
# microbatches, no DiLoCo rounds so only the serving is timed):
#   healthy      all 4 servers serve
#   one dead     rank 3 (stage 0) and rank 5 (stage 1) killed at step 0 and
#                not restarted: each stage runs on one server
#   kill         rank 3 killed at step 10 and restarted: death -> re-routed call
#   pipeline     the anchor: [strategy] kind = "pipeline", 4 ranks
set -euo pipefail
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${1:-$ROOT/build}"
DTRUN="$BUILD_DIR/app/dtrun"
[[ -x "$DTRUN" ]] || { echo "bench_swarm.sh: error: $DTRUN not found (build first)" >&2; exit 2; }
REPEATS="${REPEATS:-3}"
STEPS="${STEPS:-30}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

swarm() { # $1 = extra TOML
    cat <<TOML
[scenario]
name = "bench swarm"
[topology]
ranks = 6
stages = 2
[model]
layers = 4
[data]
batch_per_rank = 8
[strategy]
kind = "swarm"
microbatches = 2
[swarm]
trainers = 2
servers_per_stage = 2
outer_every = 0
$1
[run]
steps = $STEPS
TOML
}
swarm "" > "$OUT/healthy.toml"
swarm 'restart = "never"
[[faults]]
action = "kill"
rank = 3
when = "step"
step = 0
[[faults]]
action = "kill"
rank = 5
when = "step"
step = 0' > "$OUT/dead.toml"
swarm '[[faults]]
action = "kill"
rank = 3
when = "step"
step = 10' > "$OUT/kill.toml"
cat > "$OUT/pipeline.toml" <<TOML
[scenario]
name = "bench pipeline anchor"
[topology]
ranks = 4
stages = 2
[model]
layers = 4
[data]
batch_per_rank = 8
[strategy]
kind = "pipeline"
schedule = "1f1b"
microbatches = 2
[run]
steps = $STEPS
TOML

for i in $(seq 1 "$REPEATS"); do
    for c in healthy dead kill pipeline; do
        echo "bench_swarm: $c, repeat $i" >&2
        "$DTRUN" run "$OUT/$c.toml" --summary "$OUT/$c-$i.json" --quiet || true
    done
done

python3 - "$OUT" "$REPEATS" "${BENCH_MD:-}" <<'PY'
import json, statistics, sys
out, repeats, md_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def load(c, i):
    with open(f"{out}/{c}-{i}.json") as f:
        return json.load(f)
def samples_per_s(s):
    if s.get("swarm"):
        return s["swarm"]["samples_per_s"]
    ends = [e for e in s["step_end_s_by_step"] if e is not None]
    # the pipeline: 2 pipelines x 8 samples per step, from the end of step 0 to the last step's end
    return 16 * (len(ends) - 1) / (ends[-1] - ends[0]) if len(ends) > 1 else float("nan")
rows = ["| configuration | ok | samples/s (median of %d) | vs healthy swarm |" % repeats, "|---|---|---|---|"]
med = {}
for c, label in [("healthy", "swarm, 4 servers"), ("dead", "swarm, 1 server dead per stage"),
                 ("kill", "swarm, rank 3 killed at step 10, restarted"), ("pipeline", "pipeline 2 x 2 (anchor)")]:
    runs = [load(c, i) for i in range(1, repeats + 1)]
    med[c] = statistics.median(samples_per_s(s) for s in runs)
    ok = all(s["ok"] for s in runs)
    rows.append(f"| {label} | {ok} | {med[c]:.1f} | {med[c] / med['healthy']:.2f} |")
reroute = [d["reroute_ms"] for i in range(1, repeats + 1) for d in load("kill", i)["swarm"]["deaths"]
           if d["reroute_ms"] is not None]
lost = [d["gradients_lost"] for i in range(1, repeats + 1) for d in load("kill", i)["swarm"]["deaths"]]
back = [d["back_at_s"] - d["at_s"] for i in range(1, repeats + 1) for d in load("kill", i)["swarm"]["deaths"]
        if d["back_at_s"] is not None]
rows.append("")
rows.append("| death of rank 3 | median | all |")
rows.append("|---|---|---|")
rows.append("| kill -> first re-routed call ends, ms | %.1f | %s |" % (statistics.median(reroute), ", ".join("%.1f" % x for x in reroute)))
rows.append("| gradients lost (backward calls not stepped) | %g | %s |" % (statistics.median(lost), ", ".join(str(x) for x in lost)))
rows.append("| kill -> its restart serves again, s | %.2f | %s |" % (statistics.median(back), ", ".join("%.2f" % x for x in back)))
text = "\n".join(rows)
print(text)
if md_path:
    with open(md_path, "w") as f:
        f.write(text + "\n")
PY
