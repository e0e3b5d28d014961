#!/usr/bin/env bash
# The project's test command (README; CI runs it through .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
# the generated packages and the scratch project are workspaces of their own:
# one target directory for all of them (target/generated, which cargo xtask
# releases uses) shares their dependencies
gen_target="$PWD/target/generated"
# the debug builds (the root's backend, the examples, the workspace's tests) without
# debug info or incremental caches: a third of the disk, and less time linking
export CARGO_PROFILE_DEV_DEBUG=0 CARGO_INCREMENTAL=0
# each step's time, and the disk after it (CI's disk is shared and sometimes short);
# with TEST_PRUNE=1 (.ci/run) a build directory is removed once no later step needs it
step_name="" step_start=$(date +%s)
step() {
  local now; now=$(date +%s)
  if [ -n "$step_name" ]; then
    echo "-- $step_name: $((now - step_start)) s; target/ holds $(du -sh target 2>/dev/null | cut -f1), $(df -h --output=avail . | tail -1 | tr -d ' ') free"
  fi
  step_name=$1 step_start=$now
  [ -z "$1" ] || echo "== $1"
}
prune() {
  if [ "${TEST_PRUNE:-0}" = 1 ]; then rm -rf "$@"; echo "(pruned: $*)"; fi
}

step "generated/ is what the pinned release gives"
cargo xtask regen --check

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

step "BENCHMARKS.md is what the benchmarks' result files give (cargo xtask bench report)"
cargo xtask bench report --check

step "regen is deterministic"
cargo xtask regen --out "$tmp/a" >/dev/null
cargo xtask regen --out "$tmp/b" >/dev/null
diff -r "$tmp/a" "$tmp/b"
echo "two regen runs: byte-identical trees"

step "ROCm 7.2 (Debian experimental, hipcc with clang 22) in a sid root of its own (cargo xtask rocm-root; reused when complete)"
cargo xtask rocm-root 7.2
step "every generated kernel compiled with ROCm 7.2 for CDNA3 (gfx942, wave64), RDNA3 (gfx1100) and RDNA4 (gfx1201), arch by arch:"
echo "   kernel parity per arch, warnings counted and new ones named (tools/rocm-matrix.sh does all nine arches and ROCm 6.4);"
echo "   the units are kept in the root's kernel cache, where the backend's build below takes gfx942's"
cargo xtask build-kernels --rocm 7.2 --arch gfx942,gfx1100,gfx1201 --each-arch --out target/rocm/7.2/kernels
step "generated candle-core and candle-nn (feature rocm) and the HIP layer built and linked against ROCm 7.2's libraries inside"
echo "   the root (their library test binaries), every imported HIP/rocBLAS/rocRAND/RCCL symbol checked against them, the HIP"
echo "   layer's tests run there (its C values against 7.2's headers). candle-core's and candle-nn's whole suites run in the"
echo "   bundle's CPU run below, in release (tools/rocm-matrix.sh runs them in this root too)"
cargo xtask rocm-backend --rocm 7.2 --archs gfx942 --libs-only
prune target/rocm/7.2/cargo-target

step "the GPU bundle (cargo xtask gpu-bundle): the forwarding runtime hip-on-cuda, and with feature rocm, in release,"
echo "   linked against it: candle-core's and candle-nn's own suites, the ROCm-vs-CPU tests of tests/scratch-rocm (a user's"
echo "   project: crates.io candle-transformers, candle-core/candle-nn patched to generated/), the tensor-parallel program's"
echo "   one-device shard check (tests/tensor-parallel, features rocm + rccl: world 2 and 4 summed in one process against the"
echo "   whole model; its CPU half runs here below), the HIP layer's tests."
echo "   candle-rocm-kernels' build compiles every kernel for gfx90a + gfx1030 on the way."
cargo xtask gpu-bundle --archs gfx90a,gfx1030

