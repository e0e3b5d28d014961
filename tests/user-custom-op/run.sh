#!/usr/bin/env bash
# tests/user-custom-op/run.sh OUT_DIR
#
# On the GPU machine, from the repository root: `user-custom-op-check` of `cargo xtask
# gpu-program user-custom-op` through hip-on-cuda: a user's crate whose own kernels
# (tests/user-custom-op/kernels, translated and built by candle-rocm-build, here as sm_90
# cubins) run as CustomOp1s on the GPU, each against its CPU op. Writes
# OUT_DIR/user-custom-op.tsv (case, dtype, shape, worst relative error, bound, ok) and
# OUT_DIR/logs/. Exit status: the program's (0 when every case is within its bound).
# Environment: BIN_DIR (default device-carry/user-custom-op[.tar.xz]), KERNELS_DIR, WORK_DIR
# as bench/backend/setup.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 1 ]] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
out=$(realpath -m "$1")
setup_bin=device-carry/user-custom-op
setup_required="user-custom-op-check"
setup_build="cargo xtask gpu-program user-custom-op"
# shellcheck source=bench/backend/setup.sh
source bench/backend/setup.sh
mkdir -p "$out/logs"
"${rocm_env[@]}" "$bin/user-custom-op-check" >"$out/user-custom-op.tsv" 2>"$out/logs/user-custom-op-check.log"
status=$?
cat "$out/user-custom-op.tsv" "$out/logs/user-custom-op-check.log"
exit $status
