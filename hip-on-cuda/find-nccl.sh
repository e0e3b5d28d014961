# hip-on-cuda/find-nccl.sh: sourced by the scripts that run RCCL's calls on an NVIDIA GPU
# (hip-on-cuda/run-gpu-tests.sh, tests/tensor-parallel/run.sh, bench/collectives/run.sh):
# hip-on-cuda forwards them to NVIDIA's NCCL, libnccl.so.2, which the GPU machine has with
# PyTorch rather than in a system directory.
#
# `find_nccl CUDA_LIBS`: sets `nccl` to the real path of libnccl.so.2, or to "" when there is
# none, and `nccl_from` to where it was found. Looks at HIP_ON_CUDA_NCCL=PATH, then the ld.so
# cache, CUDA_LIBS, a Python's site-packages/nvidia/nccl/lib (PyTorch's wheel), else searches
# the file system.
find_nccl() {
  local cuda_libs=$1 py
  nccl=${HIP_ON_CUDA_NCCL:-}
  nccl_from="HIP_ON_CUDA_NCCL"
  if [[ -z $nccl ]]; then
    nccl=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 / { print $NF; exit }')
    nccl_from="the ld.so cache"
  fi
  if [[ -z $nccl && -e $cuda_libs/libnccl.so.2 ]]; then
    nccl=$cuda_libs/libnccl.so.2
    nccl_from=$cuda_libs
  fi
  if [[ -z $nccl ]]; then
    for py in python3 python /opt/*/.venv/bin/python3; do
      command -v "$py" >/dev/null 2>&1 || continue
      nccl=$("$py" - <<'PY' 2>/dev/null
import glob, os, site, sys
dirs = site.getsitepackages() + [site.getusersitepackages()] + sys.path
for d in dirs:
    for lib in glob.glob(os.path.join(d, "nvidia", "nccl", "lib", "libnccl.so.2")):
        print(lib); sys.exit(0)
PY
)
      nccl_from="$py's site-packages"
      [[ -n $nccl ]] && break
    done
  fi
  if [[ -z $nccl ]]; then
    nccl=$(find / -xdev -name libnccl.so.2 -path '*lib*' 2>/dev/null | head -1)
    nccl_from="a search of the file system"
  fi
  if [[ -n $nccl && -e $nccl ]]; then
    nccl=$(realpath "$nccl")
  else
    nccl=""
    nccl_from="nowhere: not HIP_ON_CUDA_NCCL, the ld.so cache, $cuda_libs, a Python's site-packages/nvidia/nccl/lib or the file system"
  fi
}
