//! Dependency lists (make-style, as `clang -M` writes them) and the test for
//! CUDA headers among them.
//!
//! Why a separate `-M` run and not `-MD -MF` on the compile itself: with
//! HIP 5.2.3 / clang 15, `-MD` in an offloading compile records one side
//! only: the host side for `-c`, and a single arch for `--genco` with several
//! `--offload-arch`s. A header included under `#ifdef __HIP_DEVICE_COMPILE__`
//! or `#if defined(__gfx1030__)` would be missed. [`crate::Hipcc::compile`]
//! therefore runs `-M --cuda-device-only` (clang prints one rule per arch)
//! and, for host objects, `-M --cuda-host-only`, and checks the union.

use std::path::{Component, Path, PathBuf};

/// The prerequisites of every rule in make-style dependency output (targets
/// dropped, duplicates removed, first-seen order). Handles `\`-newline
/// continuations, `\ ` (space in a path) and `$$`.
pub fn parse_make_deps(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if matches!(chars.peek(), Some(' ') | Some('#')) => word.push(chars.next().expect("peeked")),
            '\\' if matches!(chars.peek(), Some('\n') | Some('\r')) => {
                chars.next();
                flush(&mut word, &mut words);
            }
            '$' if chars.peek() == Some(&'$') => {
                chars.next();
                word.push('$');
            }
            c if c.is_whitespace() => flush(&mut word, &mut words),
            c => word.push(c),
        }
    }
    flush(&mut word, &mut words);
    let mut seen = std::collections::HashSet::new();
    words.into_iter().filter(|w| !w.ends_with(':')).filter(|w| seen.insert(w.clone())).collect()
}

fn flush(word: &mut String, words: &mut Vec<String>) {
    if !word.is_empty() {
        words.push(std::mem::take(word));
    }
}

/// The first dependency that is a CUDA (or HIP-on-NVIDIA) header.
///
/// `own_dirs` are the kernel tree and the job's include dirs: upstream names
/// kept there such as `cuda_utils.cuh` are not CUDA toolkit headers, so below
/// them only the toolkit's own names count (`cuda*.h`/`cuda*.hpp`, `mma.h`,
/// anything under a `cuda`, `thrust` or `cub` directory). Elsewhere the rules
/// of [`is_cuda_header`] apply.
pub fn cuda_header_in<'a>(deps: impl IntoIterator<Item = &'a str>, own_dirs: &[PathBuf]) -> Option<String> {
    let own: Vec<PathBuf> = own_dirs.iter().map(|d| d.canonicalize().unwrap_or_else(|_| d.clone())).collect();
    deps.into_iter()
        .find(|dep| {
            let canonical = Path::new(dep).canonicalize().unwrap_or_else(|_| PathBuf::from(dep));
            match own.iter().find_map(|d| canonical.strip_prefix(d).ok()) {
                Some(rel) => is_toolkit_name(rel),
                None => is_cuda_header(dep) || is_cuda_header(&canonical.to_string_lossy()),
            }
        })
        .map(str::to_string)
}

/// Whether a header outside the kernel tree looks like part of a CUDA
/// installation: a directory named `cuda*` (`/usr/local/cuda-12/…`,
/// `…/include/cuda/std/…`; clang's own `cuda_wrappers` excepted), a file named
/// `cuda*` (`cuda_fp16.h`, `cuda_runtime.h`; the Linux uapi `linux/cuda.h`
/// excepted), `mma.h`, `thrust/`, `cub/`, `crt/`, `nv/`, the CUDA libraries'
/// headers (`cublas*`, `curand*`, `cusparse*`, `cufft*`, `cusolver*`,
/// `nvrtc*`, `nvToolsExt*`, `sm_NN_*.h`, `device_launch_parameters.h`), or
/// HIP's NVIDIA-platform headers (`nvidia_detail/`, `nvcc_detail/`), which
/// mean the build ran for the wrong platform.
pub fn is_cuda_header(path: &str) -> bool {
    let p = Path::new(path);
    let name = p.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    let dirs: Vec<String> = p
        .parent()
        .into_iter()
        .flat_map(Path::components)
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().to_lowercase()),
            _ => None,
        })
        .collect();
    if dirs.iter().any(|d| (d.starts_with("cuda") && d != "cuda_wrappers") || matches!(d.as_str(), "thrust" | "cub" | "nvidia_detail" | "nvcc_detail")) {
        return true;
    }
    // `crt/` and `nv/` directly below an include dir (CUDA's internal headers, libcu++'s nv/target)
    if dirs.len() >= 2 && dirs[dirs.len() - 2] == "include" && matches!(dirs[dirs.len() - 1].as_str(), "crt" | "nv") {
        return true;
    }
    if name.starts_with("cuda") {
        return !(name == "cuda.h" && dirs.last().is_some_and(|d| d == "linux"));
    }
    const LIBRARY_PREFIXES: &[&str] = &["cublas", "curand", "cusparse", "cufft", "cusolver", "nvrtc", "nvtoolsext"];
    name == "mma.h" || name == "device_launch_parameters.h" || LIBRARY_PREFIXES.iter().any(|p| name.starts_with(p)) || is_sm_intrinsics(&name)
}

/// `sm_20_atomic_functions.h`, `sm_32_intrinsics.hpp`, …
fn is_sm_intrinsics(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("sm_") else { return false };
    rest.len() > 3 && rest.as_bytes()[..2].iter().all(u8::is_ascii_digit) && rest.as_bytes()[2] == b'_' && (name.ends_with(".h") || name.ends_with(".hpp"))
}