step "the bundle's tests here: no GPU, so the run script says it skips the GPU execution and runs them on the CPU"
echo "   (candle-core's and candle-nn's suites pass; every ROCm test says it skipped; the ROCm-vs-CPU tests check their coverage)."
echo "   Run as a maintainer carrying the bundle does: from another checkout (git archive of HEAD), with the carried"
echo "   bundle.tar.xz, and this checkout hidden (an empty directory mounted over it in a private mount namespace), so a"
echo "   path baked in at build time fails here as it would on the GPU machine"
elsewhere="$tmp/elsewhere"
mkdir -p "$elsewhere" "$tmp/empty"
git archive HEAD | tar -x -C "$elsewhere"
cp target/gpu-bundle/bundle.tar.xz "$tmp/bundle.tar.xz"
# (without a GPU the binaries' launcher library is the AMD build, which the bundle does not carry)
cp -r target/gpu-bundle/amd-launchers "$tmp/amd-launchers"
unshare -m bash -c 'mount --bind "$1" "$2" && cd / && RUST_BACKTRACE=0 CANDLE_ROCM_AMD_LAUNCHERS_DIR="$3" WORK_DIR="$4" bash "$5/hip-on-cuda/run-gpu-tests.sh" "$6"' \
  _ "$tmp/empty" "$PWD" "$tmp/amd-launchers" "$tmp/bundle-run" "$elsewhere" "$tmp/bundle.tar.xz"
rm -rf "$tmp/bundle-run" "$tmp/bundle.tar.xz" "$tmp/amd-launchers"

step "the collectives program as the GPU machine runs it (cargo xtask gpu-program collectives: allreduce-bandwidth and the"
echo "   tensor-parallel program, ROCm 7.2's ABI, their libraries checked, packed), allreduce-bandwidth's unit tests, and a"
echo "   corrupt id file said before any GPU call (the sweep itself: bench/collectives/run.sh)"
# (the bundle's arches: the tensor-parallel binary shares every dependency with the bundle's build of its tests)
coll="$tmp/collectives"
cargo xtask gpu-program collectives --archs gfx90a,gfx1030 --out "$coll"
coll_lines=$(cargo xtask gpu-bundle --link-only "$tmp/collectives-lib" --archs gfx90a,gfx1030)
mapfile -t coll_env <<<"$coll_lines"
env "${coll_env[@]}" LD_LIBRARY_PATH="$coll/lib" \
  cargo test --release --manifest-path bench/collectives/Cargo.toml --target-dir "$PWD/target/gpu-bundle"
printf 'layer zz\n' >"$tmp/corrupt.id"
if coll_out=$(LD_LIBRARY_PATH="$coll/lib" "$coll/allreduce-bandwidth" --rank 1 --world 2 \
    --id-file "$tmp/corrupt.id" --out "$tmp/collectives.tsv" 2>&1) || ! grep -q "not a communicator id file: 1 lines" <<<"$coll_out"; then
  echo "error: allreduce-bandwidth did not refuse a corrupt id file: $coll_out"; exit 1
fi
echo "allreduce-bandwidth refuses a corrupt id file: $coll_out"

step "unit, golden, CLI, AMD compile and kernel ROCm-vs-CPU tests (the AMD compile check takes the units the bundle's build"
echo "   compiled with the same hipcc from the same sources out of the kernel cache, and compiles the rest)"
CANDLE_ROCM_KERNELS_CACHE="$PWD/target/gpu-bundle/kernels-cache" cargo test --workspace -- --nocapture

# the root and the bundle's release builds are not needed past this point (the kernel cache is)
prune target/rocm target/gpu-bundle/release target/gpu-bundle/bundle "$coll" "$tmp/collectives-lib"

step "other inputs through the release table (cargo xtask releases; docs/maintainers.md): the translator is not tuned to one release."
echo "   A checkout-shaped tree (0.10.2's crates.io sources in their workspace form, no git clone): regen --candle-src resolves the"
echo "   inherited manifest keys, its kernels compile for gfx1030 with the host hipcc, its candle-core and candle-nn type-check."
echo "   The oldest release, 0.9.0 (no static-library launchers, ug always on): regen, its kernels, its backend check."
cargo xtask releases --only --checkout-of 0.10.2 --arch gfx1030 --work "$tmp/releases"
cargo xtask releases --only --versions 0.9.0 --arch gfx1030 --work "$tmp/releases"
rm -rf "$tmp/releases"

step "the kernel translator on code it was not written against (cargo xtask corpus --sample; docs/maintainers.md):"
echo "   mistral.rs 0.8.1's three CUDA crates from the registry (Candle's own releases are the steps above), every kernel unit translated on its own or"
echo "   refused with its cause, what translated compiled with the host hipcc (HIP 5.2.3, gfx90a); the report must equal"
echo "   bench/results/corpus-sample.md (the whole corpus, vLLM's csrc and ROCm 7.2 included: bench/results/corpus.md)"
cargo xtask corpus --sample --compile --check bench/results/corpus-sample.md

