#!/usr/bin/env bash
# bench/collectives/build.sh [OUT_DIR]
#
# Builds, here (no GPU, no Rust on the GPU machine), what bench/collectives/run.sh runs:
#   OUT_DIR/allreduce-bandwidth   this crate, release, linked as the GPU bundle's binaries are:
#                                 ROCm 7.2's ABI, libamdhip64.so.7 and librccl.so.1 (cargo
#                                 xtask gpu-bundle --link-only); cudarc's CUDA 13.0 bindings
#                                 with every CUDA library (libcuda, NCCL) loaded at run time
#   OUT_DIR/tensor-parallel       the tensor-parallel program (tests/tensor-parallel/build.sh)
#   OUT_DIR/lib/                  the GPU bundle's lib/ (the forwarder: HIP over CUDA, RCCL
#                                 over NCCL)
#   OUT_DIR.tar.xz                what is carried to the GPU machine
# CANDLE_ROCM_ARCHS (default gfx90a, the bundle's): the AMD arch the tensor-parallel
# program's embedded (on NVIDIA unused) code objects are compiled for.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$(realpath -m "${1:-device-carry/collectives}")
nice=(nice -n 19)
mkdir -p "$out"

echo "== the forwarding runtime, the link directory and OUT_DIR/lib (cargo xtask gpu-bundle --link-only)"
# shellcheck source=bench/gpu-bundle-link.sh
source bench/gpu-bundle-link.sh
gpu_bundle_link "$out/lib"
echo "== allreduce-bandwidth"
env "${bundle_env[@]}" "${nice[@]}" cargo build --release \
  --manifest-path bench/collectives/Cargo.toml --target-dir "$root/target/gpu-bundle"
cp "$root/target/gpu-bundle/release/allreduce-bandwidth" "$out/"
strip "$out/allreduce-bandwidth"
# its HIP/RCCL imports checked against the forwarder as the bundle's binaries' are
"${nice[@]}" cargo xtask gpu-bundle --link-only "$out/lib" "${gpu_bundle_archs[@]}" --check-imports "$out/allreduce-bandwidth" >/dev/null
resolved=$(LD_LIBRARY_PATH="$out/lib" ldd "$out/allreduce-bandwidth")
for soname in libamdhip64.so.7 librccl.so.1; do
  readelf -d "$out/allreduce-bandwidth" | grep -q "NEEDED.*\[$soname\]" \
    || { echo "error: allreduce-bandwidth does not need $soname" >&2; exit 1; }
  grep -qF "$soname => $out/lib/$soname " <<<"$resolved" \
    || { echo "error: allreduce-bandwidth: $soname does not resolve to $out/lib:" >&2; echo "$resolved" >&2; exit 1; }
done
if grep "not found" <<<"$resolved"; then echo "error: allreduce-bandwidth: a library is missing" >&2; exit 1; fi
if readelf -d "$out/allreduce-bandwidth" | grep -E 'NEEDED.*(libcuda|libnccl|libcudart)'; then
  echo "error: allreduce-bandwidth links a CUDA library: cudarc must load them at run time" >&2; exit 1
fi

echo "== the tensor-parallel program (tests/tensor-parallel/build.sh)"
tp_out=$root/target/collectives/tensor-parallel
mkdir -p "$root/target/collectives"
bash tests/tensor-parallel/build.sh "$tp_out" >"$root/target/collectives/tensor-parallel-build.log" 2>&1 \
  || { tail -30 "$root/target/collectives/tensor-parallel-build.log"; echo "error: tests/tensor-parallel/build.sh failed" >&2; exit 1; }
cp "$tp_out/tensor-parallel" "$out/"
gpu_bundle_check "$out/lib" "$out/tensor-parallel"

tar -C "$(dirname "$out")" -cf - "$(basename "$out")" | xz -6 -T0 >"$out.tar.xz.partial"
mv "$out.tar.xz.partial" "$out.tar.xz"
size=$(stat -c %s "$out.tar.xz")
(( size < 64 * 1024 * 1024 )) || { echo "error: $out.tar.xz is $size bytes, over the 64 MiB that can be carried" >&2; exit 1; }
ls -la "$out" "$out/lib" "$out.tar.xz"