/// Inside the kernel tree: only the CUDA toolkit's own header names count.
fn is_toolkit_name(rel: &Path) -> bool {
    let name = rel.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    // `<tree>/cuda/std/limits` is what `#include <cuda/std/limits>` would find; a crate's own
    // `src/cuda/` directory of kernels is not
    let in_toolkit_dir = rel.parent().and_then(|p| p.components().next()).is_some_and(|c| {
        let c = c.as_os_str().to_string_lossy().to_lowercase();
        matches!(c.as_str(), "cuda" | "thrust" | "cub")
    });
    in_toolkit_dir || TOOLKIT_HEADER_NAMES.contains(&name.as_str())
}

/// The CUDA toolkit's header names that a kernel tree could hold a copy of (a crate's own
/// `cuda_compat.h` or `cuda_utils.cuh` is not among them).
const TOOLKIT_HEADER_NAMES: &[&str] = &[
    "cuda.h", "cuda_runtime.h", "cuda_runtime_api.h", "cuda_fp16.h", "cuda_fp16.hpp", "cuda_bf16.h", "cuda_bf16.hpp",
    "cuda_fp8.h", "cuda_fp8.hpp", "cuda_fp4.h", "cuda_fp4.hpp", "cuda_fp6.h", "cuda_device_runtime_api.h", "cuda_texture_types.h",
    "cuda_surface_types.h", "cuda_pipeline.h", "cuda_pipeline_primitives.h", "cuda_awbarrier.h", "cuda_awbarrier_primitives.h",
    "cuda_occupancy.h", "cuda_profiler_api.h", "cuda_gl_interop.h", "cuda_egl_interop.h", "cuda_vdpau_interop.h", "mma.h",
];

/// A make rule `target: deps…` with paths escaped the way clang escapes them.
pub fn make_rule(target: &Path, deps: &[PathBuf]) -> String {
    let esc = |p: &Path| p.to_string_lossy().replace('$', "$$").replace(' ', "\\ ").replace('#', "\\#");
    let mut out = format!("{}:", esc(target));
    for d in deps {
        out.push_str(" \\\n  ");
        out.push_str(&esc(d));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_clang_output() {
        let text = "k.o: k.hip \\\n  /usr/include/hip/hip_runtime.h my\\ dir/a.h \\\n  b$$.h\nk.o: k.hip /usr/include/x.h\n";
        assert_eq!(parse_make_deps(text), ["k.hip", "/usr/include/hip/hip_runtime.h", "my dir/a.h", "b$.h", "/usr/include/x.h"]);
        let rule = make_rule(Path::new("out dir/k.co"), &["my dir/a.h".into(), "b$.h".into()]);
        assert_eq!(parse_make_deps(&rule), ["my dir/a.h", "b$.h"]);
    }

    #[test]
    fn cuda_headers_are_found() {
        for path in [
            "/usr/include/cuda_fp16.h",
            "/usr/include/cuda_bf16.hpp",
            "/usr/include/cuda_runtime.h",
            "/usr/local/cuda-12.4/targets/x86_64-linux/include/vector_types.h",
            "/opt/cuda/include/driver_types.h",
            "/usr/include/cuda/std/cstdint",
            "/usr/include/mma.h",
            "/usr/include/thrust/sort.h",
            "/usr/include/cub/block/block_scan.cuh",
            "/usr/include/crt/host_defines.h",
            "/usr/include/nv/target",
            "/usr/include/cublas_v2.h",
            "/usr/include/sm_32_intrinsics.hpp",
            "/usr/include/hip/nvidia_detail/nvidia_hip_runtime.h",
        ] {
            assert!(is_cuda_header(path), "{path}");
        }
    }

    #[test]
    fn hip_and_system_headers_pass() {
        for path in [
            "/usr/include/hip/hip_runtime.h",
            "/usr/include/hip/amd_detail/amd_hip_fp16.h",
            "/usr/include/hip/channel_descriptor.h",
            "/usr/lib/llvm-15/lib/clang/15.0.6/include/cuda_wrappers/algorithm",
            "/usr/lib/llvm-15/lib/clang/15.0.6/include/__clang_cuda_math_forward_declares.h",
            "/usr/lib/llvm-15/lib/clang/15.0.6/include/__clang_hip_runtime_wrapper.h",
            "/usr/bin/../lib/gcc/x86_64-linux-gnu/12/../../../../include/c++/12/cmath",
            "/usr/include/linux/cuda.h",
            "/usr/include/math.h",
            "/usr/include/sm_helpers.h",
        ] {
            assert!(!is_cuda_header(path), "{path}");
        }
    }

    #[test]
    fn the_kernel_tree_keeps_upstream_names_but_not_toolkit_headers() {
        let dir = tempfile::tempdir().unwrap();
        let own = [dir.path().to_path_buf()];
        let utils = dir.path().join("cuda_utils.cuh").display().to_string();
        let cub_compat = dir.path().join("candle_hip_cub.h").display().to_string();
        let fake = dir.path().join("cuda_fp16.h").display().to_string();
        assert_eq!(cuda_header_in([utils.as_str(), cub_compat.as_str()], &own), None);
        assert_eq!(cuda_header_in([utils.as_str(), fake.as_str()], &own), Some(fake.clone()));
        assert_eq!(cuda_header_in([utils.as_str()], &[]), Some(utils.clone()));
        // a crate's own src/cuda/ kernels and its cuda_compat.h are its own; <tree>/cuda/std/ is the toolkit's
        let crate_kernel = dir.path().join("src/cuda/gdn.hip").display().to_string();
        let compat = dir.path().join("src/cuda/cuda_compat.h").display().to_string();
        let toolkit = dir.path().join("cuda/std/limits").display().to_string();
        assert_eq!(cuda_header_in([crate_kernel.as_str(), compat.as_str()], &own), None);
        assert_eq!(cuda_header_in([toolkit.as_str()], &own), Some(toolkit.clone()));
    }
}
