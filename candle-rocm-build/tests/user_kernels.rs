//! A user's kernels through candle-rocm-build, as a build script would build them:
//! translated, compiled with this machine's hipcc for the CI arches, the kernels found in
//! the code objects; a second build compiles nothing; an untranslatable construct fails
//! with the translator's one-line error naming the user's file and line.
use std::path::PathBuf;
use std::time::Instant;

fn kernels() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/kernels")
}

/// The ROCm 7.2 root's hipcc, or None (having said that the test did not run).
fn rocm_7_2_hipcc() -> Option<PathBuf> {
    let hipcc = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/rocm/7.2/bin/hipcc");
    if !hipcc.is_file() {
        println!("not run: no ROCm 7.2 root ({} missing: cargo xtask rocm-root 7.2)", hipcc.display());
        return None;
    }
    Some(hipcc)
}

#[test]
fn a_users_kernels_are_translated_compiled_and_cached() {
    let out = tempfile::tempdir().unwrap();
    let builder = candle_rocm_build::Builder::new()
        .kernel(kernels().join("user_ops.cu"))
        .include_dir(kernels().join("include"))
        .arches(&["gfx90a", "gfx1030"])
        .out_dir(out.path());
    let start = Instant::now();
    let built = builder.build().unwrap_or_else(|e| panic!("{e}"));
    let first = start.elapsed().as_secs_f64();
    assert_eq!((built.compiled, built.code_objects.len()), (1, 1));
    assert_eq!(built.code_objects[0].name, "USER_OPS");
    for arch in ["gfx90a", "gfx1030"] {
        let names = hip_build::kernel_symbols(&built.code_objects[0].path, arch).unwrap();
        for kernel in ["scaled_add_f32", "scaled_add_bf16", "row_sum_f32"] {
            assert!(names.contains(kernel), "{arch}: {kernel} not in {names:?}");
        }
    }
    // the translated header and kernel: shuffles with an explicit width, no CUDA header left
    let hip = std::fs::read_to_string(built.hip_dir.join("user_ops.hip")).unwrap();
    let header = std::fs::read_to_string(built.hip_dir.join("warp_reduce.cuh")).unwrap();
    assert!(!hip.contains("cuda_bf16.h") && !hip.contains("__nv_bfloat16"), "{hip}");
    assert!(!header.contains("_sync("), "{header}");
    let rust = std::fs::read_to_string(&built.rust_file).unwrap();
    assert!(rust.contains("pub const USER_OPS: &[u8]") && rust.contains("pub const ARCHES: &[&str] = &[\"gfx90a\", \"gfx1030\"];"), "{rust}");

    let start = Instant::now();
    let again = builder.build().unwrap_or_else(|e| panic!("{e}"));
    let second = start.elapsed().as_secs_f64();
    assert_eq!(again.compiled, 0, "nothing changed: nothing is compiled");
    println!("first build {first:.2} s (translation {:.3} s), second build {second:.3} s (translation {:.3} s)", built.translate_s, again.translate_s);
}

#[test]
fn an_untranslatable_construct_fails_with_the_users_file_and_line() {
    let out = tempfile::tempdir().unwrap();
    let ptx = kernels().join("inline_ptx.cu");
    let err = candle_rocm_build::Builder::new().kernel(&ptx).arches(&["gfx90a"]).out_dir(out.path()).build().unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, candle_rocm_build::Error::Translate(_)), "{text}");
    assert!(text.starts_with(&format!("{}:4: ", ptx.display())), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
    println!("{text}");
}

