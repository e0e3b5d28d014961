#!/usr/bin/env bash
# mistral.rs 0.8.1 built for AMD (docs/mistralrs.md), the user's command sequence:
#   1. Candle 0.10.2 (the release mistral.rs 0.8.1 is on) regenerated into target/generated-0.10.2;
#   2. mistral.rs's five crates from crates.io ported by `cargo xtask port-crate`, dependencies first (a
#      crate ported beside another is its twin: `mistralrs-core/cuda` becomes `mistralrs-core/rocm`), each
#      ported twice: the second time with --check, which must find the same bytes;
#   3. its CLI, `mistralrs`, built with `--features rocm` inside the ROCm 7.2 root: the ported build scripts
#      translate every kernel unit and compile it with ROCm 7.2's hipcc for ARCHS (default gfx942,gfx1100,gfx1201;
#      the units PORTED.md lists as NVIDIA-only are left out with a warning naming the construct), Candle's own
#      kernels from the regenerated release; linked against 7.2's libraries;
#   4. the binary's HIP/rocBLAS/rocRAND imports checked against what 7.2's libraries export;
#   5. every kernel of the three CUDA crates present for each arch: the kernels of their stock CUDA build
#      (tests/fixtures/cuda-kernels-mistralrs-0.8.1.txt, written by `cargo xtask ported-kernels --record` from
#      the build `cargo xtask gpu-program mistralrs` makes) against those of the objects hipcc compiled here.
#
#   tools/mistralrs-port-check.sh [ARCHS]       the five steps
#   tools/mistralrs-port-check.sh --ports-only  steps 1 and 2 (CI runs this)
#
# Steps 3 to 5 are long (the kernels take most of it on 2 cores), so not in CI; CI also compiles these crates'
# kernel units with the host's hipcc (cargo xtask corpus --sample --compile). Steps 3 to 5 need root, debootstrap
# and hipcc (apt-get install -y hipcc debootstrap); all need crates.io (or the crates in the cargo home).
set -euo pipefail
cd "$(dirname "$0")/.."
ports_only=false
[[ ${1:-} == --ports-only ]] && { ports_only=true; shift; }
archs=${1:-gfx942,gfx1100,gfx1201}
stamp() { date +%s; }
t0=$(stamp)
cargo xtask regen --candle-version 0.10.2 --out target/generated-0.10.2
for check in "" --check; do
  cargo xtask port-crate --crate mistralrs-quant@0.8.1 --out target/mistralrs-port/mistralrs-quant --candle target/generated-0.10.2 $check
  cargo xtask port-crate --crate mistralrs-paged-attn@0.8.1 --out target/mistralrs-port/mistralrs-paged-attn --candle target/generated-0.10.2 $check
  cargo xtask port-crate --crate mistralrs-core@0.8.1 --out target/mistralrs-port/mistralrs-core --candle target/generated-0.10.2 $check
  cargo xtask port-crate --crate mistralrs-server-core@0.8.1 --out target/mistralrs-port/mistralrs-server-core --candle target/generated-0.10.2 $check
  cargo xtask port-crate --crate mistralrs-cli@0.8.1 --out target/mistralrs-port/mistralrs-cli --candle target/generated-0.10.2 $check
done
t1=$(stamp)
if $ports_only; then
  echo "== Candle 0.10.2 regenerated and mistral.rs's five crates ported (twice, the same bytes) in $((t1-t0)) s"
  exit 0
fi
cargo xtask rocm-root 7.2
echo "== mistralrs (mistralrs-cli 0.8.1), --features rocm, in the ROCm 7.2 root, kernels for $archs"
(cd target/mistralrs-port/mistralrs-cli && cargo fetch --quiet)
root_cargo=$PWD/target/rocm/7.2/bin/in-root
kernels=$PWD/target/generated-0.10.2/kernels
(cd target/mistralrs-port/mistralrs-cli &&
  SKIP_BINDGEN=1 CANDLE_ROCM_ARCHS="$archs" CANDLE_ROCM_KERNELS_DIR="$kernels" CARGO_TARGET_DIR="$PWD/../target" \
    "$root_cargo" cargo build --features rocm --offline --bin mistralrs)
t2=$(stamp)
cargo xtask rocm-backend --rocm 7.2 --check-imports target/mistralrs-port/target/debug/mistralrs
# quant's build script leaves out its Marlin, fp8 and WMMA units below compute capability 80, and the
# ported one answers 75 (docs/mistralrs.md)
cargo xtask ported-kernels --check target/mistralrs-port/target --reference tests/fixtures/cuda-kernels-mistralrs-0.8.1.txt --archs "$archs" \
  --left-out 'mistralrs-quant/marlin_*,mistralrs-quant/*_fp8,mistralrs-quant/*_fp8_gemm,mistralrs-quant/*_wmma'

echo "== wall times (s): regen and ports $((t1-t0)), root and mistralrs built in it $((t2-t1))"
