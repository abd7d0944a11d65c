#!/bin/sh
# bench_collectives.sh: bus bandwidth of dtlab's Gloo and MPI communicators
# against raw c10d Gloo and raw MPI (bench_collectives.cpp), at 2 and 4 ranks.
#
#   tests/bench/bench_collectives.sh [BUILD_DIR]          (default: build)
#   RANKS="2" MAX_MB=16 BENCH_MD=out.md tests/bench/bench_collectives.sh
#
# Needs mpirun (openmpi-bin) and a build with MPI (the bench_collectives target).
set -eu
build=${1:-build}
bin="$build/tests/bench_collectives"
[ -x "$bin" ] || { echo "bench_collectives.sh: $bin not built (cmake --build $build --target bench_collectives; needs libopenmpi-dev)" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "bench_collectives.sh: mpirun not found (install openmpi-bin)" >&2; exit 2; }
root=""
[ "$(id -u)" = 0 ] && root="--allow-run-as-root"
out=${BENCH_MD:-/dev/stdout}
{
  echo "bench_collectives: $(nproc) cores, $(date -u +%Y-%m-%d), ranks ${RANKS:-2 4}, sizes 4 KiB .. ${MAX_MB:-64} MiB"
  echo
  first=1
  for n in ${RANKS:-2 4}; do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    if [ $first = 1 ]; then
      OPENBLAS_NUM_THREADS=1 mpirun $root --oversubscribe --bind-to none -np "$n" "$bin" "$port" "${MAX_MB:-64}"
      first=0
    else # one table: drop the header lines of the later runs
      OPENBLAS_NUM_THREADS=1 mpirun $root --oversubscribe --bind-to none -np "$n" "$bin" "$port" "${MAX_MB:-64}" | tail -n +3
    fi
  done
} > "$out"
