# bench/gpu-bundle-link.sh: sourced (from the repository root, with `nice` set) by the
# builds of ROCm binaries that run on the GPU machine as the GPU bundle's binaries do
# (bench/backend/build.sh, bench/examples/build.sh).
#
# `gpu_bundle_link LIB_DIR`: `cargo xtask gpu-bundle --link-only LIB_DIR` builds the
# forwarder, writes the bundle's stub link directory (stubs of ROCm 7.2's libraries from
# target/rocm/7.2/root, else of the forwarder's own exports) and lays LIB_DIR out as the
# bundle's lib/ (the forwarder as libamdhip64.so.7, librocblas.so.5 and librocrand.so.1
# depending on it); sets the array `bundle_env` to the bundle's build environment
# (CANDLE_ROCM_LIB_DIR, CANDLE_ROCM_LINK_*, CANDLE_ROCM_ARCHS, CANDLE_ROCM_LAUNCHERS=shared,
# ...) and prints it. CANDLE_ROCM_ARCHS, when set, is passed on as gpu-bundle's --archs.
# Build in target/gpu-bundle, so the dependencies shared with the bundle are not rebuilt.
#
# `gpu_bundle_check LIB_DIR BIN...`: each BIN's HIP/rocBLAS/rocRAND imports checked as the
# bundle's binaries' are (gpu-bundle --check-imports), and each BIN needs ROCm 7.2's
# sonames, resolved to LIB_DIR; nothing else missing but libcandle_rocm_launchers.so (it
# comes from the kernels' nvcc build on the GPU machine).

gpu_bundle_link() {
  gpu_bundle_archs=()
  [[ -n ${CANDLE_ROCM_ARCHS:-} ]] && gpu_bundle_archs=(--archs "$CANDLE_ROCM_ARCHS")
  rm -rf "$1"
  mkdir -p "$(dirname "$1")"
  local lines
  lines=$("${nice[@]}" cargo xtask gpu-bundle --link-only "$1" "${gpu_bundle_archs[@]}")
  mapfile -t bundle_env <<<"$lines"
  printf '   %s\n' "${bundle_env[@]}"
}

gpu_bundle_check() {
  local lib=$1 bin soname resolved
  shift
  "${nice[@]}" cargo xtask gpu-bundle --link-only "$lib" "${gpu_bundle_archs[@]}" --check-imports "$@" >/dev/null
  for bin in "$@"; do
    resolved=$(LD_LIBRARY_PATH="$lib" ldd "$bin")
    for soname in libamdhip64.so.7 librocblas.so.5 librocrand.so.1; do
      readelf -d "$bin" | grep -q "NEEDED.*\[$soname\]" \
        || { echo "error: $bin does not need $soname" >&2; return 1; }
      grep -qF "$soname => $lib/$soname " <<<"$resolved" \
        || { echo "error: $bin: $soname does not resolve to $lib:" >&2; echo "$resolved" >&2; return 1; }
    done
    if grep -v "libcandle_rocm_launchers.so" <<<"$resolved" | grep "not found"; then
      echo "error: $bin: a library is missing" >&2; return 1
    fi
  done
}
