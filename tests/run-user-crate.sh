#!/usr/bin/env bash
# tests/run-user-crate.sh NAME OUT_DIR
#
# On the GPU machine, from the repository root: the check binary `NAME-check` of
# `cargo xtask gpu-program NAME` (a user's crate under tests/: user-custom-op,
# user-ffi-rotary) through hip-on-cuda, each of its GPU ops against the CPU's. Writes
# OUT_DIR/NAME.tsv (case, dtype, shape, worst relative error, bound, ok) and OUT_DIR/logs/.
# Exit status: the program's (0 when every case is within its bound).
# Environment: BIN_DIR (default device-carry/NAME[.tar.xz]), KERNELS_DIR, WORK_DIR as
# bench/backend/setup.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 2 ]] || { echo "usage: $0 NAME OUT_DIR" >&2; exit 2; }
name=$1
out=$(realpath -m "$2")
setup_bin=device-carry/$name
setup_required="$name-check"
setup_build="cargo xtask gpu-program $name"
# shellcheck source=bench/backend/setup.sh
source bench/backend/setup.sh
mkdir -p "$out/logs"
"${rocm_env[@]}" "$bin/$name-check" >"$out/$name.tsv" 2>"$out/logs/$name-check.log"
status=$?
cat "$out/$name.tsv" "$out/logs/$name-check.log"
exit $status
