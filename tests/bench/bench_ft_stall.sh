#!/usr/bin/env bash
# bench_ft_stall.sh: how long one fault stalls the whole job, by how the
# lighthouse detects it and by the size of the replica group.
#
# Two replica groups train TinyGPT (d_model 64, 2 layers): groups of 1 rank
# (ddp, 2 ranks) or of 2 ranks (fsdp inside each group, 4 ranks). The last
# rank is SIGKILLed KILLS times, every KILL_EVERY_S seconds, and restarted
# after 300 ms; detection = "connection" (a closed TCP connection, dtlab's
# fast path) or "heartbeat" (TorchFT's rule; heartbeat_timeout_ms =
# HEARTBEAT_MS). Per fault, from the run's Chrome trace:
#   stall   the job's gap: the last commit of any rank before the kill to the
#           first commit of any rank after it (a step time when nothing stalls)
#   step    the median step time of the fault-free steps, for scale
#
# Usage: tests/bench/bench_ft_stall.sh [BUILD_DIR]
# Environment: KILLS=3, KILL_EVERY_S=4, HEARTBEAT_MS=1000, BENCH_MD=FILE (also
#              write the table as Markdown)
set -euo pipefail
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${1:-$ROOT/build}"
DTRUN="$BUILD_DIR/app/dtrun"
[[ -x "$DTRUN" ]] || { echo "bench_ft_stall.sh: error: $DTRUN not found (build first)" >&2; exit 2; }
KILLS="${KILLS:-3}"
KILL_EVERY_S="${KILL_EVERY_S:-4}"
HEARTBEAT_MS="${HEARTBEAT_MS:-1000}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# scenario NAME STRATEGY RANKS REPLICAS DETECTION
scenario() {
    local faults=""
    for k in $(seq 1 "$KILLS"); do
        faults+="[[faults]]
action = \"kill\"
rank = $(($3 - 1))
when = \"time\"
at_s = $((k * KILL_EVERY_S))
"
    done
    cat > "$OUT/$1.toml" <<EOF
[scenario]
name = "bench ft stall $1"
[topology]
ranks = $3
replicas = $4
[model]
kind = "tiny_gpt"
d_model = 64
layers = 2
heads = 2
[data]
source = "fortunes"
batch_per_rank = 8
[strategy]
kind = "$2"
[run]
steps = $(((KILLS + 1) * KILL_EVERY_S * 1000 / 30))
seed = 1
step_delay_ms = 20
[fault_tolerance]
enabled = true
detection = "$5"
heartbeat_timeout_ms = $HEARTBEAT_MS
join_timeout_ms = $((HEARTBEAT_MS * 3))
collective_timeout_ms = 5000
restart_delay_ms = 300
$faults
EOF
}

for detection in connection heartbeat; do
    for group in 1 2; do
        name="$detection-g$group"
        if [[ $group == 1 ]]; then
            scenario "$name" ddp 2 1 "$detection"
        else
            scenario "$name" fsdp 4 2 "$detection"
        fi
        echo "bench_ft_stall: $name: $KILLS kills, one every $KILL_EVERY_S s" >&2
        "$DTRUN" run "$OUT/$name.toml" --trace "$OUT/$name.json" --summary "$OUT/$name.summary.json" --quiet
    done
done

python3 - "$OUT" "$HEARTBEAT_MS" "${BENCH_MD:-}" <<'PY'
import json, statistics, sys
out, heartbeat_ms, md_path = sys.argv[1], sys.argv[2], sys.argv[3]
rows = []
for detection in ("connection", "heartbeat"):
    for group in (1, 2):
        name = f"{detection}-g{group}"
        trace = json.load(open(f"{out}/{name}.json"))
        events = trace["traceEvents"] if isinstance(trace, dict) else trace
        commits = sorted(e["ts"] for e in events if e.get("name") == "commit")
        faults = sorted(e["ts"] for e in events if e.get("name") == "fault injected")
        stalls = []
        for f in faults:
            before = [c for c in commits if c < f]
            after = [c for c in commits if c > f]
            if before and after:
                stalls.append((after[0] - before[-1]) / 1000.0)
        summary = json.load(open(f"{out}/{name}.summary.json"))
        step = statistics.median(x for x in summary["step_ms_median"] if x)
        rows.append((detection, group, len(stalls), statistics.median(stalls), max(stalls), step,
                     "yes" if summary["ok"] else "NO"))
head = ("| detection | ranks per group | kills | stall ms (median) | stall ms (max) | step ms | ok |\n"
        "|---|---|---|---|---|---|---|")
lines = [head] + [f"| {d} | {g} | {n} | {m:.0f} | {x:.0f} | {s:.0f} | {ok} |" for d, g, n, m, x, s, ok in rows]
text = "\n".join(lines) + f"\n\n(heartbeat_timeout_ms = {heartbeat_ms})\n"
print(text)
if md_path:
    open(md_path, "w").write(text)
PY
