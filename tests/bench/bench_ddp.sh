#!/usr/bin/env bash
# bench_ddp.sh: PyTorch's own DDP and dtlab's DDP, side by side, in one run.
#
# Usage: tests/bench/bench_ddp.sh [BUILD_DIR] [--steps S]
#   BUILD_DIR   where dtrun was built: BUILD_DIR/app/dtrun or BUILD_DIR/dtrun (default: build)
#   --steps S   training steps per run (default 30)
# Environment:
#   REPEATS=3           runs per configuration; the table shows the median of the repeats
#   RANKS="1 2 4"       world sizes to measure
#   WARMUP=5            PyTorch warm-up steps left out of its median (dtlab leaves out step 0)
#   BENCH_MD=FILE       also write the table as Markdown to FILE
#   BENCH_STRICT=1      exit 1 when a goal is missed (default: report only, exit 0)
#   SCENARIO=FILE       dtlab scenario (default: scenarios/ddp_basics.toml)
#   BUCKET_MB=X         run dtlab on a copy of the scenario with [strategy] bucket_mb = X
#                       (25 is PyTorch DDP's default bucket_cap_mb: 2 all-reduces per step,
#                       as the reference makes; ddp_basics uses 1 MiB, 4 all-reduces)
#   RUN_TIMEOUT=600     seconds before one run counts as hung and the benchmark stops
#
# For each world size N, REPEATS times, in a rotating order:
#   PyTorch DDP   tests/bench/pytorch_ddp_reference.py --ranks N --steps S --warmup W
#   dtlab         dtrun run scenarios/ddp_basics.toml --ranks N --steps S (telemetry on)
#   dtlab, off    the same with --no-telemetry
# A run's step time is the max over ranks of the per-rank median step time (a DDP step is as
# slow as its slowest rank). Goals (issue 27): dtlab/PyTorch <= 0.90, telemetry on/off <= 1.03.
# The machine's limit (issue 27): before the runs, tests/bench/gemm_anchor.py times the step's
# GEMMs at the model's shapes on one core (torch.mm = OpenBLAS sgemm, 1 thread). Each tool's
# "of limit" column is its GEMM work per second over what min(N, cores) cores do at that rate:
#   (G x N / step) / (min(N, cores) x anchor),  G = the step's GEMM FLOPs per rank.
# See tests/bench/README.md.
set -euo pipefail

PY=/usr/bin/python3
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

die() { echo "bench_ddp.sh: error: $*" >&2; exit 2; }
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

