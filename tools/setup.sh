#!/usr/bin/env bash
# Installs what is missing (Debian packages, as root), builds aviflowc, and
# runs the main job on every example: `aviflowc check`, `aviflowc plan`, and
# `aviflowc FILE -o out/`, which writes each job's plan.json and manifests
# to out/<job>/.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
for example in examples/*.avf; do
  echo "== aviflowc check $example"
  build/bin/aviflowc check "$example"
  echo "== aviflowc plan $example"
  build/bin/aviflowc plan "$example"
  echo "== aviflowc $example -o out"
  build/bin/aviflowc "$example" -o out
done
echo "== artifacts"
find out -type f | sort
echo "aviflowc is built: build/bin/aviflowc (run tools/test.sh for the test suite)"