/// The hip-on-cuda build (cubins for an NVIDIA GPU, how this repository runs a crate's
/// translated kernels): with nvcc (`NVCC`, else on PATH) the same kernels become an sm_90
/// cubin holding them; without nvcc the test says it did not run.
#[test]
fn the_hip_on_cuda_build_gives_cubins_with_the_kernels() {
    let nvcc = std::env::var_os("NVCC").map(PathBuf::from).or_else(|| {
        std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join("nvcc")).find(|n| n.is_file()))
    });
    let Some(nvcc) = nvcc.filter(|n| n.is_file()) else {
        println!("not run: no nvcc (set NVCC or put it on PATH)");
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let builder = candle_rocm_build::Builder::new().kernel(kernels().join("user_ops.cu")).include_dir(kernels().join("include")).hip_on_cuda("sm_90").out_dir(out.path());
    let built = builder.build().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((built.compiled, built.arches.as_slice()), (1, ["sm_90".to_string()].as_slice()));
    let cubin = std::fs::read(&built.code_objects[0].path).unwrap();
    assert_eq!(&cubin[..4], b"\x7fELF", "a cubin");
    let text = String::from_utf8_lossy(&cubin);
    for kernel in ["scaled_add_f32", "scaled_add_bf16", "row_sum_f32"] {
        assert!(text.contains(kernel), "{kernel} not in the cubin");
    }
    assert_eq!(builder.build().unwrap().compiled, 0, "nothing changed: nothing is compiled");
    println!("{}: cubin of {} bytes", nvcc.display(), cubin.len());

    // launchers: nvcc's objects in the asked-for lib<name>.a, defining them
    let rotary = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/user-ffi-rotary/kernels/rotary.cu");
    let builder = candle_rocm_build::Builder::new().kernel(rotary).nvcc_args(["-O3", "--expt-relaxed-constexpr"]).hip_on_cuda("sm_90").out_dir(out.path().join("lib-build"));
    let lib = builder.build_lib(out.path().join("lib/librotary.a")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((lib.path.clone(), lib.compiled), (out.path().join("lib/librotary.a"), 1));
    let nm = std::process::Command::new("nm").arg("--defined-only").arg("-g").arg(&lib.path).output().unwrap();
    let symbols = String::from_utf8_lossy(&nm.stdout);
    for launcher in ["run_rotary_f32", "run_rotary_f16", "run_rotary_bf16"] {
        assert!(symbols.lines().any(|l| l.ends_with(&format!(" T {launcher}"))), "{launcher} not defined in {}:\n{symbols}", lib.path.display());
    }
    assert_eq!(builder.build_lib(out.path().join("lib/librotary.a")).unwrap().compiled, 0, "nothing changed: nothing is compiled");
}

/// tests/user-custom-op's kernels (a user's crate, run on the H100 by its run.sh) with the
/// ROCm 7.2 release users run, for CI's three arches (CDNA3 wave64, RDNA3, RDNA4): every
/// kernel in every arch's image. Needs the release's root (`cargo xtask rocm-root 7.2`);
/// without it the test says it did not run.
#[test]
fn a_users_crate_builds_with_rocm_7_2_for_cdna3_rdna3_and_rdna4() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let Some(hipcc) = rocm_7_2_hipcc() else { return };
    let out = tempfile::tempdir().unwrap();
    let kernels = root.join("tests/user-custom-op/kernels");
    let arches = ["gfx942", "gfx1100", "gfx1201"];
    let built = candle_rocm_build::Builder::new()
        .kernel_glob(format!("{}/*.cu", kernels.display()))
        .hipcc(&hipcc)
        .arches(&arches)
        .out_dir(out.path())
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(built.code_objects.len(), 1);
    for arch in arches {
        let names = hip_build::kernel_symbols(&built.code_objects[0].path, arch).unwrap();
        for kernel in ["swish_f32", "swish_bf16", "rms_rows_f32"] {
            assert!(names.contains(kernel), "{arch}: {kernel} not in {names:?}");
        }
    }
    println!("ROCm 7.2: {} for {}", built.code_objects[0].path.display(), arches.join(", "));
}

