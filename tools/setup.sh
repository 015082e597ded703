#!/usr/bin/env bash
# Installs what is missing (Debian packages, as root, and the VS Code
# extension's npm packages in tools/vscode/node_modules), builds aviflowc and
# avf-run, runs the main job on every example (`aviflowc check`, `aviflowc
# plan`, and `aviflowc FILE -o out/`, which writes each job's plan.json and
# manifests to out/<job>/), then trains the local example on this machine
# for a short run (`aviflowc run examples/gpt2_tiny_local.avf --local`).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
# The VS Code extension's npm packages, as package-lock.json pins them
# (test/vscode packs the extension and checks its grammar with them).
(cd tools/vscode && npm ci --ignore-scripts --no-audit --no-fund)
# The same flags as tools/test.sh's build/, so that the test command that
# follows builds nothing of it again.
tools/build.sh -DAVIFLOW_WERROR=ON
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
# The local example's corpus: deterministic text, tokenized here (no download).
if [ ! -f examples/data/toy-corpus/shard_000003.bin ]; then
  mkdir -p out
  python3 tools/toy_corpus.py > out/toy-corpus.txt
  build/bin/avf-run tokenize out/toy-corpus.txt -o examples/data/toy-corpus --shards 4 --vocab 512
fi
echo "== aviflowc run examples/gpt2_tiny_local.avf --local"
build/bin/aviflowc run examples/gpt2_tiny_local.avf --local --run-dir out/run --max-steps 300
echo "aviflowc is built: build/bin/aviflowc (run tools/test.sh for the test suite)"
