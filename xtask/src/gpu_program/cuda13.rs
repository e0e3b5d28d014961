//! The stock CUDA side of a GPU program: crates.io Candle with feature `cuda`,
//! built here (no GPU, no CUDA install) for the GPU machine's CUDA 13.
//!
//! candle-kernels compiles its PTX and its static MMQ/MMVQ/MoE library with nvcc at
//! build time, for CUDA_COMPUTE_CAP=90 (cudaforge makes that sm_90a / compute_90a).
//! Debian's nvcc here is CUDA 11.8, which has no sm_90a, so this uses CUDA 13.0's nvcc
//! from NVIDIA's PyPI wheels (the version the GPU machine has, and the one
//! hip-on-cuda/build-kernels.sh compiles the ROCm side's kernels with there), unpacked
//! once into target/bench-backend/cuda13. candle-core 0.11.1 turns on cudarc's
//! `dynamic-linking` feature, and cudarc's build script refuses `dynamic-loading`
//! beside it, so dynamic loading cannot be chosen without patching candle: the
//! binaries link the CUDA libraries by soname instead. CUDARC_CUDA_VERSION=13000
//! selects cudarc's CUDA 13.0 bindings, and the link is made against stub libraries
//! with CUDA 13's sonames (libcuda.so.1, libcublas.so.13, libcublasLt.so.13,
//! libcurand.so.10, libnvrtc.so.13; libcudart.so.13 is the real one from the wheel),
//! so at run time the GPU machine's CUDA 13 libraries are the ones loaded. Nothing of
//! CUDA 11 is linked.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use super::step;
use crate::regen::upstream::registry_dir;
use crate::workspace::cargo_command;

/// The wheels of CUDA 13.0's nvcc, headers and runtime.
const WHEELS: [&str; 6] = [
    "nvidia-cuda-nvcc==13.0.88",
    // cuobjdump (hip-on-cuda/build-kernels.sh lists a cubin's kernels with it: candle-rocm-build's
    // hip-on-cuda builds); PyPI has none of 13.0, 13.2's reads 13.0's cubins
    "nvidia-cuda-cuobjdump==13.2.51",
    "nvidia-nvvm==13.0.88",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-cuda-runtime==13.0.96",
    "nvidia-cuda-cccl==13.0.85",
];

/// The cudarc whose bindings list the stubs' functions (candle-core 0.11.1's).
const CUDARC: (&str, &str) = ("cudarc", "0.19.10");

/// Stub libraries: (library name, cudarc's `sys` module, CUDA 13's soname).
const STUBS: [(&str, &str, &str); 6] = [
    ("cuda", "driver", "libcuda.so.1"),
    ("cublas", "cublas", "libcublas.so.13"),
    ("cublasLt", "cublaslt", "libcublasLt.so.13"),
    ("curand", "curand", "libcurand.so.10"),
    ("nvrtc", "nvrtc", "libnvrtc.so.13"),
    // candle-core's cudarc links dynamically: feature nccl (llama_multiprocess) links NCCL
    ("nccl", "nccl", "libnccl.so.2"),
];

pub struct Cuda13 {
    /// The unpacked toolkit (`bin/nvcc`, `include/`, `lib/`).
    pub home: PathBuf,
    pub nvcc_version: String,
}

