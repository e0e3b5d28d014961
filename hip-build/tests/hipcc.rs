//! hip-build against the real hipcc (Debian's HIP 5.2.3 in CI). Without
//! hipcc these tests print `SKIPPED: hipcc not installed` and return; under
//! CI (`CI` set) a missing hipcc fails them instead, since CI installs it.

mod common;
use common::hipcc;

use std::collections::BTreeSet;
use std::path::Path;

use hip_build::code_object::{self, arch_of_target};
use hip_build::{compile_all, kernel_symbols, CompileJob, HipBuildError, OutputKind, CI_ARCHES};

/// Two kernels, a device helper (no kernel), a launcher (host function).
const KERNEL: &str = r#"#include <hip/hip_runtime.h>
__device__ float twice(float v) { return 2.0f * v; }
extern "C" __global__ void add_one(float *x) { x[threadIdx.x] += 1.0f; }
extern "C" __global__ void scale_f32(float *x, float s) { x[threadIdx.x] = twice(x[threadIdx.x]) * s; }
extern "C" void launch_add_one(float *x, hipStream_t s) { add_one<<<1, 32, 0, s>>>(x); }
"#;

fn job(dir: &Path, kind: OutputKind, arches: &[&str], source_text: &str) -> CompileJob {
    let source = dir.join("k.hip");
    std::fs::write(&source, source_text).unwrap();
    CompileJob {
        output: dir.join(if kind == OutputKind::CodeObject { "out/k.co" } else { "out/k.o" }),
        source,
        kind,
        arches: arches.iter().map(|a| a.to_string()).collect(),
        include_dirs: vec![],
        extra_flags: vec![],
    }
}

fn names(set: BTreeSet<String>) -> Vec<String> {
    set.into_iter().collect()
}

#[test]
fn version_is_reported() {
    let Some(hipcc) = hipcc() else { return };
    let v = hipcc.version().unwrap();
    println!("hipcc {} reports HIP {v}", hipcc.path().display());
    assert!(v.starts_with(|c: char| c.is_ascii_digit()) && v.contains('.'), "{v}");
}

#[test]
fn both_kinds_hold_exactly_the_kernels_for_every_arch() {
    let Some(hipcc) = hipcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    for kind in [OutputKind::CodeObject, OutputKind::Object] {
        let j = job(dir.path(), kind, CI_ARCHES, KERNEL);
        let start = std::time::Instant::now();
        let out = hipcc.compile(&j).unwrap();
        println!("{kind:?} for {}: {:.2}s", CI_ARCHES.join(","), start.elapsed().as_secs_f64());
        assert_eq!(out.output, j.output);
        for arch in CI_ARCHES {
            assert_eq!(names(kernel_symbols(&j.output, arch).unwrap()), ["add_one", "scale_f32"], "{kind:?} {arch}");
        }
        let targets = code_object::bundle_targets(&j.output).unwrap();
        println!("{kind:?} bundle targets: {targets:?}");
        let arches: BTreeSet<&str> = targets.iter().filter_map(|t| arch_of_target(t)).collect();
        assert_eq!(arches, CI_ARCHES.iter().copied().collect(), "{targets:?}");
        let missing = kernel_symbols(&j.output, "gfx942").unwrap_err().to_string();
        assert!(missing.contains("no gfx942 image in the bundle (targets: ") && missing.contains("gfx1030"), "{missing}");
    }
    let host = code_object::host_functions(&dir.path().join("out/k.o")).unwrap();
    assert!(host.contains("launch_add_one"), "{host:?}");
}

#[test]
fn native_unbundling_matches_clang_offload_bundler() {
    let Some(hipcc) = hipcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    for kind in [OutputKind::CodeObject, OutputKind::Object] {
        let j = job(dir.path(), kind, CI_ARCHES, KERNEL);
        hipcc.compile(&j).unwrap();
        for arch in CI_ARCHES {
            let native = code_object::extract_images(&j.output, arch).unwrap();
            let tool = code_object::extract_image_with_bundler(&j.output, arch).unwrap();
            assert_eq!(native.len(), 1);
            assert!(native[0] == tool, "{kind:?} {arch}: {} native bytes, {} from the bundler", native[0].len(), tool.len());
            assert_eq!(names(code_object::kernels_of_image(&j.output, arch, &tool).unwrap()), ["add_one", "scale_f32"]);
        }
    }
}

#[test]
fn target_ids_with_features_are_matched() {
    let Some(hipcc) = hipcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let j = job(dir.path(), OutputKind::CodeObject, &["gfx90a:xnack+", "gfx1030"], KERNEL);
    hipcc.compile(&j).unwrap();
    for arch in ["gfx90a", "gfx90a:xnack+", "gfx1030"] {
        assert_eq!(names(kernel_symbols(&j.output, arch).unwrap()), ["add_one", "scale_f32"], "{arch}");
    }
    assert!(kernel_symbols(&j.output, "gfx90a:xnack-").is_err());
}

