#!/usr/bin/env bash
# The whole platform matrix (docs/platforms.md): for each pinned ROCm
# release, its root (cargo xtask rocm-root), every generated kernel compiled arch
# by arch with kernel parity and warnings, and the backend built, linked and
# tested inside the root with its imports checked against the release.
#   ROCm 7.2: all nine current arches; backend built, linked, CPU tests run.
#   ROCm 6.4: gfx942 and gfx1100 (its headers and libraries, hipcc 7.0.2); backend built and linked, imports and the
#   HIP layer's C values checked (candle-core's and candle-nn's suites not run: 7.2 runs them).
#   HIP 5.2.3 (the host's Debian hipcc): gfx90a and gfx1030, as tools/test.sh does.
# CI (tools/test.sh) runs the 7.2 part for gfx942, gfx1100 and gfx1201 only.
# Needs root, debootstrap and hipcc: apt-get install -y hipcc debootstrap
set -euo pipefail
cd "$(dirname "$0")/.."
stamp() { date +%s; }
t0=$(stamp)
echo "== ROCm 7.2: root, kernels for every current arch"
cargo xtask rocm-root 7.2
t1=$(stamp)
cargo xtask build-kernels --rocm 7.2 --arch all --each-arch --out target/rocm/7.2/kernels
t2=$(stamp)
echo "== ROCm 7.2: backend built, linked and tested in the root"
cargo xtask rocm-backend --rocm 7.2 --archs gfx942
t3=$(stamp)
echo "== ROCm 6.4: root, kernels for gfx942 and gfx1100, backend built and linked, imports checked"
cargo xtask rocm-root 6.4
t4=$(stamp)
cargo xtask build-kernels --rocm 6.4 --arch gfx942,gfx1100 --each-arch --out target/rocm/6.4/kernels
t5=$(stamp)
cargo xtask rocm-backend --rocm 6.4 --archs gfx942 --no-run
t6=$(stamp)
echo "== HIP 5.2.3 (host hipcc): gfx90a and gfx1030"
cargo xtask build-kernels --arch gfx90a,gfx1030 --each-arch --out target/hip-kernels-5.2
t7=$(stamp)
echo "== wall times (s): 7.2 root $((t1-t0)), 7.2 kernels $((t2-t1)), 7.2 backend $((t3-t2)), 6.4 root $((t4-t3)), 6.4 kernels $((t5-t4)), 6.4 backend $((t6-t5)), 5.2.3 kernels $((t7-t6))"
