#!/usr/bin/env bash
# Packs what tools/device-check.sh runs on a GPU machine that has only the
# NVIDIA driver, the CUDA toolkit, NCCL, cuDNN, CMake, ninja and Python: the
# GPU test binaries and avf-run of build/ and every shared library they need
# that such a machine lacks (not the C library, not CUDA's own), stripped;
# the plans of the tiny job in bf16 and of the bench's models (bench/gpu/),
# compiled here; and the tiny job's token shards. One xz tarball.
# Usage: tools/device-bundle.sh [BUILD_DIR] [OUT_TARBALL]
# (defaults: build, out/device-bundle.tar.xz). Run after tools/build.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
tarball=${2:-out/device-bundle.tar.xz}
binaries=(avf_kernel_contract_cuda_tests avf_kernels_tests avf_comm_nccl_tests avf_engine_tests avf-run)
# Present on any Linux with glibc, or provided by the CUDA toolkit and NCCL.
system='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnccl|libcudnn)\.'

for b in "${binaries[@]}"; do
  if [[ ! -x $build/bin/$b ]]; then
    echo "device-bundle: error: $build/bin/$b is missing: build with the CUDA toolkit present (tools/build.sh)" >&2
    exit 1
  fi
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/device-bundle/bin" "$stage/device-bundle/lib"
for b in "${binaries[@]}"; do
  cp "$build/bin/$b" "$stage/device-bundle/bin/"
  ldd "$build/bin/$b" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    if [[ ! $name =~ $system ]]; then cp -Ln "$path" "$stage/device-bundle/lib/$name"; fi
  done
done
strip "$stage/device-bundle/bin/"* "$stage/device-bundle/lib/"*
# The plans (aviflowc compiles them here: it does not travel) and the tiny
# job's corpus, tokenized as tools/setup.sh does for the README's example.
mkdir -p "$stage/device-bundle/plans" "$stage/device-bundle/data"
sed 's/precision = fp32 .*/precision = bf16/' examples/gpt2_tiny_local.avf > "$stage/tiny_bf16.avf"
"$build/bin/aviflowc" emit plan "$stage/tiny_bf16.avf" > "$stage/device-bundle/plans/tiny_bf16.json"
for f in bench/gpu/*.avf; do
  "$build/bin/aviflowc" emit plan "$f" > "$stage/device-bundle/plans/$(basename "$f" .avf).json"
done
python3 tools/toy_corpus.py > "$stage/corpus.txt"
"$build/bin/avf-run" tokenize "$stage/corpus.txt" -o "$stage/device-bundle/data/toy-corpus" --shards 4 --vocab 512 \
  > /dev/null
git rev-parse HEAD > "$stage/device-bundle/commit"
mkdir -p "$(dirname "$tarball")"
tar -C "$stage" -cJf "$tarball" device-bundle
echo "device-bundle: $tarball ($(du -h "$tarball" | cut -f1)): ${binaries[*]}, $(ls "$stage/device-bundle/lib" | wc -l) libraries"