#[test]
fn unknown_arch_is_a_clear_error() {
    let Some(hipcc) = hipcc() else { return };
    let err = hipcc.check_arch("gfx9999").unwrap_err().to_string();
    assert!(err.starts_with("hipcc does not support --offload-arch=gfx9999: "), "{err}");
    assert!(!err.contains('\n'), "{err}");
    hipcc.check_arch("gfx90a").unwrap();
    // compile() checks the arches first
    let dir = tempfile::tempdir().unwrap();
    let e = hipcc.compile(&job(dir.path(), OutputKind::CodeObject, &["gfx90a", "gfx9999"], KERNEL)).unwrap_err();
    assert!(matches!(e, HipBuildError::UnsupportedArch { ref arch, .. } if arch == "gfx9999"), "{e}");
}

#[test]
fn a_cuda_header_in_an_include_dir_is_rejected() {
    let Some(hipcc) = hipcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let include = tempfile::tempdir().unwrap();
    std::fs::write(include.path().join("cuda_fp16.h"), "#pragma once\n").unwrap();
    for kind in [OutputKind::CodeObject, OutputKind::Object] {
        let mut j = job(dir.path(), kind, &["gfx90a"], &format!("#include <cuda_fp16.h>\n{KERNEL}"));
        j.include_dirs = vec![include.path().to_path_buf()];
        let err = hipcc.compile(&j).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, HipBuildError::CudaHeaderIncluded { .. }), "{text}");
        assert!(text.contains("includes the CUDA header") && text.contains(&include.path().join("cuda_fp16.h").display().to_string()), "{text}");
        assert!(!j.output.exists(), "nothing is compiled once a CUDA header is seen");
    }
}

#[test]
fn cuda_headers_seen_by_one_arch_or_by_the_host_only_are_rejected() {
    let Some(hipcc) = hipcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cuda = tempfile::tempdir().unwrap();
    let inc = cuda.path().join("cuda-12/include");
    std::fs::create_dir_all(&inc).unwrap();
    std::fs::write(inc.join("vector_types.h"), "#pragma once\n").unwrap();
    std::fs::write(inc.join("cuda_runtime.h"), "#pragma once\n").unwrap();
    let isystem = vec!["-isystem".to_string(), inc.display().to_string()];

    // device code of gfx1030 only (with -MD this would be missed: it records one arch)
    let mut j = job(dir.path(), OutputKind::CodeObject, CI_ARCHES, &format!("#if defined(__gfx1030__)\n#include <vector_types.h>\n#endif\n{KERNEL}"));
    j.extra_flags = isystem.clone();
    let err = hipcc.compile(&j).unwrap_err().to_string();
    assert!(err.contains("vector_types.h") && err.contains("(device code)"), "{err}");

    // host code only (with -c, -MD would see this, but a device-only scan would not)
    let mut j = job(dir.path(), OutputKind::Object, CI_ARCHES, &format!("#ifndef __HIP_DEVICE_COMPILE__\n#include <cuda_runtime.h>\n#endif\n{KERNEL}"));
    j.extra_flags = isystem;
    let err = hipcc.compile(&j).unwrap_err().to_string();
    assert!(err.contains("cuda_runtime.h") && err.contains("(host code)"), "{err}");
}

#[test]
fn dependencies_cover_every_arch_and_the_depfile_is_written() {
    let Some(hipcc) = hipcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cuda_utils.cuh"), "#pragma once\n").unwrap(); // upstream name in the kernel tree: allowed
    std::fs::write(dir.path().join("rdna.h"), "#pragma once\n").unwrap();
    let src = format!("#include \"cuda_utils.cuh\"\n#include <cmath>\n#if defined(__gfx1030__)\n#include \"rdna.h\"\n#endif\n{KERNEL}");
    let j = job(dir.path(), OutputKind::CodeObject, CI_ARCHES, &src);
    let out = hipcc.compile(&j).unwrap();
    let deps: Vec<String> = out.dependencies.iter().map(|d| d.display().to_string()).collect();
    for want in ["k.hip", "cuda_utils.cuh", "rdna.h", "hip_runtime.h"] {
        assert!(deps.iter().any(|d| d.ends_with(want)), "{want} not in {deps:?}");
    }
    assert!(out.dependencies.iter().all(|d| d.is_absolute()));
    assert!(out.dependencies[0].ends_with("k.hip"));
    let depfile = std::fs::read_to_string(&out.depfile).unwrap();
    assert_eq!(out.depfile, dir.path().join("out/k.co.d"));
    assert!(depfile.starts_with(&format!("{}:", j.output.display())));
    assert_eq!(hip_build::deps::parse_make_deps(&depfile), deps);
}

#[test]
fn compiler_errors_name_the_source_and_are_trimmed() {
    let Some(hipcc) = hipcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let broken: String = (0..30).map(|i| format!("extern \"C\" __global__ void k{i}(float *x) {{ undefined_{i}(x); }}\n")).collect();
    let j = job(dir.path(), OutputKind::CodeObject, &["gfx90a"], &format!("#include <hip/hip_runtime.h>\n{broken}"));
    let err = hipcc.compile(&j).unwrap_err();
    let HipBuildError::CompileFailed { source_path, stderr } = &err else { panic!("{err}") };
    assert_eq!(source_path, &j.source);
    assert!(stderr.contains("use of undeclared identifier 'undefined_0'"), "{stderr}");
    assert_eq!(stderr.lines().count(), hip_build::STDERR_LINES + 1, "{stderr}");
    assert!(stderr.lines().last().unwrap().ends_with("more lines)"));
    assert!(err.to_string().starts_with(&format!("{}: hipcc failed:\n", j.source.display())));
}

