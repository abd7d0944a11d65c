#!/usr/bin/env bash
# bench_sharding.sh: DDP, ZeRO-1, ZeRO-2 and FSDP side by side in one run:
# per-rank memory by category against the ZeRO/FSDP formulas, bytes per step
# against the cost model, and step time against DDP at the same world size.
#
# Usage: tests/bench/bench_sharding.sh [BUILD_DIR]
# Environment:
#   RANKS="1 2 4 8"     world sizes (8 ranks on 2 cores is oversubscribed: its times are noisy)
#   STRATEGIES="ddp zero1 zero2 fsdp"
#   STEPS=8             steps per run (the summary's step time skips step 0)
#   SCENARIO=FILE       default scenarios/zero_stages.toml (TinyGPT, 4 blocks, batch 8 per rank)
#   PREFETCH_REPEATS=3  fsdp_prefetch.toml with prefetch off / on, alternating (0: skip)
#   RATIO_RANKS="2 4"   FSDP / DDP step time (issue 27's goal: at most 1.10): ddp and fsdp
#   RATIO_REPEATS=5     alternating RATIO_REPEATS times at each world size, RATIO_STEPS
#   RATIO_STEPS=20      steps each; the ratio of the medians (0 repeats: skip)
#   BENCH_MD=FILE       also write the table as Markdown to FILE
# The reference (the "anchor") is the papers' arithmetic: ratios measured/theory
# for model states (measured = the tracking allocator's owner tags, live at the
# sample points; goal: within 10%), then each owner's exact peak, the step and
# start-up peaks and RSS and measured/cost-model for bytes. Step time
# is given as a ratio to DDP's in the same run. No PyTorch is needed.
set -euo pipefail
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${1:-$ROOT/build}"
DTRUN="$BUILD_DIR/app/dtrun"
[[ -x "$DTRUN" ]] || { echo "bench_sharding.sh: error: $DTRUN not found (build first)" >&2; exit 2; }
RANKS="${RANKS:-1 2 4 8}"
STRATEGIES="${STRATEGIES:-ddp zero1 zero2 fsdp}"
STEPS="${STEPS:-8}"
SCENARIO="${SCENARIO:-$ROOT/scenarios/zero_stages.toml}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
# A scenario's presentation delay ([run] step_delay_ms: 100 ms in zero_stages.toml, so a room
# can follow each step) is part of its step time: it would add the same 100 ms to every
# strategy and dilute each ratio to DDP. The runs use a copy without it.
sed -E 's/^step_delay_ms *= *[0-9.]+/step_delay_ms = 0/' "$SCENARIO" > "$OUT/scenario.toml"
SCENARIO="$OUT/scenario.toml"

for n in $RANKS; do
    for s in $STRATEGIES; do
        echo "bench_sharding: $s at $n ranks" >&2
        "$DTRUN" run "$SCENARIO" --ranks "$n" --strategy "$s" --steps "$STEPS" --batch-per-rank 8 \
            --summary "$OUT/$s-$n.json" --quiet
    done
done

# Prefetch off vs on (scenarios/fsdp_prefetch.toml, 4 ranks), alternating, PREFETCH_REPEATS times.
PREFETCH_REPEATS="${PREFETCH_REPEATS:-3}"
sed 's/^forward_prefetch = false/forward_prefetch = true/; s/^backward_prefetch = false/backward_prefetch = true/' \
    "$ROOT/scenarios/fsdp_prefetch.toml" > "$OUT/prefetch_on.toml"
for i in $(seq 1 "$PREFETCH_REPEATS"); do
    echo "bench_sharding: prefetch off/on, repeat $i" >&2
    "$DTRUN" run "$ROOT/scenarios/fsdp_prefetch.toml" --steps "$STEPS" --summary "$OUT/prefetch-off-$i.json" --quiet
    "$DTRUN" run "$OUT/prefetch_on.toml" --steps "$STEPS" --summary "$OUT/prefetch-on-$i.json" --quiet
done

# FSDP against DDP, alternating in one run: single runs on a 2-core machine vary by
# 10 to 20%, more than the difference being measured.
RATIO_RANKS="${RATIO_RANKS:-2 4}"
RATIO_REPEATS="${RATIO_REPEATS:-5}"
RATIO_STEPS="${RATIO_STEPS:-20}"
for n in $RATIO_RANKS; do
    for i in $(seq 1 "$RATIO_REPEATS"); do
        for s in ddp fsdp; do
            echo "bench_sharding: $s at $n ranks, alternating, repeat $i" >&2
            "$DTRUN" run "$SCENARIO" --ranks "$n" --strategy "$s" --steps "$RATIO_STEPS" --batch-per-rank 8 \
                --summary "$OUT/ratio-$s-$n-$i.json" --quiet
        done
    done
done

python3 - "$OUT" "$RANKS" "$STRATEGIES" "${BENCH_MD:-}" "$PREFETCH_REPEATS" "$RATIO_RANKS" "$RATIO_REPEATS" <<'PY'
import json, sys
out, ranks, strategies, md_path = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4]
MiB = 1024 * 1024
rows = []
# Memory columns: the tracking allocator's bytes per owner tag (measured_held: live at the
# sample points; measured: each owner's exact peak), against the formulas (theory).
head = ("| ranks | strategy | params held MiB (theory) | grads held MiB (theory) | AdamW held MiB (theory) | model states measured/theory "
        "| materialized peak MiB (theory max) | step peak MiB | bytes/step MiB (cost model) | measured/model | step ms | step vs ddp |")
