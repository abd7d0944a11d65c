#!/usr/bin/env bash
# tools/setup.sh: the one entry point for a fresh Debian 12 machine.
#
#   tools/setup.sh run [SCENARIO]   install what is missing, build, run the main job
#   tools/setup.sh test             install what is missing, build, check the formatting, run the whole test suite,
#                                   then dtcore's unit tests and the decoders' fuzzer under ASan + UBSan
#   tools/setup.sh build            install what is missing and build
#   tools/setup.sh bench            also install python3-torch and run tests/bench/bench_ddp.sh
#   tools/setup.sh stress [N]       build, then run the fault, fault-tolerance, SWARM and hold tests
#                                   N times (default 20) while a second process keeps one core busy
#
# Only Debian 12 packages; nothing is downloaded by the build itself.
# Environment: BUILD_DIR (default: build), JOBS (default: number of cores).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
JOBS="${JOBS:-$(nproc)}"
MODE="${1:-run}"

BUILD_PACKAGES=(g++ cmake ninja-build ccache pkg-config)
LIB_PACKAGES=(libtorch-dev libgloo-dev libopenblas0-pthread libimgui-dev libstb-dev libglfw3-dev libgl-dev
              libopenmpi-dev openmpi-bin catch2 libtomlplusplus-dev nlohmann-json3-dev libcli11-dev zlib1g-dev libssl-dev)
DATA_PACKAGES=(fortunes dataset-fashion-mnist fonts-dejavu-core)
TEST_PACKAGES=(xvfb xauth xdotool clang-format)
BENCH_PACKAGES=(python3-torch)

say() { printf '\033[1mdtlab setup:\033[0m %s\n' "$*" >&2; }

# Phase times: each phase says how long it took, and the test mode ends with
# a table of them (docs/PERFORMANCE.md keeps a fresh machine's).
PHASES=()
PHASE_NAME=""
PHASE_START=0
phase() { # phase NAME: ends the phase in progress, starts NAME ("" = none)
    local now
    now=$(date +%s)
    if [ -n "$PHASE_NAME" ]; then
        PHASES+=("$(printf '%-34s %6d s' "$PHASE_NAME" $((now - PHASE_START)))")
        say "$PHASE_NAME: $((now - PHASE_START)) s"
    fi
    PHASE_NAME="$1"
    PHASE_START=$now
}
print_phases() {
    phase ""
    say "phase times:"
    printf '  %s\n' "${PHASES[@]}" >&2
}
# The slowest tests of a ctest log (lines "N/M Test #K: name ....   Passed   12.34 sec").
# awk reads every line and keeps the first 10: `head` would close the pipe early, sort would die of
# SIGPIPE and, under pipefail, take the whole run with it (exit 141: CI's failure of 2026-12-02).
print_slowest_tests() {
    say "the 10 slowest tests:"
    sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \(.*\) \.\.*  *[A-Za-z*]* *\([0-9.]*\) sec$/\2 \1/p' "$1" |
        sort -rn | awk 'NR <= 10 { t = $1; $1 = ""; printf "  %8.1f s %s\n", t, $0 }' >&2
}
die() { printf 'dtlab setup: error: %s\n' "$*" >&2; exit 2; }

install_missing() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    say "installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

check_blas() {
    # Debian's LibTorch calls the system libblas.so.3: the reference BLAS is ~16x slower than OpenBLAS.
    local blas
    blas="$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)"
    case "$blas" in
        *openblas*) ;;
        *) say "warning: libblas.so.3 is '$blas', not OpenBLAS: training will be ~16x slower" ;;
    esac
}

build() {
    command -v apt-get >/dev/null || die "this set-up needs Debian 12 (apt-get not found)"
    local packages=("${BUILD_PACKAGES[@]}" "${LIB_PACKAGES[@]}" "${DATA_PACKAGES[@]}")
    [ "$MODE" = test ] && packages+=("${TEST_PACKAGES[@]}")
    [ "$MODE" = bench ] && packages+=("${BENCH_PACKAGES[@]}")
    phase "install"
    install_missing "${packages[@]}"
    check_blas
    phase "configure + build"
    export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
    say "configuring in $BUILD_DIR"
    cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    say "building with $JOBS jobs"
    cmake --build "$BUILD_DIR" -j "$JOBS"
}

