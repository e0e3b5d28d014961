#!/usr/bin/env bash
# Checks that the forwarding runtime defines every HIP / rocBLAS / rocRAND symbol
# that the given binaries import, with the same ELF symbol version
# (hipMalloc@hip_4.2 ...): such binaries are linked with -z now, so one missing
# symbol fails them at load time.
#
#   bash hip-on-cuda/check-exports.sh target/release/libamdhip64.so BINARY...
#
# Exit status 0 when nothing is missing; prints what is missing otherwise.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: $0 LIBAMDHIP64_SO BINARY..." >&2; exit 2; }
lib=$1; shift
defined=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@@/@/' | sort -u)
status=0
for bin in "$@"; do
  needed=$(nm -D --undefined-only "$bin" | awk '{print $2}' | grep -E '^(hip|rocblas_|rocrand_)' | sort -u || true)
  missing=$(comm -23 <(printf '%s\n' "$needed") <(printf '%s\n' "$defined") | sed '/^$/d')
  echo "$bin: $(printf '%s\n' "$needed" | sed '/^$/d' | wc -l) imported, $(printf '%s\n' "$missing" | sed '/^$/d' | wc -l) missing"
  if [[ -n "$missing" ]]; then
    printf '  missing: %s\n' $missing
    status=1
  fi
done
exit $status
