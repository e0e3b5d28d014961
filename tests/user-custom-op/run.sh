#!/usr/bin/env bash
# tests/user-custom-op/run.sh OUT_DIR: on the GPU machine, `user-custom-op-check` of
# `cargo xtask gpu-program user-custom-op` (a user's crate whose own kernels, translated
# and built by candle-rocm-build, here as sm_90 cubins, run as CustomOp1s), each op
# against its CPU op: tests/run-user-crate.sh.
exec "$(dirname "$0")/../run-user-crate.sh" user-custom-op "$@"
