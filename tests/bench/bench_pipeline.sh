#!/usr/bin/env bash
# bench_pipeline.sh: pipeline bubble measured against the papers' formulas,
# for every schedule, p in {2, 4}, m in {1, 4, 8, 16}, in one run; and peak
# activation memory per schedule.
#
# Usage: tests/bench/bench_pipeline.sh [BUILD_DIR]
# Environment: STAGES="2 4", MICRO="1 4 8 16", SCHEDULES="gpipe 1f1b interleaved zb-h1",
#   STEPS=5, BENCH_MD=FILE (also write the table there).
# Model: TinyGPT d_model 256, 8 blocks, 32 sequences per step (per pipeline),
# so one microbatch is 32/m sequences. Interleaved uses 2 chunks per rank and
# needs m to be a multiple of p (other cells are skipped). The anchor is the
# formula: (p-1)/(m+p-1) for gpipe/1f1b, (p-1)/(vm+p-1) interleaved, and
# (p-1)(t_f+t_b-t_w)/(m(t_f+t_b+t_w)+(p-1)(t_f+t_b-t_w)) for zb-h1 with the
# run's own measured t_f, t_b (input part), t_w. 4 stages on 2 cores share
# the cores (two processes per core), which blurs those cells.
set -euo pipefail
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${1:-$ROOT/build}"
DTRUN="$BUILD_DIR/app/dtrun"
[[ -x "$DTRUN" ]] || { echo "bench_pipeline.sh: error: $DTRUN not found (build first)" >&2; exit 2; }
STAGES="${STAGES:-2 4}"
MICRO="${MICRO:-1 4 8 16}"
SCHEDULES="${SCHEDULES:-gpipe 1f1b interleaved zb-h1}"
STEPS="${STEPS:-5}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

for p in $STAGES; do
  for m in $MICRO; do
    for s in $SCHEDULES; do
      v=1
      if [[ "$s" == interleaved ]]; then v=2; (( m % p == 0 )) || continue; fi
      cat > "$OUT/$s-$p-$m.toml" <<TOML
[scenario]
name = "bench $s p$p m$m"
[topology]
ranks = $p
stages = $p
[model]
d_model = 256
layers = 8
heads = 4
[data]
batch_per_rank = 32
[strategy]
kind = "pipeline"
schedule = "$s"
chunks_per_rank = $v
microbatches = $m
[run]
steps = $STEPS
TOML
      echo "bench_pipeline: $s p=$p m=$m" >&2
      "$DTRUN" run "$OUT/$s-$p-$m.toml" --summary "$OUT/$s-$p-$m.json" --quiet
    done
  done
done

python3 - "$OUT" "$STAGES" "$MICRO" "$SCHEDULES" "${BENCH_MD:-}" <<'PY'
import json, os, sys
out, stages, micro, schedules, md = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4].split(), sys.argv[5]
MiB = 2 ** 20
rows = ["| p | m | schedule | bubble measured | theory | measured - theory (points) | step ms | t_f / t_b / t_w ms | peak activations MiB (stage 0) |",
        "|---|---|---|---|---|---|---|---|---|"]
for p in stages:
    for m in micro:
        for s in schedules:
            f = f"{out}/{s}-{p}-{m}.json"
            if not os.path.exists(f): continue
            j = json.load(open(f)); q = j["pipeline"]
            ms = max(x for x in j["step_ms_median"] if x is not None)
            act = j["peak_memory"][0]["activations"] / MiB
            rows.append(f"| {p} | {m} | {s} | {q['bubble_measured']:.3f} | {q['bubble_theory']:.3f} | "
                        f"{100*(q['bubble_measured']-q['bubble_theory']):+.1f} | {ms:.0f} | "
                        f"{q['t_forward_ms']:.1f} / {q['t_backward_ms']:.1f} / {q['t_weight_ms']:.1f} | {act:.1f} |")
text = "\n".join(rows)
print(text)
if md: open(md, "w").write(text + "\n")
PY
