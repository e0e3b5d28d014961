//! Kernel resources and occupancy against the real compiler: for every arch
//! of the occupancy table that the found hipcc supports, kernels with a known
//! register use (inline-asm clobbers) are compiled with LLVM's own resource
//! remarks (`-Rpass-analysis=kernel-resource-usage`); the metadata we read
//! must give the registers and LDS the remarks name, and our occupancy table
//! the "Occupancy [waves/SIMD]" LLVM computes. Without hipcc this prints
//! `SKIPPED: hipcc not installed` (CI, which installs it, fails instead).

mod common;
use common::hipcc;

use std::collections::BTreeMap;
use std::path::Path;

use hip_build::disassembly::{count_instructions, Objdump};
use hip_build::kernel_resources::{kernel_resources, KernelResources};
use hip_build::occupancy::{arch_limits, AMD_ARCH_LIMITS};

/// Kernels whose register use the clobbers fix; one with 16 KiB of static LDS.
const KERNELS: &str = r#"#include <hip/hip_runtime.h>
extern "C" __global__ void vgprs_40(float *x) { asm volatile("; clobber" ::: "v39"); x[threadIdx.x] = 1.0f; }
extern "C" __global__ void vgprs_100(float *x) { asm volatile("; clobber" ::: "v99"); x[threadIdx.x] = 1.0f; }
extern "C" __global__ void vgprs_130(float *x) { asm volatile("; clobber" ::: "v129"); x[threadIdx.x] = 1.0f; }
extern "C" __global__ void sgprs_100(float *x) { asm volatile("; clobber" ::: "s99"); x[threadIdx.x] = 1.0f; }
extern "C" __global__ void lds_16k(float *x) {
    __shared__ float s[4096];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = s[threadIdx.x ^ 1];
}
"#;

/// LLVM's remarks per kernel: `VGPRs`, `LDS Size [bytes/block]`, `Occupancy [waves/SIMD]`, ...
fn remarks(stderr: &str) -> BTreeMap<String, BTreeMap<String, u32>> {
    let mut out: BTreeMap<String, BTreeMap<String, u32>> = BTreeMap::new();
    let mut kernel = String::new();
    for line in stderr.lines() {
        let Some((_, remark)) = line.split_once("remark: ") else { continue };
        let remark = remark.split(" [-Rpass").next().unwrap_or(remark).trim();
        let Some((key, value)) = remark.rsplit_once(": ") else { continue };
        if key == "Function Name" {
            kernel = value.to_string();
        } else if let Ok(n) = value.parse() {
            out.entry(kernel.clone()).or_default().insert(key.to_string(), n);
        }
    }
    out
}

#[test]
fn metadata_and_occupancy_agree_with_llvm_for_every_arch_in_the_table() {
    let Some(hipcc) = hipcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("k.hip");
    std::fs::write(&source, KERNELS).unwrap();
    let mut checked = vec![];
    for limits in AMD_ARCH_LIMITS {
        let arch = limits.arch;
        let output = dir.path().join(format!("k-{arch}.co"));
        let out = hipcc
            .command()
            .args(["-O3", "--genco", "-Rpass-analysis=kernel-resource-usage"])
            .arg(format!("--offload-arch={arch}"))
            .arg(&source)
            .arg("-o")
            .arg(&output)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            println!("{arch}: skipped, this hipcc cannot compile for it: {}", stderr.lines().find(|l| l.contains("error")).unwrap_or(""));
            continue;
        }
        let kernels: BTreeMap<String, KernelResources> = kernel_resources(&output, arch).unwrap().into_iter().map(|k| (k.name.clone(), k)).collect();
        assert_eq!(kernels.keys().collect::<Vec<_>>(), ["lds_16k", "sgprs_100", "vgprs_100", "vgprs_130", "vgprs_40"], "{arch}");
        assert_eq!(kernels["vgprs_100"].vgprs, 100, "{arch}");
        assert_eq!(kernels["lds_16k"].lds_bytes, 16384, "{arch}");
        assert_eq!(kernels["vgprs_40"].wavefront_size, limits.wave_size, "{arch}");
        let llvm = remarks(&stderr);
        if llvm.is_empty() {
            println!("{arch}: this hipcc prints no kernel-resource-usage remarks; occupancy not compared");
            continue;
        }
        for (name, k) in &kernels {
            let said = &llvm[name];
            assert_eq!((said["VGPRs"], k.agprs), (k.vgprs, 0), "{arch} {name}: VGPRs (no AGPRs in these kernels)");
            let limits = arch_limits(arch).unwrap();
            let ours = limits.waves_per_simd_by_registers(k).unwrap().min(limits.waves_per_simd_by_lds(k).unwrap());
            assert_eq!(ours, said["Occupancy [waves/SIMD]"], "{arch} {name}: our occupancy vs LLVM's ({k:?})");
        }
        checked.push(arch);
    }
    println!("occupancy checked against LLVM's remarks for: {}", checked.join(", "));
}

#[test]
fn native_dot_products_are_counted_in_the_disassembly() {
    let Some(hipcc) = hipcc() else { return };
    let Ok(objdump) = Objdump::locate() else {
        println!("SKIPPED: llvm-objdump not found");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("d.hip");
    std::fs::write(&source, "#include <hip/hip_runtime.h>\nextern \"C\" __global__ void dot(int *x) { x[threadIdx.x] = __builtin_amdgcn_sdot4(x[0], x[1], x[2], false); }\n").unwrap();
    let output = dir.path().join("d.co");
    let out = hipcc.command().args(["-O3", "--genco", "--offload-arch=gfx90a"]).arg(&source).arg("-o").arg(&output).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let image = hip_build::code_object::extract_images(&output, "gfx90a").unwrap().remove(0);
    let text = objdump.disassemble(Path::new("d.co"), &image).unwrap();
    let counts = count_instructions(&text, &["v_dot4"]);
    // v_dot4_i32_i8 (VOP3P) or its accumulating VOP2 form v_dot4c_i32_i8, as the compiler picks
    assert_eq!(counts.get("dot").map(|m| m.values().sum::<u32>()), Some(1), "{text}");
}