case "$MODE" in
run)
    build
    SCENARIO="${2:-$ROOT/scenarios/ddp_basics.toml}"
    if [ -x "$BUILD_DIR/app/dtlab" ] && [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
        exec "$BUILD_DIR/app/dtlab" "$SCENARIO"
    fi
    if [ -x "$BUILD_DIR/app/dtlab" ]; then
        say "no display (DISPLAY is not set): running the same scenario headless through dtrun"
    else
        say "the dtlab GUI is not part of this build yet: running the scenario headless through dtrun"
    fi
    exec "$BUILD_DIR/app/dtrun" run "$SCENARIO" --summary "$BUILD_DIR/last_summary.json" --trace "$BUILD_DIR/last_trace.json"
    ;;
test)
    build
    phase "format check"
    say "checking the formatting (.clang-format)"
    "$ROOT/tools/check_format.sh" || die "the tree is not formatted: run tools/check_format.sh --fix"
    phase "suite"
    say "running the test suite"
    SUITE_LOG="$BUILD_DIR/last_suite.log"
    suite_ok=0
    # pipefail: a failing ctest fails the pipeline through tee
    (cd "$BUILD_DIR" && ctest --output-on-failure -j "$JOBS" --timeout 900) 2>&1 | tee "$SUITE_LOG" || suite_ok=1
    print_slowest_tests "$SUITE_LOG"
    [ "$suite_ok" -eq 0 ] || { print_phases; die "the test suite failed (log: $SUITE_LOG)"; }
    # The sanitize preset: every decoder of outside input, instrumented (no LibTorch in it).
    SANITIZE_DIR="${SANITIZE_DIR:-$ROOT/build-sanitize}"
    phase "sanitizer build"
    say "dtcore's unit tests and the decoders' fuzzer under AddressSanitizer + UBSan ($SANITIZE_DIR)"
    cmake -S "$ROOT" -B "$SANITIZE_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDTLAB_CORE_ONLY=ON \
        -DDTLAB_SANITIZE=ON -DDTLAB_GUI=OFF -DDTLAB_FUZZ_ITERATIONS=20000 >/dev/null
    cmake --build "$SANITIZE_DIR" -j "$JOBS"
    phase "sanitizer tests"
    cd "$SANITIZE_DIR"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j "$JOBS" --timeout 900
    print_phases
    ;;
build)
    build
    ;;
stress)
    build
    ROUNDS="${2:-20}"
    STRESS_TAGS="[fault],[ft],[swarm],[holds],[hang]"
    say "stress: $STRESS_TAGS x $ROUNDS, with one core kept busy"
    (while :; do :; done) &
    BUSY=$!
    trap 'kill $BUSY 2>/dev/null' EXIT
    failed=0
    for i in $(seq 1 "$ROUNDS"); do
        if "$BUILD_DIR/tests/test_integration" "$STRESS_TAGS" >"$BUILD_DIR/stress_$i.log" 2>&1; then
            say "stress round $i of $ROUNDS: passed ($(tail -2 "$BUILD_DIR/stress_$i.log" | sed -n 1p))"
        else
            failed=$((failed + 1))
            say "stress round $i of $ROUNDS: FAILED (log: $BUILD_DIR/stress_$i.log)"
        fi
    done
    say "stress: $failed of $ROUNDS rounds failed"
    [ "$failed" -eq 0 ] || exit 1
    ;;
bench)
    build
    exec "$ROOT/tests/bench/bench_ddp.sh" "$BUILD_DIR"
    ;;
*)
    die "unknown mode '$MODE': expected run, test, build, stress or bench"
    ;;
esac
