#!/usr/bin/env bash
# Here (the CPU machine, with Rust and nvcc): stages in device-carry/bench/ what
# bench/run-on-gpu.sh needs on the GPU machine (no Rust toolchain there):
#   xtask            `cargo xtask` in release (for `bench regen` beside PyTorch's hipify)
#   cargo-home/      the pinned upstream crates, as a cargo registry checkout (regen's inputs)
#   ../candle-kernels the original candle-kernels sources (tools/stage_upstream_kernels.sh)
#   ../bench-backend.tar.xz  the two end-to-end benchmark binaries (cargo xtask gpu-program bench-backend)
# Then the `device` tool runs `bash bench/run-on-gpu.sh` with carry ["device-carry/bench",
# "device-carry/candle-kernels", "device-carry/bench-backend.tar.xz"] (under its 64 MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
out=device-carry/bench
mkdir -p "$out"
cargo build -q -p xtask --release
install -m 755 target/release/xtask "$out/xtask"
strip "$out/xtask"

version=$(sed -n 's/^version = "\(.*\)"/\1/p' upstream.toml)
./target/release/xtask regen --check >/dev/null   # fetches the pinned crates if absent
registry=$(dirname "$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/candle-kernels-"$version" | head -1)")
dest="$out/cargo-home/registry/src/$(basename "$registry")"
rm -rf "$out/cargo-home" && mkdir -p "$dest"
for c in candle-kernels candle-core candle-nn; do
  cp -r "$registry/$c-$version" "$dest/"
done
bash tools/stage_upstream_kernels.sh
./target/release/xtask gpu-program bench-backend
du -sh device-carry
