//! "What translates": the kernel rules' vocabulary, rendered from the tables of
//! [`super::mapping`] as the markdown of `docs/what-translates.md` (a test keeps the
//! committed file equal to it; `cargo xtask corpus --write-vocabulary` rewrites it).

use super::mapping::*;

/// The whole document.
/// ` (sm_80 and later)` for a construct a compute capability brought.
fn since(row: &NvidiaOnly) -> String {
    row.since_sm.map_or(String::new(), |sm| format!(" (sm_{sm} and later)"))
}

pub fn render() -> String {
    let mut s = String::from(
        "# What translates: the CUDA vocabulary of the kernel rules\n\n\
         Written by `cargo xtask corpus --write-vocabulary` from `translator/src/kernels/mapping.rs`; do not edit.\n\n\
         Each CUDA name, header or idiom is mapped natively (HIP has it), through our compat headers \
         (`generated/kernels/candle_*.h`, which compile on HIP 5.2.3 and ROCm 6/7), or refused with its cause. \
         A name no row covers stops the translation with one line naming file, line and construct (\"no rule\"). \
         `cargo xtask corpus` measures the rules on code nobody here wrote (bench/results/corpus.md).\n",
    );

    s.push_str("\n## The runtime and device API HIP has (HIPIFY's tables)\n\n");
    let runtime = hipify_rows(HIP_RUNTIME_NAMES).count();
    let unsupported = HIP_RUNTIME_UNSUPPORTED.lines().count();
    let device = hipify_rows(HIP_DEVICE_NAMES).count();
    s.push_str(&format!(
        "| table | rows | what the rules do |\n|---|---|---|\n\
         | CUDA runtime API HIP has (`translator/data/hipify_runtime.tsv`) | {runtime} | renamed to HIP's name (rule `names`), unless a row below maps it otherwise |\n\
         | CUDA runtime API HIP lacks (`translator/data/hipify_runtime_unsupported.txt`) | {unsupported} | refused as NVIDIA-only (rule `residue-check`) |\n\
         | CUDA device API HIP has (`translator/data/hipify_device.tsv`) | {device} | HIP's own names in device code: they pass through, or a row below maps them to compat |\n\n\
         From ROCm/HIPIFY's `docs/tables/CUDA_Runtime_API_functions_supported_by_HIP.md` and `CUDA_Device_API_supported_by_HIP.md` \
         (commit 014177bc). A name HIP added after 5.2.3 compiles with ROCm 6/7 only.\n"
    ));

    s.push_str("\n## Names (rule `names`, then `call-renames`, `warp-sync-intrinsics`)\n\n| CUDA | on AMD |\n|---|---|\n");
    for (parts, to) in QUALIFIED {
        s.push_str(&format!("| `{}` | `{to}` |\n", parts.join("::")));
    }
    for (from, to) in IDENTIFIERS {
        s.push_str(&format!("| `{from}` | `{to}` |\n"));
    }
    for (from, to) in CALL_RENAMES {
        s.push_str(&format!("| `{from}(...)` | `{to}(...)`: HIP's overloads plus the ones HIP lacks |\n"));
    }
    for (from, to, takes, partial) in WARP_SYNC_INTRINSICS {
        let how = if *takes == WarpArgs::Width { ", the width spelled out (a logical warp is 32 lanes on wave32 and wave64)" } else { " over the logical 32-lane warp" };
        let partial = match partial {
            PartialMask::Dropped => "a partial mask is dropped too (a lane reads the lane it names, which CUDA requires to be in the mask)".to_string(),
            PartialMask::PassedTo(masked) => format!("a partial mask: `{masked}(mask, ...)`, the mask's lanes only"),
        };
        s.push_str(&format!("| `{from}(mask, ...)` | `{to}(...)`{how}; {partial} |\n"));
    }

    s.push_str("\n## Headers (rule `includes`)\n\n| CUDA header | on AMD |\n|---|---|\n");
    for (from, to) in INCLUDES {
        s.push_str(&format!("| `{from}` | {} |\n", to.map_or("dropped: the compat prelude has it".to_string(), |t| format!("`{t}`"))));
    }
    for (from, to) in INCLUDE_DIRECTORIES {
        s.push_str(&format!("| `{from}*` | `{to}` |\n"));
    }
    for (name, what) in ROCM_LIBRARY_HEADERS {
        s.push_str(&format!("| `{name}` | kept: {what} |\n"));
    }
    s.push_str(&format!("| the C and C++ standard headers ({}) | kept |\n", STANDARD_INCLUDES.len()));
    s.push_str("| the tree's own headers, any extension, found as nvcc finds them | kept, and translated with the kernels |\n");
    for row in NVIDIA_ONLY_HEADERS {
        s.push_str(&format!("| `{}` | refused, NVIDIA-only{}: {} |\n", row.key, since(row), row.cause));
    }
    for (name, library) in FOREIGN_HEADERS {
        s.push_str(&format!("| `{name}` | refused: needs {library} |\n"));
    }

    s.push_str("\n## Architecture tests (rule `arch-guards`)\n\n| test | on AMD | why |\n|---|---|---|\n");
    for g in ARCH_GUARDS {
        s.push_str(&format!("| `__CUDA_ARCH__ {} {}` | {} | {} |\n", g.op, g.operand, g.value, g.why));
    }
    s.push_str("\n`defined(__CUDA_ARCH__)` is the device pass (`__HIP_DEVICE_COMPILE__`); CUDA toolkit version macros read as 0 (rule `toolkit-version`).\n");

    s.push_str(
        "\n## Launch attributes (rule `launch-bounds`)\n\n| CUDA | on AMD |\n|---|---|\n\
         | `__launch_bounds__(threads)`, `__launch_bounds__(threads, blocks)` | kept: HIP reads the second as the minimum waves per execution unit where CUDA reads blocks per multiprocessor (an occupancy hint either way, no effect on results) |\n\
         | `__launch_bounds__(threads, blocks, cluster_blocks)` | the third argument goes: AMD GPUs have no thread-block clusters, and hipcc takes two |\n\
         | `__grid_constant__` | the compat prelude defines it empty: a kernel parameter is constant on AMD already |\n",
    );

    s.push_str("\n## An author's own ROCm branches (rule `author-rocm-branches`)\n\n| switch | whose |\n|---|---|\n");
    for (name, whose) in AUTHOR_ROCM_MACROS {
        s.push_str(&format!("| `{name}` | {whose} |\n"));
    }
    s.push_str("\nDefined for a tree whose ROCm branches include only headers the tree has or the rules know; otherwise the CUDA branches are translated and the translation says why.\n");

    s.push_str("\n## Inline assembly (rule `inline-asm`)\n\n| template | C++ | what |\n|---|---|---|\n");
    for r in ASM_REWRITES {
        s.push_str(&format!("| `{}` | `{}` | {} |\n", r.template.replace('|', "\\|"), r.replacement.replace('|', "\\|"), r.why));
    }
    for row in ASM_NVIDIA_ONLY {
        s.push_str(&format!("| `{}...` | refused, NVIDIA-only{} | {} |\n", row.key, since(row), row.cause));
    }
    s.push_str("| several of the instructions above in one template (`max.NaN.f32 %0, %0, 0fC5800000; min.NaN.f32 ...`) | each as its row, one after another | operands numbered in order; `0fXXXXXXXX` float immediates by their bits |\n");
    s.push_str("| anything else | no rule | |\n");

    s.push_str(
        "\n## What ran, and where\n\n\
         | family | evidence |\n|---|---|\n\
         | bf16, fp8 e4m3 and e5m2 conversions (`__nv_cvt_float_to_fp8` in its four modes, `__nv_cvt_fp8_to_halfraw`, `__nv_fp8x4_e4m3` from float4, half2 and bf162 pairs: 4,194,304 quads each, 0 mismatches), integer SIMD | the compat functions against an exact oracle on the CPU (`tests/compat/fp_convert_test.cpp`, CI) and bit for bit against CUDA 13 on an NVIDIA H200 (`tests/compat/nvidia_reference_check.cu`: every float in each of the four modes, 0 mismatches; all 256 codes of each decode) |\n\
         | shuffles and reductions over the logical warp | Candle's kernels on the H100 (hip-on-cuda) and in the CPU wave64 emulation |\n\
         | votes (`__ballot_sync`, `__any_sync`, `__all_sync`), PTX `max`/`min` (`.f32`, `.NaN.f32`), matches (`__match_any_sync` on 32- and 64-bit ints and floats, `__match_all_sync`), `__reduce_*_sync`, lane id (`%laneid`), `lop3.b32` | the compat functions' shuffle code beside NVIDIA's own intrinsics on an NVIDIA H200 (`tests/compat/nvidia_reference_check.cu`, group 9: 4096 blocks of 16 x 8 threads, 6,815,744 results, 0 mismatches; `lop3.b32` for all 256 truth tables on 65,536 random triples, 0 mismatches; group 10: `max`/`min` `.f32` and `.NaN.f32` on 4,194,304 pairs with NaNs, infinities and signed zeros mixed in, 0 mismatches). Their AMD branches (`__lane_id`, the EXEC mask) compiled with HIP 5.2.3 and ROCm 7.2, not run |\n\
         | the same with a partial mask (`candle_*_w32_in`; a shuffle's mask dropped) | beside NVIDIA's own intrinsics in divergent code on an NVIDIA H200 (`nvidia_reference_check.cu` group 9b: 8-lane groups chosen by a warp's lane 0 call with their group's mask, and with `__activemask()`: 5,767,168 results, about half of them from threads in the branch, 0 mismatches). On AMD the ballot is the hardware's (`__ballot` of the active lanes, then the mask): compiled, not run |\n\
         | cuda_fp8.h's `__nv_fp8_e5m2`, `__nv_fp8x2_e4m3`, `__nv_fp8x2_e5m2`, `__nv_fp8x4_e5m2` (from float, half2 and bf162 pairs; back to float) and PTX's `cvt.rn.satfinite.{e4m3,e5m2}x2.f16x2` / `cvt.rn.f16x2.{e4m3,e5m2}x2` rows | against CUDA's own types and the PTX instructions themselves on an NVIDIA H200 (`nvidia_reference_check.cu` group 12: 4,194,304 inputs x 15 conversions, 62,914,560 results, 0 mismatches); e5m2 to float against an exact oracle on the CPU (`fp_convert_test.cpp`, all 256 codes; binary16 to float, all 65536) |\n\
         | `cudaLaunchKernelEx` with `cudaLaunchConfig_t` and programmatic dependent launch (`griddepcontrol`, `cudaGridDependencySynchronize`), PTX `ld.volatile`/`st.volatile` and system-scope acquire/release `.v4.b32` rows | compiled with HIP 5.2.3 and ROCm 7.2 (`compile_check.hip`; flashinfer's MLA decode in mistral.rs's paged attention); not run |\n\
         | `candle_half2` (`__half2`/`half2`) | the same type as `__half2` on ROCm 6+ and hip-on-cuda; on HIP 5.2.3 a four-byte pair of `__half`, its members' type asserted and its operators instantiated by `tests/compat/compile_check.hip` (CI, HIP 5.2.3); not run there |\n\
         | `__activemask`, `__syncwarp`, f16x2 asm rows, approximate-math asm rows | compiled with HIP 5.2.3 and ROCm 7.2 (mistral.rs's kernels in the corpus); not run (on NVIDIA they are CUDA's own) |\n\
         | the runtime API renames | compiled (corpus); HIP's own functions |\n",
    );
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_document_is_what_the_tables_give() {
        let committed = include_str!("../../../docs/what-translates.md");
        assert!(committed == super::render(), "docs/what-translates.md is stale: run cargo xtask corpus --write-vocabulary");
    }
}