/// Sets up the toolkit and its stub libraries (`fetch_manifest`: a Cargo.toml whose
/// `cargo fetch` brings cudarc's source into the registry when it is not there yet).
pub fn toolchain(root: &Path, fetch_manifest: &Path) -> Result<Cuda13> {
    let base = root.join("target/bench-backend/cuda13");
    let home = base.join("root/nvidia/cu13");
    if !home.join("bin/nvcc").is_file() || !home.join("bin/cuobjdump").is_file() {
        eprintln!("== CUDA 13.0 nvcc, headers and cudart from NVIDIA's PyPI wheels -> {}", base.display());
        let wheels = base.join("wheels");
        std::fs::create_dir_all(&wheels)?;
        let mut pip = Command::new("python3");
        pip.args(["-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]);
        for platform in ["manylinux_2_27_x86_64", "manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_12_x86_64", "manylinux2010_x86_64"] {
            pip.args(["--platform", platform]);
        }
        pip.args(["--python-version", "3.11", "-d"]).arg(&wheels).args(WHEELS);
        step(&mut pip, "pip download of CUDA 13.0's wheels")?;
        let mut found: Vec<PathBuf> = std::fs::read_dir(&wheels)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "whl"))
            .collect();
        found.sort();
        for wheel in found {
            step(Command::new("unzip").arg("-qo").arg(&wheel).arg("-d").arg(base.join("root")), "unzip of a wheel")?;
        }
    }
    let cudart = home.join("lib/libcudart.so");
    let _ = std::fs::remove_file(&cudart);
    std::os::unix::fs::symlink("libcudart.so.13", &cudart)?;

    // stub libraries with CUDA 13's sonames, exporting every function cudarc's bindings
    // of that library declare (all versions: a stub's extra names are harmless)
    let cudarc = match registry_dir(CUDARC.0, CUDARC.1) {
        Some(dir) => dir,
        None => {
            step(cargo_command().args(["fetch", "--quiet", "--manifest-path"]).arg(fetch_manifest), "cargo fetch")?;
            registry_dir(CUDARC.0, CUDARC.1).with_context(|| format!("{}-{} is not in the cargo registry after cargo fetch of {}", CUDARC.0, CUDARC.1, fetch_manifest.display()))?
        }
    };
    let stubs = home.join("lib/stubs");
    std::fs::create_dir_all(&stubs)?;
    for (lib, sys, soname) in STUBS {
        let bindings = cudarc.join(format!("src/{sys}/sys/mod.rs"));
        let text = std::fs::read_to_string(&bindings).with_context(|| format!("reading {}", bindings.display()))?;
        let source = stub_source(&text);
        let c = stubs.join(format!("{lib}.c"));
        std::fs::write(&c, source)?;
        step(
            Command::new("gcc")
                .args(["-shared", "-fPIC", "-o"])
                .arg(stubs.join(format!("lib{lib}.so")))
                .arg(format!("-Wl,-soname,{soname}"))
                .arg(&c),
            "gcc (a CUDA stub library)",
        )?;
    }
    let version = Command::new(home.join("bin/nvcc")).arg("--version").output().context("running nvcc --version")?;
    let version = String::from_utf8_lossy(&version.stdout);
    let nvcc_version = version
        .split("release ")
        .nth(1)
        .map(|rest| rest.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect::<String>())
        .context("nvcc --version names no release")?;
    Ok(Cuda13 { home, nvcc_version })
}

impl Cuda13 {
    /// The environment cargo builds stock Candle with.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let bin = self.home.join("bin");
        let path = std::env::var("PATH").unwrap_or_default();
        vec![
            ("PATH", format!("{}:{path}", bin.display())),
            ("NVCC", bin.join("nvcc").display().to_string()),
            ("CUDA_HOME", self.home.display().to_string()),
            ("CUDARC_CUDA_VERSION", "13000".into()),
            ("CUDA_COMPUTE_CAP", "90".into()),
            ("CARGO_PROFILE_RELEASE_DEBUG", "false".into()),
            ("CARGO_PROFILE_RELEASE_STRIP", "symbols".into()),
        ]
    }
}

/// Fails when `bin` needs a CUDA 11/12 library.
pub fn check_binary(bin: &Path) -> Result<()> {
    let dynamic = crate::gpu_bundle::stubs::readelf(&["-W", "-d"], bin)?;
    let old: Vec<String> = crate::gpu_bundle::stubs::dynamic_entries(&dynamic, "NEEDED")
        .into_iter()
        .filter(|n| is_cuda_11_or_12(n))
        .collect();
    if !old.is_empty() {
        bail!("{} needs a CUDA 11/12 library: {}", bin.display(), old.join(", "));
    }
    Ok(())
}

fn is_cuda_11_or_12(soname: &str) -> bool {
    soname.ends_with(".so.11")
        || ["libcublas.so.11", "libcublas.so.12", "libcudart.so.11", "libcudart.so.12"]
            .iter()
            .any(|old| soname.starts_with(old))
}

/// `void NAME(void) {}` for each function of cudarc's `extern "C" { fn NAME(...) }`
/// blocks, sorted, once each.
fn stub_source(bindings: &str) -> String {
    let names: BTreeSet<&str> = bindings
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(' ')?.trim_start_matches(' ').strip_prefix("fn ")?;
            let end = rest.find('(')?;
            let name = &rest[..end];
            let ident = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            ident.then_some(name)
        })
        .collect();
    names.iter().map(|n| format!("void {n}(void) {{}}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stubs_name_the_extern_functions_once_sorted() {
        let bindings = "extern \"C\" {\n    pub fn cuInit(flags: u32) -> CUresult;\n    fn cuCtxCreate_v2(\n    fn cuInit(x: u32);\n}\nfn top_level() {}\n    let fn_ptr = 1;\n";
        assert_eq!(stub_source(bindings), "void cuCtxCreate_v2(void) {}\nvoid cuInit(void) {}\n");
    }

    #[test]
    fn cuda_11_and_12_sonames_are_refused() {
        for old in ["libcublas.so.11", "libcublas.so.12", "libcudart.so.12", "libnvrtc.so.11"] {
            assert!(is_cuda_11_or_12(old), "{old}");
        }
        for new in ["libcublas.so.13", "libcudart.so.13", "libcuda.so.1", "libcurand.so.10"] {
            assert!(!is_cuda_11_or_12(new), "{new}");
        }
    }
}
