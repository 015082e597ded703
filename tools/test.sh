#!/usr/bin/env bash
# Runs the whole test suite through ctest: the lit tests of every phase, the
# unit tests, the lit suite again against an ASan/UBSan build, the threaded
# unit tests under ThreadSanitizer, and a libFuzzer run over each input that
# comes from outside a process (the front end, every phase through plan.json,
# the plan reader, the rendezvous wire protocol, token-shard headers,
# checkpoints). Every tree is built with -Werror. Builds whatever is missing
# first; installs no system package (tools/setup.sh does): a missing package
# is named, and the suite stops before building. The VS Code extension's npm
# packages (tools/vscode/node_modules, pinned by package-lock.json) are fetched
# like a build input when they are missing; without npm or its registry the
# extension's tests are skipped with a note.
#   AVIFLOW_QUICK=1 tools/test.sh   skips the sanitizer, TSan and fuzz builds
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh --check
if [ "${AVIFLOW_QUICK:-0}" != 1 ]; then
  # Sanitizers and libFuzzer need clang; CUDA is not needed there.
  clang=(-G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo
         -DAVIFLOW_ENABLE_CUDA=OFF -DAVIFLOW_WERROR=ON)
  cmake -S . -B build-asan "${clang[@]}" -DAVIFLOW_SANITIZE=ON -DAVIFLOW_FUZZ=ON -DAVIFLOW_TESTS=OFF >/dev/null
  cmake --build build-asan --target aviflowc avf-run avf_stdlib avf_fuzz_frontend avf_fuzz_planner \
    avf_fuzz_plan_reader avf_fuzz_rendezvous avf_fuzz_shard_header avf_fuzz_checkpoint
  # Only the unit tests with threads of their own: the store server, the
  # communicators, the engine's reducer and pipeline threads.
  cmake -S . -B build-tsan "${clang[@]}" -DAVIFLOW_TSAN=ON -DAVIFLOW_TESTS=ON >/dev/null
  cmake --build build-tsan --target avf_comm_tests avf_rendezvous_tests avf_engine_tests
  extra=(-DAVIFLOW_SANITIZED_AVIFLOWC="$PWD/build-asan/bin/aviflowc"
         -DAVIFLOW_SANITIZED_AVF_RUN="$PWD/build-asan/bin/avf-run"
         -DAVIFLOW_FUZZ_DIR="$PWD/build-asan/bin" -DAVIFLOW_TSAN_DIR="$PWD/build-tsan/bin")
else
  extra=(-DAVIFLOW_SANITIZED_AVIFLOWC= -DAVIFLOW_SANITIZED_AVF_RUN= -DAVIFLOW_FUZZ_DIR= -DAVIFLOW_TSAN_DIR=)
fi
tools/build.sh -DAVIFLOW_WERROR=ON "${extra[@]}"
if [ ! -d tools/vscode/node_modules ] && command -v npm >/dev/null; then
  (cd tools/vscode && npm ci --ignore-scripts --no-audit --no-fund) ||
    echo "test.sh: npm ci failed in tools/vscode; test/vscode will be skipped" >&2
fi
ctest --test-dir build --output-on-failure -j2
