//! hip-build against the real hipcc. Without hipcc these tests say so and
//! return (CI installs hipcc, so there they run).

use hip_build::{code_object, CompileJob, Hipcc, OutputKind, CI_ARCHES};

fn hipcc() -> Option<Hipcc> {
    match Hipcc::locate() {
        Ok(h) => Some(h),
        Err(e) => {
            println!("SKIPPED: {e}");
            None
        }
    }
}

const KERNEL: &str = "#include <hip/hip_runtime.h>\nextern \"C\" __global__ void add_one(float *x) { x[threadIdx.x] += 1.0f; }\nextern \"C\" void launch_add_one(float *x, hipStream_t s) { add_one<<<1, 32, 0, s>>>(x); }\n";

fn job(dir: &std::path::Path, kind: OutputKind, arches: &[&str]) -> CompileJob {
    let source = dir.join("k.hip");
    std::fs::write(&source, KERNEL).unwrap();
    CompileJob {
        output: dir.join(if kind == OutputKind::CodeObject { "k.co" } else { "k.o" }),
        source,
        kind,
        arches: arches.iter().map(|a| a.to_string()).collect(),
        include_dirs: vec![],
        extra_flags: vec![],
    }
}

#[test]
fn code_object_has_the_kernel_for_every_arch() {
    let Some(hipcc) = hipcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let j = job(dir.path(), OutputKind::CodeObject, CI_ARCHES);
    hipcc.compile(&j).unwrap();
    for arch in CI_ARCHES {
        let kernels = code_object::kernel_symbols(&j.output, arch).unwrap();
        assert_eq!(kernels.into_iter().collect::<Vec<_>>(), ["add_one"], "{arch}");
    }
    assert!(code_object::kernel_symbols(&j.output, "gfx942").is_err());
}

#[test]
fn host_object_exports_the_launcher() {
    let Some(hipcc) = hipcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let j = job(dir.path(), OutputKind::Object, CI_ARCHES);
    hipcc.compile(&j).unwrap();
    assert!(code_object::host_functions(&j.output).unwrap().contains("launch_add_one"));
}

#[test]
fn unknown_arch_is_a_clear_error() {
    let Some(hipcc) = hipcc() else { return };
    let err = hipcc.check_arch("gfx9999").unwrap_err().to_string();
    assert!(err.starts_with("hipcc does not support --offload-arch=gfx9999: "), "{err}");
    assert!(!err.contains('\n'));
}

#[test]
fn a_cuda_header_in_the_include_path_is_rejected() {
    let Some(hipcc) = hipcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    // a system-like include dir outside the kernel tree, as /usr/include is
    let system = tempfile::tempdir().unwrap();
    let fake = system.path().join("cuda-include");
    std::fs::create_dir_all(&fake).unwrap();
    std::fs::write(fake.join("cuda_fp16.h"), "#pragma once\n").unwrap();
    let mut j = job(dir.path(), OutputKind::CodeObject, &["gfx90a"]);
    std::fs::write(&j.source, format!("#include \"cuda_fp16.h\"\n{KERNEL}")).unwrap();
    j.extra_flags = vec!["-isystem".into(), fake.display().to_string()];
    let err = hipcc.compile(&j).unwrap_err().to_string();
    assert!(err.contains("includes the CUDA header") && err.contains("cuda_fp16.h"), "{err}");
}
