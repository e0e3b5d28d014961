#!/usr/bin/env bash
# tests/user-ffi-rotary/run.sh OUT_DIR: on the GPU machine, `user-ffi-rotary-check` of
# `cargo xtask gpu-program user-ffi-rotary` (this CUDA crate ported by `cargo xtask
# port-crate`, its extern "C" launchers built by candle-rocm-build, here with nvcc through
# hip-on-cuda), the fused rotary op against the CPU's: tests/run-user-crate.sh.
exec "$(dirname "$0")/../run-user-crate.sh" user-ffi-rotary "$@"