step "generated candle-examples: every example built with --features rocm, flash-attn (over our run_mha) and the example features that need no CUDA"
echo "   (kernels for gfx90a and gfx1030 with the host's hipcc, taken from the bundle's kernel cache). Left out: depth_anything_v2 and pyo3 (reinforcement-learning), whose"
echo "   example code does not compile upstream either with upstream's own Cargo.lock (enterpolation 0.3.0 has no Generator,"
echo "   pyo3 0.29 no PyObject/IntoPy); buildtime-download (downloads from the hub while building)"
examples_features=rocm,flash-attn,symphonia,candle-datasets,onnx,tekken,rubato,pdf2image,microphone,encodec,mimi,snac
# (the bundle's arches and kernel cache: the kernels compiled for the bundle above are taken, not compiled again)
# Linked in batches of 16, each batch's binaries removed before the next (about 100 MB each, 11 GB
# at once): the examples --examples would build, i.e. those whose required features are on
mapfile -t examples < <(cargo metadata --no-deps --format-version 1 --manifest-path generated/candle-examples/Cargo.toml |
  python3 -c 'import json, sys
on = set(sys.argv[1].split(","))
pkg = next(p for p in json.load(sys.stdin)["packages"] if p["name"] == "candle-examples")
for t in pkg["targets"]:
    if "example" in t["kind"] and set(t.get("required-features") or []) <= on:
        print(t["name"])' "$examples_features")
for ((i = 0; i < ${#examples[@]}; i += 16)); do
  batch=("${examples[@]:i:16}")
  CANDLE_ROCM_ARCHS=gfx90a,gfx1030 SKIP_BINDGEN=1 CANDLE_ROCM_KERNELS_CACHE="$PWD/target/gpu-bundle/kernels-cache" \
    cargo build --manifest-path generated/candle-examples/Cargo.toml --features "$examples_features" \
    "${batch[@]/#/--example=}" --target-dir "$gen_target"
  for e in "${batch[@]}"; do
    [ -x "$gen_target/debug/examples/$e" ] || { echo "error: example $e was not built"; exit 1; }
  done
  rm -rf "$gen_target/debug/examples"
done
echo "built all ${#examples[@]} example binaries the features select"

step "the README's quick start, followed as a new user would (cargo xtask quick-start): cargo new outside this checkout, the"
echo "   README's Cargo.toml lines and src/main.rs, its cargo run --release with the arches Debian's HIP 5.2.3 has (gfx90a,gfx1030:"
echo "   the bundle's, so every kernel comes from its cache); no GPU here, so the program must stop with the error the README shows"
# (the cache is keyed by the arch list too: with gfx90a alone every kernel compiled again, 3.5 min)
CANDLE_ROCM_KERNELS_CACHE="$PWD/target/gpu-bundle/kernels-cache" \
  cargo xtask quick-start --arch gfx90a,gfx1030 --work "$tmp/quick-start" --target-dir "$tmp/quick-start-target"
rm -rf "$tmp/quick-start" "$tmp/quick-start-target"

step "a Candle extension crate written for CUDA (tests/user-ffi-rotary: extern \"C\" launchers, cudaforge's build_lib, FFI in cuda_fwd)"
echo "   ported by cargo xtask port-crate and built with --features rocm: its launchers translated, compiled by the host hipcc"
echo "   for gfx90a and gfx1030 and archived by candle-rocm-build, linked into its check binary (run on the H100 by its run.sh)"
cargo xtask port-crate --src tests/user-ffi-rotary --out target/ported/user-ffi-rotary --candle generated
CANDLE_ROCM_ARCHS=gfx90a,gfx1030 SKIP_BINDGEN=1 CANDLE_ROCM_KERNELS_CACHE="$PWD/target/gpu-bundle/kernels-cache" \
  cargo build --manifest-path target/ported/user-ffi-rotary/Cargo.toml --features rocm --target-dir "$gen_target"
# nm's whole output first: `nm | grep -q` under pipefail fails when grep exits on its match before nm
# has written everything (SIGPIPE), which is what made this step fail at random
rotary_symbols=$(nm "$gen_target/debug/user-ffi-rotary-check")
grep -q ' T run_rotary_bf16$' <<<"$rotary_symbols" || { echo "error: the check binary has no run_rotary_bf16"; exit 1; }
prune "$gen_target"

step "mistral.rs 0.8.1, the largest Candle application (docs/mistralrs.md): its five crates from crates.io ported by cargo xtask"
echo "   port-crate against Candle 0.10.2 regenerated, dependencies first, each ported again with --check (the same bytes). Its"
echo "   build and link in the ROCm 7.2 root: tools/mistralrs-port-check.sh; its run on the H100: bench/mistralrs/run.sh"
bash tools/mistralrs-port-check.sh --ports-only

step ""
