//! The AMD compile check: every generated kernel compiles with the real AMD
//! compiler (hipcc, HIP 5.2.3 in CI) for gfx90a (CDNA2, wave64) and gfx1030
//! (RDNA2, wave32) without seeing a CUDA header, and every kernel of the
//! CUDA build exists in the code objects of both arches.

use candle_rocm_tests::{fixture, hipcc_or_skip, pinned_version, workspace_root};
use hip_build::kernel_names::{check_build, Reference};
use hip_build::cache::KernelCache;
use hip_build::{compile_all, plan, CompileJob, OutputKind, CI_ARCHES};

#[test]
fn generated_kernels_compile_for_cdna_and_rdna_with_full_kernel_parity() {
    let Some(hipcc) = hipcc_or_skip("AMD compile check") else { return };
    let kernels = workspace_root().join("generated/kernels");
    let out = tempfile::tempdir().unwrap();
    let arches: Vec<String> = CI_ARCHES.iter().map(|a| a.to_string()).collect();
    // built as the kernels crate builds them: MANIFEST.toml's [kernels] table
    let manifest = plan::KernelsManifest::read(&workspace_root().join("generated/MANIFEST.toml")).unwrap();
    let jobs = plan::kernel_jobs(&kernels, out.path(), &arches, &manifest).unwrap();
    assert!(jobs.len() > 20, "expected every candle-kernels unit, found {}", jobs.len());
    let parallelism = std::thread::available_parallelism().map_or(1, |n| n.get());
    // units this hipcc already compiled from these very sources (CANDLE_ROCM_KERNELS_CACHE:
    // CI's GPU bundle build compiles the same jobs first) are taken from the cache
    let cache = KernelCache::from_env(&hipcc, &kernels).unwrap();
    let mut results = Vec::new();
    let mut to_compile = Vec::new();
    for job in jobs {
        match cache.as_ref().and_then(|c| c.fetch(&job)) {
            Some(cached) => results.push(cached),
            None => to_compile.push(job),
        }
    }
    let from_cache = results.len();
    results.extend(compile_all(&hipcc, to_compile, parallelism));
    let failures: Vec<String> = results.iter().filter_map(|r| r.result.as_ref().err().map(|e| e.to_string())).collect();
    assert!(failures.is_empty(), "{} kernel files failed:\n{}", failures.len(), failures.join("\n"));
    if let Some(cache) = &cache {
        for r in &results[from_cache..] {
            cache.store(&r.job).unwrap();
        }
    }
    let total: f64 = results.iter().map(|r| r.wall.as_secs_f64()).sum();
    println!(
        "compiled {} files for {} ({:.0}s of hipcc; {from_cache} of them compiled earlier by this hipcc from these sources, taken from the kernel cache)",
        results.len(),
        arches.join(","),
        total
    );

    let text = std::fs::read_to_string(fixture(&format!("cuda-kernels-{}.txt", pinned_version()))).unwrap();
    let reference = Reference::parse(&text).unwrap();
    let parity = check_build(&reference, &results, &kernels, &arches).unwrap();
    for (arch, report) in &parity.per_arch {
        println!("kernel parity {arch}: {}/{} CUDA kernels present", report.present, report.total);
        assert!(report.missing.is_empty(), "missing on {arch}: {:?}", report.missing);
    }
    println!("launcher parity: {}/{}", parity.launchers.present, parity.launchers.total);
    assert!(parity.launchers.missing.is_empty(), "missing launchers: {:?}", parity.launchers.missing);
    assert_eq!(parity.per_arch.len(), 2);
}

#[test]
fn translation_goldens_compile() {
    let Some(hipcc) = hipcc_or_skip("golden compile check") else { return };
    let out = tempfile::tempdir().unwrap();
    let golden = fixture("goldens/all_rules.hip");
    let job = CompileJob {
        source: golden,
        output: out.path().join("all_rules.o"),
        kind: OutputKind::Object,
        arches: CI_ARCHES.iter().map(|a| a.to_string()).collect(),
        include_dirs: vec![workspace_root().join("generated/kernels")],
        extra_flags: vec![],
    };
    hipcc.compile(&job).unwrap();
}
