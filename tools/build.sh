#!/usr/bin/env bash
# Configures and builds aviflowc in build/ (ninja, RelWithDebInfo).
# Usage: tools/build.sh [extra cmake -D options]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja "$@" >/dev/null
cmake --build build
