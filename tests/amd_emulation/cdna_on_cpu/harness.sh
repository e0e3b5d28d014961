# tests/amd_emulation/cdna_on_cpu/harness.sh: sourced by the suites that run generated kernels
# in this emulation through their launchers (../mmq_wave64/run.sh, ../moe_wave64/run.sh,
# ../fa_wave64/run.sh).
#
# `emu_suite_setup [BUILD_DIR]` (the suite's own arguments; `here` is its folder): sets
#   root (the repository), gen (generated/kernels), emu (this folder) and build (BUILD_DIR,
#   else a temporary folder removed at exit), with build/rewritten made.
emu_suite_setup() {
    root=$(cd "$here/../../.." && pwd)
    gen="$root/generated/kernels"
    emu="$here/../cdna_on_cpu"
    build=${1:-$(mktemp -d)}
    mkdir -p "$build/rewritten"
    [ $# -ge 1 ] || trap 'rm -rf "$build"' EXIT
}
#
# `emu_rewrite_launches SRC OUT`: SRC with its launch syntax rewritten for the emulator
#   k<<<grid, block, shmem, stream>>>(args);  ->  emu_launch_kernel(grid, block, shmem, stream, k, args);
# (`k` may be namespace-qualified and templated; line numbers kept); fails naming SRC when a
# `<<<` is left.
emu_rewrite_launches() {
    perl -0pe 's/((?:[A-Za-z_][A-Za-z_0-9]*::)*[A-Za-z_][A-Za-z_0-9]*(?:<[^<>;]*>)?)\s*<<<(.*?)>>>\s*\((.*?)\);/emu_launch_kernel($2, $1, $3);/gs' "$1" >"$2"
    if grep -q '<<<' "$2"; then
        echo "run.sh: could not rewrite the launches of $1" >&2
        return 1
    fi
}

# `emu_build_cfg CONFIG_CPP NAME GFX_MACRO [FLAGS...]`: CONFIG_CPP compiled as configuration NAME
# (-DEMU_CFG=NAME) for that arch into $build/NAME.o, with the caller's `cxx` and `gen_inc` arrays.
emu_build_cfg() {
    local config=$1 name=$2 arch=$3
    shift 3
    "${cxx[@]}" "${gen_inc[@]}" "-D$arch" "$@" -DEMU_CFG="$name" -c "$config" -o "$build/$name.o"
}