rows.append(head)
rows.append("|" + "---|" * 12)
peaks = ["", "| ranks | strategy | grads peak MiB | AdamW peak MiB | comm buffers peak MiB | activations peak MiB "
         "| temporaries peak MiB | step peak MiB | start-up peak MiB | RSS MiB |", "|" + "---|" * 10]
for n in ranks:
    ddp_ms = None
    for s in strategies:
        j = json.load(open(f"{out}/{s}-{n}.json"))
        t = j["theory"]
        peak = max(j["peak_memory"], key=lambda p: p["step_peak"])
        held, measured = peak["measured_held"], peak["measured"]
        # fsdp: the parameters held include the unsharded units alive at a gather;
        # the formula's side is the shards plus the materialized peak.
        theory_params = t["parameters"] + (t["params_materialized_peak"] if s in ("fsdp", "hsdp") else 0)
        measured_states = held["parameters"] + held["gradients"] + held["optimizer_state"]
        theory_states = theory_params + t["gradients"] + t["optimizer_state"]
        steps = j["steps"]
        per_step = j["bytes_sent"][0] / steps if steps else 0
        ms = max(x for x in j["step_ms_median"] if x is not None)
        if s == "ddp": ddp_ms = ms
        bytes_ratio = (per_step / t["bytes_sent_per_step"]) if t["bytes_sent_per_step"] else float("nan")
        rows.append(f"| {n} | {s} | {held['parameters']/MiB:.2f} ({theory_params/MiB:.2f}) "
                    f"| {held['gradients']/MiB:.2f} ({t['gradients']/MiB:.2f}) "
                    f"| {held['optimizer_state']/MiB:.2f} ({t['optimizer_state']/MiB:.2f}) "
                    f"| {measured_states/theory_states:.4f} "
                    f"| {peak['params_materialized']/MiB:.2f} ({t['params_materialized_peak']/MiB:.2f}) "
                    f"| {peak['step_peak']/MiB:.1f} "
                    f"| {per_step/MiB:.2f} ({t['bytes_sent_per_step']/MiB:.2f}) | "
                    + ("-" if n == "1" else f"{bytes_ratio:.4f}") +
                    f" | {ms:.1f} | " + (f"{ms/ddp_ms:.2f}" if ddp_ms else "-") + " |")
        peaks.append(f"| {n} | {s} | {measured['gradients']/MiB:.2f} | {measured['optimizer_state']/MiB:.2f} "
                     f"| {measured['comm_buffers']/MiB:.2f} | {measured['activations']/MiB:.1f} "
                     f"| {measured['temporaries']/MiB:.2f} | {peak['step_peak']/MiB:.1f} "
                     f"| {peak['startup_peak']/MiB:.2f} | {peak['rss']/MiB:.0f} |")
rows.extend(peaks)
import statistics
reps = int(sys.argv[5])
def prefetch(tag):
    runs = [json.load(open(f"{out}/prefetch-{tag}-{i}.json")) for i in range(1, reps + 1)]
    ms = statistics.median(max(x for x in r["step_ms_median"] if x is not None) for r in runs)
    return ms, max(p["params_materialized"] for p in runs[0]["peak_memory"])
if reps > 0:
    off, on = prefetch("off"), prefetch("on")
    rows.append("")
    rows.append("| fsdp_prefetch.toml, 4 ranks | step ms (median of %d) | materialized peak MiB |" % reps)
    rows.append("|---|---|---|")
    rows.append(f"| prefetch off | {off[0]:.1f} | {off[1]/MiB:.2f} |")
    rows.append(f"| prefetch on (forward + backward, limit 2) | {on[0]:.1f} ({on[0]/off[0]:.2f}x) | {on[1]/MiB:.2f} |")
ratio_ranks, ratio_reps = sys.argv[6].split(), int(sys.argv[7])
if ratio_reps > 0 and ratio_ranks:
    step_ms = lambda path: max(x for x in json.load(open(path))["step_ms_median"] if x is not None)
    rows.append("")
    rows.append(f"| ranks | ddp step ms (each run) | fsdp step ms (each run) | ddp median | fsdp median "
                f"| fsdp / ddp (goal <= 1.10) |")
    rows.append("|---|---|---|---|---|---|")
    for n in ratio_ranks:
        runs = {s: [step_ms(f"{out}/ratio-{s}-{n}-{i}.json") for i in range(1, ratio_reps + 1)] for s in ("ddp", "fsdp")}
        d, f = statistics.median(runs["ddp"]), statistics.median(runs["fsdp"])
        each = lambda xs: " / ".join(f"{x:.0f}" for x in xs)
        rows.append(f"| {n} | {each(runs['ddp'])} | {each(runs['fsdp'])} | {d:.1f} | {f:.1f} | {f/d:.3f} |")
text = "\n".join(rows)
print(text)
if md_path:
    open(md_path, "w").write(text + "\n")
PY