# ---- arguments --------------------------------------------------------------------------------
BUILD_DIR=""
STEPS=30
while [[ $# -gt 0 ]]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --steps)
            [[ $# -ge 2 ]] || die "--steps needs a value"
            STEPS="$2"; shift 2 ;;
        --steps=*) STEPS="${1#--steps=}"; shift ;;
        -*) die "unknown option '$1' (usage: bench_ddp.sh [BUILD_DIR] [--steps S])" ;;
        *)
            [[ -z "$BUILD_DIR" ]] || die "more than one BUILD_DIR given ('$BUILD_DIR', '$1')"
            BUILD_DIR="$1"; shift ;;
    esac
done
BUILD_DIR="${BUILD_DIR:-build}"
REPEATS="${REPEATS:-3}"
RANKS="${RANKS:-1 2 4}"
WARMUP="${WARMUP:-5}"
RUN_TIMEOUT="${RUN_TIMEOUT:-600}"

[[ "$STEPS" =~ ^[0-9]+$ && "$STEPS" -ge 2 ]] || die "--steps must be an integer >= 2 (got '$STEPS')"
[[ "$REPEATS" =~ ^[0-9]+$ && "$REPEATS" -ge 1 ]] || die "REPEATS must be an integer >= 1 (got '$REPEATS')"
[[ "$WARMUP" =~ ^[0-9]+$ ]] || die "WARMUP must be an integer >= 0 (got '$WARMUP')"
[[ "$RUN_TIMEOUT" =~ ^[0-9]+$ && "$RUN_TIMEOUT" -ge 1 ]] || die "RUN_TIMEOUT must be an integer >= 1 (got '$RUN_TIMEOUT')"
for n in $RANKS; do
    [[ "$n" =~ ^[0-9]+$ && "$n" -ge 1 ]] || die "RANKS must list integers >= 1 (got '$RANKS')"
done
[[ -n "${RANKS// /}" ]] || die "RANKS is empty"
# PyTorch needs at least one timed step after its warm-up.
if (( WARMUP >= STEPS )); then WARMUP=$(( STEPS / 2 )); fi

# Resolve paths before changing to the repository root (scenario paths are relative to it).
[[ "$BUILD_DIR" = /* ]] || BUILD_DIR="$PWD/$BUILD_DIR"
if [[ -n "${BENCH_MD:-}" && "$BENCH_MD" != /* ]]; then BENCH_MD="$PWD/$BENCH_MD"; fi
if [[ -n "${SCENARIO:-}" && "$SCENARIO" != /* ]]; then SCENARIO="$PWD/$SCENARIO"; fi
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
cd "$ROOT"

# CMake puts dtrun in BUILD_DIR/app (the app/ subdirectory); accept BUILD_DIR/dtrun too.
DTRUN="$BUILD_DIR/app/dtrun"
[[ -x "$DTRUN" ]] || DTRUN="$BUILD_DIR/dtrun"
REFERENCE="$SCRIPT_DIR/pytorch_ddp_reference.py"
SCENARIO="${SCENARIO:-scenarios/ddp_basics.toml}"

# ---- preflight: fail before any run, not half way through -------------------------------------
[[ -x "$DTRUN" ]] || die "dtrun not found in $BUILD_DIR/app or $BUILD_DIR: build it first (cmake --build $BUILD_DIR --target dtrun) or pass the build directory: bench_ddp.sh BUILD_DIR"
[[ -f "$SCENARIO" ]] || die "scenario $SCENARIO not found (relative paths are from $ROOT)"
[[ -x "$PY" ]] || die "$PY not found (the benchmark uses Debian's python3 with python3-torch)"
TORCH_VERSION="$("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)" \
    || die "$PY cannot import torch: install Debian's python3-torch"
[[ -n "${BENCH_MD:-}" ]] && { [[ -d "$(dirname "$BENCH_MD")" ]] || die "directory of BENCH_MD does not exist: $(dirname "$BENCH_MD")"; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/dtlab-bench.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
if [[ -n "${BUCKET_MB:-}" ]]; then
    [[ "$BUCKET_MB" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "BUCKET_MB must be a number of MiB (got '$BUCKET_MB')"
    grep -Eq '^bucket_mb *=' "$SCENARIO" || die "BUCKET_MB: $SCENARIO has no 'bucket_mb =' line to change"
    sed -E "s/^bucket_mb *= *[0-9.]+/bucket_mb = $BUCKET_MB/" "$SCENARIO" > "$WORK/scenario.toml"
    SCENARIO="$WORK/scenario.toml"
fi
RESULTS="$WORK/results.tsv"   # lines: tool <TAB> ranks <TAB> max-over-ranks median ms
: > "$RESULTS"

# max over ranks of step_ms_median in a summary JSON; fails if the run says it was not ok.
max_median() {
    "$PY" - "$1" <<'EOF'
import json, sys
path = sys.argv[1]
try:
    with open(path) as f:
        d = json.load(f)
except (OSError, ValueError) as e:
    sys.exit(f"cannot read {path}: {e}")
if d.get("ok", True) is not True:
    sys.exit(f"{path}: run not ok: {d.get('failure_reason', '?')}")
m = d.get("step_ms_median")
if not isinstance(m, list) or not m or not all(isinstance(x, (int, float)) for x in m):
    sys.exit(f"{path}: step_ms_median is not a non-empty list of numbers: {m!r}")
print(f"{max(m):.3f}")
EOF
}

# run_one TOOL N REP: one run, appends "TOOL N ms" to $RESULTS.
run_one() {
    local tool="$1" n="$2" rep="$3"
    local json="$WORK/$tool-$n-$rep.json" log="$WORK/$tool-$n-$rep.log"
    local -a cmd
    case "$tool" in
        pytorch) cmd=("$PY" "$REFERENCE" --ranks "$n" --steps "$STEPS" --warmup "$WARMUP" --json "$json" --quiet) ;;
        dtlab)   cmd=("$DTRUN" run "$SCENARIO" --ranks "$n" --steps "$STEPS" --summary "$json" --quiet) ;;
        dtlab_off) cmd=("$DTRUN" run "$SCENARIO" --ranks "$n" --steps "$STEPS" --summary "$json" --quiet --no-telemetry) ;;
    esac
    local rc=0
    timeout --kill-after=10 "$RUN_TIMEOUT" "${cmd[@]}" > "$log" 2>&1 || rc=$?
    if (( rc != 0 )); then
        if (( rc == 124 || rc == 137 )); then
            echo "bench_ddp.sh: error: run timed out after $RUN_TIMEOUT s: ${cmd[*]}" >&2
        else
            echo "bench_ddp.sh: error: run failed (exit $rc): ${cmd[*]}" >&2
        fi
        tail -n 20 "$log" >&2
        exit 1
    fi
    local ms
    ms="$(max_median "$json")" || { echo "bench_ddp.sh: error: after: ${cmd[*]}" >&2; exit 1; }
    printf '%s\t%s\t%s\n' "$tool" "$n" "$ms" >> "$RESULTS"
    printf '  ranks %-2s repeat %s/%s  %-9s %8.1f ms/step\n' "$n" "$rep" "$REPEATS" "$tool" "$ms" >&2
}

CORES="$(env -u OMP_NUM_THREADS nproc)"   # GNU nproc obeys OMP_NUM_THREADS, set above
# How busy the CPUs are before we start (1 s sample of /proc/stat; the load average would
# still count our own previous runs).
BUSY_BEFORE="$("$PY" -c '
import time
def sample():
    v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return sum(v), v[3] + v[4]          # total, idle + iowait
t0, i0 = sample(); time.sleep(1.0); t1, i1 = sample()
print(round(100.0 * (1.0 - (i1 - i0) / max(1, t1 - t0))))
')"
echo "dtlab DDP benchmark: ranks [$RANKS], $STEPS steps, dtlab buckets ${BUCKET_MB:-as in $(basename "$SCENARIO")}, $REPEATS repeats, torch $TORCH_VERSION, $CORES cores, CPU ${BUSY_BEFORE}% busy before start" >&2
if (( BUSY_BEFORE > 20 )); then
    echo "bench_ddp.sh: warning: the CPUs were ${BUSY_BEFORE}% busy before the first run: something else is running; timings will be slow and noisy (the ratios suffer less, as runs interleave)" >&2
fi
ANCHOR="$WORK/gemm_anchor.json"
"$PY" "$SCRIPT_DIR/gemm_anchor.py" --json "$ANCHOR" >&2 || die "the GEMM anchor failed (tests/bench/gemm_anchor.py)"
TOOLS=(pytorch dtlab dtlab_off)
for n in $RANKS; do
    for (( rep = 1; rep <= REPEATS; rep++ )); do
        # Rotate the order each repeat so no tool always runs first (or right after another).
        for (( i = 0; i < 3; i++ )); do
            run_one "${TOOLS[$(( (i + rep - 1) % 3 ))]}" "$n" "$rep"
        done
    done
done

# ---- table ------------------------------------------------------------------------------------
"$PY" - "$RESULTS" "$STEPS" "$WARMUP" "$REPEATS" "$TORCH_VERSION" "$CORES" "$BUSY_BEFORE" "${BENCH_MD:-}" "${BENCH_STRICT:-0}" "$ANCHOR" <<'EOF'
import json, os, statistics, sys
results, steps, warmup, repeats, torch_version, cores, busy, md_path, strict, anchor_path = sys.argv[1:]
anchor = json.load(open(anchor_path))
gemm_flops, limit = anchor["gemm_flops_per_step"], anchor["model_gemm_gflops"] * 1e9
runs = {}
for line in open(results):
    tool, n, ms = line.split("\t")
    runs.setdefault((tool, int(n)), []).append(float(ms))
ranks = sorted({n for _, n in runs})
header = ["ranks", "PyTorch DDP ms", "dtlab ms", "dtlab/PyTorch (goal <= 0.90)",
          "dtlab no-telemetry ms", "telemetry overhead (goal <= 1.03)",
          "PyTorch of limit", "dtlab of limit"]
# The share of the cores' GEMM rate at the model's shapes that a step time reaches.
of_limit = lambda n, ms: (gemm_flops * n / (ms / 1e3)) / (min(n, int(cores)) * limit)
rows, missed = [], []
for n in ranks:
    pt = statistics.median(runs[("pytorch", n)])
    on = statistics.median(runs[("dtlab", n)])
    off = statistics.median(runs[("dtlab_off", n)])
    r1, r2 = on / pt, on / off
    if r1 > 0.90: missed.append(f"ranks {n}: dtlab/PyTorch {r1:.2f} > 0.90")
    if r2 > 1.03: missed.append(f"ranks {n}: telemetry overhead {r2:.3f} > 1.03")
    rows.append([str(n), f"{pt:.1f}", f"{on:.1f}",
                 f"{r1:.2f} " + ("ok" if r1 <= 0.90 else "MISSED"),
                 f"{off:.1f}",
                 f"{r2:.3f} " + ("ok" if r2 <= 1.03 else "MISSED"),
                 f"{of_limit(n, pt):.2f}", f"{of_limit(n, on):.2f}"])
note = (f"ms = median step time of the slowest rank, median of {repeats} runs; "
        f"{steps} steps per run (PyTorch leaves out {warmup} warm-up steps, dtlab step 0); "
        + (f"dtlab buckets: {os.environ['BUCKET_MB']} MiB" if os.environ.get("BUCKET_MB") else "dtlab buckets: the scenario's")
        + ", PyTorch's: its default 25 MiB; "
        f"torch {torch_version}, {cores} cores, 1 thread per rank, CPU {busy}% busy before start; "
        f"limit = the step's GEMMs ({gemm_flops / 1e9:.2f} GFLOP per rank) at "
        f"{anchor['model_gemm_gflops']:.1f} GFLOP/s per core (tests/bench/gemm_anchor.py; a 1024^3 sgemm: "
        f"{anchor['square_1024_gflops']:.1f})")
widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
fmt = lambda cells: " | ".join(c.rjust(w) for c, w in zip(cells, widths))
print(fmt(header))
print("-+-".join("-" * w for w in widths))
for r in rows:
    print(fmt(r))
print(note)
for m in missed:
    print("goal missed: " + m)
if md_path:
    with open(md_path, "w") as f:
        f.write("| " + " | ".join(header) + " |\n")
        f.write("|" + "|".join("---:" for _ in header) + "|\n")
        for r in rows:
            f.write("| " + " | ".join(r) + " |\n")
        f.write("\n" + note + "\n")
        for m in missed:
            f.write("\nGoal missed: " + m + "\n")
    print(f"Markdown table written to {md_path}")
sys.exit(1 if (missed and strict == "1") else 0)
EOF
