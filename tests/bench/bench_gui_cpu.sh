#!/bin/bash
# bench_gui_cpu.sh: how much CPU dtlab itself takes (its main thread and Mesa's
# llvmpipe rasterizer threads) while it shows a screen under Xvfb, i.e. what it
# leaves to the rank processes on a machine without a GPU.
#
#   tests/bench/bench_gui_cpu.sh BUILD_DIR [SECONDS]
#   DTLAB=path/to/another/dtlab tests/bench/bench_gui_cpu.sh BUILD_DIR   (an older build, side by side;
#   it must sit next to a dtrun)
#
# For the gallery and for a live ddp_basics run (4 ranks; its narration taken
# out, so no step holds the run), it waits 6 s, then
# reads every dtlab thread's utime+stime from /proc over SECONDS (default 5)
# and prints the share of one core each thread used, and the ranks' total.
set -euo pipefail
build=${1:?usage: bench_gui_cpu.sh BUILD_DIR [SECONDS]}
seconds=${2:-5}
dtlab=$(realpath "${DTLAB:-$build/app/dtlab}")
root=$(cd "$(dirname "$0")/../.." && pwd)
script=$(mktemp)
live=$(mktemp --suffix=.toml)
trap 'rm -f "$script" "$live"' EXIT
# ddp_basics without its [[steps]] (and their [steps.*] tables), 400 steps long.
awk '/^\[\[steps\]\]|^\[steps\./ {skip = 1; next} /^\[/ {skip = 0} !skip' \
    "$root/scenarios/ddp_basics.toml" | sed 's/^steps = .*/steps = 400/' > "$live"
printf 'wait_seconds %s\nquit\n' "$((seconds + 9))" > "$script"

ticks() { awk '{print $14 + $15}' "$1" 2>/dev/null || echo 0; }

measure() {
    local label=$1; shift
    xvfb-run -a -s "-screen 0 1920x1080x24" "$dtlab" "$@" --script "$script" > /dev/null 2>&1 &
    sleep 6
    local pid; pid=$(pgrep -n -f "^$dtlab")
    declare -A before
    for t in /proc/"$pid"/task/*; do before[$t]=$(ticks "$t/stat"); done
    local ranks_before=0 ranks_after=0 p
    for p in $(pgrep -f "dtrun worker" || true); do ranks_before=$((ranks_before + $(ticks /proc/"$p"/stat))); done
    sleep "$seconds"
    echo "$label:"
    local total=0
    for t in /proc/"$pid"/task/*; do
        local d=$(( $(ticks "$t/stat") - ${before[$t]:-0} ))
        total=$((total + d))
        [ "$d" -gt 0 ] && printf '  %-12s %5.1f %% of a core\n' "$(cat "$t/comm")" "$(echo "$d / $seconds" | bc -l)"
    done
    for p in $(pgrep -f "dtrun worker" || true); do ranks_after=$((ranks_after + $(ticks /proc/"$p"/stat))); done
    printf '  %-12s %5.1f %% of a core\n' "dtlab total" "$(echo "$total / $seconds" | bc -l)"
    [ "$ranks_after" -gt 0 ] && printf '  %-12s %5.1f %% of a core\n' "ranks" "$(echo "($ranks_after - $ranks_before) / $seconds" | bc -l)"
    wait
}

measure "gallery (1600x900)"
measure "ddp_basics live, 4 ranks (1600x900)" "$live"
