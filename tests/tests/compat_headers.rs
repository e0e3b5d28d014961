//! The compat headers' own tests, run in CI: the bit-exact fp8/bf16
//! conversion and integer-SIMD checks and the CPU emulation of the warp and
//! block collectives (g++), the RDNA builtins emulated for NVIDIA warps (their
//! layouts against AMD's tables, g++), the wave64 emulation of the generated MMQ code
//! row kernels and MoE GEMMs on CDNA (g++), and the AMD compile of every compat function
//! (hipcc). Their NVIDIA comparisons (tests/compat/nvidia_reference_check.cu,
//! tests/compat_collective/wmma_vs_cuda.cu) need nvcc and a GPU and are run
//! through the device tool, not here.

use std::path::Path;
use std::process::Command;

use candle_rocm_tests::{hipcc_or_skip, workspace_root};
use hip_build::{CompileJob, OutputKind, CI_ARCHES};

/// Builds `source` with g++ and runs it; returns its last output line.
fn build_and_run(source: &str, flags: &[&str]) -> String {
    let root = workspace_root();
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("t");
    let status = Command::new("g++")
        .args(flags)
        .arg("-I")
        .arg(root.join("translator/compat"))
        .arg(root.join(source))
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("g++");
    assert!(status.success(), "building {source}");
    let out = Command::new(&exe).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{source} failed:\n{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let last = stdout.lines().last().unwrap_or("").to_string();
    println!("{source}: {last}");
    last
}

#[test]
fn fp8_bf16_and_integer_simd_conversions_are_exact() {
    let last = build_and_run("tests/compat/fp_convert_test.cpp", &["-std=c++17", "-O2"]);
    assert_eq!(last, "all passed");
}

#[test]
fn wmma_and_scans_match_cpu_references_in_emulation() {
    let last = build_and_run("tests/compat_collective/cpu_emulation.cpp", &["-std=c++20", "-O1", "-pthread", "-Wno-unknown-pragmas"]);
    assert!(last.contains(" 0 failed"), "{last}");
}

/// The RDNA3/RDNA4 builtins that hip-on-cuda's emulated AMD builds run on NVIDIA warps
/// (tests/amd_emulation/rdna_on_nvidia/amd_gfx_emulation.h), their plain C++ part: the
/// WMMA layouts against every entry of AMD's matrix instruction calculator, ggml's tile
/// layouts through them, and the perm / dot4 / f16 arithmetic (the GPU half runs on the
/// GPU machine: bench/numerics/run-amd-emulated.sh).
#[test]
fn rdna_builtin_layouts_match_amd_tables() {
    let last = build_and_run("tests/amd_emulation/rdna_on_nvidia/amd_gfx_emulation_cpu.cpp", &["-std=c++17", "-O2"]);
    assert!(last.ends_with(" 0 failed"), "{last}");
}

/// The generated MMQ code (generated/kernels/mmq_gguf/) on ggml's CDNA paths in the CPU
/// emulation of 64-lane wavefronts with software MFMA instructions
/// (tests/amd_emulation/mmq_wave64/; needs bash, perl and g++), a sample of its five
/// configurations: gfx942's MFMA tiles and gfx90a's dp4a ones (CANDLE_HIP_NO_MMQ_MFMA).
/// All five (gfx90a's MFMA, gfx942's dp4a, gfx950's, and the paths compared with each
/// other): `tests/amd_emulation/mmq_wave64/run.sh`, about three minutes on two cores.
#[test]
fn mmq_cdna_paths_match_reference_in_wave64_emulation() {
    run_emulation_with("mmq_wave64", &[("MMQ_WAVE64_CONFIGS", "cdna3_mfma cdna2_dp4a")]);
}

/// Candle's row kernels (softmax, rms norm, layer norm of
/// generated/kernels/reduce.hip) reducing over whole 64-lane wavefronts, as
/// CDNA runs them (rules wave-rows, wave-launches), against an f64 reference
/// and the 32-lane path, in the same emulation
/// (tests/amd_emulation/rows_wave64/; under a minute).
#[test]
fn row_kernels_use_whole_wavefronts_in_wave64_emulation() {
    run_emulation("rows_wave64");
}

/// The MoE GEMMs (generated/kernels/moe/moe_wmma*.hip) on candle_wmma's
/// matrix-core tile (v_mfma_f32_16x16x16 f16/bf16) for gfx942 and gfx90a, and
/// on its shuffles, against f64 references, in the same emulation
/// (tests/amd_emulation/moe_wave64/; under two minutes).
#[test]
fn moe_matrix_core_tiles_match_reference_in_wave64_emulation() {
    run_emulation("moe_wave64");
}

/// The flash attention kernels (generated/kernels/candle_flash_attn.hip, through
/// run_mha) on candle_wmma's matrix-core tile for gfx942 and gfx90a and on its
/// shuffles, every part of run_mha's contract, against an f64 reference, in the
/// same emulation (tests/amd_emulation/fa_wave64/; about three minutes).
#[test]
fn flash_attention_matches_reference_in_wave64_emulation() {
    run_emulation("fa_wave64");
}

/// Runs tests/amd_emulation/NAME/run.sh; it must end "N passed, 0 failed".
fn run_emulation(name: &str) {
    run_emulation_with(name, &[]);
}

/// run_emulation with these environment variables.
fn run_emulation_with(name: &str, envs: &[(&str, &str)]) {
    let root = workspace_root();
    let build = tempfile::tempdir().unwrap();
    let out = Command::new("bash")
        .arg(root.join("tests/amd_emulation").join(name).join("run.sh"))
        .arg(build.path())
        .envs(envs.iter().copied())
        .output()
        .expect("bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{name} failed:\n{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let last = stdout.lines().last().unwrap_or("");
    println!("{name}: {last}");
    assert!(last.ends_with(" 0 failed"), "{last}");
}

#[test]
fn compat_headers_compile_for_amd() {
    let Some(hipcc) = hipcc_or_skip("compat header compile check") else { return };
    let root = workspace_root();
    let out = tempfile::tempdir().unwrap();
    let jobs = [
        ("tests/compat/compile_check.hip", vec![]),
        ("tests/compat_collective/compile_check.hip", vec!["-DCANDLE_USE_REAL_COMPAT".to_string()]),
    ];
    for (source, flags) in jobs {
        for kind in [OutputKind::CodeObject, OutputKind::Object] {
            let job = CompileJob {
                source: root.join(source),
                output: out.path().join(Path::new(source).file_name().unwrap()).with_extension(if kind == OutputKind::Object { "o" } else { "co" }),
                kind,
                arches: CI_ARCHES.iter().map(|a| a.to_string()).collect(),
                include_dirs: vec![root.join("translator/compat")],
                extra_flags: flags.clone(),
            };
            hipcc.compile(&job).unwrap_or_else(|e| panic!("{source}: {e}"));
        }
    }
}