#[test]
fn compile_all_runs_jobs_in_parallel_and_keeps_their_order() {
    let Some(hipcc) = hipcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut jobs = Vec::new();
    for (i, text) in [KERNEL.to_string(), "this is not C++\n".to_string(), KERNEL.replace("add_one", "add_two")].iter().enumerate() {
        let sub = dir.path().join(format!("j{i}"));
        std::fs::create_dir_all(&sub).unwrap();
        jobs.push(job(&sub, if i == 2 { OutputKind::Object } else { OutputKind::CodeObject }, CI_ARCHES, text));
    }
    let results = compile_all(&hipcc, jobs, 0);
    for r in &results {
        println!("{:>6.2}s {} {}", r.wall.as_secs_f64(), r.job.source.display(), if r.result.is_ok() { "ok" } else { "FAILED" });
    }
    assert_eq!(results.iter().map(|r| r.result.is_ok()).collect::<Vec<_>>(), [true, false, true]);
    assert_eq!(results.iter().map(|r| r.output.is_some()).collect::<Vec<_>>(), [true, false, true]);
    assert!(results[1].result.as_ref().unwrap_err().to_string().contains("j1/k.hip: hipcc failed"));
    assert!(results[2].job.source.starts_with(dir.path().join("j2")));
    assert_eq!(names(kernel_symbols(&results[2].job.output, "gfx1030").unwrap()), ["add_two", "scale_f32"]);
    assert!(results.iter().all(|r| r.wall.as_millis() > 0));
}

#[test]
fn compile_all_splits_arches_and_builds_what_one_hipcc_call_builds() {
    let Some(hipcc) = hipcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    for kind in [OutputKind::CodeObject, OutputKind::Object] {
        let (whole, split) = (dir.path().join(format!("{kind:?}-whole")), dir.path().join(format!("{kind:?}-split")));
        for d in [&whole, &split] {
            std::fs::create_dir_all(d).unwrap();
        }
        let one_call = hipcc.compile(&job(&whole, kind, CI_ARCHES, KERNEL)).unwrap();
        let [r] = compile_all(&hipcc, vec![job(&split, kind, CI_ARCHES, KERNEL)], 2).try_into().unwrap();
        let per_arch = r.output.unwrap_or_else(|| panic!("{:?}", r.result));
        for arch in CI_ARCHES {
            let (a, b) = (code_object::extract_images(&one_call.output, arch).unwrap(), code_object::extract_images(&per_arch.output, arch).unwrap());
            assert!(a == b, "{kind:?} {arch}: the per-arch compile gives another image");
        }
        assert_eq!(per_arch.dependencies.len(), one_call.dependencies.len(), "{kind:?}");
        let left: Vec<String> = std::fs::read_dir(split.join("out")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(left.len(), 2, "only the output and its depfile remain: {left:?}");
        if kind == OutputKind::Object {
            assert_eq!(code_object::host_functions(&per_arch.output).unwrap(), code_object::host_functions(&one_call.output).unwrap());
        }
    }
    // a failing arch fails the job with the compiler's message, and other jobs still finish
    let bad = dir.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    let results = compile_all(&hipcc, vec![job(&bad, OutputKind::Object, CI_ARCHES, "#include <hip/hip_runtime.h>\n#if defined(__gfx1030__)\n#error only gfx1030 breaks\n#endif\n")], 2);
    let e = results[0].result.as_ref().unwrap_err().to_string();
    assert!(e.contains("only gfx1030 breaks"), "{e}");
}

#[test]
fn a_launcher_needing_cxx_runtime_is_named() {
    let Some(hipcc) = hipcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    // a function-local static with a dynamic initialiser: `__cxa_guard_acquire`
    let guarded = format!(
        "{KERNEL}\nextern \"C\" int launch_once(float *x, hipStream_t s) {{\n    static const int done = (add_one<<<1, 32, 0, s>>>(x), hipGetLastError());\n    return done;\n}}\n"
    );
    let j = job(dir.path(), OutputKind::Object, &["gfx1030"], &guarded);
    hipcc.compile(&j).unwrap();
    let err = hip_build::build_script::check_no_cxx_runtime(&[(&j.source, &j.output)]).unwrap_err();
    assert!(err.starts_with(&format!("{}: its host code needs C++'s runtime (__cxa_guard_", j.source.display())), "{err}");
    // the plain launchers need the HIP runtime only
    let j = job(dir.path(), OutputKind::Object, &["gfx1030"], KERNEL);
    hipcc.compile(&j).unwrap();
    hip_build::build_script::check_no_cxx_runtime(&[(&j.source, &j.output)]).unwrap();
}
