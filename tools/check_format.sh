#!/usr/bin/env bash
# Fails when a tracked C++ or CUDA file differs from what clang-format makes
# of it (the style is .clang-format at the root). Prints the files and the
# first differences; `tools/check_format.sh --fix` rewrites them instead.
# Usage: tools/check_format.sh [--fix] [ROOT]
set -euo pipefail
fix=0
if [ "${1:-}" = --fix ]; then fix=1; shift; fi
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"
format=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$format" ]; then
  echo "check_format: clang-format-14 is not installed; run tools/setup.sh (or tools/install-deps.sh) as root" >&2
  exit 2
fi
# Inputs/ folders hold test data (sample trees whose line numbers tests pin).
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' ':!:*/Inputs/*')
if [ "$fix" = 1 ]; then
  "$format" -i "${files[@]}"
  exit 0
fi
if "$format" --dry-run --Werror "${files[@]}" >/dev/null 2>&1; then
  echo "check_format: ${#files[@]} files formatted"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  if ! "$format" --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if ((${#bad[@]})); then
  echo "check_format: ${#bad[@]} file(s) are not formatted (tools/check_format.sh --fix rewrites them):"
  for f in "${bad[@]}"; do
    echo "  $f"
    diff -u "$f" <("$format" "$f") | sed -n '3,12p'
  done
fi
exit 1
