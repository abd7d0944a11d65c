#!/usr/bin/env bash
# tools/check_format.sh: fail when a C++ file of the tree is not formatted by
# the project's .clang-format (tools/setup.sh test runs it before the build).
#
#   tools/check_format.sh          list the files that differ, exit 1 if any
#   tools/check_format.sh --fix    format them in place
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
command -v clang-format >/dev/null || { echo "check_format: clang-format is not installed (apt-get install clang-format)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h')
if [ "${1:-}" = "--fix" ]; then
    clang-format -i "${files[@]}"
    exit 0
fi
bad=()
for f in "${files[@]}"; do
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if [ ${#bad[@]} -gt 0 ]; then
    echo "check_format: ${#bad[@]} file(s) not formatted by .clang-format (run tools/check_format.sh --fix):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    exit 1
fi
echo "check_format: ${#files[@]} files formatted"
