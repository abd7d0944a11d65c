#!/usr/bin/env bash
# bench_recovery.sh: how fast quorum fault tolerance recovers, on loopback.
#
# 1. Recovery per model size (about 1, 10 and 100 MB of fp32 parameters;
#    TinyGPT, 3 replica groups of 1 rank): replica 1 is SIGKILLed a few
#    seconds in and restarted after RESTART_MS. From the run's summary
#    (recovery_measure.hpp):
#      survivors  SIGKILL -> the survivors' next committed step
#      rejoin     restart -> the restarted replica's first committed step
#                 (process start, LibTorch and model init, quorum, heal)
#      heal       the heal transfer itself (params + AdamW state, 12 B/param)
#    once per CASE: TRANSPORT:CHUNKS:GROUP, where TRANSPORT is the heal's
#    ([fault_tolerance] heal_transport: pg = over the process group, http =
#    TorchFT's HTTPTransport, CHUNKS = heal_chunks) and GROUP the ranks per
#    replica group (1: 3 groups of 1 ddp rank; 2: 2 groups of 2 fsdp ranks,
#    rank 1 killed takes group 0 down, each rank heals its half).
# 2. Training efficiency under a kill every KILL_EVERY_S seconds (the 1 MB
#    model), against a fault-free run of the same steps in the same script:
#      job rate   global steps per second, faulty / fault-free
#      samples    replica-steps committed per second (batches that reached
#                 the model), faulty / fault-free
# Goals (issue 6): survivors < 1 s; a 100 MB heal < 2 s; efficiency >= 90%.
# Goals (issue 26): a 100 MB heal < 1.5 s, at least 0.8 GB/s.
#
# Usage: tests/bench/bench_recovery.sh [BUILD_DIR]
# Environment: SIZES="1 10 100", CASES="pg:0:1 http:0:1 http:4:1", RESTART_MS=200,
#              KILL_EVERY_S=10, EFF_SECONDS=40 (0: no efficiency runs),
#              BENCH_MD=FILE (also write the tables as Markdown)
set -euo pipefail
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="${1:-$ROOT/build}"
DTRUN="$BUILD_DIR/app/dtrun"
[[ -x "$DTRUN" ]] || { echo "bench_recovery.sh: error: $DTRUN not found (build first)" >&2; exit 2; }
SIZES="${SIZES:-1 10 100}"
CASES="${CASES:-pg:0:1 http:0:1 http:4:1}"
RESTART_MS="${RESTART_MS:-200}"
KILL_EVERY_S="${KILL_EVERY_S:-10}"
EFF_SECONDS="${EFF_SECONDS:-40}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

# model size (MB of fp32 parameters) -> TinyGPT shape
model_toml() {
    case "$1" in
        1) echo 'd_model = 128
layers = 1
heads = 4
context = 32' ;;
        10) echo 'd_model = 256
layers = 3
heads = 4
context = 32' ;;
        100) echo 'd_model = 512
layers = 8
heads = 8
context = 16' ;;
        *) echo "bench_recovery.sh: error: no model for SIZE $1 (use 1, 10 or 100)" >&2; exit 2 ;;
    esac
}

# scenario NAME SIZE STEPS FAULTS_TOML [TRANSPORT CHUNKS GROUP]
scenario() {
    local transport="${5:-pg}" chunks="${6:-0}" group="${7:-1}"
    local topology='ranks = 3' strategy='ddp'
    if [[ "$group" == 2 ]]; then
        topology='ranks = 4
replicas = 2'
        strategy='fsdp'
    fi
    cat > "$OUT/$1.toml" <<EOF
[scenario]
name = "bench recovery $1"
[topology]
$topology
[model]
kind = "tiny_gpt"
$(model_toml "$2")
[data]
source = "fortunes"
batch_per_rank = 2
[strategy]
kind = "$strategy"
[run]
steps = $3
seed = 1
[telemetry]
enabled = true
[fault_tolerance]
enabled = true
heartbeat_timeout_ms = 1000
collective_timeout_ms = 5000
restart_delay_ms = $RESTART_MS
heal_transport = "$transport"
$([[ "$transport" == http ]] && echo "heal_chunks = $chunks")
$4
EOF
}

