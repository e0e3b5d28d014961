#!/usr/bin/env bash
# The project's test command (README; CI runs it through .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== generated/ is what the pinned release gives"
cargo xtask regen --check

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== regen is deterministic"
cargo xtask regen --out "$tmp/a" >/dev/null
cargo xtask regen --out "$tmp/b" >/dev/null
diff -r "$tmp/a" "$tmp/b"
echo "two regen runs: byte-identical trees"

echo "== another release translates and compiles (the translator is not tuned to one release)"
cargo xtask regen --candle-version 0.10.2 --out "$tmp/v0.10.2"
cargo xtask build-kernels --kernels "$tmp/v0.10.2/kernels" --out "$tmp/v0.10.2-build" --no-parity

echo "== unit, golden, CLI, AMD compile and kernel parity tests"
cargo test --workspace -- --nocapture
