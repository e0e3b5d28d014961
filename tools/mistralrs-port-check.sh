#!/usr/bin/env bash
# mistral.rs 0.8.1's three CUDA crates (mistralrs-quant, mistralrs-paged-attn, mistralrs-core, from the
# cargo registry) ported by `cargo xtask port-crate` against a regen of Candle 0.10.2, dependencies first
# (a crate ported beside another is its twin), then each one's Rust side type-checked with
# `--features rocm` inside the ROCm 7.2 root: `cargo check` runs the ported build scripts, which
# translate every kernel unit and compile it with ROCm 7.2's hipcc for ARCH (default gfx942); the units
# PORTED.md lists as NVIDIA-only are left out with a warning naming the construct.
#
#   tools/mistralrs-port-check.sh [ARCH]        (OUT=dir for the ports, default /tmp/mistralrs-port)
#
# Long (mistralrs-paged-attn's kernels take most of it on 2 cores), so not in CI: CI runs the kernel
# corpus sample of these crates (cargo xtask corpus --sample --compile). Needs root, debootstrap and
# hipcc (apt-get install -y hipcc debootstrap), and the crates' dependencies in the cargo home or a
# reachable registry (cargo fetch runs first, on the host).
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-gfx942}
# outside the workspace (cargo would take a port below it for a member) and visible in the root (/tmp is)
out=${OUT:-/tmp/mistralrs-port}
stamp() { date +%s; }
t0=$(stamp)
cargo xtask rocm-root 7.2
# the registry's copies of the three crates (the corpus fetches them)
cargo xtask corpus --sample --out "$out.corpus.md" >/dev/null
cargo xtask regen --candle-version 0.10.2 --out target/generated-0.10.2
registry=$(dirname "$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/mistralrs-quant-0.8.1 | head -1)")
for c in mistralrs-quant mistralrs-paged-attn mistralrs-core; do
  cargo xtask port-crate --src "$registry/$c-0.8.1" --out "$out/$c" --candle target/generated-0.10.2
done
t1=$(stamp)
declare -A took
for c in mistralrs-quant mistralrs-paged-attn mistralrs-core; do
  (cd "$out/$c" && cargo fetch --quiet)
  s=$(stamp)
  echo "== $c: cargo check --features rocm in the ROCm 7.2 root, kernels for $arch"
  (cd "$out/$c" && SKIP_BINDGEN=1 CANDLE_ROCM_ARCHS="$arch" CARGO_TARGET_DIR="$PWD/../target" \
    "$OLDPWD/target/rocm/7.2/bin/in-root" cargo check --features rocm --offline)
  took[$c]=$(( $(stamp) - s ))
done
echo "== wall times (s): root, regen and ports $((t1-t0)), quant ${took[mistralrs-quant]}, paged-attn ${took[mistralrs-paged-attn]}, core ${took[mistralrs-core]}"
