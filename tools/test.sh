#!/usr/bin/env bash
# Runs the whole test suite through ctest: the lit tests of every phase, the
# unit tests, the lit suite again against an ASan/UBSan build, and a libFuzzer
# run over the front end and one over every phase through plan.json. Installs and builds whatever is missing first.
#   AVIFLOW_QUICK=1 tools/test.sh   skips the sanitizer and fuzz builds
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
extra=()
if [ "${AVIFLOW_QUICK:-0}" != 1 ]; then
  # Sanitizers and libFuzzer need clang; CUDA is not needed there.
  cmake -S . -B build-asan -G Ninja -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAVIFLOW_SANITIZE=ON -DAVIFLOW_FUZZ=ON -DAVIFLOW_TESTS=OFF \
    -DAVIFLOW_ENABLE_CUDA=OFF >/dev/null
  cmake --build build-asan --target aviflowc avf-run avf_fuzz_frontend avf_fuzz_planner avf_stdlib
  extra=(-DAVIFLOW_SANITIZED_AVIFLOWC="$PWD/build-asan/bin/aviflowc"
         -DAVIFLOW_SANITIZED_AVF_RUN="$PWD/build-asan/bin/avf-run"
         -DAVIFLOW_FUZZER="$PWD/build-asan/bin/avf_fuzz_frontend"
         -DAVIFLOW_PLANNER_FUZZER="$PWD/build-asan/bin/avf_fuzz_planner")
else
  extra=(-DAVIFLOW_SANITIZED_AVIFLOWC= -DAVIFLOW_SANITIZED_AVF_RUN= -DAVIFLOW_FUZZER= -DAVIFLOW_PLANNER_FUZZER=)
fi
tools/build.sh "${extra[@]}"
ctest --test-dir build --output-on-failure -j2
