#!/usr/bin/env bash
# Copies the pinned upstream candle-kernels sources into device-carry/ (git-ignored)
# so that the `device` tool can carry them to the GPU machine for tools/cuda_ptx_entries.sh.
set -eu
version=$(sed -n 's/^version = "\(.*\)"/\1/p' upstream.toml)
src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/candle-kernels-"$version" | head -1)
rm -rf device-carry/candle-kernels && mkdir -p device-carry && cp -r "$src" device-carry/candle-kernels
echo "staged candle-kernels $version"
