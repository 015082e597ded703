#!/usr/bin/env bash
# The device check: one prepared run on a machine with one NVIDIA GPU (an
# H200) that has only the driver, the CUDA toolkit, NCCL, cuDNN, CMake, ninja
# and Python, no Debian packages and no network. Usage:
#   tools/device-check.sh RESULTS_DIR
# It runs the binaries of out/device-bundle.tar.xz (tools/device-bundle.sh,
# carried with the checkout), or of build/bin where there is no bundle, and
# writes RESULTS_DIR/device-check.json and RESULTS_DIR/device-check.log
# (tools/device_check.py says what each step checks). Exit status 0 when every
# step that exists passed on the GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -ne 1 ]]; then
  echo "usage: tools/device-check.sh RESULTS_DIR" >&2
  exit 2
fi
results=$1
mkdir -p "$results"
if [[ -f out/device-bundle.tar.xz ]]; then
  tar -C "$results" -xJf out/device-bundle.tar.xz
  bin=$results/device-bundle/bin
  lib=$results/device-bundle/lib
elif [[ -d build/bin ]]; then
  bin=build/bin
  lib=
else
  echo "device-check: error: neither out/device-bundle.tar.xz (tools/device-bundle.sh) nor build/bin is here" >&2
  exit 1
fi
exec python3 tools/device_check.py --bin "$bin" --lib "$lib" --results "$results"
