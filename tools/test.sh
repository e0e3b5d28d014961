#!/usr/bin/env bash
# The project's test command (README; CI runs it through .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
# the generated packages and the scratch project are workspaces of their own:
# one target directory for all of them shares their dependencies
gen_target="$PWD/target/generated"

echo "== generated/ is what the pinned release gives"
cargo xtask regen --check

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== regen is deterministic"
cargo xtask regen --out "$tmp/a" >/dev/null
cargo xtask regen --out "$tmp/b" >/dev/null
diff -r "$tmp/a" "$tmp/b"
echo "two regen runs: byte-identical trees"

echo "== candle-nn's own test suite on the CPU, against the generated crates (default features)"
cargo test --manifest-path generated/candle-nn/Cargo.toml --target-dir "$gen_target"

echo "== candle-core with feature rocm: the kernels compile for gfx90a + gfx1030 in its build, the backend type-checks"
echo "   against the HIP layer, and candle-core's own suite passes on the CPU (each ROCm variant says it skipped: no device here)"
export CANDLE_ROCM_ARCHS=gfx90a,gfx1030
RUST_BACKTRACE=0 cargo test --manifest-path generated/candle-core/Cargo.toml --features rocm --target-dir "$gen_target"
cargo check --manifest-path generated/candle-nn/Cargo.toml --features rocm --tests --target-dir "$gen_target"

echo "== a user's project: candle-nn and candle-transformers from crates.io, candle-core/candle-nn patched to generated/, feature rocm"
# links against the HIP runtime; here Device::new_rocm(0) reports that there is no device, then it runs on the CPU
RUST_BACKTRACE=0 cargo run --manifest-path tests/scratch-rocm/Cargo.toml --features rocm --target-dir "$gen_target"

echo "== another release translates, its kernels compile and its backend type-checks (the translator is not tuned to one release)"
cargo xtask regen --candle-version 0.10.2 --out "$tmp/v0.10.2"
CANDLE_ROCM_KERNELS_DIR="$tmp/v0.10.2/kernels" cargo check --manifest-path "$tmp/v0.10.2/candle-core/Cargo.toml" --features rocm --target-dir "$gen_target"
unset CANDLE_ROCM_ARCHS

echo "== unit, golden, CLI, AMD compile and kernel parity tests"
cargo test --workspace -- --nocapture
