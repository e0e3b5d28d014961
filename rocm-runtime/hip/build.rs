//! Link lines for the HIP runtime, rocBLAS and rocRAND.
//!
//! `rocm-rs` emits no link lines when built with `SKIP_BINDGEN=1`, so this crate
//! emits them itself:
//!
//! * `amdhip64` is always linked (searched in `$CANDLE_ROCM_LIB_DIR`,
//!   `$ROCM_PATH/lib`, `/opt/rocm/lib` and the system library directories;
//!   `CANDLE_ROCM_LIB_DIR` names libraries to link against without moving the
//!   toolchain: `cargo xtask gpu-bundle` points it at the forwarding runtime).
//! * `rocblas` / `rocrand` are linked only when `lib{name}.so` is found in one of
//!   those directories, or when forced with `CANDLE_ROCM_LINK_ROCBLAS=1` /
//!   `CANDLE_ROCM_LINK_ROCRAND=1` (`=0` forces them off). When a library is linked
//!   the cfg `candle_rocm_rocblas` / `candle_rocm_rocrand` is set; without it every
//!   call into that library returns the crate's "library not linked" error status
//!   instead of failing to link (see `unlinked_ffi!` in `lib.rs`).
//! * `rccl` (`librccl.so.1`) is linked only with the crate's feature `rccl`,
//!   which sets the cfg `candle_rocm_rccl`; without the feature the `nccl`
//!   module's calls return its "not linked" status and nothing of RCCL is
//!   needed. With the feature and no `librccl.so` in those directories the
//!   link line is still emitted (the feature asks for RCCL) and a warning says
//!   where it was looked for.
//! * `hipGetDevicePropertiesR0600` (ROCm >= 6.0, version node `hip_6.0`; HIP 5
//!   has no such function) is bound, with the cfg `candle_rocm_hip_props_r0600`,
//!   unless the `libamdhip64.so` found first in those directories lacks the name
//!   (Debian bookworm's HIP 5.2.3): then binaries still link against it, and
//!   `driver::result::device::get_properties` returns `hipErrorNotSupported`.
//!   No library found: bound (the ABI of rocm-rs's bindings is ROCm >= 6's).
use std::path::{Path, PathBuf};

fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Ok(p) = std::env::var("CANDLE_ROCM_LIB_DIR") {
        dirs.push(PathBuf::from(p));
    }
    if let Ok(p) = std::env::var("ROCM_PATH") {
        dirs.push(Path::new(&p).join("lib"));
    }
    for d in ["/opt/rocm/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"] {
        dirs.push(PathBuf::from(d));
    }
    dirs.into_iter().filter(|d| d.is_dir()).collect()
}

/// Decide whether to link `lib{name}`: the env var wins, otherwise look for the file.
fn wanted(name: &str, env: &str, dirs: &[PathBuf]) -> bool {
    match std::env::var(env).ok().as_deref() {
        Some("1") | Some("true") => true,
        Some("0") | Some("false") => false,
        _ => dirs.iter().any(|d| d.join(format!("lib{name}.so")).exists()),
    }
}

/// Whether the `libamdhip64.so` the linker will take (the first in `dirs`)
/// names `hipGetDevicePropertiesR0600`, and where it is; no library: `(true, None)`.
fn hip_has_props_r0600(dirs: &[PathBuf]) -> (bool, Option<PathBuf>) {
    let Some(lib) = dirs.iter().map(|d| d.join("libamdhip64.so")).find(|l| l.exists()) else {
        return (true, None);
    };
    // An exported name is in the dynamic string table, NUL-terminated.
    let name = b"hipGetDevicePropertiesR0600\0";
    let found = std::fs::read(&lib).map(|bytes| bytes.windows(name.len()).any(|w| w == name)).unwrap_or(true);
    (found, Some(lib))
}

fn main() {
    for var in ["CANDLE_ROCM_LIB_DIR", "ROCM_PATH", "CANDLE_ROCM_LINK_ROCBLAS", "CANDLE_ROCM_LINK_ROCRAND"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-check-cfg=cfg(candle_rocm_rocblas)");
    println!("cargo:rustc-check-cfg=cfg(candle_rocm_rocrand)");
    println!("cargo:rustc-check-cfg=cfg(candle_rocm_rccl)");
    println!("cargo:rustc-check-cfg=cfg(candle_rocm_hip_props_r0600)");
    let dirs = search_dirs();
    // Only the ROCm prefixes are added to the search path; system dirs are searched anyway.
    for d in dirs.iter().filter(|d| !d.starts_with("/usr")) {
        println!("cargo:rustc-link-search=native={}", d.display());
    }
    println!("cargo:rustc-link-lib=dylib=amdhip64");
    match hip_has_props_r0600(&dirs) {
        (true, _) => println!("cargo:rustc-cfg=candle_rocm_hip_props_r0600"),
        (false, lib) => println!(
            "cargo:warning={} has no hipGetDevicePropertiesR0600 (HIP < 6): device properties and ggml_compute_capability will return hipErrorNotSupported",
            lib.map(|l| l.display().to_string()).unwrap_or_default()
        ),
    }
    for (lib, env, cfg) in [
        ("rocblas", "CANDLE_ROCM_LINK_ROCBLAS", "candle_rocm_rocblas"),
        ("rocrand", "CANDLE_ROCM_LINK_ROCRAND", "candle_rocm_rocrand"),
    ] {
        if wanted(lib, env, &dirs) {
            println!("cargo:rustc-link-lib=dylib={lib}");
            println!("cargo:rustc-cfg={cfg}");
        } else {
            println!("cargo:warning={lib} not found (set {env}=1 to force): its calls will return a 'not linked' error");
        }
    }
    if std::env::var_os("CARGO_FEATURE_RCCL").is_some() {
        if !dirs.iter().any(|d| d.join("librccl.so").exists()) {
            let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            println!("cargo:warning=feature rccl: no librccl.so in {} (set CANDLE_ROCM_LIB_DIR or ROCM_PATH); linking -lrccl anyway", looked.join(", "));
        }
        println!("cargo:rustc-link-lib=dylib=rccl");
        println!("cargo:rustc-cfg=candle_rocm_rccl");
    }
}
