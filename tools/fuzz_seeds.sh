#!/usr/bin/env bash
# Writes the fuzz targets' seed corpora with the project's own writers:
#   test/fuzz/corpus/plan_reader/   plan.json that aviflowc writes for three jobs (`emit plan`; one elastic), and
#                                   one of format version 2 (test/run/Inputs/plan_v2/)
#   test/fuzz/corpus/{rendezvous,shard_header,checkpoint}/   avf_fuzz_write_seeds
# Usage:
#   tools/fuzz_seeds.sh BUILD_DIR           refresh test/fuzz/corpus/
#   tools/fuzz_seeds.sh --check BUILD_DIR   fail when a committed seed is not what
#                                           the writers write now (ctest fuzz/seeds)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
check=0
if [ "${1:-}" = --check ]; then check=1; shift; fi
build="$(cd "${1:?usage: tools/fuzz_seeds.sh [--check] BUILD_DIR}" && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

"$build/bin/avf_fuzz_write_seeds" "$out"
mkdir -p "$out/plan_reader"
for job in "$root/examples/gpt2_tiny_local.avf" "$root/test/unit/Inputs/runplan/gpt2_tiny_tied_pp.avf"; do
  name="$(basename "$job" .avf)"
  "$build/bin/aviflowc" emit plan "$job" > "$out/plan_reader/$name.json" 2>/dev/null
done
# An elastic job's plan (its `elastic` family), from the elastic run tests'
# job on a shared tier (a local one is for one machine only).
sed 's/@TOKENS@/4096/; s/kind = local/kind = nfs/' "$root/test/run/Inputs/elastic_job.avf.in" > "$out/elastic_job.avf"
"$build/bin/aviflowc" emit plan "$out/elastic_job.avf" > "$out/plan_reader/elastic_job.json" 2>/dev/null
rm "$out/elastic_job.avf"
# A plan of format version 2, which lists the tables version 3 derives, as the
# aviflowc of that version wrote it: the reader still reads it.
cp "$root/test/run/Inputs/plan_v2/gpt2_tiny_tied_pp.json" "$out/plan_reader/gpt2_tiny_tied_pp_v2.json"

corpus="$root/test/fuzz/corpus"
if [ "$check" = 1 ]; then
  if ! diff -r "$out" "$corpus" >/dev/null; then
    diff -rq "$out" "$corpus" >&2 || true
    echo "fuzz_seeds: the committed seeds in test/fuzz/corpus differ from what the writers write now;" \
         "run tools/fuzz_seeds.sh $build" >&2
    exit 1
  fi
  echo "fuzz_seeds: test/fuzz/corpus matches the writers"
else
  rm -rf "$corpus"
  cp -r "$out" "$corpus"
  echo "fuzz_seeds: wrote $(find "$corpus" -type f | wc -l) seeds to test/fuzz/corpus"
fi
