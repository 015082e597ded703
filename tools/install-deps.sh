#!/usr/bin/env bash
# Installs the Debian packages aviflowc needs to build and test. Idempotent: it
# asks apt only for packages that are missing, so a second run does nothing.
#   tools/install-deps.sh           install what is missing (as root; tools/setup.sh runs it)
#   tools/install-deps.sh --check   install nothing; fail naming what is missing (tools/test.sh runs it)
set -euo pipefail

packages=(
  antlr4 libantlr4-runtime-dev uuid-dev default-jre-headless
  llvm-14-dev llvm-14-tools
  libfmt-dev libyaml-cpp-dev libgtest-dev libcli11-dev libssl-dev
  clang-14 libclang-rt-14-dev clang-format-14
  cmake ninja-build g++ python3 python3-jsonschema python3-numpy git
  libopenblas-dev libdnnl-dev ocl-icd-opencl-dev
  libmicrohttpd-dev pkg-config
  prometheus slurm-wlm munge rclone
  neovim
  nodejs
  libxml2-utils librsvg2-bin chromium fonts-dejavu-core
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# npm packs the VS Code extension (tools/vscode); a nodejs that brings its own
# npm needs no Debian `npm`.
command -v npm >/dev/null || missing+=(npm)

if ((${#missing[@]})) && [ "${1:-}" = --check ]; then
  echo "missing packages: ${missing[*]}; run tools/setup.sh (as root) to install them" >&2
  exit 2
fi
if ((${#missing[@]})); then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages: ${missing[*]}; run this script as root" >&2
    exit 2
  fi
  echo "install-deps: installing ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