/// tests/user-ffi-rotary's kernels and `extern "C"` launchers (a crate written for CUDA,
/// its build.rs ported by `cargo xtask port-crate`) as `build_lib` builds them with ROCm
/// 7.2 for CI's three arches: the static library defines the three launchers, and the
/// same file's code object holds the kernel of each dtype for every arch. Needs the release's root (`cargo xtask rocm-root 7.2`); without it
/// the test says it did not run.
#[test]
fn a_crates_launchers_become_a_static_library_with_rocm_7_2() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let Some(hipcc) = rocm_7_2_hipcc() else { return };
    let out = tempfile::tempdir().unwrap();
    let arches = ["gfx942", "gfx1100", "gfx1201"];
    let builder = candle_rocm_build::Builder::new()
        .kernel_glob(format!("{}/tests/user-ffi-rotary/kernels/*.cu", root.display()))
        .nvcc_args(["-std=c++17", "-O3", "-U__CUDA_NO_HALF_OPERATORS__", "--expt-relaxed-constexpr", "-Xcompiler", "-fPIC"])
        .hipcc(&hipcc)
        .arches(&arches)
        .out_dir(out.path());
    let lib = builder.build_lib(out.path().join("librotary.a")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((lib.name.as_str(), lib.compiled), ("rotary", 1));
    let nm = std::process::Command::new("nm").arg("--defined-only").arg("-g").arg(&lib.path).output().unwrap();
    let symbols = String::from_utf8_lossy(&nm.stdout);
    for launcher in ["run_rotary_f32", "run_rotary_f16", "run_rotary_bf16"] {
        assert!(symbols.lines().any(|l| l.ends_with(&format!(" T {launcher}"))), "{launcher} not defined in {}:\n{symbols}", lib.path.display());
    }
    // the kernels inside: the same translation as a code object, per arch
    let built = builder.build().unwrap_or_else(|e| panic!("{e}"));
    for arch in arches {
        let names = hip_build::kernel_symbols(&built.code_objects[0].path, arch).unwrap();
        // rotary_kernel<float>, <__half>, <__nv_bfloat16> (the compat header's candle_bf16)
        for mangled in ["_Z13rotary_kernelIfEvPKT_S2_S2_PS0_jjj", "_Z13rotary_kernelI6__halfEvPKT_S3_S3_PS1_jjj", "_Z13rotary_kernelI11candle_bf16EvPKT_S3_S3_PS1_jjj"] {
            assert!(names.contains(mangled), "{arch}: {mangled} not in {names:?}");
        }
    }
    println!("ROCm 7.2: {} ({} launchers) for {}", lib.path.display(), 3, arches.join(", "));
}

/// `build_lib` with this machine's hipcc for the CI arches: the launchers archived, the
/// link name from the file's name, a second build compiles nothing, and a name that is
/// not `lib<name>.a` is refused.
#[test]
fn a_static_library_of_launchers_is_built_and_cached() {
    let out = tempfile::tempdir().unwrap();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let builder = candle_rocm_build::Builder::new()
        .kernel(root.join("tests/user-ffi-rotary/kernels/rotary.cu"))
        .nvcc_arg("--expt-relaxed-constexpr")
        .arches(&["gfx90a", "gfx1030"])
        .out_dir(out.path());
    let lib = builder.build_lib(out.path().join("lib/librotary.a")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((lib.name.as_str(), lib.compiled, lib.path.is_file()), ("rotary", 1, true));
    let again = builder.build_lib(out.path().join("lib/librotary.a")).unwrap();
    assert_eq!(again.compiled, 0, "nothing changed: nothing is compiled");
    let err = builder.build_lib(out.path().join("rotary.lib")).unwrap_err().to_string();
    assert!(err.contains("rotary.lib: a static library's file is named lib<name>.a"), "{err}");
    let err = builder.clone().nvcc_arg("--keep").build_lib(out.path().join("librotary.a")).unwrap_err().to_string();
    assert!(err.contains("`--keep` has no hipcc counterpart"), "{err}");
}

/// The compute capability a build script is told: the newest without the NVIDIA-only
/// constructs of the kernels chosen so far, or none where they have none.
#[test]
fn the_compute_capability_is_the_newest_without_the_kernels_nvidia_only_constructs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("marlin_like.cu"),
        "extern \"C\" __global__ void copy(const int* src, int* dst) {\n  __shared__ int tile[32];\n  \
         asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\" :: \"r\"((unsigned)(size_t)tile), \"l\"(src));\n  dst[threadIdx.x] = tile[threadIdx.x];\n}\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("warpgroup_like.cu"), "extern \"C\" __global__ void fence() {\n  asm volatile(\"wgmma.fence.sync.aligned;\");\n}\n").unwrap();
    std::fs::write(dir.path().join("plain.cu"), "extern \"C\" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n").unwrap();
    let glob = dir.path().join("*.cu").display().to_string();
    let builder = || candle_rocm_build::Builder::new().kernel_glob(&glob);
    // cp.async came with sm_80, wgmma with sm_90: a GPU without either is sm_75
    assert_eq!(builder().get_compute_cap(), Some(75));
    // without the sm_80 kernel, the newest GPU without wgmma: sm_89
    assert_eq!(builder().exclude(&["marlin_like.cu"]).get_compute_cap(), Some(89));
    // nothing NVIDIA-only: the script takes its own default
    assert_eq!(builder().exclude(&["marlin_like.cu", "warpgroup_like.cu"]).get_compute_cap(), None);
}