for size in $SIZES; do
    # Calibrate: the fault-free step time decides how many steps cover ~KILL_AT + 12 s.
    scenario "calib-$size" "$size" 6 ""
    echo "bench_recovery: ${size} MB: calibrating" >&2
    "$DTRUN" run "$OUT/calib-$size.toml" --summary "$OUT/calib-$size.json" --quiet
    step_ms=$(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(max(x for x in j['step_ms_median'] if x))" "$OUT/calib-$size.json")
    steps=$(python3 -c "import sys; print(max(30, int(16000 / float(sys.argv[1]))))" "$step_ms")
    for case in $CASES; do
        IFS=: read -r transport chunks group <<< "$case"
        scenario "kill-$size-$case" "$size" "$steps" '[[faults]]
action = "kill"
rank = 1
when = "time"
at_s = 4' "$transport" "$chunks" "$group"
        echo "bench_recovery: ${size} MB, $case: $steps steps of ~${step_ms} ms, kill rank 1 at 4 s" >&2
        "$DTRUN" run "$OUT/kill-$size-$case.toml" --summary "$OUT/kill-$size-$case.json" --quiet
    done
done
if [[ "$EFF_SECONDS" == 0 ]]; then
    SKIP_EFF=1
fi

# Efficiency: the same steps fault-free and with a kill every KILL_EVERY_S (rotating replicas).
if [[ -z "${SKIP_EFF:-}" ]]; then
step_ms=$(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(max(x for x in j['step_ms_median'] if x))" "$OUT/calib-1.json" 2>/dev/null || echo 20)
eff_steps=$(python3 -c "import sys; print(int(${EFF_SECONDS} * 1000 / float(sys.argv[1])))" "$step_ms")
faults=""
k=0
for t in $(seq "$KILL_EVERY_S" "$KILL_EVERY_S" $((EFF_SECONDS - 2))); do
    faults+="[[faults]]
action = \"kill\"
rank = $((k % 3))
when = \"time\"
at_s = $t
"
    k=$((k + 1))
done
scenario "eff-free" 1 "$eff_steps" ""
scenario "eff-kill" 1 "$eff_steps" "$faults"
echo "bench_recovery: efficiency: $eff_steps steps fault-free, then with a kill every ${KILL_EVERY_S} s" >&2
"$DTRUN" run "$OUT/eff-free.toml" --summary "$OUT/eff-free.json" --quiet
"$DTRUN" run "$OUT/eff-kill.toml" --summary "$OUT/eff-kill.json" --quiet
fi

python3 - "$OUT" "$SIZES" "${BENCH_MD:-}" "$KILL_EVERY_S" "$CASES" <<'PY'
import json, os, sys
out, sizes, md_path, every, cases = sys.argv[1], sys.argv[2].split(), sys.argv[3], sys.argv[4], sys.argv[5].split()
lines = ["| model MB (params) | heal transport | ranks per group | step ms | detected ms | new quorum ms "
         "| survivors commit ms (goal < 1000) | restart -> rejoined ms | heal ms (goal < 1500 at 100 MB) "
         "| heal MB (one rank) | heal GB/s (goal >= 0.8) | checksums equal |",
         "|" + "---|" * 12]
for size in sizes:
  for case in cases:
    transport, chunks, group = case.split(":")
    label = "pg" if transport == "pg" else f"http, {chunks} chunks" if chunks != "0" else "http, whole"
    j = json.load(open(f"{out}/kill-{size}-{case}.json"))
    ft = j["fault_tolerance"]
    r = [x for x in ft["recoveries"] if x["fault"] == "kill"][0]
    params_mb = (r["heal_bytes"] / 4 - 2) / 3 * 4 / 1e6 * int(group) if r["heal_bytes"] else float("nan")
    f = lambda v: "-" if v is None else f"{v:.0f}"
    rejoin = None if r["rejoined_ms"] is None or r["restarted_ms"] is None else r["rejoined_ms"] - r["restarted_ms"]
    gbps = r["heal_bytes"] / (r["heal_duration_ms"] / 1e3) / 1e9 if r["heal_duration_ms"] else float("nan")
    # Equal per shard: ranks at the same place of their groups hold the same shard.
    g = int(group)
    per_shard = [set(x for i, x in enumerate(j["params_checksum"]) if x and i % g == k) for k in range(g)]
    step = max(x for x in j["step_ms_median"] if x)
    lines.append(f"| {params_mb:.1f} | {label} | {group} | {step:.0f} | {f(r['detected_ms'])} | {f(r['new_quorum_ms'])} | {f(r['survivors_commit_ms'])} "
                 f"| {f(rejoin)} | {f(r['heal_duration_ms'])} | {r['heal_bytes'] / 1e6:.1f} | {gbps:.2f} | {'yes' if all(len(x) == 1 for x in per_shard) else 'NO'} |")
if not os.path.exists(f"{out}/eff-free.json"):
    text = "\n".join(lines)
    print(text)
    if md_path:
        open(md_path, "w").write(text + "\n")
    sys.exit(0)
free = json.load(open(f"{out}/eff-free.json"))
kill = json.load(open(f"{out}/eff-kill.json"))
def rates(j):
    ft = j["fault_tolerance"]
    wall = j["wall_time_s"]
    return j["steps"] / wall, ft["committed_steps_total"] / wall, wall, len(ft["recoveries"])
f_job, f_samples, f_wall, _ = rates(free)
k_job, k_samples, k_wall, kills = rates(kill)
lines += ["", f"Efficiency, 1 MB model, 3 replicas, a kill every {every} s ({kills} kills):", "",
          "| run | wall s | global steps/s | replica-steps/s |", "|---|---|---|---|",
          f"| fault-free | {f_wall:.1f} | {f_job:.2f} | {f_samples:.2f} |",
          f"| kill every {every} s | {k_wall:.1f} | {k_job:.2f} | {k_samples:.2f} |",
          f"| ratio (goal >= 0.90) | | {k_job / f_job:.3f} | {k_samples / f_samples:.3f} |"]
text = "\n".join(lines)
print(text)
if md_path:
    open(md_path, "w").write(text + "\n")
PY
