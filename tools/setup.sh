#!/usr/bin/env bash
# Installs what is missing (Debian packages, as root), builds aviflowc, and
# runs the main job on every example: `aviflowc check` and `aviflowc plan`.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
for example in examples/*.avf; do
  echo "== aviflowc check $example"
  build/bin/aviflowc check "$example"
  echo "== aviflowc plan $example"
  build/bin/aviflowc plan "$example"
done
echo "aviflowc is built: build/bin/aviflowc (run tools/test.sh for the test suite)"
